//! The shapes of the register-blocked GEMM tile (`gemm_tile.wgsl`) that the matmul and conv1d
//! GEMM kernels share, and the pipeline constants that select one.

/// A workgroup of `16 × wgy` threads computes `wgy · tm` rows × `16 · tn` columns, each thread a
/// `tm × tn` block, K in chunks of `bk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmTile {
    pub tm: u32,
    pub tn: u32,
    pub bk: u32,
    pub wgy: u32,
}

impl GemmTile {
    /// 16, 32 and 64 rows × 64 columns, 4 × 4 per thread, K in chunks of 32.
    pub const ROWS_16: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 4 };
    pub const ROWS_32: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 8 };
    pub const ROWS_64: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 16 };
    /// 128 rows × 64 columns, 8 × 4 per thread, K in chunks of 16.
    pub const ROWS_128: GemmTile = GemmTile { tm: 8, tn: 4, bk: 16, wgy: 16 };
    /// 128 rows × 128 columns, 8 × 8 per thread, K in chunks of 16.
    pub const ROWS_128_WIDE: GemmTile = GemmTile { tm: 8, tn: 8, bk: 16, wgy: 16 };

    pub const ALL: [GemmTile; 5] =
        [Self::ROWS_16, Self::ROWS_32, Self::ROWS_64, Self::ROWS_128, Self::ROWS_128_WIDE];

    pub fn rows(&self) -> u32 {
        self.wgy * self.tm
    }

    pub fn cols(&self) -> u32 {
        16 * self.tn
    }

    pub fn threads(&self) -> u32 {
        16 * self.wgy
    }

    /// The WGSL override constants of this tile.
    pub fn constants(&self) -> [(&'static str, f64); 4] {
        [("TM", self.tm as f64), ("TN", self.tn as f64), ("BK", self.bk as f64), ("WGY", self.wgy as f64)]
    }

    /// By name, for the `LYRE_*_TILE` switches: `16`, `32`, `64`, `128`, `128x128`.
    pub fn by_name(name: &str) -> Option<GemmTile> {
        match name {
            "16" => Some(Self::ROWS_16),
            "32" => Some(Self::ROWS_32),
            "64" => Some(Self::ROWS_64),
            "128" => Some(Self::ROWS_128),
            "128x128" => Some(Self::ROWS_128_WIDE),
            _ => None,
        }
    }
}
