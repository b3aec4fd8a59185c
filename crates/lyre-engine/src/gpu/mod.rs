//! The only modules that talk to wgpu directly: the device, buffers, pipelines and the
//! recorded dispatch lists ("plans") that the models replay every tick.

mod buffer;
mod context;
mod coop;
mod names;
mod pipeline;
mod plan;

pub use buffer::{read_buffer, Readback};
pub use context::{AdapterSummary, GpuContext, GpuOptions, ShaderChecks};
pub use coop::COOP_WORKGROUP_BYTES;
pub use pipeline::KernelSource;
pub use plan::{part_ends, record_all, run_now, Alternative, Dispatch, Extent, Grid, RowCount, RowCounts};
