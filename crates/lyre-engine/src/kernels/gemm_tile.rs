//! The shapes of the register-blocked GEMM tile (`shared/gemm_tile.wgsl`, or
//! `shared/coop_tile.wgsl` on cooperative matrices) that the matmul and conv1d GEMM kernels
//! share, and the pipeline constants that select one.

use crate::tuning::TileName;

/// A workgroup of `16 × wgy` threads computes `wgy · tm` rows × `16 · tn` columns, each thread a
/// `tm × tn` block, K in chunks of `bk`. With `coop` the products run on cooperative matrices
/// (`coop_tile.wgsl`: f16 operands, f32 sums) instead of the threads' registers.
/// `contiguous_loads` is the order its threads load a chunk in (`shared/tile_loads.wgsl`):
/// neighbouring threads along a row, which the cooperative tiles stage without bank conflicts,
/// or pairs of threads per row, which the register tile's transposed stores need. Every
/// cooperative tile loads contiguously; a register tile with contiguous loads
/// ([`GemmTile::with_contiguous_loads`]) computes the same sums and lets CPU adapters test that
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmTile {
    pub tm: u32,
    pub tn: u32,
    pub bk: u32,
    pub wgy: u32,
    pub coop: bool,
    pub contiguous_loads: bool,
}

impl GemmTile {
    /// 16, 32 and 64 rows × 64 columns, 4 × 4 per thread, K in chunks of 32.
    pub const ROWS_16: GemmTile =
        GemmTile { tm: 4, tn: 4, bk: 32, wgy: 4, coop: false, contiguous_loads: false };
    pub const ROWS_32: GemmTile =
        GemmTile { tm: 4, tn: 4, bk: 32, wgy: 8, coop: false, contiguous_loads: false };
    pub const ROWS_64: GemmTile =
        GemmTile { tm: 4, tn: 4, bk: 32, wgy: 16, coop: false, contiguous_loads: false };
    /// 128 rows × 64 columns, 8 × 4 per thread, K in chunks of 16.
    pub const ROWS_128: GemmTile =
        GemmTile { tm: 8, tn: 4, bk: 16, wgy: 16, coop: false, contiguous_loads: false };
    /// 128 rows × 128 columns, 8 × 8 per thread, K in chunks of 16.
    pub const ROWS_128_WIDE: GemmTile =
        GemmTile { tm: 8, tn: 8, bk: 16, wgy: 16, coop: false, contiguous_loads: false };

    pub const ALL: [GemmTile; 5] =
        [Self::ROWS_16, Self::ROWS_32, Self::ROWS_64, Self::ROWS_128, Self::ROWS_128_WIDE];

    /// 64 rows × 128 columns on cooperative matrices only (its register form's staged chunk
    /// would not fit gemm_tile.wgsl's arrays): each subgroup multiplies a 32 × 32 block, twice
    /// the 64 × 64 tile's work per staged chunk.
    pub const COOP_WIDE: GemmTile =
        GemmTile { tm: 4, tn: 8, bk: 32, wgy: 16, coop: true, contiguous_loads: true };

    /// 128 rows × 128 columns on cooperative matrices: each subgroup multiplies a 64 × 32 block,
    /// and the chunk is staged in one buffer (two would not fit beside the sums' part).
    pub const COOP_TALL: GemmTile =
        GemmTile { tm: 8, tn: 8, bk: 32, wgy: 16, coop: true, contiguous_loads: true };

    /// [`GemmTile::COOP_WIDE`] with K in chunks of 64, staged in one buffer (two would not fit):
    /// each chunk's loads carry twice the bytes per round trip to memory, for half as many.
    /// Matmuls only (`coop_wide_chunk = 64`).
    pub const COOP_WIDE_K64: GemmTile = GemmTile { bk: 64, ..Self::COOP_WIDE };

    /// 32 rows × 128 columns on cooperative matrices, K in chunks of 64 (one buffer): ticks of
    /// up to 32 rows stage no row twice, and each chunk's loads carry as many bytes as the
    /// 64 × 128 tile's. Matmuls only (`coop_short_max_rows`).
    pub const COOP_SHORT: GemmTile =
        GemmTile { tm: 2, tn: 8, bk: 64, wgy: 16, coop: true, contiguous_loads: true };

    /// This tile on cooperative matrices: the tiles of 16, 32 and 64 rows × 64 (K in chunks of
    /// 32); `None` for the 128-row ones, whose staged operands and f32 block do not fit the
    /// 48 KiB of workgroup memory of coop_tile.wgsl's arrays.
    pub fn on_coop(self) -> Option<GemmTile> {
        (self.bk == 32 && self.tn == 4).then_some(GemmTile { coop: true, contiguous_loads: true, ..self })
    }

    /// Whether `self` is one of [`GemmTile::ALL`], a cooperative form of one, or one of the
    /// cooperative-only tiles.
    pub fn is_known(&self) -> bool {
        *self == Self::COOP_WIDE
            || *self == Self::COOP_TALL
            || *self == Self::COOP_WIDE_K64
            || *self == Self::COOP_SHORT
            || Self::ALL.iter().any(|t| {
                t == self || t.with_contiguous_loads() == *self || t.on_coop().as_ref() == Some(self)
            })
    }

    /// This register tile loading its chunks in the cooperative tiles' order.
    pub fn with_contiguous_loads(self) -> GemmTile {
        GemmTile { contiguous_loads: true, ..self }
    }

    /// The cooperative tile for matmuls or convs that would take `self` on registers: where
    /// `wide`, the 128 × 128 tile takes [`GemmTile::COOP_TALL`] and the other tiles of 64 rows
    /// and more [`GemmTile::COOP_WIDE`], else the 64-row tile's cooperative form; smaller ones
    /// their own cooperative form.
    pub fn coop_for(self, wide: bool) -> GemmTile {
        if self == Self::ROWS_128_WIDE && wide {
            return Self::COOP_TALL;
        }
        match self.on_coop() {
            Some(t) if self.rows() < 64 => t,
            _ if wide => Self::COOP_WIDE,
            _ => GemmTile::ROWS_64.on_coop().expect("the 64-row tile has a cooperative form"),
        }
    }

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
    pub fn constants(&self) -> [(&'static str, f64); 5] {
        [
            ("TM", self.tm as f64),
            ("TN", self.tn as f64),
            ("BK", self.bk as f64),
            ("WGY", self.wgy as f64),
            ("CONTIGUOUS_LOADS", f64::from(u8::from(self.contiguous_loads))),
        ]
    }

    /// The register tile a tuning key names.
    pub fn named(name: TileName) -> GemmTile {
        match name {
            TileName::Rows16 => Self::ROWS_16,
            TileName::Rows32 => Self::ROWS_32,
            TileName::Rows64 => Self::ROWS_64,
            TileName::Rows128 => Self::ROWS_128,
            TileName::Rows128Wide => Self::ROWS_128_WIDE,
        }
    }
}
