//! The GEMM conv1d kernel (every tile of `GemmTile::ALL`, and their cooperative-matrix forms where
//! the adapter has them) against the CPU references of
//! `conv.rs`, on shapes that leave partial tiles and chunks. Tiles run over the rows of all
//! sessions as one sequence, so tiles straddle sessions.

use half::f16;
use lyre_engine::kernels::conv::{
    pack_conv, packed_to_f16, Activation, Conv1d, FusedSnake, PackedConv, Residual,
};
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::select::{Adapter, KernelChoice};
use lyre_engine::kernels::seq_view::SeqView;
use lyre_engine::EngineTuning;

use super::conv::{dilated_conv_case, linear_case, transposed_conv_case, Kernel};
use super::{randn, rng, Gpu};

/// Every tile, two of them also loading in the cooperative tiles' order, and on an adapter with
/// cooperative matrices every tile that has a cooperative form ([`Gpu::coop_or_required`]).
pub(super) fn tiles() -> Vec<GemmTile> {
    let coop = Gpu::new().coop_or_required();
    let on_coop =
        GemmTile::ALL.iter().filter_map(|t| t.on_coop()).chain([GemmTile::COOP_WIDE, GemmTile::COOP_TALL]);
    let contiguous = [GemmTile::ROWS_32, GemmTile::ROWS_128_WIDE].map(GemmTile::with_contiguous_loads);
    GemmTile::ALL.into_iter().chain(contiguous).chain(on_coop.filter(|_| coop)).collect()
}

#[test]
fn gemm_dilated_causal_conv_reads_every_tap_from_the_ring() {
    for (i, tile) in tiles().into_iter().enumerate() {
        let seed = 31 + 10 * i as u64;
        // 6 inputs: one partial chunk; 5 rows per session: a partial row tile.
        dilated_conv_case(Kernel::Gemm(tile, 1), 6, 5, 5, seed);
        // 70 inputs (18 groups: full chunks and a partial one), 70 outputs (a partial column
        // tile), 70 rows per session (tiles that straddle sessions).
        dilated_conv_case(Kernel::Gemm(tile, 1), 70, 70, 70, seed + 1);
    }
}

#[test]
fn gemm_transposed_conv_writes_every_phase() {
    for (i, tile) in tiles().into_iter().enumerate() {
        let seed = 33 + 10 * i as u64;
        transposed_conv_case(Kernel::Gemm(tile, 1), 5, 3, 4, 3, seed);
        // 80 virtual columns (4 phases × 20): the phases straddle column tiles of 64.
        transposed_conv_case(Kernel::Gemm(tile, 1), 37, 20, 4, 16, seed + 1);
    }
}

#[test]
fn gemm_linear_applies_every_epilogue_flag() {
    for (i, tile) in tiles().into_iter().enumerate() {
        let seed = 35 + 10 * i as u64;
        // 36 inputs (9 groups: a full chunk and one group). One row per session.
        linear_case(Kernel::Gemm(tile, 1), 36, 70, 70, 1, Activation::Gelu, false, seed);
        // 16 rows per session, 5 sessions: the last tile partly full.
        linear_case(Kernel::Gemm(tile, 1), 300, 70, 5, 16, Activation::Silu, true, seed + 1);
        linear_case(Kernel::Gemm(tile, 1), 12, 256, 3, 7, Activation::None, false, seed + 2);
        linear_case(Kernel::Gemm(tile, 1), 8, 256, 2, 65, Activation::Gelu, true, seed + 3);
    }
}

/// K split over two, three and eight workgroups per tile (the last leaves parts with no chunk
/// at all): the reduction adds the parts and applies every epilogue (bias, activations, scale,
/// accumulate, residual, the transposed conv's phases, ring views) as the unsplit GEMM does.
#[test]
fn gemm_with_a_split_k_adds_the_parts_and_applies_the_epilogue() {
    for (i, tile) in tiles().into_iter().enumerate() {
        for split in [2, 3, 8] {
            let seed = 61 + 10 * i as u64 + split as u64;
            dilated_conv_case(Kernel::Gemm(tile, split), 70, 70, 70, seed);
            transposed_conv_case(Kernel::Gemm(tile, split), 37, 20, 4, 16, seed + 1);
            linear_case(Kernel::Gemm(tile, split), 300, 70, 5, 16, Activation::Silu, true, seed + 2);
            linear_case(Kernel::Gemm(tile, split), 8, 256, 2, 65, Activation::Gelu, false, seed + 3);
        }
    }
}

/// Upload keeps an f16 copy of the packed weights exactly where the cooperative kernel can run
/// (bit for bit [`packed_to_f16`]); a cooperative tile over weights without one is an error that
/// says so, not a panic or a kernel reading f32 as f16.
#[test]
fn cooperative_tiles_read_the_f16_copy_of_the_weights_and_refuse_weights_without_one() {
    let gpu = Gpu::new();
    let coop = gpu.coop_or_required();
    // A 1×1 conv of 37 inputs (zero padding in the last group of four), weights up to ~1e3.
    let (cout, cin) = (70, 37);
    let w = randn(&mut rng(41), cout * cin, 300.0);
    let (shape, packed) = pack_conv(&w, cout, cin, 1, 1);
    let conv = PackedConv::upload(&gpu.ctx, "conv", shape, &packed, None).unwrap();
    assert_eq!(conv.weight_f16.is_some(), coop, "an f16 copy only with cooperative matrices");
    if let Some(half) = &conv.weight_f16 {
        let want: Vec<u16> = packed_to_f16(&packed).iter().map(|h| h.to_bits()).collect();
        assert_eq!(gpu.read::<u16>(half), want);
    }
    let f32_only = PackedConv { shape, weight: gpu.buf(&packed), weight_f16: None, bias: None };
    let rows = 4u32;
    let x = gpu.buf(&vec![0f32; rows as usize * shape.in_stride() as usize]);
    let y = gpu.buf(&vec![0f32; rows as usize * cout]);
    let sessions = gpu.sessions(&[(0, 0)]);
    let site = Conv1d {
        label: "f32 only",
        conv: &f32_only,
        x: SeqView::dense(&x, shape.in_stride(), rows),
        y: SeqView::dense(&y, cout as u32, rows),
        rows_in: rows,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    };
    let err = match site.build_gemm(&gpu.env(), GemmTile::COOP_WIDE, 1) {
        Ok(_) => panic!("a cooperative tile ran over weights without an f16 copy"),
        Err(e) => e.to_string(),
    };
    let why = if coop { "no f16 copy" } else { "no cooperative matrices" };
    assert!(err.contains("`f32 only`") && err.contains(why), "{err}");
    // The register tile reads the f32 weights whatever the adapter.
    assert!(site.build_gemm(&gpu.env(), GemmTile::ROWS_64, 1).is_ok());
    assert_eq!(f16::from_f32(1e6), f16::INFINITY, "unclamped, 1e6 would be infinite");
    assert_eq!(packed_to_f16(&[1e6])[0], f16::MAX);
}

/// (rows per session, virtual columns, sessions, GEMM faster?) of the codec's layers at the
/// batches profiled on an H200 (the per-layer profiles of the conv GEMM's crossover, 0.6B
/// speech tokenizer).
const MEASURED: [(&str, u32, u32, u32, bool); 14] = [
    ("block0.unit.conv1", 32, 768, 8, false),
    ("block0.unit.conv1", 32, 768, 32, true),
    ("block0.convt", 4, 6144, 8, false),
    ("block0.convt", 4, 6144, 32, true),
    ("block1.unit.conv1", 160, 384, 8, true),
    ("block2.convt", 160, 768, 8, true),
    ("decoder0", 4, 1536, 32, false),
    ("decoder0", 4, 1536, 128, true),
    ("up0.pw1", 2, 4096, 32, false),
    ("up0.pw1", 2, 4096, 128, true),
    ("up0.pw2", 2, 1024, 128, false),
    ("tf.o", 1, 1024, 128, false),
    ("tf.qkv", 1, 1536, 128, false),
    ("final_conv", 1920, 1, 128, false),
];

/// The policy without a split K, from 128 rows (the bounds those profiles measured; the adapter
/// plays no part in it).
#[test]
fn gemm_policy_takes_the_measured_crossovers() {
    let gpu =
        Adapter { cpu: false, subgroup_size: Some(32), coop_f16: true, max_invocations_per_workgroup: 1024 };
    let mut tuning = EngineTuning::default();
    tuning.set("conv_gemm_max_split", "1").unwrap();
    tuning.set("conv_gemm_min_rows", "128").unwrap();
    let policy = KernelChoice::for_adapter(gpu, &tuning).conv_gemm_policy();
    for (layer, rows_in, cols, sessions, gemm) in MEASURED {
        let from = policy.min_sessions(rows_in, cols, GemmTile::ROWS_128);
        assert_eq!(
            from.is_some_and(|m| sessions >= m),
            gemm,
            "{layer} at {sessions} sessions: from {from:?}"
        );
    }
    // Batch 1 keeps today's kernel everywhere (the widest layer has 1920 rows of 96 columns).
    assert!(policy.min_sessions(1920, 96, GemmTile::ROWS_128).is_some_and(|m| m > 1), "{policy:?}");
}
