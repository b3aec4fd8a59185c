//! `y (+)= act(x · Wᵀ + b)` with bf16 weights in the PyTorch `[out, in]` layout.

use bytemuck::{Pod, Zeroable};

use super::{groups, Env, Rows};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource { name: "matmul_bf16", wgsl: include_str!("matmul_bf16.wgsl") };

const TILE_N: u32 = 64;
const TILE_R: u32 = 4;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
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
    _pad: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    None = 0,
    Silu = 1,
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
    pub y: Rows<'a>,
    pub rows: RowCount,
    pub output: Output,
    pub activation: Activation,
}

impl Matmul<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        let ctx = env.ctx;
        if self.k % 4 != 0 || self.x.stride % 4 != 0 || self.x.offset % 4 != 0 {
            return Err(EngineError::Gpu(format!(
                "matmul `{}`: k ({}), input stride and offset must be multiples of 4",
                self.label, self.k
            )));
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
            _pad: 0,
        };
        let pipeline = ctx.pipeline(SOURCE, &[]);
        let uniform = ctx.uniform(self.label, &params);
        let bind_group = ctx.bind_group(
            self.label,
            &pipeline,
            &[
                &uniform,
                env.counts,
                self.weight,
                self.bias.unwrap_or(env.dummy),
                self.x.buffer,
                self.y.buffer,
            ],
        );
        Ok(Dispatch {
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(
                Extent::Fixed(groups(self.n, TILE_N)),
                Extent::Rows { count: self.rows, per_group: TILE_R },
            ),
        })
    }
}
