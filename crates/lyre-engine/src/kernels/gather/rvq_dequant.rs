//! Split-RVQ dequantisation: codes → `[first codebook vector | sum of the rest]` per frame.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{check_groups, sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "rvq_dequant",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("rvq_dequant.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    y: GpuView,
    dim: u32,
    books: u32,
    codebook_size: u32,
    frames: u32,
}

pub struct RvqDequant<'a> {
    pub label: &'a str,
    /// `[books][codebook_size][dim]` f32: `embedding_sum / max(cluster_usage, eps)`.
    pub table: &'a wgpu::Buffer,
    pub books: u32,
    pub codebook_size: u32,
    pub dim: u32,
    /// `[session][frames][books]` u32.
    pub codes: &'a wgpu::Buffer,
    /// Frames per session this step.
    pub frames: u32,
    /// Rows of `2 * dim` (first | rest).
    pub y: SeqView<'a>,
    pub sessions: &'a wgpu::Buffer,
}

impl RvqDequant<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.y.check(self.label, self.frames, 0)?;
        let params = Params {
            y: self.y.gpu(),
            dim: self.dim,
            books: self.books,
            codebook_size: self.codebook_size,
            frames: self.frames,
        };
        let grid = Grid {
            x: Extent::Fixed((2 * self.dim).div_ceil(64)),
            y: Extent::rows(RowCount::Sessions),
            z: Extent::Fixed(check_groups(self.label, self.frames)?),
        };
        let buffers = [self.codes, self.table, self.y.buffer];
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
