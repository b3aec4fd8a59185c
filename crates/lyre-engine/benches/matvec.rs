//! Mat-vec throughput at batch-1 shapes: each matmul of the 0.6B and 1.7B talker and code
//! predictor, with the engine's choice and each few-row kernel (`Subgroup`, and `Matvec` at
//! every split of K), run as a chain of dependent dispatches in one compute pass (as a tick runs
//! them). Reports µs per dispatch (wall time of the chain, one submit) and the weight bytes read
//! per second.
//!
//! `cargo bench -p lyre-engine --bench matvec`. Environment:
//! * `LYRE_BENCH_ROWS`: comma-separated row counts (default `1,2,8,32`; the few-row kernels run
//!   below 8 rows, and every count runs the engine's choice, GEMM levels included);
//! * `LYRE_BENCH_CHAIN`: dispatches per chain (default 400);
//! * `LYRE_BENCH_SWEEP=1`: at every row count, every mat-vec split, few-rows kernel and GEMM tile
//!   and split;
//! * `LYRE_BENCH_SWEEP=gemm`: the engine's choice and every GEMM tile at splits 1, 4 and 16, on
//!   registers and, where the adapter has them, on cooperative matrices;
//! * `LYRE_BENCH_SHAPES`: comma-separated label filters (e.g. `0.6B,cp`);
//! * `LYRE_ENGINE_TUNING_*`: the engine's tuning keys (e.g. `LYRE_ENGINE_TUNING_ADAPTER`, an
//!   adapter name filter).

mod support;

use lyre_engine::gpu::{record_all, Dispatch, GpuContext, GpuOptions, RowCount, RowCounts};
use lyre_engine::kernels::gemm_tile::GemmTile;
use lyre_engine::kernels::matmul::{Activation, Input, Matmul, Output};
use lyre_engine::kernels::select::{KernelChoice, MatmulKernel};
use lyre_engine::kernels::{Env, Rows};
use support::{best_of_five, env_list, tuning};

/// (label, n, k, input): the matmuls of one layer and the heads.
const SHAPES: [(&str, u32, u32, InputKind); 12] = [
    ("0.6B qkv", 4096, 1024, InputKind::Rms),
    ("0.6B o", 1024, 2048, InputKind::Plain),
    ("0.6B gate_up", 6144, 1024, InputKind::Rms),
    ("0.6B down", 1024, 3072, InputKind::SwiGlu),
    ("cp head", 2048, 1024, InputKind::Rms),
    ("0.6B codec head", 3072, 1024, InputKind::Rms),
    ("1.7B qkv", 4096, 2048, InputKind::Rms),
    ("1.7B o", 2048, 2048, InputKind::Plain),
    ("1.7B gate_up", 12288, 2048, InputKind::Rms),
    ("1.7B down", 2048, 6144, InputKind::SwiGlu),
    ("1.7B codec head", 3072, 2048, InputKind::Rms),
    ("1.7B cp in-proj", 1024, 2048, InputKind::Plain),
];

#[derive(Debug, Clone, Copy)]
enum InputKind {
    Plain,
    Rms,
    SwiGlu,
}

/// Bits of small bf16 values (|v| < 0.06), deterministic.
fn bf16_bits(n: usize, seed: u32) -> Vec<u16> {
    let mut state = seed.wrapping_mul(747796405).wrapping_add(2891336453);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(747796405).wrapping_add(2891336453);
            let v = ((state >> 9) as f32 / (1u32 << 23) as f32 - 0.5) * 0.12;
            half::bf16::from_f32(v).to_bits()
        })
        .collect()
}

struct Buffers {
    counts: wgpu::Buffer,
    dummy: wgpu::Buffer,
    scratch: wgpu::Buffer,
    partials: wgpu::Buffer,
}

/// A kernel to time: its name and dispatches.
type Variant = (String, Vec<Dispatch>);

/// What `LYRE_BENCH_SWEEP` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    Off,
    All,
    Gemm,
}

/// The GEMM tiles and splits of `LYRE_BENCH_SWEEP=gemm` at `rows`: every tile no more than
/// twice the rows, on registers and cooperative matrices.
fn gemm_variants(env: &Env, matmul: &Matmul, rows: u32) -> Result<Vec<Variant>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let coop = env.ctx.has_coop_f16();
    for tile in [GemmTile::ROWS_16, GemmTile::ROWS_32, GemmTile::ROWS_64, GemmTile::ROWS_128] {
        if tile.rows() > 2 * rows.max(16) || !matmul.k.is_multiple_of(tile.bk) {
            continue;
        }
        let wide = (tile == GemmTile::ROWS_64).then_some(GemmTile::COOP_WIDE);
        let forms = [Some(tile), tile.on_coop().filter(|_| coop), wide.filter(|_| coop)];
        for (tile, split) in forms.into_iter().flatten().flat_map(|t| [1, 4, 16].map(|s| (t, s))) {
            if matmul.k / tile.bk < 2 * split {
                continue;
            }
            let coop = if tile.coop { format!(" × {} coop", tile.cols()) } else { String::new() };
            let name = format!("GEMM {} rows{coop}, split {split}", tile.rows());
            out.push((name, matmul.build_sequence(env, MatmulKernel::Gemm { tile, split })?));
        }
    }
    Ok(out)
}

/// The kernels to time at `rows`: the engine's choice, the few-row kernels below 8 rows, and
/// with `sweep` every mat-vec split, few-rows kernel and GEMM tile and split.
fn variants(
    env: &Env,
    matmul: &Matmul,
    size: u32,
    rows: u32,
    sweep: Sweep,
) -> Result<Vec<Variant>, Box<dyn std::error::Error>> {
    let (n, k) = (matmul.n, matmul.k);
    let mut out = vec![("engine's choice".to_string(), vec![matmul.build(env)?])];
    if sweep == Sweep::Gemm {
        out.extend(gemm_variants(env, matmul, rows)?);
        return Ok(out);
    }
    let sweep = sweep == Sweep::All;
    let chosen = env.kernels.matvec_split(n, k, size);
    if rows < 8 || sweep {
        let mut kernels = vec![MatmulKernel::Subgroup { size }];
        kernels.extend([1, 2, 4, 8].map(|split| MatmulKernel::Matvec { size, split }));
        for kernel in kernels {
            let mark = match kernel {
                MatmulKernel::Matvec { split, .. } if split == chosen => " (default)",
                _ => "",
            };
            out.push((format!("{kernel:?}{mark}"), vec![matmul.build_with(env, kernel)?]));
        }
    }
    if sweep && rows >= 2 {
        let level = [1u32, 2, 4, 8].into_iter().find(|q| 4 * q >= rows).unwrap_or(8);
        for quads in [level / 2, level].into_iter().filter(|&q| q >= 1) {
            for split in [1, 2, 4, 8] {
                for cpt in [1, 2] {
                    let kernel = MatmulKernel::FewRows { quads, split, cpt };
                    out.push((format!("{kernel:?}"), matmul.build_sequence(env, kernel)?));
                }
            }
        }
    }
    if sweep && rows >= 8 {
        for tile in [GemmTile::ROWS_16, GemmTile::ROWS_32, GemmTile::ROWS_64] {
            if tile.rows() > 2 * rows.max(16) || rows > 2 * tile.rows() || k % tile.bk != 0 {
                continue;
            }
            for split in [1, 2, 4, 8, 16, 32] {
                if k / tile.bk < 2 * split {
                    continue;
                }
                let kernel = MatmulKernel::Gemm { tile, split };
                out.push((
                    format!("GEMM {} rows, split {split}", tile.rows()),
                    matmul.build_sequence(env, kernel)?,
                ));
            }
        }
    }
    Ok(out)
}

fn time_chain(ctx: &GpuContext, counts: &RowCounts, d: &[Dispatch], chain: usize) -> f64 {
    let run = || {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for _ in 0..chain {
                record_all(d, &mut pass, counts);
            }
        }
        ctx.queue.submit(Some(encoder.finish()));
        ctx.wait().expect("GPU wait");
    };
    best_of_five(run) / chain as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tuning = tuning()?;
    let ctx = GpuContext::new(&GpuOptions::from_tuning(&tuning))?;
    let kernels = KernelChoice::new(&ctx, &tuning);
    let summary = ctx.summary();
    println!(
        "adapter: {} ({}), subgroup size {:?}, cooperative matrices: {}",
        summary.name,
        summary.backend,
        ctx.fixed_subgroup_size(),
        summary.coop_matrix_f16
    );
    let Some(size) = ctx.fixed_subgroup_size() else {
        return Err("the mat-vec kernels need subgroups of a fixed size".into());
    };
    let rows_list = env_list::<u32>("LYRE_BENCH_ROWS", "1,2,8,32");
    let chain = env_list::<usize>("LYRE_BENCH_CHAIN", "400").first().copied().unwrap_or(400);
    let b = Buffers {
        counts: ctx.storage_zeroed("counts", 16)?,
        dummy: ctx.storage_zeroed("dummy", 16)?,
        scratch: ctx.storage_zeroed("scratch", 16)?,
        partials: ctx.storage_zeroed("partials", 64 << 20)?,
    };
    let env = Env {
        ctx: &ctx,
        kernels: &kernels,
        counts: &b.counts,
        dummy: &b.dummy,
        scratch: &b.scratch,
        partials: &b.partials,
    };
    let max_rows = rows_list.iter().copied().max().unwrap_or(1);
    let sweep = match std::env::var("LYRE_BENCH_SWEEP").as_deref() {
        Ok("1") => Sweep::All,
        Ok("gemm") => Sweep::Gemm,
        _ => Sweep::Off,
    };
    let only = std::env::var("LYRE_BENCH_SHAPES").unwrap_or_default();
    println!("| shape | n × k | rows | kernel | µs/dispatch | GB/s |");
    println!("|---|---|---:|---|---:|---:|");
    for (label, n, k, kind) in SHAPES {
        if !only.is_empty() && !only.split(',').any(|o| label.contains(o)) {
            continue;
        }
        let weight = ctx.storage_from("w", &bf16_bits((n * k) as usize, n ^ k))?;
        let gamma = ctx.storage_from("gamma", &bf16_bits(k as usize, 7))?;
        let x_width = if matches!(kind, InputKind::SwiGlu) { 2 * k } else { k };
        let x = ctx.storage_from("x", &vec![0.5f32; (max_rows * x_width) as usize])?;
        let y = ctx.storage_zeroed("y", (max_rows * n * 4) as u64)?;
        let input = match kind {
            InputKind::Plain => Input::Plain,
            InputKind::Rms => Input::RmsNormed { gamma: &gamma, eps: 1e-6 },
            InputKind::SwiGlu => Input::SwiGlu,
        };
        let matmul = Matmul {
            label,
            weight: &weight,
            bias: None,
            k,
            n,
            x: Rows::dense(&x, x_width),
            input,
            y: Rows::dense(&y, n),
            rows: RowCount::Talker,
            output: Output::Accumulate,
            activation: Activation::None,
        };
        for &rows in &rows_list {
            let counts = RowCounts { talker_rows: rows, sessions: rows };
            ctx.queue.write_buffer(&b.counts, 0, bytemuck::cast_slice(&counts.as_array()));
            for (name, d) in variants(&env, &matmul, size, rows, sweep)? {
                let t = time_chain(&ctx, &counts, &d, chain);
                println!(
                    "| {label} | {n} × {k} | {rows} | {name} | {:.2} | {:.0} |",
                    t * 1e6,
                    (n as f64 * k as f64 * 2.0) / t / 1e9
                );
            }
        }
        ctx.take_error()?;
    }
    Ok(())
}
