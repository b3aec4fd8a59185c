//! RMSNorm over each row: `w * x / sqrt(mean(x²) + eps)`, variance in f32.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{Env, Rows};

pub const SOURCE: KernelSource = KernelSource { name: "rms_norm", wgsl: include_str!("rms_norm.wgsl") };

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    dim: u32,
    x_stride: u32,
    x_offset: u32,
    x_row_step: u32,
    y_stride: u32,
    y_offset: u32,
    eps: f32,
    _pad: u32,
}

/// Element type of a weight vector or matrix on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightFormat {
    Bf16,
    F32,
}

pub struct RmsNorm<'a> {
    pub label: &'a str,
    pub weight: &'a wgpu::Buffer,
    pub format: WeightFormat,
    pub dim: u32,
    pub eps: f32,
    pub x: Rows<'a>,
    pub y: Rows<'a>,
    pub rows: RowCount,
}

impl RmsNorm<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let params = Params {
            dim: self.dim,
            x_stride: self.x.stride,
            x_offset: self.x.offset,
            x_row_step: self.x.row_step,
            y_stride: self.y.stride,
            y_offset: self.y.offset,
            eps: self.eps,
            _pad: 0,
        };
        let f32_weights = if self.format == WeightFormat::F32 { 1.0 } else { 0.0 };
        let pipeline = env.ctx.pipeline(SOURCE, &[("WEIGHT_F32", f32_weights)]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group =
            env.ctx.bind_group(self.label, &pipeline, &[&uniform, self.weight, self.x.buffer, self.y.buffer]);
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::rows(self.rows), Extent::Fixed(1)),
        }
    }
}
