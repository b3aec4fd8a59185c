//! A whole decoder layer of a one-row tick as one persistent dispatch, and the check that the
//! adapter holds its grid at once.

mod decode_layer;
mod grid_residency;

pub use decode_layer::{
    persistent_groups, sync_bytes, widest_input, workgroup_bytes, DecodeLayer, GridSync, LayerWeights,
    MAX_CHUNKS,
};
pub use grid_residency::grid_is_resident;

pub(super) const SOURCES: [crate::gpu::KernelSource; 1] = [grid_residency::SOURCE];
/// Compiled for every [`KvFormat`](super::attention::KvFormat)'s prelude.
pub(super) const CACHE_SOURCES: [crate::gpu::KernelSource; 1] = [decode_layer::SOURCE];
