//! Rotary-embedding tables, computed on the CPU the way the official code does (inverse
//! frequencies and angles in f32), so no GPU evaluates sin/cos of large arguments.

use crate::error::Result;
use crate::gpu::GpuContext;

/// `cos` and `sin` tables of `[positions][head_dim / 2]` f32.
pub struct RopeTables {
    pub cos: wgpu::Buffer,
    pub sin: wgpu::Buffer,
    pub positions: usize,
}

/// The f32 angles `pos * inv_freq[i]`, with `inv_freq[i] = 1 / theta^(2i / head_dim)`.
pub fn angles(positions: usize, head_dim: usize, theta: f64) -> Vec<f32> {
    let half = head_dim / 2;
    let inv: Vec<f32> =
        (0..half).map(|i| 1.0f32 / (theta as f32).powf((2 * i) as f32 / head_dim as f32)).collect();
    let mut out = Vec::with_capacity(positions * half);
    for p in 0..positions {
        out.extend(inv.iter().map(|&f| p as f32 * f));
    }
    out
}

impl RopeTables {
    pub fn new(ctx: &GpuContext, label: &str, positions: usize, head_dim: usize, theta: f64) -> Result<Self> {
        let a = angles(positions, head_dim, theta);
        let cos: Vec<f32> = a.iter().map(|&x| (x as f64).cos() as f32).collect();
        let sin: Vec<f32> = a.iter().map(|&x| (x as f64).sin() as f32).collect();
        Ok(RopeTables {
            cos: ctx.storage_from(&format!("{label}.cos"), &cos)?,
            sin: ctx.storage_from(&format!("{label}.sin"), &sin)?,
            positions,
        })
    }
}
