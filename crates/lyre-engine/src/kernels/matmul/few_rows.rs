//! The matmul for ticks of a few rows (`matmul_bf16_few_rows.wgsl`): each weight is loaded once
//! for up to 32 rows, and the threads of a row quad share their x loads. On the H200 it beats the
//! mat-vec and the GEMM only for 5 to 8 rows of the wide matmuls (qkv, gate_up, 4096 columns and
//! more): below, the mat-vec's four-row tile is as fast; above, its threads' serial chains grow
//! with the rows and the GEMM wins.

use super::site::{Matmul, Params};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource};
use crate::kernels::select::few_rows_columns;
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16_few_rows",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights8.wgsl"),
        include_str!("matmul_bf16_few_rows.wgsl")
    ),
};

/// The dispatch of `kernel` (a [`MatmulKernel::FewRows`](crate::kernels::select::MatmulKernel::FewRows)).
pub(super) fn dispatch(
    site: &Matmul,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer; 5],
    (quads, split, cpt): (u32, u32, u32),
) -> Result<Dispatch> {
    let valid = [1, 2, 4, 8].contains(&quads) && [1, 2, 4, 8].contains(&split) && [1, 2].contains(&cpt);
    if !site.k.is_multiple_of(8) || !valid {
        return Err(EngineError::Gpu(format!(
            "matmul `{}`: the few-rows kernel needs k % 8 == 0 (k = {}), 1, 2, 4 or 8 row quads and \
             K parts, and 1 or 2 columns per thread (got {quads}, {split}, {cpt})",
            site.label, site.k
        )));
    }
    let ctx = env.ctx;
    let constants =
        [("QP", quads as f64), ("SPLIT", split as f64), ("CPT", cpt as f64), ("INPUT", site.input.mode())];
    let pipeline = ctx.pipeline(SOURCE, &constants);
    let uniform = ctx.uniform(site.label, &params);
    let mut bound: Vec<&wgpu::Buffer> = vec![&uniform, env.counts];
    bound.extend_from_slice(buffers);
    Ok(Dispatch {
        label: site.label.to_string(),
        bind_group: ctx.bind_group(site.label, &pipeline, &bound),
        pipeline,
        grid: Grid::new(Extent::Fixed(groups(site.n, few_rows_columns(quads, split, cpt))), Extent::Fixed(1)),
        alternatives: Vec::new(),
    })
}
