//! One launcher module per WGSL kernel. A launcher owns the kernel's parameter struct (the
//! mirror of the WGSL `Params`) and builds a [`Dispatch`](crate::gpu::Dispatch) from buffers.

pub mod attention;
pub mod attention_rope;
pub mod clamp_pcm;
pub mod codec_gather;
pub mod combine_input;
pub mod conv1d;
pub mod conv1d_gemm;
pub mod copy_rows;
pub mod decode_layer;
pub mod decoder_redirect;
pub mod depthwise_conv;
pub mod embed_text;
pub mod frame_rows;
pub mod gemm_tile;
pub mod glu;
pub mod grid_residency;
pub mod matmul;
pub mod matmul_few_rows;
pub mod matmul_gemm;
pub mod qk_norm_rope;
pub mod rms_norm;
pub mod rope_shift;
pub mod rvq_dequant;
pub mod sample;
pub mod seq_norm;
pub mod seq_view;
pub mod snake;
pub mod swiglu;

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
