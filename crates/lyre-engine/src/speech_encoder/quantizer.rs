//! `MimiSplitResidualVectorQuantizer.encode`: the semantic RVQ (its first quantizers) and the
//! acoustic RVQ each project the *same* input with their own 1×1 `input_proj` (when the VQ width
//! differs from `hidden_size`), then per layer pick the nearest codeword (Euclidean) of
//! `embed_sum / clamp(cluster_usage, 1e-5)` and subtract it from the residual.

use super::gemm::{chunk_rows, gemm, par_rows, Linear, View};
use super::weights::Loader;
use crate::checkpoint::config::MimiEncoderConfig;
use crate::error::Result;

/// `MimiEuclideanCodebook.epsilon`.
const USAGE_EPSILON: f32 = 1e-5;

struct Codebook {
    /// `size × dim` codewords.
    embed: Vec<f32>,
    /// `‖e‖²` per codeword.
    norms: Vec<f32>,
    dim: usize,
}

impl Codebook {
    /// Index of the nearest codeword for each of the `n` rows of `r`. Candidates come from the
    /// GEMM form `‖e‖² - 2 r·e`; every one within rounding distance of the best is re-scored
    /// exactly (f64 `Σ (r - e)²`), so near-ties are decided by the true distance.
    fn nearest(&self, r: &[f32], n: usize) -> Vec<usize> {
        let (dim, size) = (self.dim, self.norms.len());
        let mut dots = vec![0.0f32; n * size];
        let rows = chunk_rows(n, size);
        par_rows(&mut dots, size, rows, |r0, chunk| {
            let a = View::new(r, r0 * dim, (chunk.len() / size, dim), (dim, 1));
            gemm(a, View::new(&self.embed, 0, (dim, size), (1, dim)), 0.0, chunk, size);
        });
        let max_norm = self.norms.iter().fold(0.0f32, |m, &v| m.max(v));
        let mut out = Vec::with_capacity(n);
        for (i, dot) in dots.chunks_exact(size).enumerate() {
            let row = &r[i * dim..(i + 1) * dim];
            let approx = |j: usize| self.norms[j] - 2.0 * dot[j];
            let best = (0..size).fold(0, |b, j| if approx(j) < approx(b) { j } else { b });
            let row_norm: f32 = row.iter().map(|v| v * v).sum();
            let tol = 1e-4 * (row_norm + max_norm) + 1e-12;
            let exact = |j: usize| -> f64 {
                let e = &self.embed[j * dim..(j + 1) * dim];
                row.iter().zip(e).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum()
            };
            let mut pick = (best, exact(best));
            for j in 0..size {
                if j != best && approx(j) <= approx(best) + tol {
                    let d = exact(j);
                    // argmin keeps the first index among equals.
                    if d < pick.1 || (d == pick.1 && j < pick.0) {
                        pick = (j, d);
                    }
                }
            }
            out.push(pick.0);
        }
        out
    }
}

struct Rvq {
    input_proj: Option<Linear>,
    books: Vec<Codebook>,
}

impl Rvq {
    fn load(w: &Loader<'_>, prefix: &str, layers: usize, c: &MimiEncoderConfig) -> Result<Self> {
        let (size, dim) = (c.codebook_size, c.codebook_dim);
        let vq = c.vector_quantization_hidden_dimension;
        let input_proj = if vq != c.hidden_size {
            Some(w.pointwise(&format!("{prefix}.input_proj"), vq, c.hidden_size)?)
        } else {
            None
        };
        let mut books = Vec::with_capacity(layers);
        for l in 0..layers {
            let book = format!("{prefix}.layers.{l}.codebook");
            let usage = w.tensor(&format!("{book}.cluster_usage"), &[size])?;
            let mut embed = w.tensor(&format!("{book}.embed_sum"), &[size, dim])?;
            for (row, &u) in embed.chunks_exact_mut(dim).zip(&usage) {
                let u = u.max(USAGE_EPSILON);
                row.iter_mut().for_each(|v| *v /= u);
            }
            let norms = embed.chunks_exact(dim).map(|e| e.iter().map(|v| v * v).sum()).collect();
            books.push(Codebook { embed, norms, dim });
        }
        Ok(Rvq { input_proj, books })
    }

    /// Codes of the first `count` layers for the `n` rows of `x`, written to column
    /// `first..first + count` of the `n × stride` array `codes`.
    fn encode(&self, x: &[f32], n: usize, count: usize, codes: &mut [u16], (first, stride): (usize, usize)) {
        let mut residual = match &self.input_proj {
            Some(p) => p.forward(x, n),
            None => x.to_vec(),
        };
        for (q, book) in self.books.iter().take(count).enumerate() {
            let picks = book.nearest(&residual, n);
            for (i, &j) in picks.iter().enumerate() {
                // `size ≤ 65536` is checked at load.
                codes[i * stride + first + q] = j as u16;
                let e = &book.embed[j * book.dim..(j + 1) * book.dim];
                let r = &mut residual[i * book.dim..(i + 1) * book.dim];
                r.iter_mut().zip(e).for_each(|(r, e)| *r -= e);
            }
        }
    }
}

pub(super) struct SplitRvq {
    semantic: Rvq,
    acoustic: Rvq,
    semantic_layers: usize,
}

impl SplitRvq {
    pub(super) fn load(w: &Loader<'_>, c: &MimiEncoderConfig) -> Result<Self> {
        if c.codebook_size == 0 || c.codebook_size > 1 << 16 {
            return Err(w.config_error("codebook_size", format!("{} is not in 1..=65536", c.codebook_size)));
        }
        if c.codebook_dim != c.vector_quantization_hidden_dimension {
            return Err(w.config_error(
                "codebook_dim",
                format!("{} differs from vector_quantization_hidden_dimension", c.codebook_dim),
            ));
        }
        let p = "encoder.quantizer";
        let semantic_layers = c.num_semantic_quantizers;
        let acoustic_layers = c.num_quantizers.saturating_sub(semantic_layers);
        Ok(SplitRvq {
            semantic: Rvq::load(w, &format!("{p}.semantic_residual_vector_quantizer"), semantic_layers, c)?,
            acoustic: Rvq::load(w, &format!("{p}.acoustic_residual_vector_quantizer"), acoustic_layers, c)?,
            semantic_layers,
        })
    }

    /// `n × count` codes (row-major) for the `n` frames of `x`; `count` must lie within
    /// `num_semantic_quantizers..=num_quantizers` (checked at load).
    pub(super) fn encode(&self, x: &[f32], n: usize, count: usize) -> Vec<u16> {
        let mut codes = vec![0u16; n * count];
        let semantic = self.semantic_layers.min(count);
        self.semantic.encode(x, n, semantic, &mut codes, (0, count));
        if count > semantic {
            self.acoustic.encode(x, n, count - semantic, &mut codes, (semantic, count));
        }
        codes
    }

    pub(super) fn layers(&self) -> usize {
        self.semantic.books.len() + self.acoustic.books.len()
    }
}
