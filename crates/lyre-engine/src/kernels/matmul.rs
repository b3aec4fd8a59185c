//! `y (+)= act(in(x) · Wᵀ + b)` with bf16 weights in the PyTorch `[out, in]` layout, where
//! `in` is the identity, an RMSNorm or SwiGLU ([`Input`]), fused into the kernel's x load.

use bytemuck::{Pod, Zeroable};

use super::gemm_tile::GemmTile;
use super::{groups, matmul_few_rows, matmul_gemm, Env, Rows};
use crate::error::{EngineError, Result};
use crate::gpu::{Alternative, Dispatch, Extent, GpuContext, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16.wgsl")
    ),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "matmul_bf16_sg",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16_sg.wgsl")
    ),
};

pub const SOURCE_VEC: KernelSource = KernelSource {
    name: "matmul_bf16_vec",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights8.wgsl"),
        include_str!("matmul_bf16_vec.wgsl")
    ),
};

/// Output columns per workgroup and rows per tile of the per-thread kernel.
const TILE_N: u32 = 64;
const TILE_R: u32 = 4;
/// Threads per workgroup of the subgroup kernel (one subgroup per output column).
const SG_THREADS: u32 = 256;

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
    /// `2k`), as [`SwiGlu`](super::swiglu::SwiGlu) computes it.
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

/// Which kernel computes a matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatmulKernel {
    /// One thread per output column (best on CPU adapters such as lavapipe).
    PerThread,
    /// One subgroup per output column: coalesced loads and a subgroup reduction (GPUs).
    Subgroup { size: u32 },
    /// `split` subgroups per output column, 16-byte weight loads, four in flight per lane: the
    /// mat-vec for few rows on GPUs ([`MatmulKernel::for_shape`]). Needs `k % 8 == 0`.
    Matvec { size: u32, split: u32 },
    /// Register-blocked tiles, K split `split` ways (many rows; K a multiple of the tile's
    /// chunk). See [`matmul_gemm`](super::matmul_gemm).
    Gemm { tile: GemmTile, split: u32 },
    /// `quads` row quads per pass, K split `split` ways, `cpt` columns per thread: ticks of a
    /// few dozen rows on GPUs. See [`matmul_few_rows`](super::matmul_few_rows).
    FewRows { quads: u32, split: u32, cpt: u32 },
}

impl MatmulKernel {
    /// `Subgroup` on a real GPU with a fixed subgroup size, else `PerThread`.
    /// `LYRE_MATMUL=per_thread` or `LYRE_MATMUL=subgroup` overrides the choice.
    pub fn for_adapter(ctx: &GpuContext) -> Self {
        let size = ctx.fixed_subgroup_size();
        match (std::env::var("LYRE_MATMUL").as_deref(), size) {
            (Ok("per_thread"), _) | (_, None) => MatmulKernel::PerThread,
            (Ok("subgroup"), Some(size)) => MatmulKernel::Subgroup { size },
            (_, Some(size)) if !ctx.is_cpu() => MatmulKernel::Subgroup { size },
            _ => MatmulKernel::PerThread,
        }
    }

    /// The adapter's kernel for an `n × k` matmul of few rows: [`MatmulKernel::Matvec`] where
    /// the adapter has subgroups and `k % 8 == 0` (`LYRE_MATVEC=0` keeps `Subgroup`).
    pub fn for_shape(ctx: &GpuContext, n: u32, k: u32) -> Self {
        match Self::for_adapter(ctx) {
            MatmulKernel::Subgroup { size }
                if k % 8 == 0 && std::env::var("LYRE_MATVEC").as_deref() != Ok("0") =>
            {
                MatmulKernel::Matvec { size, split: matvec_split(n, k, size) }
            }
            kernel => kernel,
        }
    }
}

/// Subgroups per output column of the mat-vec: two where K is at least three times N (`down`),
/// else one (measured on an H200 at every split, docs/PERFORMANCE.md v8). `LYRE_MATVEC_SPLIT=N`
/// overrides it.
pub fn matvec_split(n: u32, k: u32, subgroup: u32) -> u32 {
    if let Some(split) = std::env::var("LYRE_MATVEC_SPLIT").ok().and_then(|v| v.parse::<u32>().ok()) {
        return split.clamp(1, 8);
    }
    if k >= 3 * n && k / 8 >= 4 * subgroup {
        2
    } else {
        1
    }
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
    /// With the adapter's kernel ([`MatmulKernel::for_adapter`]) and, where the adapter takes
    /// them ([`matmul_gemm::min_rows`]), the GEMM levels as alternatives for ticks of many rows.
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        let mut d = self.build_with(env, MatmulKernel::for_shape(env.ctx, self.n, self.k))?;
        let few_rows = matmul_few_rows::levels(env, self.n, self.k, &self.input);
        let gemm_floor = matmul_few_rows::gemm_floor(env, self.n, self.k);
        for (min_rows, kernel) in
            few_rows.into_iter().chain(matmul_gemm::levels(env, self.n, self.k, gemm_floor))
        {
            let dispatches = self.build_sequence(env, kernel)?;
            d.add_alternative(Alternative { rows: self.rows, min_rows, dispatches });
        }
        Ok(d)
    }

    /// The dispatches of `kernel`: one, or a split-K GEMM and its reduction.
    pub fn build_sequence(&self, env: &Env, kernel: MatmulKernel) -> Result<Vec<Dispatch>> {
        match kernel {
            MatmulKernel::Gemm { tile, split } => {
                let (params, buffers) = self.prepare(env)?;
                matmul_gemm::dispatches(self, env, params, &buffers, tile, split)
            }
            MatmulKernel::FewRows { quads, split, cpt } => {
                let (params, buffers) = self.prepare(env)?;
                Ok(vec![matmul_few_rows::dispatch(self, env, params, &buffers, (quads, split, cpt))?])
            }
            _ => Ok(vec![self.build_with(env, kernel)?]),
        }
    }

    /// Checks the shapes and fills the parameters and the buffers bound from binding 2 on
    /// (weight, bias, x, y, gamma).
    fn prepare<'b>(&'b self, env: &'b Env) -> Result<(Params, [&'b wgpu::Buffer; 5])> {
        if self.k % 4 != 0 || self.x.stride % 4 != 0 || self.x.offset % 4 != 0 {
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

    /// The single dispatch of a matrix-vector kernel (use [`Matmul::build_sequence`] for GEMMs).
    pub fn build_with(&self, env: &Env, kernel: MatmulKernel) -> Result<Dispatch> {
        let ctx = env.ctx;
        let (params, buffers) = self.prepare(env)?;
        let input = ("INPUT", self.input.mode());
        let (pipeline, grid) = match kernel {
            MatmulKernel::PerThread => (
                ctx.pipeline(SOURCE, &[input]),
                Grid::new(
                    Extent::Fixed(groups(self.n, TILE_N)),
                    Extent::Rows { count: self.rows, per_group: TILE_R },
                ),
            ),
            MatmulKernel::Subgroup { size } => (
                ctx.pipeline(SOURCE_SUBGROUP, &[("SG", size as f64), input]),
                Grid::new(Extent::Fixed(groups(self.n, SG_THREADS / size)), Extent::Fixed(1)),
            ),
            MatmulKernel::Matvec { size, split } => {
                let per_group = SG_THREADS / size / split;
                if self.k % 8 != 0 || per_group == 0 || SG_THREADS % (size * split) != 0 {
                    return Err(EngineError::Gpu(format!(
                        "matmul `{}`: the mat-vec kernel needs k % 8 == 0 (k = {}) and {split} \
                         subgroups of {size} per column to fit a workgroup",
                        self.label, self.k
                    )));
                }
                (
                    ctx.pipeline(SOURCE_VEC, &[("SG", size as f64), ("SPLIT", split as f64), input]),
                    Grid::new(Extent::Fixed(groups(self.n, per_group)), Extent::Fixed(1)),
                )
            }
            MatmulKernel::Gemm { .. } | MatmulKernel::FewRows { .. } => {
                return Err(EngineError::Gpu(format!(
                    "matmul `{}`: GEMMs and the few-rows kernel are built by build_sequence",
                    self.label
                )))
            }
        };
        let uniform = ctx.uniform(self.label, &params);
        let mut bound: Vec<&wgpu::Buffer> = vec![&uniform, env.counts];
        bound.extend_from_slice(&buffers);
        let bind_group = ctx.bind_group(self.label, &pipeline, &bound);
        Ok(Dispatch { alternatives: Vec::new(), label: self.label.to_string(), pipeline, bind_group, grid })
    }
}
