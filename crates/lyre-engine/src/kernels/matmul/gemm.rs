//! The register-blocked GEMM for matmuls over many rows (`matmul_bf16_gemm.wgsl`, on the tile of
//! `gemm_tile.wgsl` or `coop_tile.wgsl`). Which tile and split a tick's row count takes is
//! [`KernelChoice::matmul_plan`](crate::kernels::select::KernelChoice::matmul_plan)'s. With K
//! split, the partial sums go to the shared [`Env::partials`] buffer and the last workgroup of
//! each tile adds them in a fixed order (`split_k.wgsl`): one dispatch either way.

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
        include_str!("split_k.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};
/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`).
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "matmul_bf16_gemm_coop",
    wgsl: concat!(
        include_str!("../shared/coop_tile.wgsl"),
        include_str!("../shared/bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("split_k.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};

/// The GEMM dispatch.
pub(super) fn dispatch(
    site: &Matmul,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer; 5],
    tile: GemmTile,
    split: u32,
) -> Result<Dispatch> {
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
    Ok(Dispatch {
        label: site.label.to_string(),
        bind_group: ctx.bind_group(site.label, &gemm, &bound),
        pipeline: gemm,
        grid: Grid {
            x: Extent::Fixed(groups(site.n, tile.cols())),
            y: Extent::Rows { count: site.rows, per_group: tile.rows() },
            z: Extent::Fixed(split),
        },
        alternatives: Vec::new(),
    })
}
