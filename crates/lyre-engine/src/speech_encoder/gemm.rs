//! Checked f32 matrix products on the CPU: a safe face for `matrixmultiply::sgemm`, plus the
//! row-chunked parallel loop (rayon) that every layer of the encoder uses.

use rayon::prelude::*;

/// A read-only strided matrix: element (i, j) is `data[offset + i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(super) struct View<'a> {
    data: &'a [f32],
    offset: usize,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a> View<'a> {
    /// Panics when the view reaches past `data`: callers build views from their own shapes, so
    /// this is an internal invariant (it guards the `unsafe` below), not an input check.
    pub(super) fn new(
        data: &'a [f32],
        offset: usize,
        (rows, cols): (usize, usize),
        (rs, cs): (usize, usize),
    ) -> Self {
        if rows > 0 && cols > 0 {
            let last = offset + (rows - 1) * rs + (cols - 1) * cs;
            assert!(last < data.len(), "matrix view out of bounds: {last} >= {}", data.len());
        }
        View { data, offset, rows, cols, rs, cs }
    }

    /// A dense row-major `rows × cols` matrix.
    pub(super) fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self::new(data, 0, (rows, cols), (cols, 1))
    }
}

/// `c = a · b + beta · c`, where `c` is row-major `a.rows × b.cols` with row stride `ldc`.
pub(super) fn gemm(a: View<'_>, b: View<'_>, beta: f32, c: &mut [f32], ldc: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(k, b.rows, "inner dimensions differ");
    assert!(ldc >= n, "row stride {ldc} shorter than {n} columns");
    if m == 0 || n == 0 {
        return;
    }
    assert!((m - 1) * ldc + n <= c.len(), "output too small");
    if k == 0 {
        c.iter_mut().for_each(|v| *v *= beta);
        return;
    }
    // SAFETY: `View::new` checked that every element (i < m, j < k) of `a` and (i < k, j < n)
    // of `b` lies inside its slice, and the assert above that every (i < m, j < n) of `c` with
    // strides (ldc, 1) lies inside `c`, which is borrowed mutably and so does not alias them.
    #[allow(unsafe_code)]
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr().add(a.offset),
            a.rs as isize,
            a.cs as isize,
            b.data.as_ptr().add(b.offset),
            b.rs as isize,
            b.cs as isize,
            beta,
            c.as_mut_ptr(),
            ldc as isize,
            1,
        );
    }
}

/// Rows per parallel task. Every task packs the whole right-hand matrix (the weights) again, so
/// tasks get at least 32 rows and no more tasks than threads are made for short inputs; at most
/// about `work_per_row` × rows ≈ 1 M floats (4 MB of im2col scratch) per task, for long ones.
pub(super) fn chunk_rows(total: usize, work_per_row: usize) -> usize {
    let by_size = ((1 << 20) / work_per_row.max(1)).clamp(32, 4096);
    let by_balance = total.div_ceil(rayon::current_num_threads().max(1)).max(32);
    by_size.min(by_balance)
}

/// Fills the row-major `out` (`cols` wide) in parallel, `rows` rows per task:
/// `f(first_row, chunk)` writes `chunk.len() / cols` rows starting at `first_row`.
pub(super) fn par_rows<F>(out: &mut [f32], cols: usize, rows: usize, f: F)
where
    F: Fn(usize, &mut [f32]) + Sync + Send,
{
    if cols == 0 || out.is_empty() {
        return;
    }
    out.par_chunks_mut(rows * cols).enumerate().for_each(|(i, chunk)| f(i * rows, chunk));
}

/// A bias-optional linear layer, `y = x · Wᵀ + b`; `W` is kept transposed (`[in][out]`).
pub(super) struct Linear {
    weight_t: Vec<f32>,
    pub(super) bias: Option<Vec<f32>>,
    pub(super) inp: usize,
    pub(super) out: usize,
}

impl Linear {
    /// From PyTorch's `[out][in]` weight.
    pub(super) fn new(weight: &[f32], bias: Option<Vec<f32>>, inp: usize, out: usize) -> Self {
        debug_assert_eq!(weight.len(), inp * out);
        let mut weight_t = vec![0.0f32; inp * out];
        for (o, row) in weight.chunks_exact(inp).enumerate() {
            for (i, &v) in row.iter().enumerate() {
                weight_t[i * out + o] = v;
            }
        }
        Linear { weight_t, bias, inp, out }
    }

    /// `x` is `t × inp` row-major; the result is `t × out`.
    pub(super) fn forward(&self, x: &[f32], t: usize) -> Vec<f32> {
        let mut y = vec![0.0f32; t * self.out];
        let rows = chunk_rows(t, self.inp.max(self.out));
        par_rows(&mut y, self.out, rows, |r0, chunk| {
            let n = chunk.len() / self.out;
            let a = View::new(x, r0 * self.inp, (n, self.inp), (self.inp, 1));
            gemm(a, View::rows(&self.weight_t, self.inp, self.out), 0.0, chunk, self.out);
            if let Some(bias) = &self.bias {
                for row in chunk.chunks_exact_mut(self.out) {
                    row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
                }
            }
        });
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_matches_a_plain_loop_with_strides() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut c = vec![1.0f32; m * n];
        // b read transposed from an `n × k` buffer.
        gemm(View::rows(&a, m, k), View::new(&b, 0, (k, n), (1, k)), 1.0, &mut c, n);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|p| a[i * k + p] * b[j * k + p]).sum::<f32>();
                assert!((c[i * n + j] - want).abs() < 1e-5);
            }
        }
    }
}
