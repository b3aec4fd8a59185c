//! SnakeBeta activation over sequence views (`x + sin²(αx) / β`, with α and β stored in log
//! space and exponentiated once on the CPU).

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, GpuContext, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "snake",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("snake.wgsl")),
};

/// Workgroups per session at most; each thread strides over the rest.
const MAX_GROUPS: u32 = 1024;
/// Added to β before inverting, as the official SnakeBeta does.
const BETA_EPS: f32 = 1e-9;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    x: GpuView,
    y: GpuView,
    channels: u32,
    rows: u32,
    threads: u32,
    _pad: u32,
}

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

pub struct Snake<'a> {
    pub label: &'a str,
    pub weights: &'a SnakeWeights,
    pub x: SeqView<'a>,
    pub y: SeqView<'a>,
    /// Rows per session this step.
    pub rows: u32,
    pub sessions: &'a wgpu::Buffer,
}

impl Snake<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.x.check(self.label, self.rows, 0)?;
        self.y.check(self.label, self.rows, 0)?;
        let groups = (self.rows * self.weights.channels).div_ceil(64).clamp(1, MAX_GROUPS);
        let params = Params {
            x: self.x.gpu(),
            y: self.y.gpu(),
            channels: self.weights.channels,
            rows: self.rows,
            threads: groups * 64,
            _pad: 0,
        };
        let grid = Grid::new(Extent::Fixed(groups), Extent::rows(RowCount::Sessions));
        let buffers = [&self.weights.alpha, &self.weights.inv_beta, self.x.buffer, self.y.buffer];
        Ok(sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &[]),
            self.label,
            &params,
            self.sessions,
            &buffers,
            grid,
        ))
    }
}
