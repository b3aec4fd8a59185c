//! The register-blocked GEMM for matmuls over many rows (`matmul_bf16_gemm.wgsl`, on the tile of
//! `gemm_tile.wgsl` or `coop_tile.wgsl`) and the reduction of its split-K partials
//! (`matmul_split_reduce.wgsl`). Which tile and split a tick's row count takes is
//! [`KernelChoice::matmul_plan`](crate::kernels::select::KernelChoice::matmul_plan)'s; the
//! partial sums go to the shared [`Env::partials`] buffer and a second dispatch adds them in a
//! fixed order.

use super::site::{Matmul, Params};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16_gemm",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("../shared/gemm_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("../shared/tile_partials.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};
/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`).
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "matmul_bf16_gemm_coop",
    wgsl: concat!(
        include_str!("../shared/coop_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("../shared/tile_partials.wgsl"),
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};
pub const SOURCE_REDUCE: KernelSource = KernelSource {
    name: "matmul_split_reduce",
    wgsl: concat!(
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_split_reduce.wgsl")
    ),
};

/// Columns per workgroup of the reduction.
const REDUCE_COLS: u32 = 256;

/// The GEMM dispatch and, when K is split, the reduction after it.
pub(super) fn dispatches(
    site: &Matmul,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer; 5],
    tile: GemmTile,
    split: u32,
) -> Result<Vec<Dispatch>> {
    if !site.k.is_multiple_of(tile.bk)
        || !tile.is_known()
        || split == 0
        || (tile.coop && !env.ctx.has_coop_f16())
    {
        return Err(EngineError::Gpu(format!(
            "matmul `{}`: the GEMM needs k ({}) to be a multiple of its chunk, one of the tiles of \
             GemmTile::ALL ({tile:?}; cooperative ones where the adapter has them) and a split of \
             at least 1",
            site.label, site.k
        )));
    }
    let ctx = env.ctx;
    let input = ("INPUT", site.input.mode());
    let uniform = ctx.uniform(site.label, &params);
    let mut bound: Vec<&wgpu::Buffer> = vec![&uniform, env.counts];
    bound.extend_from_slice(buffers);
    bound.push(env.partials);
    let mut constants = tile.constants().to_vec();
    constants.extend([("SPLIT", split as f64), input]);
    let gemm = ctx.pipeline(if tile.coop { SOURCE_COOP } else { SOURCE }, &constants);
    let mut out = vec![Dispatch {
        label: site.label.to_string(),
        bind_group: ctx.bind_group(site.label, &gemm, &bound),
        pipeline: gemm,
        grid: Grid {
            x: Extent::Fixed(groups(site.n, tile.cols())),
            y: Extent::Rows { count: site.rows, per_group: tile.rows() },
            z: Extent::Fixed(split),
        },
        alternatives: Vec::new(),
    }];
    if split > 1 {
        let reduce = ctx.pipeline(SOURCE_REDUCE, &[("SPLIT", split as f64), input]);
        // The reduction reads neither the weights (2) nor gamma (6).
        let used: Vec<(u32, &wgpu::Buffer)> = bound
            .iter()
            .enumerate()
            .filter(|(i, _)| ![2, 6].contains(i))
            .map(|(i, &b)| (i as u32, b))
            .collect();
        out.push(Dispatch {
            // Its own row in per-dispatch profiles.
            label: format!("{}.reduce", site.label),
            bind_group: ctx.bind_group_at(site.label, &reduce, &used),
            pipeline: reduce,
            grid: Grid::new(Extent::Fixed(groups(site.n, REDUCE_COLS)), Extent::rows(site.rows)),
            alternatives: Vec::new(),
        });
    }
    Ok(out)
}
