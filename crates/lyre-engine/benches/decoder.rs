//! Codec-decoder throughput: frames per second of the streaming step (one frame per session
//! per step, one submit + one readback, as the engine's tick runs it) at several batch sizes,
//! and of whole-clip decoding (several frames per step).
//!
//! `cargo bench -p lyre-engine --bench decoder`. Environment:
//! * `LYRE_BENCH_MODEL`: checkpoint directory (default: the tiny CustomVoice fixture);
//! * `LYRE_BENCH_BATCHES`: comma-separated batch sizes (default `1,16`);
//! * `LYRE_BENCH_STEPS`: timed steps per batch size (default 20);
//! * `LYRE_BENCH_CLIP`: frames per step of the whole-clip row, 0 to skip (default 25);
//! * `LYRE_BENCH_PROFILE=1`: also time each dispatch of one step per batch size (GPU
//!   timestamps) and print the slowest;
//! * `LYRE_ENGINE_TUNING_*`: the engine's tuning keys (e.g. `LYRE_ENGINE_TUNING_ADAPTER`, an
//!   adapter name filter; `LYRE_ENGINE_TUNING_CONV_TILE`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use lyre_engine::checkpoint::config::{read_json, SpeechTokenizerConfig};
use lyre_engine::checkpoint::expected::speech_tokenizer_tensors;
use lyre_engine::checkpoint::weights::WeightFile;
use lyre_engine::codec::{DecoderOptions, StandaloneDecoder};
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::EngineTuning;

const WARMUP_STEPS: usize = 2;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn model_dir() -> PathBuf {
    std::env::var_os("LYRE_BENCH_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/tiny-custom-voice")
    })
}

/// Deterministic pseudo-random codes (an LCG; the values only need to vary).
fn codes(n: usize, seed: u64) -> Vec<[u16; 16]> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            std::array::from_fn(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 33) % 2048) as u16
            })
        })
        .collect()
}

struct Row {
    what: String,
    batch: usize,
    ms_per_step: f64,
    frames_per_s: f64,
}

impl Row {
    fn print(&self) {
        let realtime = self.frames_per_s / 12.5;
        println!(
            "| {:<28} | {:>5} | {:>11.2} | {:>10.1} | {:>13.2} |",
            self.what, self.batch, self.ms_per_step, self.frames_per_s, realtime
        );
    }
}

fn streaming_rows(
    ctx: &Arc<GpuContext>,
    tuning: &EngineTuning,
    cfg: &SpeechTokenizerConfig,
    weights: &WeightFile,
    batches: &[usize],
    steps: usize,
) -> Result<(Vec<Row>, Vec<Profile>), Box<dyn std::error::Error>> {
    let max_batch = batches.iter().copied().max().unwrap_or(1);
    let options = DecoderOptions {
        max_sessions: max_batch,
        max_frames: WARMUP_STEPS + steps + 1,
        max_frames_per_step: 1,
    };
    let mut dec = StandaloneDecoder::with_options(ctx.clone(), cfg, weights, options, tuning)?;
    let (mut rows, mut profiles) = (Vec::new(), Vec::new());
    for &batch in batches {
        let clips: Vec<Vec<[u16; 16]>> =
            (0..batch).map(|s| codes(WARMUP_STEPS + steps + 1, s as u64)).collect();
        let per_step: Vec<Vec<(u32, u32, [u16; 16])>> = (0..WARMUP_STEPS + steps + 1)
            .map(|f| clips.iter().enumerate().map(|(s, c)| (s as u32, f as u32, c[f])).collect())
            .collect();
        for slot in 0..batch as u32 {
            dec.reset(slot);
        }
        let mut start = Instant::now();
        let (timed, last) = per_step.split_at(WARMUP_STEPS + steps);
        for (frame, step) in timed.iter().enumerate() {
            if frame == WARMUP_STEPS {
                start = Instant::now();
            }
            dec.step(step)?;
        }
        let secs = start.elapsed().as_secs_f64();
        if std::env::var("LYRE_BENCH_PROFILE").is_ok_and(|v| v == "1") {
            profiles.push(Profile { batch, times: dec.profile_step(&last[0])? });
        }
        rows.push(Row {
            what: "streaming (1 frame/step)".into(),
            batch,
            ms_per_step: secs * 1e3 / steps as f64,
            frames_per_s: (batch * steps) as f64 / secs,
        });
    }
    Ok((rows, profiles))
}

/// Each dispatch's GPU time in one step of `batch` sessions.
struct Profile {
    batch: usize,
    times: Vec<(String, f64)>,
}

/// The slowest dispatches of one profiled step, and the time per kind of dispatch (labels
/// with their numbers removed).
fn print_profile(Profile { batch, times }: &Profile) {
    let total: f64 = times.iter().map(|t| t.1).sum();
    println!("\nprofile, batch {batch}: {} dispatches, {total:.0} µs of GPU time", times.len());
    let mut kinds: std::collections::BTreeMap<String, (usize, f64)> = Default::default();
    for (label, us) in times {
        // Numbers of blocks, units and layers go; the site's own name (conv1, pw2) stays.
        let (path, site) = label.rsplit_once('.').unwrap_or(("", label));
        let path: String = path.chars().filter(|c| !c.is_ascii_digit()).collect();
        let kind = format!("{path}.{site}");
        let e = kinds.entry(kind).or_default();
        e.0 += 1;
        e.1 += us;
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    for (kind, (n, us)) in kinds.iter().take(16) {
        println!("  {kind:<32} ×{n:<3} {us:>9.1} µs ({:>4.1} %)", 100.0 * us / total.max(1e-9));
    }
    let mut slow: Vec<_> = times.to_vec();
    slow.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top: Vec<String> = slow.iter().take(8).map(|(l, us)| format!("{l} {us:.0}")).collect();
    println!("  slowest (µs): {}\n", top.join(", "));
}

fn clip_row(
    ctx: &Arc<GpuContext>,
    tuning: &EngineTuning,
    cfg: &SpeechTokenizerConfig,
    weights: &WeightFile,
    chunk: usize,
) -> Result<Row, Box<dyn std::error::Error>> {
    let frames = 2 * chunk;
    let options = DecoderOptions { max_sessions: 1, max_frames: frames, max_frames_per_step: chunk };
    let mut dec = StandaloneDecoder::with_options(ctx.clone(), cfg, weights, options, tuning)?;
    let clip = codes(frames, 7);
    dec.decode_clip(&clip)?; // warm-up
    let start = Instant::now();
    dec.decode_clip(&clip)?;
    let secs = start.elapsed().as_secs_f64();
    Ok(Row {
        what: format!("whole clip ({chunk} frames/step)"),
        batch: 1,
        ms_per_step: secs * 1e3 / 2.0,
        frames_per_s: frames as f64 / secs,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = model_dir();
    let st = dir.join("speech_tokenizer");
    let cfg: SpeechTokenizerConfig = read_json(&st.join("config.json"))?;
    let weights = WeightFile::open(&st.join("model.safetensors"))?;
    weights.validate(&speech_tokenizer_tensors(&cfg), &cfg.model_type)?;
    let tuning = EngineTuning::default().with_env(std::env::vars())?;
    let ctx = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    let batches: Vec<usize> = std::env::var("LYRE_BENCH_BATCHES")
        .unwrap_or_else(|_| "1,16".into())
        .split(',')
        .filter_map(|b| b.trim().parse().ok())
        .collect();
    let steps = env_or("LYRE_BENCH_STEPS", 20usize).max(1);
    let chunk = env_or("LYRE_BENCH_CLIP", 25usize);
    let d = &cfg.decoder_config;
    println!("adapter: {} ({:?}, {:?})", ctx.info.name, ctx.info.backend, ctx.info.device_type);
    println!("model:   {}", dir.display());
    println!(
        "decoder: latent {}, hidden {}, {} layers, decoder_dim {}, {} samples/frame",
        d.latent_dim, d.hidden_size, d.num_hidden_layers, d.decoder_dim, cfg.decode_upsample_rate
    );
    println!("timed:   {steps} steps after {WARMUP_STEPS} warm-up steps\n");
    println!(
        "| {:<28} | {:>5} | {:>11} | {:>10} | {:>13} |",
        "mode", "batch", "ms / step", "frames / s", "× real time"
    );
    println!("|{:-<30}|{:-<7}|{:-<13}|{:-<12}|{:-<15}|", "", "", "", "", "");
    let (rows, profiles) = streaming_rows(&ctx, &tuning, &cfg, &weights, &batches, steps)?;
    for row in rows {
        row.print();
    }
    if chunk > 0 {
        clip_row(&ctx, &tuning, &cfg, &weights, chunk)?.print();
    }
    profiles.iter().for_each(print_profile);
    Ok(())
}
