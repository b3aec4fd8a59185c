//! The GEMM conv1d kernel (`conv1d_gemm.wgsl`): the same layers, parameters and epilogue as the
//! direct kernel, computed as an implicit GEMM on the register-blocked tile of `gemm_tile.wgsl`
//! (or `coop_tile.wgsl`), for layers whose tick has many rows (the vocoder from a few sessions
//! up). A [`Conv1d`] site records it as the [`Alternative`](crate::gpu::Alternative) of the
//! direct kernel, chosen at record time from the live session count. Where a tick's tile grid
//! is too short to fill the GPU, K is split over several workgroups per tile and a second
//! dispatch adds their partial sums (`conv1d_split_reduce.wgsl`).

use super::conv1d::{Conv1d, Params, BOUND};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::seq_view::{check_groups, sequence_dispatch};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_gemm",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f32.wgsl"),
        include_str!("conv1d_gemm_stage_f32.wgsl"),
        include_str!("../shared/gemm_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("../shared/tile_partials.wgsl"),
        include_str!("conv1d_gemm_common.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`), with
/// the f16 copy of the weights ([`PackedConv::weight_f16`](super::PackedConv::weight_f16)) at
/// binding 3.
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "conv1d_gemm_coop",
    wgsl: concat!(
        include_str!("../shared/coop_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("../shared/tile_partials.wgsl"),
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f16.wgsl"),
        include_str!("conv1d_gemm_common.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The second dispatch of a GEMM with a split K: the partial sums added and the epilogue.
pub const SOURCE_REDUCE: KernelSource = KernelSource {
    name: "conv1d_split_reduce",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_split_reduce.wgsl")
    ),
};

/// Output columns per workgroup of the reduction.
const REDUCE_COLS: u32 = 256;

/// The GEMM dispatch of `site` with `tile`, with `params` and `buffers` as [`Conv1d`] prepared
/// them, and with `split` > 1 the reduction after it (K split over `split` workgroups per tile,
/// their partial sums in [`Env::partials`]). Tiles run over the rows of all sessions as one
/// sequence, so no tile is cut short at the end of a session (160 rows per session would
/// otherwise fill 128-row tiles to 62 %).
pub(super) fn dispatches(
    site: &Conv1d,
    env: &Env,
    mut params: Params,
    buffers: [&wgpu::Buffer; BOUND],
    tile: GemmTile,
    split: u32,
) -> Result<Vec<Dispatch>> {
    let grid = gemm_grid(site, tile, split)?;
    let (source, buffers) =
        if tile.coop { (SOURCE_COOP, coop_buffers(site, env, buffers)?) } else { (SOURCE, buffers) };
    params.y_rows = tile.rows();
    let mut constants = tile.constants().to_vec();
    constants.push(("SPLIT", split.max(1) as f64));
    let pipeline = env.ctx.pipeline(source, &constants);
    let mut bound = buffers.to_vec();
    bound.push(env.partials);
    let gemm = sequence_dispatch(env, pipeline, site.label, &params, site.sessions, &bound, grid);
    if split <= 1 {
        return Ok(vec![gemm]);
    }
    let reduce = env.ctx.pipeline(SOURCE_REDUCE, &[("SPLIT", split as f64)]);
    let uniform = env.ctx.uniform(site.label, &params);
    // The reduction reads neither the weights (3) nor the input (6).
    let bind_group = env.ctx.bind_group_at(
        site.label,
        &reduce,
        &[
            (0, &uniform),
            (1, env.counts),
            (2, site.sessions),
            (4, buffers[1]),
            (5, buffers[2]),
            (7, buffers[4]),
            (8, buffers[5]),
            (9, buffers[6]),
            (10, buffers[7]),
            (11, buffers[8]),
            (12, env.partials),
        ],
    );
    let rows = Extent::RowsTimes { count: RowCount::Sessions, times: site.rows_in.max(1), per_group: 1 };
    let reduce = Dispatch {
        // Its own row in per-dispatch profiles.
        label: format!("{}.reduce", site.label),
        pipeline: reduce,
        bind_group,
        grid: Grid {
            x: Extent::Fixed(site.conv.shape.cols().div_ceil(REDUCE_COLS)),
            y: rows,
            z: Extent::Fixed(1),
        },
        alternatives: Vec::new(),
    };
    Ok(vec![gemm, reduce])
}

/// The GEMM's grid over `site` with `tile`: its column tiles (x), row tiles over the rows of all
/// sessions (y), K split `split` ways (z).
pub(super) fn gemm_grid(site: &Conv1d, tile: GemmTile, split: u32) -> Result<Grid> {
    Ok(Grid {
        x: Extent::Fixed(check_groups(site.label, site.conv.shape.cols().div_ceil(tile.cols()))?),
        y: Extent::RowsTimes {
            count: RowCount::Sessions,
            times: site.rows_in.max(1),
            per_group: tile.rows(),
        },
        z: Extent::Fixed(split.max(1)),
    })
}

/// `buffers` with the f16 weights in place of the f32 ones, or why the cooperative kernel cannot
/// run on this site.
fn coop_buffers<'a>(
    site: &'a Conv1d,
    env: &Env,
    mut buffers: [&'a wgpu::Buffer; BOUND],
) -> Result<[&'a wgpu::Buffer; BOUND]> {
    buffers[0] = f16_weights(site, env)?;
    Ok(buffers)
}

/// The f16 copy of `site`'s weights that the cooperative kernels read, or why they cannot run on
/// this site.
pub(super) fn f16_weights<'a>(site: &'a Conv1d, env: &Env) -> Result<&'a wgpu::Buffer> {
    if !env.ctx.has_coop_f16() {
        return Err(EngineError::Gpu(format!(
            "conv `{}`: the adapter has no cooperative matrices",
            site.label
        )));
    }
    site.conv.weight_f16.as_ref().ok_or_else(|| {
        EngineError::Gpu(format!(
            "conv `{}`: its weights have no f16 copy for the cooperative-matrix kernel (uploaded \
             without cooperative matrices)",
            site.label
        ))
    })
}
