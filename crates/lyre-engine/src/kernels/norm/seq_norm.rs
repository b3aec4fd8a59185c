//! RMSNorm and LayerNorm over the rows of sequence views, f32 weights.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{check_groups, sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "seq_norm",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("seq_norm.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    x: GpuView,
    y: GpuView,
    dim: u32,
    layer_norm: u32,
    has_bias: u32,
    eps: f32,
}

/// Which normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKind {
    /// `w * x / sqrt(mean(x²) + eps)`.
    Rms,
    /// `(x - mean) / sqrt(var + eps) * w (+ b)`.
    Layer,
}

pub struct SeqNorm<'a> {
    pub label: &'a str,
    pub kind: NormKind,
    pub weight: &'a wgpu::Buffer,
    pub bias: Option<&'a wgpu::Buffer>,
    pub dim: u32,
    pub eps: f32,
    pub x: SeqView<'a>,
    pub y: SeqView<'a>,
    /// Rows per session this step.
    pub rows: u32,
    pub sessions: &'a wgpu::Buffer,
}

impl SeqNorm<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.x.check(self.label, self.rows, 0)?;
        self.y.check(self.label, self.rows, 0)?;
        let params = Params {
            x: self.x.gpu(),
            y: self.y.gpu(),
            dim: self.dim,
            layer_norm: (self.kind == NormKind::Layer) as u32,
            has_bias: self.bias.is_some() as u32,
            eps: self.eps,
        };
        let grid =
            Grid::new(Extent::rows(RowCount::Sessions), Extent::Fixed(check_groups(self.label, self.rows)?));
        let buffers = [self.weight, self.bias.unwrap_or(env.dummy), self.x.buffer, self.y.buffer];
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
