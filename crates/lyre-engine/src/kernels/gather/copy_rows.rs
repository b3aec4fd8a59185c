//! Copies one row per session between buffers (e.g. each session's last talker row).

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{groups, Env, Rows};

pub const SOURCE: KernelSource = KernelSource {
    name: "copy_rows",
    wgsl: concat!(include_str!("../shared/descriptors.wgsl"), include_str!("copy_rows.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    dim: u32,
    last_row_mode: u32,
    src_stride: u32,
    src_first: u32,
    src_step: u32,
    dst_stride: u32,
    dst_first: u32,
    dst_step: u32,
}

/// Where session `i`'s source row is.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// `sessions[i].last_row`.
    LastRow,
    /// Row `first + i * step`.
    Affine { first: u32, step: u32 },
}

pub struct CopyRows<'a> {
    pub label: &'a str,
    pub dim: u32,
    pub sessions: &'a wgpu::Buffer,
    pub src: &'a wgpu::Buffer,
    pub src_stride: u32,
    pub source: Source,
    /// Destination rows (`offset` must be a whole number of rows).
    pub dst: Rows<'a>,
    pub rows: RowCount,
}

impl CopyRows<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let (mode, first, step) = match self.source {
            Source::LastRow => (1, 0, 0),
            Source::Affine { first, step } => (0, first, step),
        };
        let params = Params {
            dim: self.dim,
            last_row_mode: mode,
            src_stride: self.src_stride,
            src_first: first,
            src_step: step,
            dst_stride: self.dst.stride,
            dst_first: self.dst.offset / self.dst.stride.max(1),
            dst_step: self.dst.row_step,
        };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group =
            env.ctx.bind_group(self.label, &pipeline, &[&uniform, self.sessions, self.src, self.dst.buffer]);
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(groups(self.dim, 64)), Extent::rows(self.rows)),
        }
    }
}
