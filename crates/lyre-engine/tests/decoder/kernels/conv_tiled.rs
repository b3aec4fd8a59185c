//! The tiled conv1d kernel (64 rows × 64 columns per workgroup, input channels staged 32 at a
//! time) against the CPU references of `conv.rs`, on shapes that leave partial tiles and chunks.

use lyre_engine::kernels::conv1d::Activation;
use lyre_engine::kernels::conv1d_tiled::{policy, TiledPolicy};

use super::conv::{dilated_conv_case, linear_case, transposed_conv_case, Kernel};

#[test]
fn tiled_dilated_causal_conv_reads_every_tap_from_the_ring() {
    // 6 inputs: one partial chunk; 5 rows per session: a partial row tile per session.
    dilated_conv_case(Kernel::Tiled, 6, 5, 5, 31);
    // 70 inputs (18 groups: two full chunks and a partial one), 70 outputs (two column tiles),
    // 70 rows per session (a full and a partial row tile).
    dilated_conv_case(Kernel::Tiled, 70, 70, 70, 32);
}

#[test]
fn tiled_transposed_conv_writes_every_phase() {
    transposed_conv_case(Kernel::Tiled, 5, 3, 4, 3, 33);
    // 80 virtual columns (4 phases × 20): the phases straddle the two column tiles.
    transposed_conv_case(Kernel::Tiled, 37, 20, 4, 16, 34);
}

#[test]
fn tiled_linear_applies_every_epilogue_flag() {
    // 36 inputs (9 groups: a full chunk and one group). One row per session: tiles of 64 whole
    // sessions, the second of 70 mostly empty.
    linear_case(Kernel::Tiled, 36, 70, 70, 1, Activation::Gelu, false, 35);
    // 16 rows per session: 4 sessions a tile; 5 sessions leave the second tile a quarter full.
    linear_case(Kernel::Tiled, 300, 70, 5, 16, Activation::Silu, true, 36);
    linear_case(Kernel::Tiled, 12, 256, 3, 7, Activation::None, false, 37);
    linear_case(Kernel::Tiled, 8, 256, 2, 65, Activation::Gelu, true, 38);
}

#[test]
fn tiled_policy_defaults_keep_batch_one_on_todays_kernel() {
    if std::env::var_os("LYRE_CONV_TILED_MIN_ROWS").is_some() {
        return;
    }
    let TiledPolicy { min_rows, min_cols } = policy();
    // The widest batch-1 layer has 1920 rows (the last vocoder block).
    assert!(min_rows > 1920 && min_cols > 1, "{min_rows} rows, {min_cols} columns");
}
