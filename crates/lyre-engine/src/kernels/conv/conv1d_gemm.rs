//! The GEMM conv1d kernel (`conv1d_gemm.wgsl`): the same layers, parameters and epilogue as the
//! direct kernel, computed as an implicit GEMM on the register-blocked tile of `gemm_tile.wgsl`
//! (or `coop_tile.wgsl`), for layers whose tick has many rows (the vocoder from a few sessions
//! up). A [`Conv1d`] site records it as the [`Alternative`](crate::gpu::Alternative) of the
//! direct kernel, chosen at record time from the live session count.

use super::conv1d::{Conv1d, Params};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::seq_view::{check_groups, sequence_dispatch};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_gemm",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("../shared/gemm_tile.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`).
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "conv1d_gemm_coop",
    wgsl: concat!(
        include_str!("../shared/coop_tile.wgsl"),
        include_str!("../shared/seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The GEMM dispatch of `site` with `tile`, with `params` and `buffers` as [`Conv1d`] prepared
/// them. Tiles run over the rows of all sessions as one sequence, so no tile is cut short at the
/// end of a session (160 rows per session would otherwise fill 128-row tiles to 62 %).
pub(super) fn dispatch(
    site: &Conv1d,
    env: &Env,
    mut params: Params,
    buffers: &[&wgpu::Buffer],
    tile: GemmTile,
) -> Result<Dispatch> {
    let grid = Grid {
        x: Extent::Fixed(check_groups(site.label, site.conv.shape.cols().div_ceil(tile.cols()))?),
        y: Extent::RowsTimes {
            count: RowCount::Sessions,
            times: site.rows_in.max(1),
            per_group: tile.rows(),
        },
        z: Extent::Fixed(1),
    };
    if tile.coop && !env.ctx.has_coop_f16() {
        return Err(EngineError::Gpu(format!(
            "conv `{}`: the adapter has no cooperative matrices",
            site.label
        )));
    }
    params.y_rows = tile.rows();
    let pipeline = env.ctx.pipeline(if tile.coop { SOURCE_COOP } else { SOURCE }, &tile.constants());
    Ok(sequence_dispatch(env, pipeline, site.label, &params, site.sessions, buffers, grid))
}
