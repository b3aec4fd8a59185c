//! Copies checkpoint tensors to GPU buffers, unchanged (bf16 stays bf16), after checking them.

use crate::checkpoint::weights::{TensorDtype, WeightFile};
use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;

/// One bf16 tensor as a storage buffer.
pub fn bf16(ctx: &GpuContext, file: &WeightFile, name: &str, shape: &[usize]) -> Result<wgpu::Buffer> {
    let t = file.get(name, shape, TensorDtype::Bf16)?;
    ctx.storage_from_bytes(name, t.data)
}

/// One f32 tensor as a storage buffer.
pub fn f32(ctx: &GpuContext, file: &WeightFile, name: &str, shape: &[usize]) -> Result<wgpu::Buffer> {
    let t = file.get(name, shape, TensorDtype::F32)?;
    ctx.storage_from_bytes(name, t.data)
}

/// Several bf16 matrices with the same column count stacked along rows (e.g. q|k|v), so that
/// one matmul computes all of them.
pub fn bf16_rows(
    ctx: &GpuContext,
    file: &WeightFile,
    label: &str,
    parts: &[(String, Vec<usize>)],
) -> Result<wgpu::Buffer> {
    let mut bytes = Vec::new();
    for (name, shape) in parts {
        bytes.extend_from_slice(file.get(name, shape, TensorDtype::Bf16)?.data);
    }
    ctx.storage_from_bytes(label, &bytes)
}

/// A large bf16 embedding table `[rows][dim]` split into row-chunks that each fit one binding.
pub struct ChunkedTable {
    pub chunks: Vec<wgpu::Buffer>,
    pub rows_per_chunk: u32,
}

pub fn bf16_chunked(
    ctx: &GpuContext,
    file: &WeightFile,
    name: &str,
    rows: usize,
    dim: usize,
    max_chunks: usize,
) -> Result<ChunkedTable> {
    let t = file.get(name, &[rows, dim], TensorDtype::Bf16)?;
    let row_bytes = dim * 2;
    let per_chunk = ((ctx.max_binding() as usize / row_bytes) & !1).min(rows.next_multiple_of(2));
    let n_chunks = rows.div_ceil(per_chunk.max(1));
    if per_chunk == 0 || n_chunks > max_chunks {
        return Err(EngineError::Capacity(format!(
            "{name}: {rows}×{dim} bf16 needs {n_chunks} buffers on this adapter (at most {max_chunks})"
        )));
    }
    let chunks = t
        .data
        .chunks(per_chunk * row_bytes)
        .enumerate()
        .map(|(i, c)| ctx.storage_from_bytes(&format!("{name}[{i}]"), c))
        .collect::<Result<Vec<_>>>()?;
    Ok(ChunkedTable { chunks, rows_per_chunk: per_chunk as u32 })
}
