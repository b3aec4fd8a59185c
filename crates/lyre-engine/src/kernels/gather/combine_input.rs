//! Assembles the talker's input rows from the text channel and the codec channel.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource {
    name: "combine_input",
    wgsl: concat!(include_str!("../shared/descriptors.wgsl"), include_str!("combine_input.wgsl")),
};

/// Row-descriptor `text`/`codec` value meaning "no contribution".
pub const NONE: u32 = 0xffff_ffff;
/// Row-descriptor `codec` value: the session's accumulated frame embedding.
pub const FROM_ACC: u32 = 0xffff_fffe;
/// Row-descriptor `codec` flag: uploaded vector number `codec & !EXTRA`.
pub const EXTRA: u32 = 0x8000_0000;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    dim: u32,
    vocab: u32,
    _pad0: u32,
    _pad1: u32,
}

pub struct CombineInput<'a> {
    pub label: &'a str,
    pub dim: u32,
    pub codec_vocab: u32,
    pub row_desc: &'a wgpu::Buffer,
    /// Projected text embeddings, one per row.
    pub text: &'a wgpu::Buffer,
    /// `codec_embedding` table, bf16.
    pub codec_embedding: &'a wgpu::Buffer,
    /// Per-slot accumulated frame embeddings.
    pub acc: &'a wgpu::Buffer,
    /// Uploaded vectors (speaker x-vectors, reference-frame sums, test inputs).
    pub extra: &'a wgpu::Buffer,
    pub out: &'a wgpu::Buffer,
    pub rows: RowCount,
}

impl CombineInput<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let params = Params { dim: self.dim, vocab: self.codec_vocab, _pad0: 0, _pad1: 0 };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[&uniform, self.row_desc, self.text, self.codec_embedding, self.acc, self.extra, self.out],
        );
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(groups(self.dim, 64)), Extent::rows(self.rows)),
        }
    }
}
