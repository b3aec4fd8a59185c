//! `MimiTransformerModel` as the encoder uses it (whole clip, positions 0..T, no cache):
//! pre-norm layers of LayerNorm (with bias) → bias-free attention with RoPE (rotate-half, θ from
//! the config) → LayerScale, and LayerNorm → fc1 → exact GELU → fc2 → LayerScale; no final norm.
//!
//! Attention is plainly causal over the whole clip (key j is visible from query i iff `j ≤ i`),
//! whatever the config's `sliding_window` says: the official package builds this encoder with
//! SDPA, and transformers 4.57.3 gives Mimi's SDPA path a causal mask without the window (the
//! `attn_implementation` a caller passes never reaches the speech tokenizer). Only clips longer
//! than the window (250 frames, 10 s at 25 Hz) tell the two apart.

use rayon::prelude::*;

use super::gemm::{gemm, Linear, View};
use super::weights::Loader;
use crate::checkpoint::config::MimiEncoderConfig;
use crate::error::Result;

struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f64,
}

impl LayerNorm {
    /// Normalises each `dim`-wide row of `x` (statistics in f64).
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let dim = self.weight.len();
        let mut y = vec![0.0f32; x.len()];
        for (row, out) in x.chunks_exact(dim).zip(y.chunks_exact_mut(dim)) {
            let mean = row.iter().map(|&v| v as f64).sum::<f64>() / dim as f64;
            let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / dim as f64;
            let inv = 1.0 / (var + self.eps).sqrt();
            for (i, o) in out.iter_mut().enumerate() {
                *o = ((row[i] as f64 - mean) * inv) as f32 * self.weight[i] + self.bias[i];
            }
        }
        y
    }
}

struct Layer {
    norm1: LayerNorm,
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    attn_scale: Vec<f32>,
    norm2: LayerNorm,
    fc1: Linear,
    fc2: Linear,
    mlp_scale: Vec<f32>,
}

pub(super) struct Transformer {
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    /// `inv_freq` as PyTorch computes it in f32.
    inv_freq: Vec<f32>,
}

impl Transformer {
    pub(super) fn load(w: &Loader<'_>, c: &MimiEncoderConfig) -> Result<Self> {
        let (h, d) = (c.hidden_size, c.head_dim);
        if c.num_key_value_heads == 0 || !c.num_attention_heads.is_multiple_of(c.num_key_value_heads) {
            return Err(w.config_error("num_key_value_heads", "must divide num_attention_heads".into()));
        }
        if d == 0 || d % 2 != 0 {
            return Err(w.config_error("head_dim", format!("{d} is not a positive even number")));
        }
        let (q_dim, kv_dim) = (c.num_attention_heads * d, c.num_key_value_heads * d);
        let norm = |p: &str| -> Result<LayerNorm> {
            Ok(LayerNorm {
                weight: w.tensor(&format!("{p}.weight"), &[h])?,
                bias: w.tensor(&format!("{p}.bias"), &[h])?,
                eps: c.norm_eps,
            })
        };
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let l = format!("encoder.encoder_transformer.layers.{i}");
            let a = format!("{l}.self_attn");
            layers.push(Layer {
                norm1: norm(&format!("{l}.input_layernorm"))?,
                q: w.linear(&format!("{a}.q_proj"), q_dim, h)?,
                k: w.linear(&format!("{a}.k_proj"), kv_dim, h)?,
                v: w.linear(&format!("{a}.v_proj"), kv_dim, h)?,
                o: w.linear(&format!("{a}.o_proj"), h, q_dim)?,
                attn_scale: w.tensor(&format!("{l}.self_attn_layer_scale.scale"), &[h])?,
                norm2: norm(&format!("{l}.post_attention_layernorm"))?,
                fc1: w.linear(&format!("{l}.mlp.fc1"), c.intermediate_size, h)?,
                fc2: w.linear(&format!("{l}.mlp.fc2"), h, c.intermediate_size)?,
                mlp_scale: w.tensor(&format!("{l}.mlp_layer_scale.scale"), &[h])?,
            });
        }
        // torch: 1 / base ** (arange(0, d, 2).float() / d), all in f32.
        let base = c.rope_theta as f32;
        let inv_freq = (0..d / 2).map(|i| 1.0 / base.powf((2 * i) as f32 / d as f32)).collect::<Vec<f32>>();
        Ok(Transformer {
            layers,
            hidden: h,
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: d,
            inv_freq,
        })
    }

    /// `x` is `t × hidden`, transformed in place.
    pub(super) fn forward(&self, x: &mut [f32], t: usize) {
        let (cos, sin) = self.rope_tables(t);
        for l in &self.layers {
            let h = l.norm1.forward(x);
            let mut q = l.q.forward(&h, t);
            let mut k = l.k.forward(&h, t);
            let v = l.v.forward(&h, t);
            self.rope(&mut q, self.heads, &cos, &sin);
            self.rope(&mut k, self.kv_heads, &cos, &sin);
            let a = l.o.forward(&self.attention(&q, &k, &v, t), t);
            add_scaled(x, &a, &l.attn_scale);
            let h = l.norm2.forward(x);
            let mut m = l.fc1.forward(&h, t);
            m.iter_mut().for_each(|v| *v = gelu(*v));
            add_scaled(x, &l.fc2.forward(&m, t), &l.mlp_scale);
        }
    }

    /// `cos`/`sin` of `position · inv_freq` (f32 product, as PyTorch), `t × head_dim / 2`.
    fn rope_tables(&self, t: usize) -> (Vec<f32>, Vec<f32>) {
        let angles = (0..t).flat_map(|p| self.inv_freq.iter().map(move |&f| p as f32 * f));
        angles.map(|a| ((a as f64).cos() as f32, (a as f64).sin() as f32)).unzip()
    }

    /// Rotate-half RoPE on every `head_dim`-wide head of each row.
    fn rope(&self, x: &mut [f32], heads: usize, cos: &[f32], sin: &[f32]) {
        let (d, half) = (self.head_dim, self.head_dim / 2);
        for (p, row) in x.chunks_exact_mut(heads * d).enumerate() {
            let (c, s) = (&cos[p * half..(p + 1) * half], &sin[p * half..(p + 1) * half]);
            for head in row.chunks_exact_mut(d) {
                for i in 0..half {
                    let (a, b) = (head[i], head[i + half]);
                    head[i] = a * c[i] - b * s[i];
                    head[i + half] = b * c[i] + a * s[i];
                }
            }
        }
    }

    /// Softmax(q·kᵀ / √d + causal mask) · v for every head; `t × heads·head_dim`.
    fn attention(&self, q: &[f32], k: &[f32], v: &[f32], t: usize) -> Vec<f32> {
        let d = self.head_dim;
        let (qs, kvs) = (self.heads * d, self.kv_heads * d);
        let group = self.heads / self.kv_heads;
        let scale = 1.0 / (d as f32).sqrt();
        let per_head: Vec<Vec<f32>> = (0..self.heads)
            .into_par_iter()
            .map(|h| {
                let kv = (h / group) * d;
                let mut s = vec![0.0f32; t * t];
                let qh = View::new(q, h * d, (t, d), (qs, 1));
                gemm(qh, View::new(k, kv, (d, t), (1, kvs)), 0.0, &mut s, t);
                for (i, row) in s.chunks_exact_mut(t).enumerate() {
                    let max = row[..=i].iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v * scale));
                    let mut sum = 0.0f32;
                    for (j, p) in row.iter_mut().enumerate() {
                        *p = if j > i { 0.0 } else { (*p * scale - max).exp() };
                        sum += *p;
                    }
                    row.iter_mut().for_each(|p| *p /= sum);
                }
                let mut o = vec![0.0f32; t * d];
                gemm(View::rows(&s, t, t), View::new(v, kv, (t, d), (kvs, 1)), 0.0, &mut o, d);
                o
            })
            .collect();
        let mut out = vec![0.0f32; t * qs];
        for (h, o) in per_head.iter().enumerate() {
            for (row, src) in out.chunks_exact_mut(qs).zip(o.chunks_exact(d)) {
                row[h * d..(h + 1) * d].copy_from_slice(src);
            }
        }
        out
    }

    pub(super) fn hidden(&self) -> usize {
        self.hidden
    }
}

/// `x += scale ⊙ y` row by row (LayerScale on a residual branch).
fn add_scaled(x: &mut [f32], y: &[f32], scale: &[f32]) {
    for (xr, yr) in x.chunks_exact_mut(scale.len()).zip(y.chunks_exact(scale.len())) {
        for ((a, &b), &s) in xr.iter_mut().zip(yr).zip(scale) {
            *a += s * b;
        }
    }
}

/// transformers' `"gelu"`: the exact erf form, `x/2 · (1 + erf(x/√2))`.
fn gelu(x: f32) -> f32 {
    let x = x as f64;
    (0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))) as f32
}
