//! Checks, once when a plan is built, that the persistent kernels' grid is resident at once on
//! this adapter (grid_residency.wgsl). A grid that is not would make every grid barrier wait out
//! its bounded spin and the layer compute on stale values.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{read_buffer, GpuContext, KernelSource};

pub const SOURCE: KernelSource =
    KernelSource { name: "grid_residency", wgsl: include_str!("grid_residency.wgsl") };

/// Polls per workgroup before it gives up: a resident grid's workgroups all arrive within
/// microseconds of each other.
const SPIN_LIMIT: u32 = 1 << 16;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    groups: u32,
    spin_limit: u32,
    _pad: [u32; 2],
}

/// Whether `groups` workgroups of 256 threads, each holding `workgroup_bytes` of workgroup
/// memory (capped at the adapter's limit), ran at once (every one saw all the others arrive).
pub fn grid_is_resident(ctx: &GpuContext, groups: u32, workgroup_bytes: u32) -> Result<bool> {
    let words = workgroup_bytes.min(ctx.limits.max_compute_workgroup_storage_size) / 4;
    let pipeline = ctx.pipeline(SOURCE, &[("WORDS", words.max(1) as f64)]);
    let uniform = ctx.uniform("grid_residency", &Params { groups, spin_limit: SPIN_LIMIT, _pad: [0; 2] });
    let state = ctx.storage_zeroed("grid_residency.state", 16)?;
    let bind_group = ctx.bind_group("grid_residency", &pipeline, &[&uniform, &state]);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    ctx.queue.submit(Some(encoder.finish()));
    ctx.wait()?;
    let state: Vec<u32> = read_buffer(ctx, &state)?;
    Ok(state[0] == groups && state[1] == 0)
}
