//! `MimiConv1d` with `use_causal_conv`: left padding `(k-1)·d + 1 - stride`, plus Mimi's "extra"
//! right padding (`_get_extra_padding_for_conv1d`) so that the last window is complete. The
//! output therefore has exactly `ceil(len / stride)` rows.
//!
//! Tensors are time-major (`len × channels`, row-major); each conv is an im2col × GEMM over
//! chunks of output rows, run in parallel, so no padded copy of the whole input is made.

use super::gemm::{chunk_rows, gemm, par_rows, View};

/// How the padded positions are filled (`pad_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PadMode {
    /// `"constant"` with value 0.
    Zeros,
    /// `"replicate"`: the first row to the left, the last row to the right.
    Replicate,
}

/// What is applied to the input before the conv (Mimi's separate `nn.ELU` layers; since
/// ELU(0) = 0 and replicate copies an activated row, applying it after padding is the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pre {
    None,
    Elu,
}

/// Shape of one conv, independent of its weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ConvShape {
    pub(super) inp: usize,
    pub(super) out: usize,
    pub(super) kernel: usize,
    pub(super) stride: usize,
    pub(super) dilation: usize,
}

impl ConvShape {
    /// `(kernel - 1) · dilation + 1`.
    pub(super) fn effective_kernel(&self) -> usize {
        (self.kernel - 1) * self.dilation + 1
    }

    /// Left padding of the causal conv: `effective_kernel - stride` (the weights loader checks
    /// that it is not negative).
    pub(super) fn padding_total(&self) -> usize {
        self.effective_kernel() - self.stride
    }

    /// Mimi's `_get_extra_padding_for_conv1d`: with `n = ceil((len - k + pad) / s + 1) - 1` and
    /// `ideal = n·s + k - pad`, the extra right padding is `ideal - len`, which simplifies to
    /// `ceil(len / s)·s - len` because `k - pad = s`.
    pub(super) fn extra_padding(&self, len: usize) -> usize {
        len.div_ceil(self.stride) * self.stride - len
    }

    /// `(len + pad + extra - k_eff) / s + 1 = ceil(len / s)`.
    pub(super) fn output_len(&self, len: usize) -> usize {
        len.div_ceil(self.stride)
    }
}

/// One causal conv with its weights, reordered at load to `[tap][in][out]`: a row-major
/// `width × out` matrix (`width = kernel · in`) that an im2col row (`tap`-major, each tap a
/// contiguous input row) multiplies directly, and that the GEMM packs with contiguous reads.
pub(super) struct CausalConv1d {
    pub(super) shape: ConvShape,
    pub(super) pad: PadMode,
    weight: Vec<f32>,
    bias: Option<Vec<f32>>,
}

impl CausalConv1d {
    /// `weight` in PyTorch's `[out][in][kernel]` layout.
    pub(super) fn new(shape: ConvShape, pad: PadMode, weight: &[f32], bias: Option<Vec<f32>>) -> Self {
        let ConvShape { inp, out, kernel, .. } = shape;
        debug_assert_eq!(weight.len(), out * inp * kernel);
        let mut w = vec![0.0f32; out * kernel * inp];
        for o in 0..out {
            for c in 0..inp {
                for j in 0..kernel {
                    w[(j * inp + c) * out + o] = weight[o * inp * kernel + c * kernel + j];
                }
            }
        }
        CausalConv1d { shape, pad, weight: w, bias }
    }

    /// `x` is `len × inp`; the result is `ceil(len / stride) × out`. `len` must be ≥ 1.
    pub(super) fn forward(&self, x: &[f32], len: usize, pre: Pre) -> Vec<f32> {
        let (out, t_out) = (self.shape.out, self.shape.output_len(len));
        let mut y = vec![0.0f32; t_out * out];
        if len == 0 {
            return y;
        }
        par_rows(&mut y, out, self.chunk_rows(t_out), |t0, chunk| self.forward_rows(x, len, pre, t0, chunk));
        y
    }

    /// Output rows per parallel task for `t_out` rows.
    pub(super) fn chunk_rows(&self, t_out: usize) -> usize {
        chunk_rows(t_out, (self.shape.kernel * self.shape.inp).max(self.shape.out))
    }

    /// Output rows `t0 .. t0 + chunk.len() / out` of [`forward`](Self::forward), written to
    /// `chunk`; the same numbers as the whole-input call (the GEMM's sums do not depend on how
    /// the rows are split).
    pub(super) fn forward_rows(&self, x: &[f32], len: usize, pre: Pre, t0: usize, chunk: &mut [f32]) {
        let ConvShape { inp, out, kernel, stride, dilation } = self.shape;
        let width = kernel * inp;
        let n = chunk.len() / out;
        if n == 0 || len == 0 {
            return;
        }
        let pad = self.shape.padding_total() as isize;
        // The padded input ends exactly where the last window does.
        let padded = len + pad as usize + self.shape.extra_padding(len);
        debug_assert_eq!(padded - self.shape.effective_kernel(), (self.shape.output_len(len) - 1) * stride);
        // The input rows `lo..hi` that these outputs read (every padded position maps into them),
        // activated once here rather than once per tap.
        let first = (t0 * stride) as isize - pad;
        let last = ((t0 + n - 1) * stride + (kernel - 1) * dilation) as isize - pad;
        let (lo, hi) =
            (first.clamp(0, len as isize - 1) as usize, last.clamp(0, len as isize - 1) as usize + 1);
        let owned;
        let src_rows = match pre {
            Pre::None => &x[lo * inp..hi * inp],
            Pre::Elu => {
                owned = x[lo * inp..hi * inp].iter().map(|&v| elu(v)).collect::<Vec<f32>>();
                &owned[..]
            }
        };
        let mut col = vec![0.0f32; n * width];
        for (t, col_row) in col.chunks_exact_mut(width).enumerate() {
            for j in 0..kernel {
                // Input row read by tap j of output t0 + t, in unpadded coordinates.
                let i = ((t0 + t) * stride + j * dilation) as isize - pad;
                let src = match (self.pad, i) {
                    (PadMode::Zeros, i) if i < 0 || i >= len as isize => continue,
                    (PadMode::Replicate, i) if i < 0 => 0,
                    (PadMode::Replicate, i) if i >= len as isize => len - 1,
                    (_, i) => i as usize,
                } - lo;
                col_row[j * inp..(j + 1) * inp].copy_from_slice(&src_rows[src * inp..(src + 1) * inp]);
            }
        }
        gemm(View::rows(&col, n, width), View::rows(&self.weight, width, out), 0.0, chunk, out);
        if let Some(bias) = &self.bias {
            for row in chunk.chunks_exact_mut(out) {
                row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
            }
        }
    }
}

/// `nn.ELU` with α = 1 (`expm1` below zero, as PyTorch computes it).
pub(super) fn elu(x: f32) -> f32 {
    if x > 0.0 {
        x
    } else {
        x.exp_m1()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(kernel: usize, stride: usize, dilation: usize) -> ConvShape {
        ConvShape { inp: 1, out: 1, kernel, stride, dilation }
    }

    #[test]
    fn padding_rule_matches_mimi_by_hand() {
        // k 8, s 4 on 10 samples: pad 4 left; n = ceil((10-8+4)/4 + 1) - 1 = 2, ideal
        // 2·4 + 8 - 4 = 12, extra 2: padded 16 → (16 - 8)/4 + 1 = 3 = ceil(10/4).
        let s = shape(8, 4, 1);
        assert_eq!((s.padding_total(), s.extra_padding(10), s.output_len(10)), (4, 2, 3));
        // A multiple of the stride needs no extra padding.
        assert_eq!((s.extra_padding(12), s.output_len(12)), (0, 3));
        // Stride 1 never pads right; dilation widens the left padding.
        let d = shape(3, 1, 2);
        assert_eq!((d.padding_total(), d.extra_padding(7), d.output_len(7)), (4, 0, 7));
        // The whole encoder: 25000 samples → SEANet hops 4·5·6·8 then the stride-2 downsample.
        let mut len = 25_000;
        for (k, s) in [(8, 4), (10, 5), (12, 6), (16, 8), (4, 2)] {
            let c = shape(k, s, 1);
            assert_eq!(len + c.padding_total() + c.extra_padding(len) - k, (c.output_len(len) - 1) * s);
            len = c.output_len(len);
        }
        assert_eq!(len, 14);
        assert_eq!(shape(4, 2, 1).output_len(1), 1);
    }

    #[test]
    fn forward_equals_a_padded_direct_conv() {
        let sh = ConvShape { inp: 2, out: 3, kernel: 4, stride: 2, dilation: 1 };
        let w: Vec<f32> = (0..24).map(|i| (i as f32 * 0.7).sin()).collect();
        let x: Vec<f32> = (0..2 * 7).map(|i| (i as f32 * 0.3).cos() - 0.5).collect();
        for pad in [PadMode::Zeros, PadMode::Replicate] {
            let conv = CausalConv1d::new(sh, pad, &w, Some(vec![0.1, 0.2, 0.3]));
            let y = conv.forward(&x, 7, Pre::Elu);
            assert_eq!(y.len(), 4 * 3);
            for t in 0..4 {
                for o in 0..3 {
                    let mut want = 0.1 * (o + 1) as f32;
                    for c in 0..2 {
                        for j in 0..4 {
                            let i = (t * 2 + j) as isize - 2;
                            let v = match pad {
                                PadMode::Zeros if !(0..7).contains(&i) => 0.0,
                                _ => elu(x[i.clamp(0, 6) as usize * 2 + c]),
                            };
                            want += w[o * 8 + c * 4 + j] * v;
                        }
                    }
                    assert!((y[t * 3 + o] - want).abs() < 1e-5, "{pad:?} t{t} o{o}");
                }
            }
        }
    }
}
