//! Which kernel computes a codec conv layer: the narrow kernel for layers of a few output
//! columns, else the direct kernel (many small workgroups, K split over slices) or, for ticks
//! with many rows, the implicit GEMM on the tiles of the matmuls.

use super::KernelChoice;
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::seq_view::MAX_GROUPS;

/// Lanes per K slice of the direct conv kernel (its `WG`).
pub const CONV_WORKGROUP: u32 = 64;

/// Layers of at most this many virtual columns take the narrow kernel at every tick size where
/// `tuning.conv_narrow` allows (`conv1d_narrow.wgsl`'s `MAX_COLS`): on a GPU the direct
/// kernel's thread per column would walk the whole reduction alone, and a GEMM tile would leave
/// most of its columns idle.
pub const NARROW_MAX_COLS: u32 = 4;

/// When a layer takes the GEMM: at least `min_rows` live rows (sessions × input rows per
/// session), `min_cols` virtual columns, and `min_tiles` workgroups in the GEMM's grid. Per-layer
/// profiles of both kernels on an H200 at batch 8, 32 and 128 set the first bounds: without a
/// split K the GEMM wins once a layer's tick fills a 128-row tile and its grid has ~60 tiles
/// (half the SMs); below that the direct kernel, whose many small workgroups suit small ticks,
/// is faster. Where a tick's tile grid is short of [`SPLIT_TARGET_GROUPS`] workgroups, K is now
/// split over up to `max_split` workgroups per tile and `min_tiles` counts the split grid's
/// workgroups; with that, the GEMM from 32 rows measured faster than from 128 on an H100 (batch
/// 8 and 16: 2–4 % per tick; performance-history.md). The decoder's transformer linears never
/// reach it, and layers narrower than 32 columns keep the direct kernel (or the narrow one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmPolicy {
    pub min_rows: u32,
    pub min_cols: u32,
    pub min_tiles: u32,
    pub max_split: u32,
    /// Layers of fewer chunks of K keep the direct kernel (a 1 × 1 conv of 96 channels has
    /// three).
    pub min_chunks: u32,
}

/// Workgroups a conv GEMM's grid is split up to (the cooperative matmul tiles' target: about
/// one per SM of an H100).
pub const SPLIT_TARGET_GROUPS: u32 = 128;

/// From `min_sessions` sessions on (until the next level), a conv layer's GEMM runs `tile` and
/// splits K `split` ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmLevel {
    pub min_sessions: u32,
    pub tile: GemmTile,
    pub split: u32,
}

/// Sessions past which [`GemmPolicy::levels`] stops looking (far beyond any slot count).
const MAX_SESSIONS: u32 = 4096;

impl GemmPolicy {
    /// The fewest sessions from which a layer of `rows_in` input rows per session and `cols`
    /// virtual columns takes the unsplit GEMM with `tile`; `None` when it never does. It looks at
    /// rows and columns only: a layer of fewer than `min_chunks` chunks of K never takes the GEMM,
    /// which [`GemmPolicy::split_at`] (and so every level) checks.
    pub fn min_sessions(&self, rows_in: u32, cols: u32, tile: GemmTile) -> Option<u32> {
        if cols < self.min_cols {
            return None;
        }
        let row_tiles = self.min_tiles.div_ceil(cols.div_ceil(tile.cols())).max(1);
        // ceil(rows / tile rows) >= row_tiles exactly when rows > (row_tiles - 1) · tile rows.
        let rows = self.min_rows.max((row_tiles - 1) * tile.rows() + 1);
        Some(rows.div_ceil(rows_in.max(1)).max(1))
    }

    /// The GEMM levels of a layer of `rows_in` input rows per session, `cols` virtual columns
    /// and `chunks` chunks of K with `tile`, whose split partial sums must fit `partial_bytes`:
    /// at each session count the GEMM runs where its grid, split as far as
    /// [`GemmPolicy::split_at`] allows, has `min_tiles` workgroups; empty where it never does.
    /// With `max_split` 1 the one level starts at [`GemmPolicy::min_sessions`].
    pub fn levels(
        &self,
        rows_in: u32,
        cols: u32,
        chunks: u32,
        tile: GemmTile,
        partial_bytes: u64,
    ) -> Vec<GemmLevel> {
        let mut levels: Vec<GemmLevel> = Vec::new();
        for sessions in 1..=MAX_SESSIONS {
            let Some(split) = self.split_at(sessions * rows_in.max(1), cols, chunks, tile, partial_bytes)
            else {
                // A level must hold for every session count up to the next: where a smaller
                // scratch leaves a gap, the GEMM starts after it.
                levels.clear();
                continue;
            };
            if levels.last().is_none_or(|l| l.split != split) {
                levels.push(GemmLevel { min_sessions: sessions, tile, split });
            }
            if split == 1 {
                break;
            }
        }
        levels
    }

    /// The K split of the GEMM over `rows` rows of `cols` columns, `None` where the direct
    /// kernel runs: doubled while the grid is short of [`SPLIT_TARGET_GROUPS`], each part keeps
    /// two chunks, the partial sums fit and the reduction's grid (a workgroup per row) fits one
    /// dimension.
    pub fn split_at(
        &self,
        rows: u32,
        cols: u32,
        chunks: u32,
        tile: GemmTile,
        partial_bytes: u64,
    ) -> Option<u32> {
        if cols < self.min_cols || rows < self.min_rows || chunks < self.min_chunks {
            return None;
        }
        let tiles = rows.div_ceil(tile.rows()) * cols.div_ceil(tile.cols());
        let mut split = 1;
        while split * 2 <= self.max_split
            && tiles * split < SPLIT_TARGET_GROUPS
            && chunks >= 4 * split
            && (2 * split) as u64 * rows as u64 * cols as u64 * 4 <= partial_bytes
            && rows <= MAX_GROUPS
        {
            split *= 2;
        }
        (tiles * split >= self.min_tiles).then_some(split)
    }
}

/// The kernel a conv layer runs in a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvKernel {
    /// Several threads per row, for layers of at most [`NARROW_MAX_COLS`] columns.
    Narrow,
    /// The direct kernel (its K split follows the layer's grid).
    Direct,
    /// The implicit GEMM, K split `split` ways (1: not split).
    Gemm { tile: GemmTile, split: u32 },
}

impl std::fmt::Display for ConvKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConvKernel::Narrow => write!(f, "narrow"),
            ConvKernel::Direct => write!(f, "direct"),
            ConvKernel::Gemm { tile, split } => {
                let on = if tile.coop { " cooperative" } else { "" };
                let k = if *split > 1 { format!(", K split {split}") } else { String::new() };
                write!(f, "GEMM {}x{}{on}{k}", tile.rows(), tile.cols())
            }
        }
    }
}

impl KernelChoice {
    /// When conv layers take the GEMM and how far they split K (`tuning.conv_gemm_min_rows`,
    /// `_min_cols`, `_min_tiles`, `_max_split`, `_min_chunks`).
    pub fn conv_gemm_policy(&self) -> GemmPolicy {
        let t = &self.tuning;
        GemmPolicy {
            min_rows: t.conv_gemm_min_rows,
            min_cols: t.conv_gemm_min_cols,
            min_tiles: t.conv_gemm_min_tiles,
            max_split: t.conv_gemm_max_split.max(1),
            min_chunks: t.conv_gemm_min_chunks,
        }
    }

    /// The tile of the conv GEMMs: `tuning.conv_tile` (128 rows × 64 columns: measured on an
    /// H200 at batch 256, codec 61.5 ms with it, 64.4 ms with 128 × 128 and 67.8 ms with
    /// 64 × 64), on cooperative matrices where the adapter has them unless `tuning.conv_coop`
    /// is off.
    pub fn conv_tile(&self) -> GemmTile {
        let tile = GemmTile::named(self.tuning.conv_tile);
        if self.adapter.coop_f16 && self.tuning.conv_coop {
            self.coop_tile(tile)
        } else {
            tile
        }
    }

    /// The 128 × 128 cooperative tile where ticks of `tuning.conv_tall_min_sessions` sessions
    /// and more take it in place of [`KernelChoice::conv_tile`]: only where that is the 64 × 128
    /// cooperative tile. On an H100 it took 11 % off 0.6B's tick at batch 256 and 8 % at 64, but
    /// made the codec slower below 8 sessions (0.35 ms at 4).
    fn conv_tall_tile(&self) -> Option<GemmTile> {
        (self.conv_tile() == GemmTile::COOP_WIDE && self.tuning.conv_tall_min_sessions < u32::MAX)
            .then_some(GemmTile::COOP_TALL)
    }

    /// The GEMM levels of a conv layer of `rows_in` input rows per session, `cols` virtual
    /// columns and `chunks` chunks of K (the same for every tile: all chunk K by 32 on
    /// cooperative matrices), whose split partial sums must fit `partial_bytes`: each level's
    /// tile and split ([`GemmPolicy::levels`] of [`KernelChoice::conv_tile`], and from
    /// `tuning.conv_tall_min_sessions` sessions those of the 128 × 128 cooperative tile where
    /// it has one).
    pub fn conv_gemm_levels(
        &self,
        rows_in: u32,
        cols: u32,
        chunks: u32,
        partial_bytes: u64,
    ) -> Vec<GemmLevel> {
        let policy = self.conv_gemm_policy();
        let plan = |tile: GemmTile| policy.levels(rows_in, cols, chunks, tile, partial_bytes);
        let base = plan(self.conv_tile());
        let Some(tall) = self.conv_tall_tile().map(plan) else { return base };
        let from = self.tuning.conv_tall_min_sessions;
        let at = |levels: &[GemmLevel], s: u32| levels.iter().rev().find(|l| s >= l.min_sessions).copied();
        let choice = |s: u32| if s >= from { at(&tall, s).or(at(&base, s)) } else { at(&base, s) };
        let mut starts: Vec<u32> = base.iter().chain(&tall).map(|l| l.min_sessions).chain([from]).collect();
        starts.sort_unstable();
        starts.dedup();
        let mut out: Vec<GemmLevel> = Vec::new();
        for s in starts {
            if let Some(l) = choice(s) {
                if out.last().is_none_or(|o| (o.tile, o.split) != (l.tile, l.split)) {
                    out.push(GemmLevel { min_sessions: s, ..l });
                }
            }
        }
        out
    }

    /// Whether a conv layer of `cols` virtual columns takes the narrow kernel (at every tick
    /// size, whatever the GEMM policy): at most [`NARROW_MAX_COLS`], where `tuning.conv_narrow`
    /// is on (by default on GPUs: on lavapipe the tiny model's codec ran 3–5× slower with it,
    /// its workgroups of 256 threads and a barrier costing more than they share).
    pub fn conv_narrow(&self, cols: u32) -> bool {
        cols <= NARROW_MAX_COLS && self.tuning.conv_narrow.enabled(self.adapter.cpu)
    }

    /// The kernel of a conv layer (the narrow one, or as [`KernelChoice::conv_gemm_levels`]) in
    /// a tick of `sessions` sessions, with the split-K scratch of
    /// [`KernelChoice::partials_bytes`].
    pub fn conv(&self, rows_in: u32, cols: u32, chunks: u32, sessions: u32) -> ConvKernel {
        if self.conv_narrow(cols) {
            return ConvKernel::Narrow;
        }
        let levels = self.conv_gemm_levels(rows_in, cols, chunks, self.partials_bytes());
        match levels.iter().rev().find(|l| sessions >= l.min_sessions) {
            Some(l) => ConvKernel::Gemm { tile: l.tile, split: l.split },
            None => ConvKernel::Direct,
        }
    }

    /// The fewest sessions from which a residual unit whose dilated conv has `rows_in` input rows
    /// per session, `cols` channels and `chunks` chunks of K runs as one dispatch
    /// (`tuning.conv_fuse_units`), and its tile: where that conv's last GEMM level runs unsplit
    /// on a tile that holds every channel. `None` where it never does.
    pub fn conv_unit_fused_from(
        &self,
        rows_in: u32,
        cols: u32,
        chunks: u32,
        partial_bytes: u64,
    ) -> Option<(u32, GemmTile)> {
        if !self.tuning.conv_fuse_units || self.conv_narrow(cols) {
            return None;
        }
        let levels = self.conv_gemm_levels(rows_in, cols, chunks, partial_bytes);
        levels.last().filter(|l| l.split == 1 && cols <= l.tile.cols()).map(|l| (l.min_sessions, l.tile))
    }

    /// Most K slices per workgroup of the direct kernel in a tick of one session:
    /// `tuning.conv_max_split` (16: on an H200 it took 0.35 ms off batch 1's codec against 8)
    /// within the adapter's workgroup size.
    pub fn conv_max_k_split(&self) -> u32 {
        let fit = self.adapter.max_invocations_per_workgroup / CONV_WORKGROUP;
        self.tuning.conv_max_split.min(fit).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: GemmPolicy =
        GemmPolicy { min_rows: 128, min_cols: 32, min_tiles: 60, max_split: 8, min_chunks: 1 };
    const PARTIALS: u64 = 32 << 20;
    /// (rows per session, columns, chunks) of the 12 Hz codec's conv layers.
    const LAYERS: [(u32, u32, u32); 5] =
        [(4, 1536, 224), (32, 768, 168), (160, 384, 84), (640, 192, 42), (1920, 96, 21)];

    #[test]
    fn without_a_split_the_one_level_starts_where_the_unsplit_policy_does() {
        let unsplit = GemmPolicy { max_split: 1, ..POLICY };
        for (rows_in, cols, chunks) in LAYERS {
            let want: Vec<GemmLevel> = unsplit
                .min_sessions(rows_in, cols, GemmTile::COOP_WIDE)
                .map(|m| GemmLevel { min_sessions: m, tile: GemmTile::COOP_WIDE, split: 1 })
                .into_iter()
                .collect();
            assert_eq!(unsplit.levels(rows_in, cols, chunks, GemmTile::COOP_WIDE, PARTIALS), want);
        }
    }

    #[test]
    fn splits_fill_short_grids_and_fall_to_one_as_sessions_grow() {
        for (rows_in, cols, chunks) in LAYERS {
            let levels = POLICY.levels(rows_in, cols, chunks, GemmTile::COOP_WIDE, PARTIALS);
            let unsplit =
                GemmPolicy { max_split: 1, ..POLICY }.min_sessions(rows_in, cols, GemmTile::COOP_WIDE);
            assert!(levels.first().unwrap().min_sessions <= unsplit.unwrap(), "{levels:?}");
            assert_eq!(levels.last().unwrap().split, 1, "{levels:?}");
            assert!(levels
                .windows(2)
                .all(|w| w[0].split > w[1].split && w[0].min_sessions < w[1].min_sessions));
            for l in &levels {
                let rows = l.min_sessions * rows_in;
                let tiles = rows.div_ceil(64) * cols.div_ceil(128);
                assert!(tiles * l.split >= POLICY.min_tiles && l.split <= POLICY.max_split, "{l:?}");
                assert!(chunks >= 2 * l.split, "each part keeps two chunks: {l:?}");
            }
        }
        // decoder0 at 32 sessions: 2 × 12 tiles, split 8 ways (192 workgroups).
        assert_eq!(POLICY.split_at(128, 1536, 224, GemmTile::COOP_WIDE, PARTIALS), Some(8));
    }

    #[test]
    fn every_session_count_runs_the_split_its_level_says() {
        for partial_bytes in [PARTIALS, 2 << 20, 256 << 10] {
            for (rows_in, cols, chunks) in LAYERS {
                let levels = POLICY.levels(rows_in, cols, chunks, GemmTile::COOP_WIDE, partial_bytes);
                for sessions in 1..=300 {
                    let Some(level) = levels.iter().rev().find(|l| sessions >= l.min_sessions) else {
                        continue;
                    };
                    let at =
                        POLICY.split_at(sessions * rows_in, cols, chunks, GemmTile::COOP_WIDE, partial_bytes);
                    assert_eq!(at, Some(level.split), "{rows_in} × {cols}, {sessions} sessions: {levels:?}");
                }
            }
        }
    }

    #[test]
    fn no_split_without_room_for_the_partial_sums() {
        // 256 rows × 768 columns: 24 tiles, too few unsplit; each part's sums take 0.75 MiB.
        assert_eq!(POLICY.split_at(256, 768, 168, GemmTile::COOP_WIDE, 1 << 20), None);
        assert_eq!(POLICY.split_at(256, 768, 168, GemmTile::COOP_WIDE, 2 << 20), None, "two parts: 48");
        assert_eq!(POLICY.split_at(256, 768, 168, GemmTile::COOP_WIDE, 3 << 20), Some(4));
        // 1,024 rows: 96 tiles run unsplit where two parts would not fit.
        assert_eq!(POLICY.split_at(1024, 768, 168, GemmTile::COOP_WIDE, 1 << 20), Some(1));
    }
}
