//! Gathers text-embedding rows (bf16, possibly split over several buffers) for each row's
//! text token.

use bytemuck::{Pod, Zeroable};

use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource {
    name: "embed_text",
    wgsl: concat!(include_str!("../shared/descriptors.wgsl"), include_str!("embed_text.wgsl")),
};

/// How many buffers one table may be split into.
pub const MAX_CHUNKS: usize = 8;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    dim: u32,
    rows_per_chunk: u32,
    vocab: u32,
    _pad: u32,
}

pub struct EmbedText<'a> {
    pub label: &'a str,
    /// The table's row-chunks, each `rows_per_chunk` rows (the last may be shorter).
    pub chunks: &'a [wgpu::Buffer],
    pub rows_per_chunk: u32,
    pub vocab: u32,
    pub dim: u32,
    pub row_desc: &'a wgpu::Buffer,
    pub out: &'a wgpu::Buffer,
    pub rows: RowCount,
}

impl EmbedText<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        if self.chunks.is_empty() || self.chunks.len() > MAX_CHUNKS || !self.dim.is_multiple_of(2) {
            return Err(EngineError::Gpu(format!(
                "text embedding: {} chunks of width {} (1..={MAX_CHUNKS} chunks, even width)",
                self.chunks.len(),
                self.dim
            )));
        }
        let params =
            Params { dim: self.dim, rows_per_chunk: self.rows_per_chunk, vocab: self.vocab, _pad: 0 };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let mut buffers: Vec<&wgpu::Buffer> = vec![&uniform, self.row_desc];
        for i in 0..MAX_CHUNKS {
            buffers.push(self.chunks.get(i).unwrap_or(env.dummy));
        }
        buffers.push(self.out);
        let bind_group = env.ctx.bind_group(self.label, &pipeline, &buffers);
        Ok(Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(groups(self.dim / 2, 64)), Extent::rows(self.rows)),
        })
    }
}
