//! The decoder's last step: clamp the one-channel output to [-1, 1] into a dense PCM buffer.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "clamp_pcm",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("clamp_pcm.wgsl")),
};

const MAX_GROUPS: u32 = 256;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    x: GpuView,
    rows: u32,
    threads: u32,
    _pad: [u32; 2],
}

pub struct ClampPcm<'a> {
    pub label: &'a str,
    /// One-channel rows (channel 0 is used).
    pub x: SeqView<'a>,
    /// `[session][rows]` f32.
    pub pcm: &'a wgpu::Buffer,
    /// Samples per session this step.
    pub rows: u32,
    pub sessions: &'a wgpu::Buffer,
}

impl ClampPcm<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.x.check(self.label, self.rows, 0)?;
        let groups = self.rows.div_ceil(64).clamp(1, MAX_GROUPS);
        let params = Params { x: self.x.gpu(), rows: self.rows, threads: groups * 64, _pad: [0; 2] };
        let grid = Grid::new(Extent::Fixed(groups), Extent::rows(RowCount::Sessions));
        Ok(sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &[]),
            self.label,
            &params,
            self.sessions,
            &[self.x.buffer, self.pcm],
            grid,
        ))
    }
}
