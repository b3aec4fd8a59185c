//! The narrow conv kernel, which sites of at most `NARROW_MAX_COLS` virtual columns take on GPUs
//! (the decoder's last conv has one), run whatever the tuning: against the CPU references of
//! conv.rs.

use lyre_engine::kernels::conv::{pack_linear, Activation, Conv1d, FusedSnake, PackedConv, Residual};
use lyre_engine::kernels::select::NARROW_MAX_COLS;
use lyre_engine::kernels::seq_view::SeqView;

use super::conv::{dilated_conv_case, linear_case, transposed_conv_case, Kernel};
use super::*;

// These cases have at most four virtual columns, meant for the narrow kernel.
const _: () = assert!(NARROW_MAX_COLS >= 4);

#[test]
fn narrow_dilated_conv_reads_every_tap_from_the_ring() {
    // The decoder's last conv: 96 inputs (24 groups, three per lane), one output, 70 rows per
    // session (workgroups of 32 rows that end inside a session).
    dilated_conv_case(Kernel::Narrow, 96, 1, 70, 61);
    // Two groups of inputs (most lanes of a row idle), three outputs, rows that fit one
    // workgroup with room to spare.
    dilated_conv_case(Kernel::Narrow, 6, 3, 5, 62);
}

#[test]
fn narrow_transposed_conv_writes_every_phase() {
    // One output channel, stride 4: four virtual columns.
    transposed_conv_case(Kernel::Narrow, 37, 1, 4, 16, 63);
}

#[test]
fn narrow_linear_applies_every_epilogue_flag() {
    // 8 rows per session: a workgroup covers four whole sessions.
    linear_case(Kernel::Narrow, 300, 2, 5, 8, Activation::Gelu, false, 64);
    linear_case(Kernel::Narrow, 36, 4, 3, 40, Activation::Silu, true, 65);
    // One row per session, 70 sessions: three workgroups of 32, the last partly full.
    linear_case(Kernel::Narrow, 12, 1, 70, 1, Activation::None, false, 66);
}

#[test]
fn a_layer_wider_than_the_narrow_kernel_is_refused_by_name() {
    let gpu = Gpu::new();
    let cols = NARROW_MAX_COLS as usize + 1;
    let (shape, packed) = pack_linear(&vec![0.5; cols * 8], cols, 8);
    let conv = PackedConv::upload(&gpu.ctx, "wide", shape, &packed, None).unwrap();
    let (x, y) = (gpu.buf(&[0f32; 8]), gpu.buf(&vec![0f32; cols]));
    let sessions = gpu.sessions(&[(0, 0)]);
    let site = Conv1d {
        label: "decoder.wide",
        conv: &conv,
        x: SeqView::dense(&x, 8, 1),
        y: SeqView::dense(&y, cols as u32, 1),
        rows_in: 1,
        sessions: &sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    };
    let Err(err) = site.build_narrow(&gpu.env()) else { panic!("a layer too wide for the narrow kernel") };
    assert!(err.to_string().contains("decoder.wide"), "{err}");
}
