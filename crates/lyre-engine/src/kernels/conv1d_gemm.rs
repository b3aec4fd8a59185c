//! The GEMM conv1d kernel (`conv1d_gemm.wgsl`): the same layers, parameters and epilogue as
//! [`conv1d`](super::conv1d), computed as an implicit GEMM on the register-blocked tile of
//! `gemm_tile.wgsl`, for layers whose tick has many rows (the vocoder from a few sessions up).
//! A [`Conv1d`] site records it as the [`Alternative`] of today's kernel, chosen at record time
//! from the live session count.

use super::conv1d::{Conv1d, Params};
use super::gemm_tile::GemmTile;
use super::seq_view::{check_groups, sequence_dispatch};
use super::Env;
use crate::error::{EngineError, Result};
use crate::gpu::{Alternative, Dispatch, Extent, GpuContext, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_gemm",
    wgsl: concat!(
        include_str!("seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("gemm_tile.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`).
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "conv1d_gemm_coop",
    wgsl: concat!(
        include_str!("coop_tile.wgsl"),
        include_str!("seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// The default policy, from per-layer profiles of both kernels on an H200 at batch 8, 32 and 128
/// (docs/PERFORMANCE.md, v8): the GEMM wins once a layer's tick fills at least one 128-row tile
/// and its grid has ~60 tiles (half the SMs); below that today's kernel, whose many small
/// workgroups suit small ticks, is faster (the decoder's transformer linears never reach it).
const DEFAULT_MIN_ROWS: u32 = 128;
const DEFAULT_MIN_TILES: u32 = 60;
/// Layers narrower than this keep today's kernel by default (the output conv has 1 column, which
/// would leave 63 of every 64 tile columns idle).
const DEFAULT_MIN_COLS: u32 = 32;

/// When a layer takes the GEMM: at least `min_rows` live rows (sessions × input rows per
/// session), `min_cols` virtual columns, and `min_tiles` tiles in the GEMM's grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPolicy {
    pub min_rows: u32,
    pub min_cols: u32,
    pub min_tiles: u32,
}

impl GemmPolicy {
    /// The fewest sessions from which a layer of `rows_in` input rows per session and `cols`
    /// virtual columns takes the GEMM with `tile`; `None` when it never does.
    pub fn min_sessions(&self, rows_in: u32, cols: u32, tile: GemmTile) -> Option<u32> {
        if cols < self.min_cols {
            return None;
        }
        let row_tiles = self.min_tiles.div_ceil(cols.div_ceil(tile.cols())).max(1);
        // ceil(rows / tile rows) >= row_tiles exactly when rows > (row_tiles - 1) · tile rows.
        let rows = self.min_rows.max((row_tiles - 1) * tile.rows() + 1);
        Some(rows.div_ceil(rows_in.max(1)).max(1))
    }
}

/// The default policy, or `LYRE_CONV_GEMM_MIN_ROWS=n`: every layer (however narrow) from `n`
/// live rows on, and no tile count unless `LYRE_CONV_GEMM_MIN_TILES` sets one; tests set the
/// rows to 1 to run the GEMM on the tiny fixture.
pub fn policy() -> GemmPolicy {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    match var("LYRE_CONV_GEMM_MIN_ROWS") {
        Some(min_rows) => {
            GemmPolicy { min_rows, min_cols: 1, min_tiles: var("LYRE_CONV_GEMM_MIN_TILES").unwrap_or(0) }
        }
        None => GemmPolicy {
            min_rows: DEFAULT_MIN_ROWS,
            min_cols: DEFAULT_MIN_COLS,
            min_tiles: DEFAULT_MIN_TILES,
        },
    }
}

/// The tile of the conv layers: `LYRE_CONV_TILE` (a [`GemmTile::by_name`] name) when set, else
/// 128 rows × 64 columns. Measured on an H200 at batch 256 (docs/PERFORMANCE.md, v7): codec
/// 61.5 ms with it, 64.4 ms with 128 × 128 and 67.8 ms with 64 × 64. On cooperative matrices
/// where the adapter has them, unless `LYRE_CONV_COOP=0`.
pub fn tile(ctx: &GpuContext) -> GemmTile {
    let tile = std::env::var("LYRE_CONV_TILE")
        .ok()
        .and_then(|v| GemmTile::by_name(&v))
        .unwrap_or(GemmTile::ROWS_128);
    let coop = ctx.has_coop_f16() && std::env::var("LYRE_CONV_COOP").as_deref() != Ok("0");
    if coop {
        tile.coop_for()
    } else {
        tile
    }
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

/// The GEMM dispatch as the alternative for ticks of at least [`policy`]'s session count for
/// this layer, if any.
pub(super) fn alternative(
    site: &Conv1d,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer],
) -> Result<Option<Alternative>> {
    let tile = tile(env.ctx);
    let Some(min_sessions) = policy().min_sessions(site.rows_in, site.conv.shape.cols(), tile) else {
        return Ok(None);
    };
    Ok(Some(Alternative {
        rows: RowCount::Sessions,
        min_rows: min_sessions,
        dispatches: vec![dispatch(site, env, params, buffers, tile)?],
    }))
}
