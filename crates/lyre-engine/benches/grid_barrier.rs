//! What a persistent kernel would save (docs/performance.md, next steps): the cost of one more
//! dependent phase as a new dispatch against a grid-wide barrier inside one dispatch, with each
//! phase streaming nothing or a mat-vec's worth of memory and exchanging an activation vector
//! between all workgroups, with plain or atomic loads and stores; and whether the values each
//! workgroup reads after the barrier are the current ones (stale reads rule an exchange out).
//! `cargo bench -p lyre-engine --bench grid_barrier`; environment:
//! * `LYRE_BARRIER_GROUPS`: comma-separated workgroup counts (default 132, the H200's SMs, and
//!   264); one on a CPU adapter, whose workgroups do not all run at once;
//! * `LYRE_BARRIER_MB`: comma-separated MB streamed per phase by all workgroups (default 0, 4);
//! * `LYRE_BARRIER_PHASES`: phases per run (default 400);
//! * `LYRE_BARRIER_ACTIVATION`: u32 values exchanged per phase by all workgroups (default 1024,
//!   a 0.6B hidden vector).

mod support;

use lyre_engine::gpu::{GpuContext, GpuOptions, KernelSource};
use support::{best_of_five, env_list};

const PLAIN: KernelSource = KernelSource {
    name: "grid_barrier_plain",
    wgsl: concat!(include_str!("grid_barrier_plain.wgsl"), include_str!("grid_barrier.wgsl")),
};
const ATOMIC: KernelSource = KernelSource {
    name: "grid_barrier_atomic",
    wgsl: concat!(include_str!("grid_barrier_atomic.wgsl"), include_str!("grid_barrier.wgsl")),
};
/// Distinct slices of `data` the phases cycle through (so that L2 does not hold a phase's data).
const REGIONS: u64 = 24;

struct Case {
    groups: u32,
    vec4s: u32,
    /// Values each workgroup publishes per phase.
    values: u32,
    phases: u32,
    persistent: bool,
    atomic: bool,
}

struct Outcome {
    us_per_phase: f64,
    stale: u32,
    gave_up: u32,
}

fn run_case(ctx: &GpuContext, data: &wgpu::Buffer, case: &Case) -> Outcome {
    let dev = &ctx.device;
    let storage = |label: &str, bytes: u64| {
        dev.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    };
    let published = storage("published", case.phases as u64 * (case.groups * case.values) as u64 * 4);
    let counters = storage("counters", 16);
    let stats = storage("stats", 8);
    let sink = storage("sink", case.groups as u64 * 4);
    let constants = [
        ("PERSISTENT", case.persistent as u8 as f64),
        ("PHASES", case.phases as f64),
        ("GROUPS", case.groups as f64),
        ("VEC4S", case.vec4s as f64),
        ("REGIONS", REGIONS as f64),
        ("VALUES", case.values as f64),
    ];
    let pipeline = ctx.pipeline(if case.atomic { ATOMIC } else { PLAIN }, &constants);
    let bind_group = ctx.bind_group("grid_barrier", &pipeline, &[data, &published, &counters, &stats, &sink]);
    let run = || {
        let mut encoder = dev.create_command_encoder(&Default::default());
        encoder.clear_buffer(&published, 0, None);
        encoder.clear_buffer(&counters, 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let dispatches = if case.persistent { 1 } else { case.phases };
            for _ in 0..dispatches {
                pass.dispatch_workgroups(case.groups, 1, 1);
            }
        }
        ctx.queue.submit(Some(encoder.finish()));
        ctx.wait().expect("GPU wait");
    };
    let best = best_of_five(run);
    let stats: Vec<u32> = lyre_engine::gpu::read_buffer(ctx, &stats).expect("read stats");
    Outcome { us_per_phase: best * 1e6 / case.phases as f64, stale: stats[0], gave_up: stats[1] }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = GpuContext::new(&GpuOptions::from_tuning(&support::tuning()?))?;
    let summary = ctx.summary();
    println!("adapter: {} ({})\n", summary.name, summary.backend);
    let mut groups = env_list::<u64>("LYRE_BARRIER_GROUPS", "132,264");
    if ctx.is_cpu() {
        groups = vec![1];
    }
    let mbs = env_list::<u64>("LYRE_BARRIER_MB", "0,4");
    let phases = env_list::<u64>("LYRE_BARRIER_PHASES", "400")[0] as u32;
    let activation = env_list::<u64>("LYRE_BARRIER_ACTIVATION", "1024")[0];
    let max_mb = *mbs.iter().max().unwrap_or(&0);
    let data_bytes = (REGIONS * (max_mb << 20)).max(16);
    let data = ctx.storage_zeroed("grid_barrier.data", data_bytes)?;
    println!("{activation} values exchanged per phase, {phases} phases\n");
    println!(
        "| workgroups | MB per phase | exchange | per dispatch (µs/phase) | grid barrier (µs/phase) | stale reads | gave up |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &g in &groups {
        for &mb in &mbs {
            for atomic in [false, true] {
                let vec4s = ((mb << 20) / g / 16) as u32;
                let values = activation.div_ceil(g) as u32;
                let case = |persistent| Case { groups: g as u32, vec4s, values, phases, persistent, atomic };
                let dispatched = run_case(&ctx, &data, &case(false));
                let persistent = run_case(&ctx, &data, &case(true));
                println!(
                    "| {g} | {mb} | {} | {:.2} | {:.2} | {} / {} | {} |",
                    if atomic { "atomic" } else { "plain" },
                    dispatched.us_per_phase,
                    persistent.us_per_phase,
                    dispatched.stale,
                    persistent.stale,
                    persistent.gave_up + dispatched.gave_up
                );
            }
        }
    }
    Ok(())
}
