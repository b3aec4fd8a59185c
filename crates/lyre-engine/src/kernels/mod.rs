//! The WGSL kernels and their launchers, by family. A launcher owns its kernel's parameter
//! struct (the mirror of the WGSL `Params`) and the buffers it binds, and builds a
//! [`Dispatch`](crate::gpu::Dispatch) from them; which kernel of a family runs for a shape and a
//! tick's row count is decided in [`select`]. WGSL shared by several families (bf16 loads,
//! descriptors, sequence views, the GEMM tiles, attention helpers) is in `shared/`; a kernel's
//! source is those snippets followed by its own file. [`catalog`] lists every kernel.

pub mod attention;
pub mod catalog;
pub mod conv;
pub mod elementwise;
pub mod gather;
pub mod gemm_tile;
pub mod layer;
pub mod matmul;
pub mod norm;
pub mod sample;
pub mod select;
pub mod seq_view;

/// A run of rows inside a buffer of f32 values: row `i` starts at element
/// `offset + i * row_step * stride`.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub stride: u32,
    pub offset: u32,
    pub row_step: u32,
}

impl<'a> Rows<'a> {
    /// Dense rows of `stride` elements starting at element 0.
    pub fn dense(buffer: &'a wgpu::Buffer, stride: u32) -> Self {
        Rows { buffer, stride, offset: 0, row_step: 1 }
    }

    /// Every `step`-th row starting at row `first`.
    pub fn strided(buffer: &'a wgpu::Buffer, stride: u32, first: u32, step: u32) -> Self {
        Rows { buffer, stride, offset: first * stride, row_step: step }
    }
}

pub(crate) fn groups(n: u32, per: u32) -> u32 {
    n.div_ceil(per)
}

/// What every launcher needs besides its own buffers.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub ctx: &'a crate::gpu::GpuContext,
    /// Which kernel of each family runs.
    pub kernels: &'a select::KernelChoice,
    /// The tick's row counts (`RowCounts::as_array`), read by kernels to mask their last tile.
    pub counts: &'a wgpu::Buffer,
    /// A small buffer bound where a kernel's optional input is absent.
    pub dummy: &'a wgpu::Buffer,
    /// A small writable buffer bound where a kernel's optional output is absent.
    pub scratch: &'a wgpu::Buffer,
    /// Scratch for the partial sums of split-K matmuls, shared by every site (their dispatches
    /// run one after another); a matmul splits K only as far as its partials fit.
    pub partials: &'a wgpu::Buffer,
}
