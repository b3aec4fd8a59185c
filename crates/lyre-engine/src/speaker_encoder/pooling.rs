//! `AttentiveStatisticsPooling`: channel-wise attention over time with global context.
//!
//! Official semantics (batch 1, so the mask is all ones):
//! * global mean and std over time, `std = sqrt(clamp(Σ (x-μ)²/T, 1e-12))`;
//! * `attention = conv(tanh(relu(tdnn([x; μ; σ]))))` (tdnn: 3C → A, k1; conv: A → C, k1);
//! * softmax over time per channel, then the attention-weighted mean and std (same eps);
//! * output `[mean; std]` (2C).
//!
//! μ and σ are constant over time, so the tdnn's product with them is done once, not per frame.

use super::blocks::Tdnn;
use super::conv::{sgemm, Act, Conv1d, WeightSource};
use crate::error::Result;

const EPS: f64 = 1e-12;

#[derive(Debug, Clone)]
pub struct AttentiveStatsPooling {
    tdnn: Tdnn,
    conv: Conv1d,
    channels: usize,
}

impl AttentiveStatsPooling {
    pub fn load(w: &dyn WeightSource, prefix: &str, channels: usize, attention: usize) -> Result<Self> {
        Ok(AttentiveStatsPooling {
            tdnn: Tdnn::load(w, &format!("{prefix}.tdnn"), attention, 3 * channels, 1, 1)?,
            conv: Conv1d::load(w, &format!("{prefix}.conv"), channels, attention, 1, 1)?,
            channels,
        })
    }

    /// `[C][T]` → `[mean; std]` of `2C` values.
    pub fn forward(&self, x: &Act) -> Result<Vec<f32>> {
        let (c, t) = (self.channels, x.time);
        assert_eq!(x.channels, c, "speaker encoder: pooling input channels");
        let uniform = vec![1.0 / t as f32; t];
        let mut global = Vec::with_capacity(2 * c);
        let mut stds = Vec::with_capacity(c);
        for ch in 0..c {
            let (m, s) = weighted_stats(x.row(ch), &uniform);
            global.push(m);
            stds.push(s);
        }
        global.extend(stds);

        // tdnn over [x; μ; σ]: W[:, :C]·x (per frame) + W[:, C:]·[μ; σ] + b (once).
        let conv = &self.tdnn.conv;
        let a = conv.out_ch;
        let mut context = conv.bias.clone();
        sgemm(a, 2 * c, 1, &conv.weight[c..], 3 * c, &global, &mut context);
        let mut h = vec![0f32; a * t];
        for (row, &b) in h.chunks_exact_mut(t).zip(&context) {
            row.fill(b);
        }
        sgemm(a, c, t, &conv.weight, 3 * c, &x.data, &mut h);
        h.iter_mut().for_each(|v| *v = v.max(0.0).tanh());
        let mut attention = self.conv.forward(&Act::new(a, t, h))?;

        let mut pooled = Vec::with_capacity(2 * c);
        let mut pooled_std = Vec::with_capacity(c);
        for ch in 0..c {
            let weights = &mut attention.data[ch * t..(ch + 1) * t];
            softmax(weights);
            let (m, s) = weighted_stats(x.row(ch), weights);
            pooled.push(m);
            pooled_std.push(s);
        }
        pooled.extend(pooled_std);
        Ok(pooled)
    }
}

/// `_compute_statistics`: mean = Σ w·x, std = sqrt(clamp(Σ w·(x-mean)², eps)).
fn weighted_stats(x: &[f32], w: &[f32]) -> (f32, f32) {
    let mean: f64 = x.iter().zip(w).map(|(&x, &w)| f64::from(w) * f64::from(x)).sum();
    let var: f64 = x.iter().zip(w).map(|(&x, &w)| f64::from(w) * (f64::from(x) - mean).powi(2)).sum();
    (mean as f32, var.max(EPS).sqrt() as f32)
}

fn softmax(v: &mut [f32]) {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f64;
    for x in v.iter_mut() {
        *x = (*x - max).exp();
        sum += f64::from(*x);
    }
    let inv = (1.0 / sum) as f32;
    v.iter_mut().for_each(|x| *x *= inv);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_a_constant_use_the_eps() {
        let (m, s) = weighted_stats(&[2.0; 4], &[0.25; 4]);
        assert_eq!(m, 2.0);
        assert!((s - 1e-6).abs() < 1e-9);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut v = vec![1.0, 2.0, 3.0, -50.0];
        softmax(&mut v);
        assert!((v.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(v[2] > v[1] && v[1] > v[0]);
    }
}
