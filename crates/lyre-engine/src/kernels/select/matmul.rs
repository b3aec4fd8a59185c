//! Which kernel computes a matmul for a tick's row count: the mat-vec kernels for few rows, the
//! few-rows kernel for a handful on wide matmuls, the register-blocked GEMM (on cooperative
//! matrices from `tuning.coop_min_rows`) above; with K split so that small ticks still
//! fill the GPU.

use super::KernelChoice;
use crate::kernels::gemm_tile::GemmTile;
use crate::tuning::MatmulChoice;

/// Which kernel computes a matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatmulKernel {
    /// One thread per output column (best on CPU adapters such as lavapipe).
    PerThread,
    /// One subgroup per output column: coalesced loads and a subgroup reduction (GPUs).
    Subgroup { size: u32 },
    /// `split` subgroups per output column, 16-byte weight loads, four in flight per lane: the
    /// mat-vec for few rows on GPUs. Needs `k % 8 == 0`.
    Matvec { size: u32, split: u32 },
    /// Register-blocked tiles, K split `split` ways (many rows; K a multiple of the tile's
    /// chunk).
    Gemm { tile: GemmTile, split: u32 },
    /// `quads` row quads per pass, K split `split` ways, `cpt` columns per thread: ticks of a
    /// few dozen rows on GPUs.
    FewRows { quads: u32, split: u32, cpt: u32 },
}

impl std::fmt::Display for MatmulKernel {
    /// The kernel as `docs/kernels.md` names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let split = |s: u32| if s > 1 { format!(", K split {s}") } else { String::new() };
        match *self {
            MatmulKernel::PerThread => write!(f, "per-thread"),
            MatmulKernel::Subgroup { .. } => write!(f, "subgroup"),
            MatmulKernel::Matvec { split: s, .. } => write!(f, "mat-vec{}", split(s)),
            MatmulKernel::FewRows { quads, split: s, .. } => write!(f, "few-rows ×{quads}{}", split(s)),
            MatmulKernel::Gemm { tile, split: s } => {
                let on = if tile.coop { " cooperative" } else { "" };
                let chunk = if tile.bk > 32 { format!(", K chunk {}", tile.bk) } else { String::new() };
                write!(f, "GEMM {}x{}{on}{chunk}{}", tile.rows(), tile.cols(), split(s))
            }
        }
    }
}

/// The kernels of one matmul site: `base` below every level, then each level's kernel from its
/// first row count on (the dispatch's alternatives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatmulPlan {
    pub base: MatmulKernel,
    /// (first row count, kernel), as found: [`MatmulPlan::at`] takes the level with the largest
    /// first row count reached (the first of equals).
    pub levels: Vec<(u32, MatmulKernel)>,
}

impl MatmulPlan {
    /// The kernel that runs for a tick of `rows` rows.
    pub fn at(&self, rows: u32) -> MatmulKernel {
        let mut best: Option<(u32, MatmulKernel)> = None;
        for &(min_rows, kernel) in &self.levels {
            if rows >= min_rows && best.is_none_or(|(b, _)| min_rows > b) {
                best = Some((min_rows, kernel));
            }
        }
        best.map_or(self.base, |(_, k)| k)
    }
}

/// Bytes of split-K partials a tick plan provides: 1023 rows of 8192 columns.
const PARTIALS_BYTES: u64 = 1023 * 8 * 1024 * 4;
/// The most ways K is split.
pub const MAX_SPLIT: u32 = 32;
/// Threads per workgroup of the few-rows kernel.
pub const FEW_ROWS_THREADS: u32 = 256;
/// Workgroups the few-rows kernel's split of K aims for.
const FEW_ROWS_TARGET_GROUPS: u32 = 256;
/// Eight-value groups of K each few-rows part keeps at least.
const FEW_ROWS_MIN_PART_GROUPS: u32 = 16;

/// One GEMM level: ticks of `min_rows..=max_rows` rows take `tile`, and K is split until the
/// grid has about `target_groups` workgroups at `min_rows` rows (no split when 0).
#[derive(Clone, Copy)]
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

fn groups(n: u32, per: u32) -> u32 {
    n.div_ceil(per)
}

/// Columns one workgroup of the few-rows kernel computes.
pub fn few_rows_columns(quads: u32, split: u32, cpt: u32) -> u32 {
    FEW_ROWS_THREADS / split / quads * cpt
}

/// Doubles the few-rows kernel's split of K while the grid is short of the target and each part
/// keeps at least [`FEW_ROWS_MIN_PART_GROUPS`] groups of eight values.
fn few_rows_split(n: u32, k: u32, quads: u32, cpt: u32, target: u32) -> u32 {
    let mut split = 1;
    while split < 8
        && groups(n, few_rows_columns(quads, split, cpt)) < target
        && k / 8 / (2 * split) >= FEW_ROWS_MIN_PART_GROUPS
    {
        split *= 2;
    }
    split
}

/// Doubles the GEMM's split while the grid is short of the level's target, each split keeps at
/// least two chunks of K, and the partials of the level's largest tick fit `partial_bytes`.
fn gemm_split(level: &Level, n: u32, k: u32, partial_bytes: u64, max_split: u32) -> u32 {
    let tiles = groups(n, level.tile.cols()) * groups(level.min_rows, level.tile.rows());
    let chunks = k / level.tile.bk;
    let limit = max_split.min(MAX_SPLIT);
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

impl KernelChoice {
    /// `Subgroup` on a real GPU with a fixed subgroup size, else `PerThread`;
    /// `tuning.matmul` overrides it. Attention and RoPE follow this choice.
    pub fn matmul_family(&self) -> MatmulKernel {
        match (self.tuning.matmul, self.adapter.subgroup_size) {
            (MatmulChoice::PerThread, _) | (_, None) => MatmulKernel::PerThread,
            (MatmulChoice::Subgroup, Some(size)) => MatmulKernel::Subgroup { size },
            (_, Some(size)) if !self.adapter.cpu => MatmulKernel::Subgroup { size },
            _ => MatmulKernel::PerThread,
        }
    }

    /// The kernel of an `n × k` matmul of few rows: [`MatmulKernel::Matvec`] where the subgroup
    /// kernels run and `k % 8 == 0` (unless `tuning.matvec` is off).
    pub fn matmul_base(&self, n: u32, k: u32) -> MatmulKernel {
        match self.matmul_family() {
            MatmulKernel::Subgroup { size } if k.is_multiple_of(8) && self.tuning.matvec => {
                MatmulKernel::Matvec { size, split: self.matvec_split(n, k, size) }
            }
            kernel => kernel,
        }
    }

    /// Subgroups per output column of the mat-vec: two where K is at least three times N
    /// (`down`), else one (measured on an H200 at every split); `tuning.matvec_split`
    /// overrides it.
    pub fn matvec_split(&self, n: u32, k: u32, subgroup: u32) -> u32 {
        if self.tuning.matvec_split > 0 {
            return self.tuning.matvec_split.clamp(1, 8);
        }
        if k >= 3 * n && k / 8 >= 4 * subgroup {
            2
        } else {
            1
        }
    }

    /// Every kernel of an `n × k` matmul site (`swiglu`: its input is SwiGLU-gated), with
    /// `partials` bytes of split-K scratch.
    pub fn matmul_plan(&self, n: u32, k: u32, swiglu: bool, partials: u64) -> MatmulPlan {
        let mut levels = self.few_rows_levels(n, k, swiglu);
        levels.extend(self.gemm_levels(n, k, self.gemm_floor(n, k), partials));
        MatmulPlan { base: self.matmul_base(n, k), levels }
    }

    /// Rows from which matmuls take the GEMM, `None` where they never do.
    pub fn gemm_min_rows(&self) -> Option<u32> {
        self.tuning.gemm.enabled(self.adapter.cpu).then_some(self.tuning.gemm_min_rows)
    }

    /// Rows from which the GEMM's tiles run on cooperative matrices; `None` where the adapter
    /// has none (or `tuning.coop` turned them off when the device was made).
    pub fn coop_min_rows(&self) -> Option<u32> {
        self.adapter.coop_f16.then(|| self.tuning.coop_min_rows.max(1))
    }

    /// Bytes of split-K partials a plan should allocate for
    /// [`Env::partials`](crate::kernels::Env::partials).
    pub fn partials_bytes(&self) -> u64 {
        if self.gemm_min_rows().is_some() {
            PARTIALS_BYTES
        } else {
            16
        }
    }

    /// Most rows for which `down` reads SwiGLU(gate_up) in its own input load. With more rows
    /// the subgroup mat-vec recomputes the gating once per output column, and that costs more
    /// than the separate SwiGLU dispatch it saves (H200: down 205 µs instead of ~50 µs at 32
    /// rows).
    pub fn fused_swiglu_max_rows(&self) -> u32 {
        self.tuning.fused_swiglu_max_rows
    }

    /// The cooperative tile for matmuls or convs that would take `tile` on registers
    /// ([`GemmTile::coop_for`], wide unless `tuning.coop_wide` is off).
    pub fn coop_tile(&self, tile: GemmTile) -> GemmTile {
        tile.coop_for(self.tuning.coop_wide)
    }

    /// The cooperative tile of a GEMM level whose register tile is `tile`, from `first` rows:
    /// from `tuning.coop_wide_min_rows` where `tuning.coop_wide` is on,
    /// [`GemmTile::COOP_TALL`] for the 128 × 128 tile (`gemm_large_tile = "128x128"`) and
    /// [`GemmTile::COOP_SHORT`] for levels of at most `tuning.coop_short_max_rows` rows, and
    /// [`GemmTile::COOP_WIDE`] (or [`GemmTile::COOP_WIDE_K64`], `tuning.coop_wide_chunk`) for
    /// the others; else [`KernelChoice::coop_tile`].
    fn coop_level_tile(&self, tile: GemmTile, first: u32, max_rows: u32) -> GemmTile {
        if self.tuning.coop_wide && first >= self.tuning.coop_wide_min_rows {
            if tile == GemmTile::ROWS_128_WIDE {
                GemmTile::COOP_TALL
            } else if max_rows <= self.tuning.coop_short_max_rows {
                GemmTile::COOP_SHORT
            } else if self.tuning.coop_wide_chunk == 64 {
                GemmTile::COOP_WIDE_K64
            } else {
                GemmTile::COOP_WIDE
            }
        } else {
            self.coop_tile(tile)
        }
    }

    /// The GEMM levels of an `n × k` matmul: (first row count, kernel), for every level that
    /// [`KernelChoice::gemm_min_rows`] and `floor` (the first row count left to the GEMM)
    /// leave and whose chunk divides K; from [`KernelChoice::coop_min_rows`] on, on
    /// cooperative matrices.
    fn gemm_levels(&self, n: u32, k: u32, floor: u32, partials: u64) -> Vec<(u32, MatmulKernel)> {
        let Some(from) = self.gemm_min_rows() else { return Vec::new() };
        let from = from.max(floor);
        let coop_from = self.coop_min_rows();
        let max_split = self.tuning.gemm_max_split.max(1);
        let large = GemmTile::named(self.tuning.gemm_large_tile);
        let mut out = Vec::new();
        for l in levels_with(large).iter().filter(|l| l.max_rows >= from && k.is_multiple_of(l.tile.bk)) {
            let split = gemm_split(l, n, k, partials, max_split);
            let first = l.min_rows.max(from);
            // The level's cooperative form and the first row count it takes, where it has one.
            let coop = coop_from
                .filter(|&c| c <= l.max_rows)
                .map(|c| first.max(c))
                .map(|coop_first| (self.coop_level_tile(l.tile, coop_first, l.max_rows), coop_first))
                .filter(|(t, _)| k.is_multiple_of(t.bk));
            if coop.is_none_or(|(_, coop_first)| first < coop_first) {
                out.push((first, MatmulKernel::Gemm { tile: l.tile, split }));
            }
            if let Some((tile, coop_first)) = coop {
                // A cooperative chunk is multiplied faster, so fewer workgroups keep the GPU
                // busy: half the register tile's target (measured best for every shape at
                // 32-256 rows), scaled down where the cooperative tile holds more rows than the
                // register tile it replaces (as many workgroups as that tile's own level; at 8–32
                // rows faster than the register tiles, and than fewer splits, on the H100).
                // The 32-row tile keeps the 64-row one's split: it only stages fewer rows.
                let sized_as = if tile == GemmTile::COOP_SHORT { GemmTile::COOP_WIDE } else { tile };
                let taller = sized_as.rows().max(l.tile.rows()) / l.tile.rows();
                let level = Level { tile, target_groups: l.target_groups / 2 / taller, ..*l };
                let split = gemm_split(&level, n, k, partials, max_split);
                out.push((coop_first, MatmulKernel::Gemm { tile, split }));
            }
        }
        out
    }

    /// The row range the few-rows kernel takes on this adapter (on GPUs 5..=8: on the H200 it
    /// beats the mat-vec and the GEMM only there, for wide matmuls).
    fn few_rows_range(&self) -> Option<(u32, u32)> {
        let max = self.tuning.few_rows_max_rows.min(32);
        let min = self.tuning.few_rows_min_rows.max(1);
        (max >= min && self.tuning.few_rows.enabled(self.adapter.cpu)).then_some((min, max))
    }

    /// Whether an `n × k` matmul takes the few-rows kernel at all: `k % 8 == 0` and at least
    /// `tuning.few_rows_min_cols` output columns.
    fn few_rows_takes(&self, n: u32, k: u32) -> bool {
        k.is_multiple_of(8) && n >= self.tuning.few_rows_min_cols
    }

    /// The few-rows levels: ticks of up to 4 rows take one row quad, 5..=8 two, 9..=16 four,
    /// 17..=32 eight, within [`KernelChoice::few_rows_range`]. None for SwiGLU inputs (every
    /// column's threads would recompute the gate). Two columns per thread from five rows or
    /// 6144 columns (measured best), else one.
    fn few_rows_levels(&self, n: u32, k: u32, swiglu: bool) -> Vec<(u32, MatmulKernel)> {
        let Some((min, max)) = self.few_rows_range() else { return Vec::new() };
        if !self.few_rows_takes(n, k) || swiglu {
            return Vec::new();
        }
        [(1, 4, 1), (5, 8, 2), (9, 16, 4), (17, 32, 8)]
            .into_iter()
            .filter(|&(lo, hi, _)| hi >= min && lo <= max)
            .map(|(lo, _, quads)| {
                let cpt = if lo >= 5 || n >= 6144 { 2 } else { 1 };
                let split = few_rows_split(n, k, quads, cpt, FEW_ROWS_TARGET_GROUPS);
                (lo.max(min), MatmulKernel::FewRows { quads, split, cpt })
            })
            .collect()
    }

    /// The rows from which the GEMM takes over an `n × k` matmul: past the few-rows range where
    /// that kernel takes the shape (whatever the input, so that a SwiGLU site's plain
    /// alternative keeps it).
    fn gemm_floor(&self, n: u32, k: u32) -> u32 {
        match self.few_rows_range() {
            Some((_, max)) if self.few_rows_takes(n, k) => max + 1,
            _ => 0,
        }
    }
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
        let partials = PARTIALS_BYTES;
        for level in levels_with(GemmTile::ROWS_128) {
            for (n, k) in SHAPES {
                let split = gemm_split(&level, n, k, partials, MAX_SPLIT);
                assert!(split.is_power_of_two() && split <= MAX_SPLIT, "{n}x{k}: split {split}");
                if level.target_groups == 0 {
                    assert_eq!(split, 1, "no split from {} rows", level.min_rows);
                    continue;
                }
                let fits = |s: u32| s as u64 * level.max_rows as u64 * n as u64 * 4 <= partials;
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
        assert_eq!(gemm_split(level, 1024, 2048, PARTIALS_BYTES, MAX_SPLIT), 32);
        // Without room for partials there is no split.
        assert_eq!(gemm_split(level, 1024, 2048, 16, MAX_SPLIT), 1);
    }

    #[test]
    fn few_rows_splits_reach_the_target_or_stop_at_short_parts() {
        for (n, k) in [(4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072), (12288, 2048), (64, 64)] {
            for quads in [1, 2, 4, 8] {
                for cpt in [1, 2] {
                    let split = few_rows_split(n, k, quads, cpt, 256);
                    assert!(split.is_power_of_two() && split <= 8);
                    let reached = groups(n, few_rows_columns(quads, split, cpt)) >= 256;
                    let short = k / 8 / (2 * split) < FEW_ROWS_MIN_PART_GROUPS;
                    assert!(reached || short || split == 8, "{n}x{k} q{quads} c{cpt}: split {split}");
                }
            }
        }
        // o at 32 rows: 32 columns per workgroup unsplit (32 groups); eight parts give 256.
        assert_eq!(few_rows_split(1024, 2048, 8, 1, 256), 8);
    }
}
