//! SnakeBeta's per-channel factors (`x + sin²(αx) / β`, with α and β stored in log space and
//! exponentiated once on the CPU), which the conv epilogue applies ([`FusedSnake`](super::FusedSnake)).

use crate::error::Result;
use crate::gpu::GpuContext;

/// Added to β before inverting, as the official SnakeBeta does.
const BETA_EPS: f32 = 1e-9;

/// One SnakeBeta's per-channel factors on the GPU: `exp(α)` and `1 / (exp(β) + 1e-9)`.
pub struct SnakeWeights {
    pub alpha: wgpu::Buffer,
    pub inv_beta: wgpu::Buffer,
    pub channels: u32,
}

impl SnakeWeights {
    /// From the checkpoint's log-space `alpha` and `beta`, computed in f32 as PyTorch does.
    pub fn upload(ctx: &GpuContext, label: &str, log_alpha: &[f32], log_beta: &[f32]) -> Result<Self> {
        let alpha: Vec<f32> = log_alpha.iter().map(|a| a.exp()).collect();
        let inv_beta: Vec<f32> = log_beta.iter().map(|b| 1.0 / (b.exp() + BETA_EPS)).collect();
        Ok(SnakeWeights {
            alpha: ctx.storage_from(&format!("{label}.alpha"), &alpha)?,
            inv_beta: ctx.storage_from(&format!("{label}.inv_beta"), &inv_beta)?,
            channels: log_alpha.len() as u32,
        })
    }
}
