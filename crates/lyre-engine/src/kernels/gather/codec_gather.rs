//! Looks up each session's freshly sampled code in an embedding table, for the code
//! predictor's next input and the running sum that becomes the talker's next input.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{groups, Env, Rows};

pub const SOURCE: KernelSource = KernelSource {
    name: "codec_gather",
    wgsl: concat!(include_str!("../shared/descriptors.wgsl"), include_str!("codec_gather.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    dim: u32,
    code_col: u32,
    write_dst: u32,
    acc_mode: u32,
    dst_stride: u32,
    dst_first: u32,
    dst_step: u32,
    _pad: u32,
}

/// What to do with the session's frame-embedding accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulate {
    Leave = 0,
    Set = 1,
    Add = 2,
}

pub struct CodecGather<'a> {
    pub label: &'a str,
    pub dim: u32,
    /// Which of the 16 code columns to look up.
    pub code_col: u32,
    pub table: &'a wgpu::Buffer,
    pub sessions: &'a wgpu::Buffer,
    pub codes: &'a wgpu::Buffer,
    pub dst: Option<Rows<'a>>,
    pub acc: &'a wgpu::Buffer,
    pub accumulate: Accumulate,
}

impl CodecGather<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let (dst_buf, stride, first, step) = match self.dst {
            Some(r) => (r.buffer, r.stride, r.offset / r.stride.max(1), r.row_step),
            None => (env.scratch, 0, 0, 0),
        };
        let params = Params {
            dim: self.dim,
            code_col: self.code_col,
            write_dst: self.dst.is_some() as u32,
            acc_mode: self.accumulate as u32,
            dst_stride: stride,
            dst_first: first,
            dst_step: step,
            _pad: 0,
        };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[&uniform, self.sessions, self.codes, self.table, dst_buf, self.acc],
        );
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(groups(self.dim, 64)), Extent::rows(RowCount::Sessions)),
        }
    }
}
