//! The narrow conv kernel, which every site of at most `NARROW_MAX_COLS` virtual columns takes
//! (the decoder's last conv has one): against the CPU references of conv.rs.

use lyre_engine::kernels::conv::Activation;
use lyre_engine::kernels::select::NARROW_MAX_COLS;

use super::conv::{dilated_conv_case, linear_case, transposed_conv_case, Kernel};

// These cases have at most four virtual columns, meant for the narrow kernel.
const _: () = assert!(NARROW_MAX_COLS >= 4);

#[test]
fn narrow_dilated_conv_reads_every_tap_from_the_ring() {
    // The decoder's last conv: 96 inputs (24 groups, three per lane), one output, 70 rows per
    // session (workgroups of 32 rows that end inside a session).
    dilated_conv_case(Kernel::Site, 96, 1, 70, 61);
    // Two groups of inputs (most lanes of a row idle), three outputs, rows that fit one
    // workgroup with room to spare.
    dilated_conv_case(Kernel::Site, 6, 3, 5, 62);
}

#[test]
fn narrow_transposed_conv_writes_every_phase() {
    // One output channel, stride 4: four virtual columns.
    transposed_conv_case(Kernel::Site, 37, 1, 4, 16, 63);
}

#[test]
fn narrow_linear_applies_every_epilogue_flag() {
    // 8 rows per session: a workgroup covers four whole sessions.
    linear_case(Kernel::Site, 300, 2, 5, 8, Activation::Gelu, false, 64);
    linear_case(Kernel::Site, 36, 4, 3, 40, Activation::Silu, true, 65);
    // One row per session, 70 sessions: three workgroups of 32, the last partly full.
    linear_case(Kernel::Site, 12, 1, 70, 1, Activation::None, false, 66);
}
