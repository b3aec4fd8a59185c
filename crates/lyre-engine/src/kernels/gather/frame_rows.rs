//! Attention row descriptors (`slot, pos`) for each session's frames of a decoder step, made on
//! the GPU from the session descriptors.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::sequence_dispatch;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "frame_rows",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("frame_rows.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    frames: u32,
    max_pos: u32,
    period: u32,
    _pad: u32,
}

pub struct FrameRows<'a> {
    pub label: &'a str,
    /// Frames per session this step.
    pub frames: u32,
    /// Positions stay below this (the RoPE table's length).
    pub max_pos: u32,
    /// Positions from `max_pos` on wrap back by this many (0: they are clamped instead).
    pub period: u32,
    /// `[session * frames + t]` of `[u32; 4]`.
    pub rows: &'a wgpu::Buffer,
    pub sessions: &'a wgpu::Buffer,
}

impl FrameRows<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let params =
            Params { frames: self.frames, max_pos: self.max_pos.max(1), period: self.period, _pad: 0 };
        let grid = Grid::new(Extent::rows(RowCount::Sessions), Extent::Fixed(1));
        sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &[]),
            self.label,
            &params,
            self.sessions,
            &[self.rows],
            grid,
        )
    }
}
