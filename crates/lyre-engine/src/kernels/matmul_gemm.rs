//! The register-blocked GEMM for matmuls over many rows (`matmul_bf16_gemm.wgsl`, on the tile of
//! `gemm_tile.wgsl`) and the reduction of its split-K partials (`matmul_split_reduce.wgsl`).
//!
//! A tick's row count picks a level: tiles of 16, 32 or 64 rows (or larger ones from 256 rows),
//! and below 1024 rows K split over several workgroups so that a matmul of a few dozen rows
//! still keeps every multiprocessor busy (a 1024-wide `o` projection is only 16 column tiles).
//! The partial sums go to the shared [`Env::partials`] buffer and a second dispatch adds them
//! in a fixed order.

use super::gemm_tile::GemmTile;
use super::matmul::{Matmul, MatmulKernel, Params};
use super::{groups, Env};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, GpuContext, Grid, KernelSource};

pub const SOURCE: KernelSource = KernelSource {
    name: "matmul_bf16_gemm",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("gemm_tile.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};
/// The same kernel on cooperative matrices (`coop_tile.wgsl` in place of `gemm_tile.wgsl`).
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "matmul_bf16_gemm_coop",
    wgsl: concat!(
        include_str!("coop_tile.wgsl"),
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_bf16_gemm.wgsl")
    ),
};
pub const SOURCE_REDUCE: KernelSource = KernelSource {
    name: "matmul_split_reduce",
    wgsl: concat!(
        include_str!("bf16.wgsl"),
        include_str!("matmul_common.wgsl"),
        include_str!("matmul_weights4.wgsl"),
        include_str!("matmul_split_reduce.wgsl")
    ),
};

/// Columns per workgroup of the reduction.
const REDUCE_COLS: u32 = 256;
/// The most ways K is split.
const MAX_SPLIT: u32 = 32;
/// Bytes of split-K partials a tick plan provides: 1023 rows of 8192 columns.
const PARTIALS_BYTES: u64 = 1023 * 8 * 1024 * 4;
/// Rows from which matmuls take the GEMM on GPUs (below: the subgroup mat-vec).
const DEFAULT_MIN_ROWS: u32 = 8;
/// Rows from which the GEMM tiles run on cooperative matrices where the adapter has them. From
/// 17 rows batch 32 measured 19.0 ms against 19.2, but the fixture's prompts (17-32 tokens)
/// would then prefill on f16 operands, past the parity tests' f32 tolerances.
const DEFAULT_COOP_MIN_ROWS: u32 = 33;

#[derive(Clone, Copy)]
/// One level: ticks of `min_rows..=max_rows` rows take `tile`, and K is split until the grid
/// has about `target_groups` workgroups at `min_rows` rows (no split when 0).
struct Level {
    min_rows: u32,
    max_rows: u32,
    tile: GemmTile,
    target_groups: u32,
}

/// Small tiles need more workgroups in flight to keep enough weight loads outstanding; from 1024
/// rows there is work enough without splitting. `large` is the tile from 256 rows.
fn levels_with(large: GemmTile) -> [Level; 5] {
    [
        Level { min_rows: 1, max_rows: 16, tile: GemmTile::ROWS_16, target_groups: 1024 },
        Level { min_rows: 17, max_rows: 32, tile: GemmTile::ROWS_32, target_groups: 512 },
        Level { min_rows: 33, max_rows: 255, tile: GemmTile::ROWS_64, target_groups: 256 },
        Level { min_rows: 256, max_rows: 1023, tile: large, target_groups: 256 },
        Level { min_rows: 1024, max_rows: u32::MAX, tile: large, target_groups: 0 },
    ]
}

/// The tile from 256 rows: `LYRE_GEMM_LARGE_TILE` (a [`GemmTile::by_name`] name), else 64 rows.
fn large_tile() -> GemmTile {
    std::env::var("LYRE_GEMM_LARGE_TILE")
        .ok()
        .and_then(|v| GemmTile::by_name(&v))
        .unwrap_or(GemmTile::ROWS_64)
}

/// Rows from which matmuls take the GEMM: `LYRE_GEMM_MIN_ROWS` when set (`0` turns it off;
/// tests set 1 to run it on lavapipe), else [`DEFAULT_MIN_ROWS`] on GPUs and never on CPU
/// adapters, where the per-thread kernel is faster.
pub fn min_rows(ctx: &GpuContext) -> Option<u32> {
    match std::env::var("LYRE_GEMM_MIN_ROWS").ok().and_then(|v| v.parse::<u32>().ok()) {
        Some(0) => None,
        Some(n) => Some(n),
        None => (!ctx.is_cpu()).then_some(DEFAULT_MIN_ROWS),
    }
}

/// Rows from which the GEMM's tiles run on cooperative matrices: `None` where the adapter has
/// none ([`GpuContext::has_coop_f16`]), else `LYRE_COOP_MIN_ROWS` or [`DEFAULT_COOP_MIN_ROWS`].
pub fn coop_min_rows(ctx: &GpuContext) -> Option<u32> {
    let rows = std::env::var("LYRE_COOP_MIN_ROWS").ok().and_then(|v| v.parse::<u32>().ok());
    ctx.has_coop_f16().then(|| rows.unwrap_or(DEFAULT_COOP_MIN_ROWS).max(1))
}

/// Bytes of split-K partials a plan should allocate for [`Env::partials`] on this adapter.
pub fn partials_bytes(ctx: &GpuContext) -> u64 {
    if min_rows(ctx).is_some() {
        PARTIALS_BYTES
    } else {
        16
    }
}

/// The most ways K may be split: `LYRE_GEMM_MAX_SPLIT` (1 turns splitting off), else 32.
fn max_split() -> u32 {
    std::env::var("LYRE_GEMM_MAX_SPLIT").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_SPLIT).max(1)
}

/// The GEMM alternatives of an `n × k` matmul: (first row count, kernel), for every level that
/// [`min_rows`] and `floor` (the first row count left to the GEMM) leave and whose chunk
/// divides K; from [`coop_min_rows`] on, on cooperative matrices.
pub fn levels(env: &Env, n: u32, k: u32, floor: u32) -> Vec<(u32, MatmulKernel)> {
    let Some(from) = min_rows(env.ctx) else { return Vec::new() };
    let from = from.max(floor);
    let coop_from = coop_min_rows(env.ctx);
    let mut out = Vec::new();
    for l in levels_with(large_tile()).iter().filter(|l| l.max_rows >= from && k % l.tile.bk == 0) {
        let split = split_for(l, n, k, env.partials.size());
        let first = l.min_rows.max(from);
        // The level's cooperative form and the first row count it takes, where it has one.
        let coop = coop_from
            .filter(|&c| c <= l.max_rows)
            .map(|c| (l.tile.coop_for(), first.max(c)))
            .filter(|(t, _)| k % t.bk == 0);
        if coop.is_none_or(|(_, coop_first)| first < coop_first) {
            out.push((first, MatmulKernel::Gemm { tile: l.tile, split }));
        }
        if let Some((tile, coop_first)) = coop {
            // A cooperative chunk is multiplied faster, so fewer workgroups keep the GPU busy: half
            // the register tile's target (measured best for every shape at 32-256 rows,
            // docs/PERFORMANCE.md v10).
            let level = Level { tile, target_groups: l.target_groups / 2, ..*l };
            let split = split_for(&level, n, k, env.partials.size());
            out.push((coop_first, MatmulKernel::Gemm { tile, split }));
        }
    }
    out
}

/// Doubles the split while the grid is short of the level's target, each split keeps at least
/// two chunks of K, and the partials of the level's largest tick fit `partial_bytes`.
fn split_for(level: &Level, n: u32, k: u32, partial_bytes: u64) -> u32 {
    let tiles = groups(n, level.tile.cols()) * groups(level.min_rows, level.tile.rows());
    let chunks = k / level.tile.bk;
    let limit = max_split().min(MAX_SPLIT);
    let mut split = 1;
    while split * 2 <= limit
        && tiles * split < level.target_groups
        && chunks >= 4 * split
        && (2 * split) as u64 * level.max_rows as u64 * n as u64 * 4 <= partial_bytes
    {
        split *= 2;
    }
    split
}

/// The GEMM dispatch and, when K is split, the reduction after it.
pub(super) fn dispatches(
    site: &Matmul,
    env: &Env,
    params: Params,
    buffers: &[&wgpu::Buffer; 5],
    tile: GemmTile,
    split: u32,
) -> Result<Vec<Dispatch>> {
    if site.k % tile.bk != 0 || !tile.is_known() || split == 0 || (tile.coop && !env.ctx.has_coop_f16()) {
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
            label: site.label.to_string(),
            bind_group: ctx.bind_group_at(site.label, &reduce, &used),
            pipeline: reduce,
            grid: Grid::new(Extent::Fixed(groups(site.n, REDUCE_COLS)), Extent::rows(site.rows)),
            alternatives: Vec::new(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The talker's and code predictor's matmul shapes (n, k) on 0.6B and 1.7B.
    const SHAPES: [(u32, u32); 8] = [
        (4096, 1024),
        (1024, 2048),
        (6144, 1024),
        (1024, 3072),
        (3072, 1024),
        (2048, 1024),
        (8192, 2048),
        (2048, 6144),
    ];

    #[test]
    fn levels_cover_every_row_count_once() {
        let levels = levels_with(GemmTile::ROWS_128);
        assert_eq!(levels[0].min_rows, 1);
        for pair in levels.windows(2) {
            assert_eq!(pair[1].min_rows, pair[0].max_rows + 1);
            assert!(pair[0].tile.rows() <= pair[1].tile.rows());
        }
        assert_eq!(levels.last().unwrap().max_rows, u32::MAX);
    }

    #[test]
    fn splits_fill_the_grid_within_the_partials() {
        for level in levels_with(GemmTile::ROWS_128) {
            for (n, k) in SHAPES {
                let split = split_for(&level, n, k, PARTIALS_BYTES);
                assert!(split.is_power_of_two() && split <= MAX_SPLIT, "{n}x{k}: split {split}");
                if level.target_groups == 0 {
                    assert_eq!(split, 1, "no split from {} rows", level.min_rows);
                    continue;
                }
                let fits = |s: u32| s as u64 * level.max_rows as u64 * n as u64 * 4 <= PARTIALS_BYTES;
                assert!(split == 1 || fits(split), "{n}x{k} at {} rows: partials overflow", level.min_rows);
                assert!(k / level.tile.bk / split >= 2, "{n}x{k}: fewer than two chunks per split");
                // Stopped for a reason: the target reached, K too short, the partials full, or the cap.
                let tiles = groups(n, level.tile.cols()) * groups(level.min_rows, level.tile.rows());
                let reached = tiles * split >= level.target_groups;
                let short = k / level.tile.bk < 4 * split;
                assert!(reached || short || !fits(2 * split) || split == MAX_SPLIT, "{n}x{k}: split {split}");
            }
        }
    }

    #[test]
    fn a_1024_wide_projection_of_32_rows_fills_512_workgroups() {
        let level = &levels_with(GemmTile::ROWS_128)[1];
        assert_eq!(level.tile, GemmTile::ROWS_32);
        // o: 16 column tiles of 64, K = 2048 in 64 chunks of 32 → 32 splits of 2 chunks.
        assert_eq!(split_for(level, 1024, 2048, PARTIALS_BYTES), 32);
        // Without room for partials there is no split.
        assert_eq!(split_for(level, 1024, 2048, 16), 1);
    }
}
