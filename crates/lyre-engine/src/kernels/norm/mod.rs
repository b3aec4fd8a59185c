//! RMSNorm over rows, and LayerNorm/RMSNorm over sequence views (the codec decoder).

mod rms_norm;
mod seq_norm;

pub use rms_norm::{RmsNorm, WeightFormat};
pub use seq_norm::{NormKind, SeqNorm};

pub(super) const SOURCES: [crate::gpu::KernelSource; 2] = [rms_norm::SOURCE, seq_norm::SOURCE];
