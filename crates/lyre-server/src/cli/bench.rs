//! `lyre bench`: the engine alone (no HTTP), at several batch sizes. Each configuration starts
//! `batch` sessions with the same prompt length at once, EOS disabled so every run has the same
//! length, and times the first tick (prefill + first frame: time to first audio, the median of
//! several starts) and the following ticks (ms per frame, split by part where the GPU has
//! timestamp queries).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{Engine, EngineOptions, EngineTuning, SessionRequest, TextInput, TickProfile};
use serde::Serialize;

use crate::config::ServerConfig;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(long)]
    pub model_dir: PathBuf,
    /// Batch sizes (sessions stepped together), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    pub batch: Vec<usize>,
    /// Frames per session after the first.
    #[arg(long, default_value_t = 50)]
    pub frames: u32,
    /// Frames each session generates untimed before the timed ones, so the timed frames attend
    /// to this many more positions (long-context figures; the split into parts too).
    #[arg(long, default_value_t = 0)]
    pub context: u32,
    /// Approximate text tokens in each prompt.
    #[arg(long, default_value_t = 40)]
    pub prompt_tokens: usize,
    /// Times to first audio measured per batch size (up to 64 sessions; one above): the report
    /// gives their median (a single first tick scatters by milliseconds).
    #[arg(long, default_value_t = 5)]
    pub ttfa_runs: usize,
    /// Also write the results as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Time every dispatch and report the most expensive kinds (slower per frame).
    #[arg(long)]
    pub profile_dispatches: bool,
    /// Milliseconds of batch-1 generation before the first measurement (pipelines, caches,
    /// GPU clocks: shorter warm-ups left the first batch-1 figure of a process scattered).
    #[arg(long, default_value_t = 1000)]
    pub warmup_ms: u64,
    /// The talker's KV-cache format: f32 or f16.
    #[arg(long, default_value = "f32", value_parser = crate::config::parse_kv_format)]
    pub kv_cache: lyre_engine::KvFormat,
    /// A server config whose `[engine.tuning]` to run with (LYRE_ENGINE_TUNING_* variables apply
    /// on top, as for `lyre serve`).
    #[arg(long, env = "LYRE_CONFIG")]
    pub config: Option<PathBuf>,
    /// An `[engine.tuning]` key for this run, e.g. `--tune persistent=off --tune gemm_min_rows=16`
    /// (applied last; docs/kernels.md lists the keys).
    #[arg(long = "tune", value_name = "KEY=VALUE", value_parser = parse_tune)]
    pub tune: Vec<(String, String)>,
}

fn parse_tune(s: &str) -> Result<(String, String), String> {
    let (key, value) = s.split_once('=').ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    Ok((key.trim().to_string(), value.trim().to_string()))
}

/// The configuration's tuning with the `--tune` keys applied, validated.
fn tuning(args: &BenchArgs) -> anyhow::Result<EngineTuning> {
    let mut tuning = ServerConfig::load(args.config.as_deref(), std::env::vars())?.engine.tuning;
    for (key, value) in &args.tune {
        tuning.set(key, value).with_context(|| format!("--tune {key}={value}"))?;
    }
    tuning.validate().context("--tune")?;
    Ok(tuning)
}

#[derive(Debug, Serialize)]
struct Run {
    batch: usize,
    frames: u32,
    ms_per_frame: f64,
    frames_per_s: f64,
    /// The median of `ttfa_runs_ms`.
    ttfa_ms: f64,
    ttfa_runs_ms: Vec<f64>,
    /// Of `ttfa_ms` (medians too): starting the sessions (validation, tokenizing, prompts) on the
    /// CPU, launching the first tick (its rows, uploads, encoding, submission) on the CPU, and
    /// the wait for its results after the submission.
    start_ms: f64,
    first_launch_ms: f64,
    first_wait_ms: f64,
    prefill_ms: f64,
    talker_ms: Option<f64>,
    code_predictor_ms: Option<f64>,
    sampling_ms: Option<f64>,
    codec_ms: Option<f64>,
    x_real_time_per_stream: f64,
    /// With --profile-dispatches: (kind, GPU ms per tick, dispatches per tick), costliest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dispatch_kinds: Vec<(String, f64, u32)>,
    /// With --profile-dispatches: the same for the first tick, which takes the prompts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    prefill_kinds: Vec<(String, f64, u32)>,
}

#[derive(Debug, Serialize)]
struct Report {
    adapter: lyre_engine::gpu::AdapterSummary,
    model: String,
    prompt_tokens: usize,
    context: u32,
    kv_cache: String,
    tuning: EngineTuning,
    timing: &'static str,
    runs: Vec<Run>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let model = Arc::new(ModelDir::open(&args.model_dir)?);
    let tuning = tuning(&args)?;
    let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&tuning))?);
    let max_batch = args.batch.iter().copied().max().unwrap_or(1).max(1);
    let text = prompt_text(&model, args.prompt_tokens)?;
    let prompt_rows = model.tokenizer.assistant_text_ids(&text)?.len() + 16;
    let opts = EngineOptions {
        max_sessions: max_batch,
        max_positions: prompt_rows + args.context as usize + args.frames as usize + 8,
        max_rows_per_tick: max_batch * prompt_rows,
        segment_tokens: 0,
        capture_logits: false,
        profile: true,
        profile_dispatches: args.profile_dispatches,
        inject_grid_fault: false,
        kv_cache: args.kv_cache,
        tuning: tuning.clone(),
    };
    let mut engine = Engine::new(gpu.clone(), model.clone(), opts)?;
    let timing = if gpu.has_timestamps_in_passes() { "gpu-timestamps" } else { "wall" };
    eprintln!(
        "{} on {} ({:?}, {:?}), {:?} KV cache",
        model.describe(),
        gpu.info.name,
        gpu.info.backend,
        gpu.info.device_type,
        args.kv_cache
    );
    let warmup = Instant::now();
    loop {
        run_one(&mut engine, &model, &text, 1, 0, 10, false)?;
        if warmup.elapsed().as_millis() >= args.warmup_ms as u128 {
            break;
        }
    }
    let mut runs = Vec::new();
    println!(
        "{:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8}",
        "batch", "ms/frame", "ttfa_ms", "prefill", "talker", "cp", "sampling", "codec", "frames/s", "x_rt"
    );
    for &batch in &args.batch {
        // Timed pipelined, as served; then a shorter pass with GPU timestamps (unpipelined)
        // for the split into parts.
        let b = batch.max(1);
        let mut r = run_one(&mut engine, &model, &text, b, args.context, args.frames.max(1), false)?;
        let repeats = if b <= 64 { args.ttfa_runs.max(1) } else { 1 };
        let again = (1..repeats)
            .map(|_| run_one(&mut engine, &model, &text, b, 0, 1, false))
            .collect::<Result<Vec<_>, _>>()?;
        let firsts =
            |part: fn(&Run) -> f64| std::iter::once(&r).chain(&again).map(part).collect::<Vec<f64>>();
        let (ttfa, start, wait, launch) = (
            firsts(|f| f.ttfa_ms),
            firsts(|f| f.start_ms),
            firsts(|f| f.first_wait_ms),
            firsts(|f| f.first_launch_ms),
        );
        r.ttfa_ms = median(ttfa.iter().copied());
        r.ttfa_runs_ms = ttfa;
        r.start_ms = median(start.into_iter());
        r.first_wait_ms = median(wait.into_iter());
        r.first_launch_ms = median(launch.into_iter());
        if engine.set_profiling(true) {
            let p = run_one(&mut engine, &model, &text, b, args.context, args.frames.clamp(1, 10), true)?;
            r.prefill_ms = p.prefill_ms;
            r.talker_ms = p.talker_ms;
            r.code_predictor_ms = p.code_predictor_ms;
            r.sampling_ms = p.sampling_ms;
            r.codec_ms = p.codec_ms;
            r.dispatch_kinds = p.dispatch_kinds;
            r.prefill_kinds = p.prefill_kinds;
        }
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
        println!(
            "{:>6} {:>10.3} {:>9.2} {:>9.2} {:>9} {:>9} {:>9} {:>9} {:>10.1} {:>8.2}",
            r.batch,
            r.ms_per_frame,
            r.ttfa_ms,
            r.prefill_ms,
            f(r.talker_ms),
            f(r.code_predictor_ms),
            f(r.sampling_ms),
            f(r.codec_ms),
            r.frames_per_s,
            r.x_real_time_per_stream
        );
        println!(
            "        ttfa: {:.2} ms starting the sessions, {:.2} ms launching the first tick, {:.2} ms \
             waiting for it",
            r.start_ms, r.first_launch_ms, r.first_wait_ms
        );
        for (kind, ms, n) in r.dispatch_kinds.iter().take(12) {
            println!("        {ms:>8.3} ms {n:>5}×  {kind}");
        }
        if !r.prefill_kinds.is_empty() {
            println!("        the first tick (prompts):");
        }
        for (kind, ms, n) in r.prefill_kinds.iter().take(16) {
            println!("        {ms:>8.3} ms {n:>5}×  {kind}");
        }
        runs.push(r);
    }
    if let Some(path) = &args.json {
        let report = Report {
            adapter: gpu.summary(),
            model: model.describe(),
            prompt_tokens: args.prompt_tokens,
            context: args.context,
            kv_cache: format!("{:?}", args.kv_cache).to_lowercase(),
            tuning,
            timing,
            runs,
        };
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Text of about `tokens` tokens.
fn prompt_text(model: &ModelDir, tokens: usize) -> anyhow::Result<String> {
    let words =
        ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "birds", "sing"];
    let mut text = String::new();
    let mut i = 0;
    while model.tokenizer.assistant_text_ids(&text)?.len().saturating_sub(8) < tokens {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(words[i % words.len()]);
        i += 1;
    }
    Ok(text)
}

fn request(model: &ModelDir, text: &str, frames: u32, seed: u64) -> SessionRequest {
    let cfg = &model.config;
    let (voice, instruct) = match cfg.tts_model_type {
        ModelType::CustomVoice => {
            (VoiceSpec::Speaker(cfg.talker_config.spk_id.keys().next().cloned().unwrap_or_default()), None)
        }
        ModelType::VoiceDesign => (VoiceSpec::None, Some("A calm, clear voice.".to_string())),
        ModelType::Base => (VoiceSpec::Vector(vec![0.0; cfg.talker_config.hidden_size]), None),
    };
    let mut sampling = SamplingParams::from_generation_config(&model.generation, seed);
    sampling.ignore_eos = true;
    SessionRequest {
        text: TextInput::Whole(text.to_string()),
        voice,
        language: "auto".into(),
        instruct,
        mode: TextMode::NonStreaming,
        sampling,
        max_frames: frames + 1,
        max_frames_per_segment: Some(frames + 1),
    }
}

/// `batch` sessions at once: their first tick (TTFA, prefill), `context` untimed ticks, then
/// `frames` timed ones; with GPU timestamps (`profile`) on the first and the timed ticks.
fn run_one(
    engine: &mut Engine,
    model: &ModelDir,
    text: &str,
    batch: usize,
    context: u32,
    frames: u32,
    profile: bool,
) -> anyhow::Result<Run> {
    engine.set_profiling(profile);
    let started = Instant::now();
    for i in 0..batch {
        engine.start(request(model, text, context + frames, i as u64))?;
    }
    let start_ms = started.elapsed().as_secs_f64() * 1e3;
    let outs = engine.step()?;
    let ttfa_ms = started.elapsed().as_secs_f64() * 1e3;
    let first_wait_ms = engine.last_gpu_wait().as_secs_f64() * 1e3;
    let first_launch_ms = engine.last_launch_cpu().as_secs_f64() * 1e3;
    anyhow::ensure!(
        outs.iter().filter(|o| o.frame.is_some()).count() == batch,
        "the first tick did not serve every session"
    );
    let first_tick = engine.last_tick_profile();
    let prefill_ms = first_tick.as_ref().map_or(ttfa_ms, |p| p.total_ms());
    let mut prefill_kinds = first_tick.map(|p| p.by_kind).unwrap_or_default();
    prefill_kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
    engine.set_profiling(false);
    for _ in 0..context {
        engine.step()?;
    }
    engine.set_profiling(profile);
    let mut parts = TickProfile::default();
    let mut kinds: Vec<(String, f64, u32)> = Vec::new();
    let mut profiled = 0;
    let t0 = Instant::now();
    let mut ticks = 0;
    while engine.live_sessions() > 0 {
        let outs = engine.step()?;
        if outs.iter().any(|o| o.frame.is_some()) {
            ticks += 1;
        }
        if let Some(p) = engine.last_tick_profile() {
            parts.talker_ms += p.talker_ms;
            parts.code_predictor_ms += p.code_predictor_ms;
            parts.sampling_ms += p.sampling_ms;
            parts.codec_ms += p.codec_ms;
            profiled += 1;
            for (kind, ms, n) in p.by_kind {
                match kinds.iter_mut().find(|k| k.0 == kind) {
                    Some(k) => k.1 += ms,
                    None => kinds.push((kind, ms, n)),
                }
            }
        }
    }
    let ms_per_frame = t0.elapsed().as_secs_f64() * 1e3 / ticks.max(1) as f64;
    let avg = |v: f64| (profiled > 0).then(|| v / profiled as f64);
    for k in &mut kinds {
        k.1 /= profiled.max(1) as f64;
    }
    kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(Run {
        batch,
        frames,
        ms_per_frame,
        frames_per_s: batch as f64 * 1e3 / ms_per_frame,
        ttfa_ms,
        ttfa_runs_ms: vec![ttfa_ms],
        start_ms,
        first_launch_ms,
        first_wait_ms,
        prefill_ms,
        talker_ms: avg(parts.talker_ms),
        code_predictor_ms: avg(parts.code_predictor_ms),
        sampling_ms: avg(parts.sampling_ms),
        codec_ms: avg(parts.codec_ms),
        x_real_time_per_stream: 80.0 / ms_per_frame,
        dispatch_kinds: kinds,
        prefill_kinds,
    })
}
