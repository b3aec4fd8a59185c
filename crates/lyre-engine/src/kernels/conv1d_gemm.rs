//! The GEMM conv1d kernel (`conv1d_gemm.wgsl`): the same layers, parameters and epilogue as
//! [`conv1d`](super::conv1d), computed as an implicit GEMM on the register-blocked tile of
//! `gemm_tile.wgsl`, for layers whose tick has many rows (the vocoder from a few sessions up).
//! A [`Conv1d`] site records it as the [`Alternative`] of today's kernel, chosen at record time
//! from the live session count.

use super::conv1d::{Conv1d, Params};
use super::gemm_tile::GemmTile;
use super::seq_view::{check_groups, sequence_dispatch};
use super::Env;
use crate::error::Result;
use crate::gpu::{Alternative, Dispatch, Extent, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_gemm",
    wgsl: concat!(
        include_str!("seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("gemm_tile.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// Default live rows (sessions × input rows per session) from which a layer takes the GEMM.
/// Batch 1 (at most 1920 rows, in the last vocoder block) keeps today's kernel, whose many small
/// workgroups suit a latency-bound tick; a 128-row tile needs a few hundred tiles to fill an
/// H200.
const DEFAULT_MIN_ROWS: u32 = 4096;
/// Layers narrower than this keep today's kernel by default (the output conv has 1 column, which
/// would leave 63 of every 64 tile columns idle).
const DEFAULT_MIN_COLS: u32 = 32;

/// When a layer takes the GEMM: at least `min_rows` live rows and `min_cols` virtual columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPolicy {
    pub min_rows: u32,
    pub min_cols: u32,
}

/// The default policy, or `LYRE_CONV_GEMM_MIN_ROWS=n`: every layer (however narrow) from `n`
/// live rows on; tests set it to 1 to run the GEMM on the tiny fixture.
pub fn policy() -> GemmPolicy {
    match std::env::var("LYRE_CONV_GEMM_MIN_ROWS").ok().and_then(|v| v.parse().ok()) {
        Some(min_rows) => GemmPolicy { min_rows, min_cols: 1 },
        None => GemmPolicy { min_rows: DEFAULT_MIN_ROWS, min_cols: DEFAULT_MIN_COLS },
    }
}

/// The tile of the conv layers: `LYRE_CONV_TILE` (a [`GemmTile::by_name`] name) when set, else
/// 128 rows × 64 columns. Measured on an H200 at batch 256 (docs/PERFORMANCE.md, v7): codec
/// 61.5 ms with it, 64.4 ms with 128 × 128 and 67.8 ms with 64 × 64.
pub fn tile() -> GemmTile {
    std::env::var("LYRE_CONV_TILE").ok().and_then(|v| GemmTile::by_name(&v)).unwrap_or(GemmTile::ROWS_128)
}

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
    params.y_rows = tile.rows();
    let pipeline = env.ctx.pipeline(SOURCE, &tile.constants());
    Ok(sequence_dispatch(env, pipeline, site.label, &params, site.sessions, buffers, grid))
}

/// The GEMM dispatch as the alternative for ticks of at least [`policy`]'s row count, when the
/// layer is wide enough.
pub(super) fn alternative(
    site: &Conv1d,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer],
) -> Result<Option<Alternative>> {
    let policy = policy();
    if site.conv.shape.cols() < policy.min_cols {
        return Ok(None);
    }
    // The live row count is sessions × rows_in; `Dispatch::record` compares sessions.
    let min_sessions = policy.min_rows.div_ceil(site.rows_in.max(1)).max(1);
    Ok(Some(Alternative {
        rows: RowCount::Sessions,
        min_rows: min_sessions,
        dispatches: vec![dispatch(site, env, params, buffers, tile())?],
    }))
}
