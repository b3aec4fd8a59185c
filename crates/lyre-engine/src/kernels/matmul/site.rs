//! One matmul site: `y (+)= act(in(x) · Wᵀ + b)` with bf16 weights in the PyTorch `[out, in]`
//! layout, where `in` is the identity, an RMSNorm or SwiGLU ([`Input`]), fused into the kernel's
//! x load; its parameters (the mirror of `matmul_common.wgsl`'s `Params`) and bound buffers,
//! shared by every matmul kernel.

use bytemuck::{Pod, Zeroable};

use crate::error::{EngineError, Result};
use crate::gpu::RowCount;
use crate::kernels::{Env, Rows};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
pub(super) struct Params {
    k: u32,
    n: u32,
    rows_index: u32,
    accumulate: u32,
    x_stride: u32,
    x_offset: u32,
    x_row_step: u32,
    has_bias: u32,
    y_stride: u32,
    y_offset: u32,
    activation: u32,
    eps: f32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None = 0,
    Silu = 1,
}

/// What the matmul reads as its input row; each is its own pipeline (the WGSL `INPUT` override).
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// `x` as it is.
    Plain,
    /// `gamma ⊙ x · rsqrt(mean(x²) + eps)` (Qwen3 RMSNorm, f32), `gamma` bf16 `[k]`: the norm
    /// that used to be a dispatch of its own before the matmul.
    RmsNormed { gamma: &'a wgpu::Buffer, eps: f32 },
    /// `silu(gate) ⊙ up` of rows laid out `[gate | up]` (`k` each; the row stride is at least
    /// `2k`), as [`SwiGlu`](crate::kernels::elementwise::SwiGlu) computes it.
    SwiGlu,
}

impl Input<'_> {
    pub(super) fn mode(&self) -> f64 {
        match self {
            Input::Plain => 0.0,
            Input::RmsNormed { .. } => 1.0,
            Input::SwiGlu => 2.0,
        }
    }
}

/// The output side of a matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `y = result`.
    Overwrite,
    /// `y += result` (a residual connection).
    Accumulate,
}

/// Everything one matmul site needs.
pub struct Matmul<'a> {
    pub label: &'a str,
    /// Weights `[n][k]`, bf16.
    pub weight: &'a wgpu::Buffer,
    /// Bias `[n]`, bf16.
    pub bias: Option<&'a wgpu::Buffer>,
    pub k: u32,
    pub n: u32,
    pub x: Rows<'a>,
    /// How `x` is read (plain, RMS-normed or SwiGLU-gated).
    pub input: Input<'a>,
    pub y: Rows<'a>,
    pub rows: RowCount,
    pub output: Output,
    pub activation: Activation,
}

impl Matmul<'_> {
    /// Checks the shapes and fills the parameters and the buffers bound from binding 2 on
    /// (weight, bias, x, y, gamma).
    pub(super) fn prepare<'b>(&'b self, env: &'b Env) -> Result<(Params, [&'b wgpu::Buffer; 5])> {
        if !self.k.is_multiple_of(4) || !self.x.stride.is_multiple_of(4) || !self.x.offset.is_multiple_of(4) {
            return Err(EngineError::Gpu(format!(
                "matmul `{}`: k ({}), input stride and offset must be multiples of 4",
                self.label, self.k
            )));
        }
        let input_err = match self.input {
            Input::SwiGlu if self.x.stride < 2 * self.k => Some("SwiGLU rows need a stride of at least 2k"),
            Input::RmsNormed { gamma, .. } if gamma.size() < self.k as u64 * 2 => {
                Some("the RMSNorm gamma needs k bf16 values")
            }
            _ => None,
        };
        if let Some(e) = input_err {
            return Err(EngineError::Gpu(format!("matmul `{}`: {e}", self.label)));
        }
        if self.y.row_step != 1 {
            return Err(EngineError::Gpu(format!("matmul `{}`: output rows must be dense", self.label)));
        }
        let params = Params {
            k: self.k,
            n: self.n,
            rows_index: self.rows.index(),
            accumulate: (self.output == Output::Accumulate) as u32,
            x_stride: self.x.stride,
            x_offset: self.x.offset,
            x_row_step: self.x.row_step,
            has_bias: self.bias.is_some() as u32,
            y_stride: self.y.stride,
            y_offset: self.y.offset,
            activation: self.activation as u32,
            eps: match self.input {
                Input::RmsNormed { eps, .. } => eps,
                _ => 0.0,
            },
        };
        let gamma = match self.input {
            Input::RmsNormed { gamma, .. } => gamma,
            _ => env.dummy,
        };
        Ok((params, [self.weight, self.bias.unwrap_or(env.dummy), self.x.buffer, self.y.buffer, gamma]))
    }
}
