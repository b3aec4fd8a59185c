//! `nn.Conv1d(padding="same", padding_mode="reflect")` on the CPU, as im2col × SGEMM.
//!
//! Activations are channel-major `[channels][time]`, as PyTorch's `(1, C, T)`.

use std::path::Path;

use crate::checkpoint::weights::{TensorDtype, WeightFile};
use crate::error::{EngineError, Result};

/// Where the encoder's weights come from: a checkpoint, or seeded random values for benchmarks.
pub trait WeightSource {
    /// The tensor `name` as f32, after checking that it has `shape`.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>>;
    /// Named in configuration errors.
    fn path(&self) -> &Path;
}

impl WeightSource for WeightFile {
    /// bf16 (real checkpoints) or f32, widened exactly.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        match self.get(name, shape, TensorDtype::Bf16) {
            Ok(t) => Ok(t.to_f32()),
            Err(EngineError::TensorDtype { .. }) => match self.get(name, shape, TensorDtype::F32) {
                Ok(t) => Ok(t.to_f32()),
                Err(EngineError::TensorDtype { path, tensor, found, .. }) => {
                    Err(EngineError::TensorDtype { path, tensor, found, expected: "BF16 or F32".into() })
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    fn path(&self) -> &Path {
        WeightFile::path(self)
    }
}

/// A `[channels][time]` activation.
#[derive(Debug, Clone)]
pub struct Act {
    pub channels: usize,
    pub time: usize,
    pub data: Vec<f32>,
}

impl Act {
    pub fn new(channels: usize, time: usize, data: Vec<f32>) -> Self {
        debug_assert_eq!(data.len(), channels * time);
        Act { channels, time, data }
    }

    pub fn row(&self, c: usize) -> &[f32] {
        &self.data[c * self.time..(c + 1) * self.time]
    }

    /// Channels `start..start + count` as a new activation.
    pub fn slice_channels(&self, start: usize, count: usize) -> Act {
        Act::new(count, self.time, self.data[start * self.time..(start + count) * self.time].to_vec())
    }

    /// Concatenation along channels (`torch.cat(dim=1)`).
    pub fn concat(parts: &[&Act]) -> Act {
        let time = parts.first().map_or(0, |p| p.time);
        let channels = parts.iter().map(|p| p.channels).sum();
        let mut data = Vec::with_capacity(channels * time);
        for p in parts {
            data.extend_from_slice(&p.data);
        }
        Act::new(channels, time, data)
    }

    pub fn relu(mut self) -> Act {
        self.data.iter_mut().for_each(|x| *x = x.max(0.0));
        self
    }
}

/// One Conv1d with bias: `weight [out][in][kernel]`, `bias [out]`.
#[derive(Debug, Clone)]
pub struct Conv1d {
    pub out_ch: usize,
    pub in_ch: usize,
    pub kernel: usize,
    pub dilation: usize,
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

impl Conv1d {
    /// Reads `{prefix}.weight` and `{prefix}.bias`.
    pub fn load(
        w: &dyn WeightSource,
        prefix: &str,
        out_ch: usize,
        in_ch: usize,
        kernel: usize,
        dilation: usize,
    ) -> Result<Self> {
        let weight = w.tensor(&format!("{prefix}.weight"), &[out_ch, in_ch, kernel])?;
        let bias = w.tensor(&format!("{prefix}.bias"), &[out_ch])?;
        Ok(Conv1d { out_ch, in_ch, kernel, dilation: dilation.max(1), weight, bias })
    }

    /// PyTorch's "same" padding: `dilation·(kernel-1)` in all, the smaller half on the left.
    pub fn padding(&self) -> (usize, usize) {
        let total = self.dilation * (self.kernel - 1);
        (total / 2, total - total / 2)
    }

    /// Applies the convolution (no activation).
    pub fn forward(&self, x: &Act) -> Result<Act> {
        // Shapes are fixed at load time; a mismatch is a bug in this module, not bad input.
        assert_eq!(x.channels, self.in_ch, "speaker encoder: conv input channels");
        let t = x.time;
        let (left, right) = self.padding();
        // Reflect padding needs pad < length, as in PyTorch.
        if left.max(right) >= t {
            return Err(EngineError::ReferenceAudio(format!(
                "the clip is too short for the speaker encoder ({t} frames)"
            )));
        }
        let mut out = vec![0f32; self.out_ch * t];
        for (row, &b) in out.chunks_exact_mut(t).zip(&self.bias) {
            row.fill(b);
        }
        let k_dim = self.in_ch * self.kernel;
        if self.kernel == 1 {
            sgemm(self.out_ch, k_dim, t, &self.weight, k_dim, &x.data, &mut out);
        } else {
            // cols[(i·kernel + j)][τ] = xpad[i][τ + j·dilation]
            let mut cols = vec![0f32; k_dim * t];
            for i in 0..self.in_ch {
                let src = x.row(i);
                for j in 0..self.kernel {
                    let dst = &mut cols[(i * self.kernel + j) * t..(i * self.kernel + j + 1) * t];
                    let shift = (j * self.dilation) as isize - left as isize;
                    for (tau, d) in dst.iter_mut().enumerate() {
                        *d = src[reflect(tau as isize + shift, t)];
                    }
                }
            }
            sgemm(self.out_ch, k_dim, t, &self.weight, k_dim, &cols, &mut out);
        }
        Ok(Act::new(self.out_ch, t, out))
    }

    /// The convolution of a length-1 input (kernel 1 only): `W·x + b`.
    pub fn forward_vec(&self, x: &[f32]) -> Vec<f32> {
        debug_assert_eq!(self.kernel, 1);
        let mut out = self.bias.clone();
        sgemm(self.out_ch, self.in_ch, 1, &self.weight, self.in_ch, x, &mut out);
        out
    }
}

/// Index `i` of a length-`n` signal reflected at both ends (`i` within one length of it).
fn reflect(i: isize, n: usize) -> usize {
    let n = n as isize;
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    };
    r.clamp(0, n - 1) as usize
}

/// `c[m×n] += a[m×k] · b[k×n]`, all row-major; `a`'s rows are `lda` apart (`lda ≥ k`), so a
/// column block of a wider matrix can be used directly.
pub fn sgemm(m: usize, k: usize, n: usize, a: &[f32], lda: usize, b: &[f32], c: &mut [f32]) {
    assert!(lda >= k && (m == 0 || a.len() >= (m - 1) * lda + k), "sgemm: a too small");
    assert!(b.len() >= k * n && c.len() >= m * n, "sgemm: b or c too small");
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // SAFETY: the asserts above keep every element that the strides (lda,1), (n,1) and (n,1)
    // address inside `a`, `b` and `c`; `c` is borrowed mutably, so it aliases neither input.
    #[allow(unsafe_code)]
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            lda as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            1.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct definition of a reflect-padded "same" convolution.
    fn naive(conv: &Conv1d, x: &Act) -> Vec<f32> {
        let (left, _) = conv.padding();
        let t = x.time;
        let mut out = vec![0f32; conv.out_ch * t];
        for o in 0..conv.out_ch {
            for tau in 0..t {
                let mut s = conv.bias[o];
                for i in 0..conv.in_ch {
                    for j in 0..conv.kernel {
                        let idx = reflect((tau + j * conv.dilation) as isize - left as isize, t);
                        s += conv.weight[(o * conv.in_ch + i) * conv.kernel + j] * x.row(i)[idx];
                    }
                }
                out[o * t + tau] = s;
            }
        }
        out
    }

    #[test]
    fn im2col_matches_the_definition() {
        let pseudo = |n: usize, seed: u32| -> Vec<f32> {
            (0..n)
                .map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
                .collect()
        };
        for (kernel, dilation) in [(1, 1), (3, 2), (5, 1), (3, 4), (2, 1)] {
            let conv = Conv1d {
                out_ch: 5,
                in_ch: 3,
                kernel,
                dilation,
                weight: pseudo(5 * 3 * kernel, 7),
                bias: pseudo(5, 9),
            };
            let x = Act::new(3, 11, pseudo(33, 3));
            let got = conv.forward(&x).unwrap().data;
            let want = naive(&conv, &x);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "k{kernel} d{dilation}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn too_short_for_the_padding_is_an_error() {
        let conv =
            Conv1d { out_ch: 1, in_ch: 1, kernel: 3, dilation: 4, weight: vec![0.0; 3], bias: vec![0.0] };
        assert!(matches!(conv.forward(&Act::new(1, 4, vec![0.0; 4])), Err(EngineError::ReferenceAudio(_))));
    }
}
