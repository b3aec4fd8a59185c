//! The matrix-vector kernels of a matmul over few rows: one thread per output column
//! (`matmul_bf16.wgsl`), one subgroup per column (`matmul_bf16_sg.wgsl`), or several subgroups
//! per column with 16-byte weight loads (`matmul_bf16_vec.wgsl`).

use super::site::Matmul;
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource};
use crate::kernels::select::MatmulKernel;
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16.wgsl")
    ),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "matmul_bf16_sg",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16_sg.wgsl")
    ),
};

pub const SOURCE_VEC: KernelSource = KernelSource {
    name: "matmul_bf16_vec",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
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

impl Matmul<'_> {
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
                if !self.k.is_multiple_of(8) || per_group == 0 || !SG_THREADS.is_multiple_of(size * split) {
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
