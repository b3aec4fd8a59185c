//! The GEMM conv1d kernel (every tile of `GemmTile::ALL`) against the CPU references of
//! `conv.rs`, on shapes that leave partial tiles and chunks. Tiles run over the rows of all
//! sessions as one sequence, so tiles straddle sessions.

use lyre_engine::kernels::conv1d::Activation;
use lyre_engine::kernels::conv1d_gemm::{policy, GemmPolicy};
use lyre_engine::kernels::gemm_tile::GemmTile;

use super::conv::{dilated_conv_case, linear_case, transposed_conv_case, Kernel};

#[test]
fn gemm_dilated_causal_conv_reads_every_tap_from_the_ring() {
    for (i, tile) in GemmTile::ALL.into_iter().enumerate() {
        let seed = 31 + 10 * i as u64;
        // 6 inputs: one partial chunk; 5 rows per session: a partial row tile.
        dilated_conv_case(Kernel::Gemm(tile), 6, 5, 5, seed);
        // 70 inputs (18 groups: full chunks and a partial one), 70 outputs (a partial column
        // tile), 70 rows per session (tiles that straddle sessions).
        dilated_conv_case(Kernel::Gemm(tile), 70, 70, 70, seed + 1);
    }
}

#[test]
fn gemm_transposed_conv_writes_every_phase() {
    for (i, tile) in GemmTile::ALL.into_iter().enumerate() {
        let seed = 33 + 10 * i as u64;
        transposed_conv_case(Kernel::Gemm(tile), 5, 3, 4, 3, seed);
        // 80 virtual columns (4 phases × 20): the phases straddle column tiles of 64.
        transposed_conv_case(Kernel::Gemm(tile), 37, 20, 4, 16, seed + 1);
    }
}

#[test]
fn gemm_linear_applies_every_epilogue_flag() {
    for (i, tile) in GemmTile::ALL.into_iter().enumerate() {
        let seed = 35 + 10 * i as u64;
        // 36 inputs (9 groups: a full chunk and one group). One row per session.
        linear_case(Kernel::Gemm(tile), 36, 70, 70, 1, Activation::Gelu, false, seed);
        // 16 rows per session, 5 sessions: the last tile partly full.
        linear_case(Kernel::Gemm(tile), 300, 70, 5, 16, Activation::Silu, true, seed + 1);
        linear_case(Kernel::Gemm(tile), 12, 256, 3, 7, Activation::None, false, seed + 2);
        linear_case(Kernel::Gemm(tile), 8, 256, 2, 65, Activation::Gelu, true, seed + 3);
    }
}

#[test]
fn gemm_policy_defaults_keep_batch_one_on_todays_kernel() {
    if std::env::var_os("LYRE_CONV_GEMM_MIN_ROWS").is_some() {
        return;
    }
    let GemmPolicy { min_rows, min_cols } = policy();
    // The widest batch-1 layer has 1920 rows (the last vocoder block).
    assert!(min_rows > 1920 && min_cols > 1, "{min_rows} rows, {min_cols} columns");
}
