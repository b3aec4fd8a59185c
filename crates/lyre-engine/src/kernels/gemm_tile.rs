//! The shapes of the register-blocked GEMM tile (`gemm_tile.wgsl`) that the matmul and conv1d
//! GEMM kernels share, and the pipeline constants that select one.

/// A workgroup of `16 × wgy` threads computes `wgy · tm` rows × `16 · tn` columns, each thread a
/// `tm × tn` block, K in chunks of `bk`. With `coop` the products run on cooperative matrices
/// (`coop_tile.wgsl`: f16 operands, f32 sums) instead of the threads' registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmTile {
    pub tm: u32,
    pub tn: u32,
    pub bk: u32,
    pub wgy: u32,
    pub coop: bool,
}

impl GemmTile {
    /// 16, 32 and 64 rows × 64 columns, 4 × 4 per thread, K in chunks of 32.
    pub const ROWS_16: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 4, coop: false };
    pub const ROWS_32: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 8, coop: false };
    pub const ROWS_64: GemmTile = GemmTile { tm: 4, tn: 4, bk: 32, wgy: 16, coop: false };
    /// 128 rows × 64 columns, 8 × 4 per thread, K in chunks of 16.
    pub const ROWS_128: GemmTile = GemmTile { tm: 8, tn: 4, bk: 16, wgy: 16, coop: false };
    /// 128 rows × 128 columns, 8 × 8 per thread, K in chunks of 16.
    pub const ROWS_128_WIDE: GemmTile = GemmTile { tm: 8, tn: 8, bk: 16, wgy: 16, coop: false };

    pub const ALL: [GemmTile; 5] =
        [Self::ROWS_16, Self::ROWS_32, Self::ROWS_64, Self::ROWS_128, Self::ROWS_128_WIDE];

    /// 64 rows × 128 columns on cooperative matrices only (its register form's staged chunk
    /// would not fit gemm_tile.wgsl's arrays): each subgroup multiplies a 32 × 32 block, twice
    /// the 64 × 64 tile's work per staged chunk.
    pub const COOP_WIDE: GemmTile = GemmTile { tm: 4, tn: 8, bk: 32, wgy: 16, coop: true };

    /// This tile on cooperative matrices: the tiles of 16, 32 and 64 rows × 64 (K in chunks of
    /// 32); `None` for the 128-row ones, whose staged operands and f32 block do not fit the
    /// 48 KiB of workgroup memory of coop_tile.wgsl's arrays.
    pub fn on_coop(self) -> Option<GemmTile> {
        (self.bk == 32 && self.tn == 4).then_some(GemmTile { coop: true, ..self })
    }

    /// Whether `self` is one of [`GemmTile::ALL`], a cooperative form of one, or
    /// [`GemmTile::COOP_WIDE`].
    pub fn is_known(&self) -> bool {
        *self == Self::COOP_WIDE || Self::ALL.iter().any(|t| t == self || t.on_coop().as_ref() == Some(self))
    }

    /// The cooperative tile for matmuls or convs that would take `self` on registers: 64-row
    /// tiles and larger take [`GemmTile::COOP_WIDE`] (unless `LYRE_COOP_WIDE=0`), smaller ones
    /// their own cooperative form.
    pub fn coop_for(self) -> GemmTile {
        let wide = std::env::var("LYRE_COOP_WIDE").as_deref() != Ok("0");
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
    pub fn constants(&self) -> [(&'static str, f64); 4] {
        [("TM", self.tm as f64), ("TN", self.tn as f64), ("BK", self.bk as f64), ("WGY", self.wgy as f64)]
    }

    /// By name, for the `LYRE_*_TILE` switches: `16`, `32`, `64`, `128`, `128x128` (register
    /// tiles).
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

#[cfg(test)]
mod tests {
    use super::GemmTile;
    use crate::gpu::KernelSource;
    use crate::kernels::{conv1d_gemm, matmul_gemm};

    /// Parses, validates and translates to SPIR-V (what wgpu does on Vulkan) a cooperative-matrix
    /// kernel with one tile's constants: the CI adapter has no cooperative matrices to run them,
    /// so this is where a shader error shows before a GPU that has them is at hand.
    fn compile(kernel: KernelSource, tile: GemmTile, extra: &[(&str, f64)]) -> Result<Vec<u32>, String> {
        let module = naga::front::wgsl::parse_str(kernel.wgsl).map_err(|e| e.emit_to_string(kernel.wgsl))?;
        let caps = naga::valid::Capabilities::all();
        let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
        let info = validator.validate(&module).map_err(|e| format!("{e:?}"))?;
        let mut constants: naga::back::PipelineConstants =
            tile.constants().iter().map(|&(k, v)| (k.to_string(), v)).collect();
        constants.extend(extra.iter().map(|&(k, v)| (k.to_string(), v)));
        let (module, info) =
            naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
                .map_err(|e| format!("{e:?}"))?;
        let options = naga::back::spv::Options {
            lang_version: (1, 3),
            flags: naga::back::spv::WriterFlags::empty(),
            capabilities: None,
            ..Default::default()
        };
        let pipeline = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".to_string(),
        };
        naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn cooperative_kernels_compile_for_every_tile_that_fits() {
        let mut coop: Vec<GemmTile> = GemmTile::ALL.iter().filter_map(|t| t.on_coop()).collect();
        assert_eq!(coop.len(), 3, "the tiles of 16, 32 and 64 rows");
        coop.push(GemmTile::COOP_WIDE);
        for tile in coop {
            assert!(tile.is_known() && tile.coop);
            for input in [0.0, 1.0, 2.0] {
                for split in [1.0, 4.0] {
                    let spv = compile(matmul_gemm::SOURCE_COOP, tile, &[("SPLIT", split), ("INPUT", input)]);
                    assert!(
                        spv.as_ref().is_ok_and(|w| w.len() > 100),
                        "matmul {tile:?} {input} {split}: {:?}",
                        spv.err()
                    );
                }
            }
            let spv = compile(conv1d_gemm::SOURCE_COOP, tile, &[]);
            assert!(spv.as_ref().is_ok_and(|w| w.len() > 100), "conv {tile:?}: {:?}", spv.err());
        }
        assert!(GemmTile::ROWS_128.on_coop().is_none() && GemmTile::ROWS_128_WIDE.on_coop().is_none());
        assert_eq!(GemmTile::ROWS_128.coop_for().cols(), 128);
        assert_eq!(GemmTile::ROWS_32.coop_for(), GemmTile::ROWS_32.on_coop().unwrap());
    }
}
