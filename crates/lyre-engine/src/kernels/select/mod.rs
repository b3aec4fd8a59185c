//! Which kernel runs: the one place that turns the adapter and the [`EngineTuning`] into the
//! choice of matmul, attention, RoPE, sampler, conv and persistent-layer kernels for a shape and
//! a tick's row count. The launchers ask a [`KernelChoice`]; `docs/kernels.md` tabulates its
//! answers (a test holds the table to them).

mod conv;
mod layer;
mod matmul;

pub use conv::{ConvKernel, GemmLevel, GemmPolicy, CONV_WORKGROUP, NARROW_MAX_COLS, SPLIT_TARGET_GROUPS};
pub use layer::{grid_size, AttentionKernel, AttentionSplit, RopeKernel};
pub use matmul::{few_rows_columns, MatmulKernel, MatmulPlan, FEW_ROWS_THREADS, MAX_SPLIT};

use crate::gpu::GpuContext;
use crate::tuning::{EngineTuning, SamplerChoice};

/// What the choice depends on in an adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adapter {
    /// A software rasteriser (lavapipe, WARP, SwiftShader).
    pub cpu: bool,
    /// The subgroup size where subgroups have one fixed size (4..=128).
    pub subgroup_size: Option<u32>,
    /// Cooperative matrices usable for the GEMM tiles (f16 operands, f32 sums).
    pub coop_f16: bool,
    pub max_invocations_per_workgroup: u32,
}

impl Adapter {
    pub fn of(ctx: &GpuContext) -> Self {
        Adapter {
            cpu: ctx.is_cpu(),
            subgroup_size: ctx.fixed_subgroup_size(),
            coop_f16: ctx.has_coop_f16(),
            max_invocations_per_workgroup: ctx.limits.max_compute_invocations_per_workgroup,
        }
    }
}

/// The kernel choices of one engine: an adapter and a tuning.
#[derive(Debug, Clone)]
pub struct KernelChoice {
    pub(super) adapter: Adapter,
    pub(super) tuning: EngineTuning,
}

/// Which kernel samples. Both choose the same codes, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKernel {
    /// Shared-memory tree reductions and 32-step threshold searches (any adapter).
    Portable,
    /// Subgroup reductions, a radix select for top-k, 15 cuts per top-p round (~12 barriers
    /// per call instead of ~400).
    Subgroup { size: u32 },
}

impl std::fmt::Display for SampleKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SampleKernel::Portable => "portable",
            SampleKernel::Subgroup { .. } => "subgroup",
        })
    }
}

impl SampleKernel {
    /// Subgroup sizes the subgroup kernel handles.
    pub fn supports(size: u32) -> bool {
        size.is_power_of_two() && (4..=128).contains(&size)
    }
}

impl KernelChoice {
    /// The choices on `ctx`'s adapter.
    pub fn new(ctx: &GpuContext, tuning: &EngineTuning) -> Self {
        Self::for_adapter(Adapter::of(ctx), tuning)
    }

    pub fn for_adapter(adapter: Adapter, tuning: &EngineTuning) -> Self {
        KernelChoice { adapter, tuning: tuning.clone() }
    }

    pub fn adapter(&self) -> &Adapter {
        &self.adapter
    }

    pub fn tuning(&self) -> &EngineTuning {
        &self.tuning
    }

    /// The subgroup sampler whenever the adapter has subgroups of one fixed power-of-two size
    /// (lavapipe too: it is faster there as well, and the parity tests then run it), else the
    /// portable one; `tuning.sampler` can force the portable kernel.
    pub fn sampler(&self) -> SampleKernel {
        match (self.tuning.sampler, self.adapter.subgroup_size) {
            (SamplerChoice::Portable, _) | (_, None) => SampleKernel::Portable,
            (_, Some(size)) if SampleKernel::supports(size) => SampleKernel::Subgroup { size },
            _ => SampleKernel::Portable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::gemm_tile::GemmTile;
    use crate::tuning::{MatmulChoice, Switch, TileName};

    const GPU: Adapter =
        Adapter { cpu: false, subgroup_size: Some(32), coop_f16: true, max_invocations_per_workgroup: 1024 };
    const CPU: Adapter =
        Adapter { cpu: true, subgroup_size: Some(8), coop_f16: false, max_invocations_per_workgroup: 1024 };

    fn choice(adapter: Adapter, keys: &[(&str, &str)]) -> KernelChoice {
        let mut tuning = EngineTuning::default();
        for (k, v) in keys {
            tuning.set(k, v).unwrap();
        }
        tuning.validate().unwrap();
        KernelChoice::for_adapter(adapter, &tuning)
    }

    /// The keys CI's second pass sets force the GPU kernels on a CPU adapter.
    #[test]
    fn forced_keys_run_the_gpu_kernels_on_a_cpu_adapter() {
        let forced = choice(
            CPU,
            &[
                ("matmul", "subgroup"),
                ("persistent", "on"),
                ("persistent_groups", "1"),
                ("gemm", "on"),
                ("gemm_min_rows", "1"),
                ("few_rows", "on"),
                ("few_rows_min_rows", "2"),
                ("few_rows_min_cols", "1"),
                ("conv_gemm_min_rows", "1"),
                ("conv_gemm_min_cols", "1"),
                ("conv_gemm_min_tiles", "0"),
            ],
        );
        let plan = forced.matmul_plan(64, 64, false, forced.partials_bytes());
        // The mat-vec at one row, the few-rows kernel at 2..=8, the GEMM past it.
        assert_eq!(plan.at(1), MatmulKernel::Matvec { size: 8, split: 1 });
        assert!(matches!(plan.at(2), MatmulKernel::FewRows { quads: 1, .. }), "{plan:?}");
        assert!(matches!(plan.at(8), MatmulKernel::FewRows { quads: 2, .. }), "{plan:?}");
        assert!(matches!(plan.at(9), MatmulKernel::Gemm { tile: GemmTile::ROWS_16, .. }), "{plan:?}");
        // A SwiGLU input never takes the few-rows kernel (it would gate once per column): the
        // mat-vec up to the same GEMM floor.
        let down = forced.matmul_plan(64, 64, true, forced.partials_bytes());
        assert_eq!(down.at(8), MatmulKernel::Matvec { size: 8, split: 1 });
        assert!(matches!(down.at(9), MatmulKernel::Gemm { .. }), "{down:?}");
        assert_eq!(forced.persistent_grid(), 1, "one workgroup on a CPU adapter");
        // One tile of eight chunks: K split four ways (each part keeps two chunks).
        assert_eq!(forced.conv(1, 8, 8, 1), ConvKernel::Gemm { tile: GemmTile::ROWS_128, split: 4 });
        // A layer of four columns or fewer takes the narrow kernel where it is forced on,
        // whatever the GEMM policy.
        assert_eq!(choice(CPU, &[("conv_narrow", "on")]).conv(1, 4, 8, 1), ConvKernel::Narrow);
        assert_eq!(forced.conv(1, 4, 8, 1), ConvKernel::Gemm { tile: GemmTile::ROWS_128, split: 4 });
        // The defaults keep them off there.
        let plain = choice(CPU, &[]);
        assert_eq!(plain.matmul_plan(64, 64, false, plain.partials_bytes()).at(64), MatmulKernel::PerThread);
        assert_eq!((plain.persistent_grid(), plain.partials_bytes()), (0, 16));
    }

    #[test]
    fn keys_switch_gpu_kernels_off() {
        let off = choice(
            GPU,
            &[
                ("matmul", "per_thread"),
                ("persistent", "off"),
                ("fused_attention", "false"),
                ("sampler", "portable"),
            ],
        );
        assert_eq!(off.matmul_base(4096, 1024), MatmulKernel::PerThread);
        assert_eq!(off.attention(128), AttentionKernel::PerThread);
        assert_eq!((off.fused_attention(128), off.persistent_grid()), (None, 0));
        assert_eq!(off.sampler(), SampleKernel::Portable);
        assert_eq!(
            choice(GPU, &[("matvec", "false")]).matmul_base(4096, 1024),
            MatmulKernel::Subgroup { size: 32 }
        );
        assert_eq!(choice(GPU, &[("matvec_split", "4")]).matvec_split(4096, 1024, 32), 4);
        let gemm_off = choice(GPU, &[("gemm", "off"), ("few_rows", "off")]);
        assert!(gemm_off.matmul_plan(4096, 1024, false, 1 << 30).levels.is_empty());
        assert_eq!(gemm_off.partials_bytes(), 16);
    }

    #[test]
    fn keys_pick_tiles_and_cooperative_matrices() {
        let t = EngineTuning::default();
        assert_eq!(
            (t.matmul, t.gemm, t.gemm_large_tile),
            (MatmulChoice::Auto, Switch::Auto, TileName::Rows64)
        );
        let gpu = choice(GPU, &[]);
        assert_eq!(gpu.conv_tile(), GemmTile::COOP_WIDE);
        assert_eq!(choice(GPU, &[("conv_coop", "false")]).conv_tile(), GemmTile::ROWS_128);
        let narrow = choice(GPU, &[("coop_wide", "false")]);
        assert_eq!(narrow.conv_tile(), GemmTile::ROWS_64.on_coop().unwrap());
        let large = choice(GPU, &[("gemm_large_tile", "128x128"), ("coop_min_rows", "4096")]);
        let plan = large.matmul_plan(4096, 1024, false, large.partials_bytes());
        assert!(matches!(plan.at(256), MatmulKernel::Gemm { tile: GemmTile::ROWS_128_WIDE, .. }), "{plan:?}");
        assert!(matches!(plan.at(255), MatmulKernel::Gemm { tile: GemmTile::ROWS_64, .. }), "{plan:?}");
        // On cooperative matrices the 128 × 128 tile from 256 rows, the wide one below.
        let large = choice(GPU, &[("gemm_large_tile", "128x128")]);
        let plan = large.matmul_plan(4096, 1024, false, large.partials_bytes());
        assert!(matches!(plan.at(256), MatmulKernel::Gemm { tile: GemmTile::COOP_TALL, .. }), "{plan:?}");
        assert!(matches!(plan.at(255), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE_K64, .. }), "{plan:?}");
        assert_eq!(choice(GPU, &[("conv_max_split", "4")]).conv_max_k_split(), 4);
        // The conv GEMMs of ticks from conv_tall_min_sessions sessions on the 128 × 128 tile;
        // the last conv block's 96 columns, 1,920 rows a session, 21 chunks.
        let tile_at = |c: &KernelChoice, sessions| match c.conv(1920, 96, 21, sessions) {
            ConvKernel::Gemm { tile, .. } => tile,
            other => panic!("{sessions} sessions: {other:?}"),
        };
        assert_eq!(
            (tile_at(&gpu, 7), tile_at(&gpu, 8), tile_at(&gpu, 256)),
            (GemmTile::COOP_WIDE, GemmTile::COOP_TALL, GemmTile::COOP_TALL)
        );
        let later = choice(GPU, &[("conv_tall_min_sessions", "64")]);
        assert_eq!((tile_at(&later, 63), tile_at(&later, 64)), (GemmTile::COOP_WIDE, GemmTile::COOP_TALL));
        let never = choice(GPU, &[("conv_tall_min_sessions", "4294967295")]);
        assert_eq!(tile_at(&never, 256), GemmTile::COOP_WIDE);
        assert_eq!(tile_at(&choice(GPU, &[("conv_coop", "false")]), 256), GemmTile::ROWS_128);
        assert_eq!(
            gpu.conv_unit_fused_from(1920, 96, 21, gpu.partials_bytes()),
            Some((9, GemmTile::COOP_TALL))
        );
        // Past the few-rows kernel the cooperative tiles with the 33-row level's split: 32 × 128
        // up to coop_short_max_rows (16), then 64 × 128, K in chunks of coop_wide_chunk (64).
        let plan = gpu.matmul_plan(4096, 1024, false, gpu.partials_bytes());
        assert!(matches!(plan.at(8), MatmulKernel::FewRows { .. }), "{plan:?}");
        for rows in [9, 16] {
            assert_eq!(plan.at(rows), MatmulKernel::Gemm { tile: GemmTile::COOP_SHORT, split: 4 }, "{rows}");
        }
        for rows in [17, 32] {
            assert_eq!(plan.at(rows), plan.at(33), "{rows} rows: {plan:?}");
        }
        assert!(matches!(plan.at(256), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE_K64, .. }), "{plan:?}");
        assert_eq!(plan.at(32), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE_K64, split: 4 });
        // With chunks of 64 K is split while two chunks stay per part (o's 2,048 of K: 32 chunks,
        // 16 parts); chunks of 32 and no short tile give the 64 × 128 tile at every level.
        let o = gpu.matmul_plan(1024, 2048, false, gpu.partials_bytes());
        assert_eq!(o.at(32), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE_K64, split: 16 });
        let k32 = choice(GPU, &[("coop_wide_chunk", "32"), ("coop_short_max_rows", "0")]);
        let plan = k32.matmul_plan(4096, 1024, false, k32.partials_bytes());
        for rows in [9, 16, 32] {
            assert_eq!(plan.at(rows), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE, split: 4 }, "{rows}");
        }
        assert!(matches!(plan.at(256), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE, .. }), "{plan:?}");
        let short32 = choice(GPU, &[("coop_short_max_rows", "32")]);
        let plan = short32.matmul_plan(4096, 1024, false, short32.partials_bytes());
        assert_eq!(plan.at(32), MatmulKernel::Gemm { tile: GemmTile::COOP_SHORT, split: 4 });
        assert_eq!(plan.at(33), MatmulKernel::Gemm { tile: GemmTile::COOP_WIDE_K64, split: 4 });
        // o (1024 columns, never the few-rows kernel's): from the GEMM's 6 rows, on the tiles
        // of 9 and of 33 rows.
        assert!(matches!(o.at(5), MatmulKernel::Matvec { .. }), "{o:?}");
        assert_eq!((o.at(6), o.at(17)), (o.at(9), o.at(33)), "{o:?}");
        // Below coop_wide_min_rows the levels keep their own tiles: on registers below
        // coop_min_rows, else in their own cooperative form.
        let old = choice(GPU, &[("coop_min_rows", "33"), ("coop_wide_min_rows", "33")]);
        let plan = old.matmul_plan(4096, 1024, false, old.partials_bytes());
        assert_eq!(plan.at(32), MatmulKernel::Gemm { tile: GemmTile::ROWS_32, split: 8 });
        let coop32 = choice(GPU, &[("coop_wide_min_rows", "33")]).matmul_plan(4096, 1024, false, 1 << 30);
        assert!(
            matches!(coop32.at(32), MatmulKernel::Gemm { tile, .. } if tile == GemmTile::ROWS_32.on_coop().unwrap())
        );
        // conv_gemm_min_chunks keeps layers of short K on the direct kernel at every tick size:
        // block 3's 1 × 1 conv (96 channels: 3 chunks) at 256 sessions, not its k7 conv (21).
        assert!(matches!(gpu.conv(1920, 96, 3, 256), ConvKernel::Gemm { .. }));
        let short_k = choice(GPU, &[("conv_gemm_min_chunks", "4")]);
        assert_eq!(short_k.conv(1920, 96, 3, 256), ConvKernel::Direct);
        assert_eq!(short_k.conv(1920, 96, 21, 256), gpu.conv(1920, 96, 21, 256));
        let small = Adapter { max_invocations_per_workgroup: 256, ..GPU };
        assert_eq!(KernelChoice::for_adapter(small, &t).conv_max_k_split(), 4, "within the workgroup size");
    }
}
