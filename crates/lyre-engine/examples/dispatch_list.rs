//! Writes the dispatch list of a tick for several row counts, on every fixture, one line per
//! dispatch (label, kernel and constants, grid, bound buffers with uniform parameters by value):
//! two builds that write the same files record the same GPU work.
//!
//! `cargo run --example dispatch_list -- OUT_DIR` (fixtures from `../shared/fixtures`, or
//! `LYRE_SHARED`); the tuning is the default with the `LYRE_ENGINE_TUNING_*` variables applied,
//! as for the tests.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::codec::{CodecDecoder, DecoderOptions};
use lyre_engine::gpu::{GpuContext, GpuOptions, RowCounts};
use lyre_engine::kernels::select::KernelChoice;
use lyre_engine::kernels::Env;
use lyre_engine::{Engine, EngineOptions, EngineTuning, KvFormat};

/// (talker rows, sessions): decode steps of 1 to 64 sessions, and ticks carrying prompts.
const TICKS: [(u32, u32); 12] = [
    (1, 1),
    (2, 2),
    (8, 8),
    (33, 33),
    (64, 64),
    (5, 1),
    (17, 1),
    (33, 1),
    (40, 2),
    (64, 8),
    (128, 33),
    (128, 64),
];

fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: dispatch_list OUT_DIR")?);
    std::fs::create_dir_all(&out)?;
    let tuning = EngineTuning::default().with_env(std::env::vars())?;
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    gpu.keep_resource_names();
    let mut summary = vec![format!("adapter: {:?}", gpu.summary())];
    for fixture in ["tiny-custom-voice", "tiny-base"] {
        let model = Arc::new(ModelDir::open(shared().join("fixtures").join(fixture))?);
        for (kv, fault) in [(KvFormat::F32, false), (KvFormat::F16, false), (KvFormat::F32, true)] {
            let name = format!("{fixture}-{kv:?}{}", if fault { "-grid-fault" } else { "" });
            let opts = EngineOptions {
                max_sessions: 64,
                max_positions: 256,
                kv_cache: kv,
                max_rows_per_tick: 128,
                inject_grid_fault: fault,
                tuning: tuning.clone(),
                ..EngineOptions::default()
            };
            let engine = match Engine::new(gpu.clone(), model.clone(), opts) {
                Ok(e) => e,
                Err(e) => {
                    summary.push(format!("{name}: no engine: {e}"));
                    continue;
                }
            };
            let mut lines = Vec::new();
            for (talker_rows, sessions) in TICKS {
                let counts = RowCounts { talker_rows, sessions };
                lines.push(format!("== tick {counts:?}"));
                lines.extend(engine.describe_dispatches(&counts));
            }
            summary.push(format!("{name}: {} lines", lines.len()));
            std::fs::write(out.join(format!("{name}.txt")), lines.join("\n") + "\n")?;
        }
        // Whole-clip decoding: steps of several frames per session.
        let options = DecoderOptions { max_sessions: 4, max_frames: 256, max_frames_per_step: 8 };
        let decoder = CodecDecoder::with_options(&gpu, &model.speech_config, &model.speech_weights, options)?;
        let z = |label: &str, bytes: u64| gpu.storage_zeroed(label, bytes);
        let (counts, dummy, scratch) = (z("counts", 16)?, z("dummy", 16)?, z("scratch", 16)?);
        let kernels = KernelChoice::new(&gpu, &tuning);
        let partials = z("partials", kernels.partials_bytes())?;
        let env = Env {
            ctx: &gpu,
            kernels: &kernels,
            counts: &counts,
            dummy: &dummy,
            scratch: &scratch,
            partials: &partials,
        };
        let mut lines = Vec::new();
        for frames in [1, 8] {
            let plan = decoder.new_plan(&gpu, frames)?;
            let codes = z("codes", 4 * 16 * 4 * frames as u64)?;
            let sessions = z("sessions", 4 * 64)?;
            let dispatches = decoder.build_plan(&plan, &env, &codes, &sessions)?;
            for s in 1..=4 {
                let counts = RowCounts { talker_rows: s, sessions: s };
                lines.push(format!("== decoder step of {frames} frames, {counts:?}"));
                lines.extend(gpu.describe_dispatches(&dispatches, &counts));
            }
        }
        std::fs::write(out.join(format!("{fixture}-decoder.txt")), lines.join("\n") + "\n")?;
    }
    std::fs::write(out.join("summary.txt"), summary.join("\n") + "\n")?;
    println!("{}", summary.join("\n"));
    Ok(())
}
