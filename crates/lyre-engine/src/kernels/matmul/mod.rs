//! Matmuls with bf16 weights: one site ([`Matmul`]) records the kernel the adapter takes for
//! few rows and, as alternatives for ticks of more rows, the few-rows kernel and the GEMM levels
//! ([`KernelChoice::matmul_plan`](crate::kernels::select::KernelChoice::matmul_plan)).

mod few_rows;
mod gemm;
mod matvec;
mod site;

pub use site::{Activation, Input, Matmul, Output};

use crate::error::Result;
use crate::gpu::{Alternative, Dispatch, KernelSource};
use crate::kernels::select::MatmulKernel;
use crate::kernels::Env;

/// The kernels of this family.
pub(super) const SOURCES: [KernelSource; 7] = [
    matvec::SOURCE,
    matvec::SOURCE_SUBGROUP,
    matvec::SOURCE_VEC,
    few_rows::SOURCE,
    gemm::SOURCE,
    gemm::SOURCE_REDUCE,
    gemm::SOURCE_COOP,
];

/// The GEMM on cooperative matrices, and the register-tile GEMM that runs where they are missing.
pub(super) const COOP_AND_FALLBACK: (KernelSource, KernelSource) = (gemm::SOURCE_COOP, gemm::SOURCE);

impl Matmul<'_> {
    /// With the kernel the adapter takes for few rows and, as alternatives for ticks of more
    /// rows, the kernels of the site's other levels.
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        let swiglu = matches!(self.input, Input::SwiGlu);
        let plan = env.kernels.matmul_plan(self.n, self.k, swiglu, env.partials.size());
        let mut d = self.build_with(env, plan.base)?;
        for (min_rows, kernel) in plan.levels {
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
                gemm::dispatches(self, env, params, &buffers, tile, split)
            }
            MatmulKernel::FewRows { quads, split, cpt } => {
                let (params, buffers) = self.prepare(env)?;
                Ok(vec![few_rows::dispatch(self, env, params, &buffers, (quads, split, cpt))?])
            }
            _ => Ok(vec![self.build_with(env, kernel)?]),
        }
    }
}
