//! The matmul for ticks of a few rows (`matmul_bf16_few_rows.wgsl`): each weight is loaded once
//! for up to 32 rows, and the threads of a row quad share their x loads. On the H200 it beats the
//! mat-vec and the GEMM only for 5 to 8 rows of the wide matmuls (qkv, gate_up, 4096 columns and
//! more): below, the mat-vec's four-row tile is as fast; above, its threads' serial chains grow
//! with the rows and the GEMM wins (docs/PERFORMANCE.md v9).
//!
//! Levels (for `LYRE_FEW_ROWS_MIN`/`_MAX` experiments): ticks of up to 4 rows take one row quad,
//! 5..=8 two, 9..=16 four, 17..=32 eight; K is split until the grid has about
//! [`DEFAULT_TARGET_GROUPS`] workgroups.

use super::matmul::{Input, Matmul, MatmulKernel, Params};
use super::{groups, Env};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16_few_rows",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights8.wgsl"),
        include_str!("matmul_bf16_few_rows.wgsl")
    ),
};

const THREADS: u32 = 256;
/// Rows from which matmuls take this kernel on GPUs (below: the mat-vec).
const DEFAULT_MIN_ROWS: u32 = 5;
/// Rows up to which matmuls take this kernel on GPUs (above: the GEMM).
const DEFAULT_MAX_ROWS: u32 = 8;
/// Output columns from which a matmul takes this kernel (narrower ones keep the mat-vec).
const DEFAULT_MIN_COLS: u32 = 4096;
/// Workgroups the split of K aims for.
const DEFAULT_TARGET_GROUPS: u32 = 256;
/// Eight-value groups of K each part keeps at least.
const MIN_PART_GROUPS: u32 = 16;

fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The row range this kernel takes on this adapter: `LYRE_FEW_ROWS_MIN` ..= `LYRE_FEW_ROWS_MAX`
/// (`LYRE_FEW_ROWS_MAX=0` turns it off; setting either runs it on CPU adapters too, for the
/// tests), else 5..=8 on GPUs and never on CPU adapters.
pub fn row_range(env: &Env) -> Option<(u32, u32)> {
    let max = env_u32("LYRE_FEW_ROWS_MAX").unwrap_or(DEFAULT_MAX_ROWS).min(32);
    let min = env_u32("LYRE_FEW_ROWS_MIN").unwrap_or(DEFAULT_MIN_ROWS).max(1);
    let forced = std::env::var("LYRE_FEW_ROWS_MIN").is_ok() || std::env::var("LYRE_FEW_ROWS_MAX").is_ok();
    (max >= min && (forced || !env.ctx.is_cpu())).then_some((min, max))
}

/// Whether an `n × k` matmul takes this kernel at all: `k % 8 == 0` and at least
/// `LYRE_FEW_ROWS_MIN_COLS` (default 4096) output columns.
fn takes(n: u32, k: u32) -> bool {
    k % 8 == 0 && n >= env_u32("LYRE_FEW_ROWS_MIN_COLS").unwrap_or(DEFAULT_MIN_COLS)
}

/// Columns one workgroup computes.
pub fn columns(quads: u32, split: u32, cpt: u32) -> u32 {
    THREADS / split / quads * cpt
}

/// Doubles the split of K while the grid is short of the target and each part keeps at least
/// [`MIN_PART_GROUPS`] groups of eight values.
pub fn split_for(n: u32, k: u32, quads: u32, cpt: u32, target: u32) -> u32 {
    let mut split = 1;
    while split < 8
        && groups(n, columns(quads, split, cpt)) < target
        && k / 8 / (2 * split) >= MIN_PART_GROUPS
    {
        split *= 2;
    }
    split
}

/// This kernel's alternatives for an `n × k` matmul reading `input`: (first row count, kernel)
/// per level inside [`row_range`], where it [`takes`] the shape. None for SwiGLU inputs (every
/// column's threads would recompute the gate). Two columns per thread from five rows or 6144
/// columns (measured best), else one.
pub fn levels(env: &Env, n: u32, k: u32, input: &Input) -> Vec<(u32, MatmulKernel)> {
    let Some((min, max)) = row_range(env) else { return Vec::new() };
    if !takes(n, k) || matches!(input, Input::SwiGlu) {
        return Vec::new();
    }
    [(1, 4, 1), (5, 8, 2), (9, 16, 4), (17, 32, 8)]
        .into_iter()
        .filter(|&(lo, hi, _)| hi >= min && lo <= max)
        .map(|(lo, _, quads)| {
            let cpt = if lo >= 5 || n >= 6144 { 2 } else { 1 };
            let split = split_for(n, k, quads, cpt, DEFAULT_TARGET_GROUPS);
            (lo.max(min), MatmulKernel::FewRows { quads, split, cpt })
        })
        .collect()
}

/// The rows from which the GEMM takes over an `n × k` matmul: past this kernel's range where it
/// takes the shape (whatever the input, so that a SwiGLU site's plain alternative keeps it).
pub fn gemm_floor(env: &Env, n: u32, k: u32) -> u32 {
    match row_range(env) {
        Some((_, max)) if takes(n, k) => max + 1,
        _ => 0,
    }
}

/// The dispatch of `kernel` (a [`MatmulKernel::FewRows`]).
pub(super) fn dispatch(
    site: &Matmul,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer; 5],
    (quads, split, cpt): (u32, u32, u32),
) -> Result<Dispatch> {
    let valid = [1, 2, 4, 8].contains(&quads) && [1, 2, 4, 8].contains(&split) && [1, 2].contains(&cpt);
    if site.k % 8 != 0 || !valid {
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
        grid: Grid::new(Extent::Fixed(groups(site.n, columns(quads, split, cpt))), Extent::Fixed(1)),
        alternatives: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_reach_the_target_or_stop_at_short_parts() {
        for (n, k) in [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072), (12288, 2048), (64, 64)] {
            for quads in [1, 2, 4, 8] {
                for cpt in [1, 2] {
                    let split = split_for(n, k, quads, cpt, 256);
                    assert!(split.is_power_of_two() && split <= 8);
                    let reached = groups(n, columns(quads, split, cpt)) >= 256;
                    let short = k / 8 / (2 * split) < MIN_PART_GROUPS;
                    assert!(reached || short || split == 8, "{n}x{k} q{quads} c{cpt}: split {split}");
                }
            }
        }
        // o at 32 rows: 32 columns per workgroup unsplit (32 groups); eight parts give 256.
        assert_eq!(split_for(1024, 2048, 8, 1, 256), 8);
    }
}
