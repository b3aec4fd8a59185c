//! The tiled conv1d kernel (`conv1d_tiled.wgsl`): the same layers, parameters and epilogue as
//! [`conv1d`](super::conv1d), computed in tiles of 64 rows × 64 virtual columns with a 4 × 4
//! register block per thread and x rows and weight columns staged through workgroup memory, for
//! layers whose tick has many rows (the vocoder at large batch). A [`Conv1d`] site records it
//! as the [`Alternative`] of today's kernel, chosen at record time from the live session count.

use super::conv1d::{Conv1d, Params};
use super::seq_view::sequence_dispatch;
use super::Env;
use crate::error::Result;
use crate::gpu::{Alternative, Dispatch, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_tiled",
    wgsl: concat!(
        include_str!("seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_tiled.wgsl")
    ),
};

pub const SOURCE_GEMM: KernelSource = KernelSource {
    name: "conv1d_gemm",
    wgsl: concat!(
        include_str!("seq_view.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("gemm_tile.wgsl"),
        include_str!("conv1d_gemm.wgsl")
    ),
};

/// Input rows and virtual columns per workgroup (`BM`, `BN` in the WGSL).
pub const TILE_ROWS: u32 = 64;
pub const TILE_COLS: u32 = 64;

/// Default live rows (sessions × input rows per session) from which a layer takes the tiled
/// kernel. Batch 1 (at most 1920 rows, in the last vocoder block) keeps today's kernel, whose
/// many small workgroups suit a latency-bound tick; a 64 × 64 tile needs a few hundred tiles to
/// fill an H200. Not yet measured: a first guess to tune with docs/PERFORMANCE.md's figures.
const DEFAULT_MIN_ROWS: u32 = 4096;
/// Layers narrower than this keep today's kernel by default (the output conv has 1 column, which
/// would leave 63 of every 64 tile columns idle).
const DEFAULT_MIN_COLS: u32 = 32;

/// When a layer takes the tiled kernel: at least `min_rows` live rows and `min_cols` virtual
/// columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TiledPolicy {
    pub min_rows: u32,
    pub min_cols: u32,
}

/// The default policy, or `LYRE_CONV_TILED_MIN_ROWS=n`: every layer (however narrow) from `n`
/// live rows on; tests set it to 1 to run the tiled kernel on the tiny fixture.
pub fn policy() -> TiledPolicy {
    match std::env::var("LYRE_CONV_TILED_MIN_ROWS").ok().and_then(|v| v.parse().ok()) {
        Some(min_rows) => TiledPolicy { min_rows, min_cols: 1 },
        None => TiledPolicy { min_rows: DEFAULT_MIN_ROWS, min_cols: DEFAULT_MIN_COLS },
    }
}

/// The tiled dispatch of `site`, with `params` and `buffers` as [`Conv1d`] prepared them.
pub(super) fn dispatch(
    site: &Conv1d,
    env: &Env,
    mut params: Params,
    buffers: &[&wgpu::Buffer],
) -> Result<Dispatch> {
    let (y_rows, grid) = site.grid(TILE_COLS, TILE_ROWS)?;
    params.y_rows = y_rows;
    let source = match std::env::var("LYRE_CONV_KERNEL").as_deref() {
        Ok("tiled") => SOURCE,
        _ => SOURCE_GEMM,
    };
    let pipeline = env.ctx.pipeline(source, &[]);
    Ok(sequence_dispatch(env, pipeline, site.label, &params, site.sessions, buffers, grid))
}

/// The tiled dispatch as the alternative for ticks of at least [`policy`]'s row count, when the
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
        dispatches: vec![dispatch(site, env, params, buffers)?],
    }))
}
