//! Attention of each row against its KV-cache slot, and the q/k-norm + RoPE that writes the
//! cache: as two kernels, or fused into one on decode steps; and the rotation of a codec decoder
//! slot's cached keys when its RoPE positions wrap.

mod causal;
mod fused;
mod heads;
mod rope;
mod rope_shift;

pub use causal::Attention;
pub use fused::AttentionRope;
pub use heads::{Heads, KvCache, KvFormat, RowLayout};
pub use rope::QkNormRope;
pub use rope_shift::{shift_table, RopeShift};

/// The kernels of this family compiled without a prelude.
pub(super) const SOURCES: [crate::gpu::KernelSource; 1] = [rope_shift::SOURCE];
/// The kernels of this family compiled for every [`KvFormat`]'s prelude.
pub(super) const CACHE_SOURCES: [crate::gpu::KernelSource; 5] =
    [causal::SOURCE, causal::SOURCE_SUBGROUP, fused::SOURCE, rope::SOURCE, rope::SOURCE_SUBGROUP];
