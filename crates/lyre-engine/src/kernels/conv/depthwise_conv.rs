//! Causal depthwise conv1d (the ConvNeXt `dwconv`) with f32 weights over sequence views.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{check_groups, sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "depthwise_conv",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("depthwise_conv.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    x: GpuView,
    y: GpuView,
    channels: u32,
    taps: u32,
    dil: u32,
    has_bias: u32,
}

pub struct DepthwiseConv<'a> {
    pub label: &'a str,
    /// `[channels][1][taps]` f32 (PyTorch layout).
    pub weight: &'a wgpu::Buffer,
    pub bias: Option<&'a wgpu::Buffer>,
    pub channels: u32,
    pub taps: u32,
    pub dilation: u32,
    /// Input rows, with `(taps - 1) * dilation` rows of history.
    pub x: SeqView<'a>,
    pub y: SeqView<'a>,
    /// Rows per session this step.
    pub rows: u32,
    pub sessions: &'a wgpu::Buffer,
}

impl DepthwiseConv<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.x.check(self.label, self.rows, (self.taps - 1) * self.dilation)?;
        self.y.check(self.label, self.rows, 0)?;
        let params = Params {
            x: self.x.gpu(),
            y: self.y.gpu(),
            channels: self.channels,
            taps: self.taps,
            dil: self.dilation,
            has_bias: self.bias.is_some() as u32,
        };
        let grid = Grid {
            x: Extent::Fixed(self.channels.div_ceil(64)),
            y: Extent::rows(RowCount::Sessions),
            z: Extent::Fixed(check_groups(self.label, self.rows)?),
        };
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
