//! Which kernel computes a codec conv layer: the direct kernel (many small workgroups, K split
//! over slices) or, for ticks with many rows, the implicit GEMM on the tiles of the matmuls.

use super::KernelChoice;
use crate::kernels::gemm_tile::GemmTile;

/// Lanes per K slice of the direct conv kernel (its `WG`).
pub const CONV_WORKGROUP: u32 = 64;

/// When a layer takes the GEMM: at least `min_rows` live rows (sessions × input rows per
/// session), `min_cols` virtual columns, and `min_tiles` tiles in the GEMM's grid. The defaults
/// come from per-layer profiles of both kernels on an H200 at batch 8, 32 and 128: the GEMM wins
/// once a layer's tick fills at least one 128-row tile and its grid has ~60 tiles (half the
/// SMs); below that the direct kernel, whose many small workgroups suit small ticks, is faster
/// (the decoder's transformer linears never reach it). Layers narrower than 32 columns keep the
/// direct kernel (the output conv has 1 column, which would leave 63 of every 64 tile columns
/// idle).
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

/// The kernel a conv layer runs in a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvKernel {
    /// The direct kernel (its K split follows the layer's grid).
    Direct,
    Gemm {
        tile: GemmTile,
    },
}

impl std::fmt::Display for ConvKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConvKernel::Direct => write!(f, "direct"),
            ConvKernel::Gemm { tile } => {
                let on = if tile.coop { " cooperative" } else { "" };
                write!(f, "GEMM {}x{}{on}", tile.rows(), tile.cols())
            }
        }
    }
}

impl KernelChoice {
    /// When conv layers take the GEMM (`tuning.conv_gemm_min_rows`, `_min_cols`, `_min_tiles`).
    pub fn conv_gemm_policy(&self) -> GemmPolicy {
        let t = &self.tuning;
        GemmPolicy {
            min_rows: t.conv_gemm_min_rows,
            min_cols: t.conv_gemm_min_cols,
            min_tiles: t.conv_gemm_min_tiles,
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

    /// The kernel of a conv layer of `rows_in` input rows per session and `cols` virtual
    /// columns in a tick of `sessions` sessions.
    pub fn conv(&self, rows_in: u32, cols: u32, sessions: u32) -> ConvKernel {
        let tile = self.conv_tile();
        match self.conv_gemm_policy().min_sessions(rows_in, cols, tile) {
            Some(from) if sessions >= from => ConvKernel::Gemm { tile },
            _ => ConvKernel::Direct,
        }
    }

    /// Most K slices per workgroup of the direct kernel in a tick of one session:
    /// `tuning.conv_max_split` (16: on an H200 it took 0.35 ms off batch 1's codec against 8)
    /// within the adapter's workgroup size.
    pub fn conv_max_k_split(&self) -> u32 {
        let fit = self.adapter.max_invocations_per_workgroup / CONV_WORKGROUP;
        self.tuning.conv_max_split.min(fit).max(1)
    }
}
