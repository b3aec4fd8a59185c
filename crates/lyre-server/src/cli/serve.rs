//! `lyre serve`: load the model, start the GPU worker, serve HTTP and WebSocket until
//! SIGTERM/SIGINT, drain, exit 0.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{Engine, EngineOptions, SessionRequest, TextInput};

use metrics_exporter_prometheus::PrometheusHandle;

use crate::config::ServerConfig;
use crate::http::listener::{self, ListenOptions};
use crate::http::loading::Startup;
use crate::http::{router, AppState, KeyRegistry, SocketRegistry};
use crate::model_source::{LoadProgress, ModelSource};
use crate::scheduler::{spawn_worker, Shared, WorkerOptions};
use crate::voices::{Encoders, VoiceStore};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A TOML file (see config/default.toml); LYRE_* variables and these flags override it.
    #[arg(long, env = "LYRE_CONFIG")]
    pub config: Option<PathBuf>,
    /// A checkpoint directory in the Hugging Face layout.
    #[arg(long)]
    pub model_dir: Option<String>,
    /// A Hugging Face repo id, e.g. Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice.
    #[arg(long)]
    pub model: Option<String>,
    /// Address to listen on (port 0 picks a free port; the address is logged).
    #[arg(long)]
    pub listen: Option<String>,
}

pub fn load_config(args: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let mut cfg = ServerConfig::load(args.config.as_deref(), std::env::vars())?;
    if let Some(d) = &args.model_dir {
        cfg.model.dir = d.clone();
        cfg.model.repo.clear();
    }
    if let Some(r) = &args.model {
        cfg.model.repo = r.clone();
        cfg.model.dir.clear();
    }
    if let Some(l) = &args.listen {
        cfg.server.listen = l.clone();
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn run(args: ServeArgs, log_json: bool) -> anyhow::Result<()> {
    let cfg = load_config(&args)?;
    let json = log_json || cfg.logging.json;
    crate::telemetry::init(json, &cfg.logging.level);
    let metrics = crate::telemetry::metrics::install().context("metrics buckets")?;
    metrics::gauge!("lyre_max_sessions").set(cfg.engine.max_sessions as f64);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(serve(cfg, metrics, json));
    // A download still running after a failure or a signal is abandoned, not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Listens first (so `/healthz` answers during a long download), loads the model, then serves
/// the API until a signal has drained the sessions.
async fn serve(cfg: ServerConfig, metrics: Option<PrometheusHandle>, json_logs: bool) -> anyhow::Result<()> {
    // The voice database and the keys first: a mistake in them fails before the server listens.
    let voices = Arc::new(VoiceStore::from_config(&cfg).map_err(|e| anyhow::anyhow!("voices: {e}"))?);
    crate::voices::prepare_in_background(voices.clone());
    let keys = Arc::new(KeyRegistry::from_config(&cfg.auth).map_err(|e| anyhow::anyhow!("auth: {e}"))?);
    let listener = tokio::net::TcpListener::bind(&cfg.server.listen)
        .await
        .with_context(|| format!("binding {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    if !json_logs {
        // For people and scripts; with JSON logs the line above says it.
        eprintln!("lyre listening on http://{addr}");
    }
    let mut shared = Shared::new(cfg.engine.max_sessions, cfg.engine.max_queue);
    shared.event_buffer = cfg.limits.max_buffered_frames;
    let shared = Arc::new(shared);
    let progress = Arc::new(LoadProgress::default());
    let startup = Startup::new(progress.clone(), metrics.clone());
    let opts = ListenOptions {
        header_read_timeout: Duration::from_secs(cfg.server.header_read_timeout_s),
        max_connections: cfg.server.max_connections,
        send_buffer_bytes: cfg.server.send_buffer_bytes,
    };
    let drained = crate::shutdown::drained(shared.clone(), Duration::from_secs(cfg.server.drain_timeout_s));
    let mut server = tokio::spawn(listener::serve(listener, startup.clone(), opts, drained));

    let source = ModelSource::choose(&cfg.model.dir, &cfg.model.repo);
    let opening = {
        let source = source.clone();
        tokio::task::spawn_blocking(move || source.open(&progress))
    };
    let model = tokio::select! {
        stopped = &mut server => {
            stopped??;
            tracing::info!("stopped before the model was loaded");
            return Ok(());
        }
        opened = opening => Arc::new(opened.context("the model loader panicked")??),
    };
    if source.is_demo() {
        tracing::warn!("serving the built-in DEMO model (random weights): it speaks noise. Pass --model-dir DIR or --model REPO for a real Qwen3-TTS checkpoint");
    }
    tracing::info!(model = %model.describe(), dir = %model.root.display(), "model loaded");
    let engine_model = model.clone();
    let engine_cfg = cfg.clone();
    let allow_cpu = cfg.model.allow_cpu_adapter || source.is_demo();
    let model_name = if source.is_demo() { "lyre-demo".to_string() } else { model.describe() };
    let (scheduler, worker) = spawn_worker(
        move || make_engine(engine_model, &engine_cfg, allow_cpu, &model_name),
        shared.clone(),
        WorkerOptions {
            command_buffer: 4096,
            warm_up: Some(warm_up_request(&model)),
            debug_fail_tick: debug_fail_tick()?,
            launch_slack: std::time::Duration::from_millis(cfg.engine.launch_slack_ms),
            fast_first_audio: cfg.engine.fast_first_audio,
            first_audio_margin: std::time::Duration::from_millis(cfg.engine.first_audio_margin_ms),
        },
    );
    let encoders = Arc::new(Encoders::new(model.clone()));
    let state = AppState {
        scheduler: scheduler.clone(),
        model,
        config: Arc::new(cfg.clone()),
        metrics,
        keys,
        demo: source.is_demo(),
        voices,
        encoders,
        sockets: Arc::new(SocketRegistry::new(
            cfg.limits.max_ws_connections,
            cfg.limits.max_ws_connections_per_key,
        )),
    };
    startup.ready(router(state));
    let served = server.await.context("the listener panicked")?;
    scheduler.shutdown();
    let _ = tokio::task::spawn_blocking(move || worker.join()).await;
    tracing::info!("stopped");
    Ok(served?)
}

/// `LYRE_DEBUG_FAIL_TICK=N`: a debug knob for fault-injection tests (tick N fails as a GPU
/// error would). Off unless set; logged loudly when on.
fn debug_fail_tick() -> anyhow::Result<Option<u64>> {
    let Ok(v) = std::env::var("LYRE_DEBUG_FAIL_TICK") else { return Ok(None) };
    let n: u64 =
        v.trim().parse().with_context(|| format!("LYRE_DEBUG_FAIL_TICK: `{v}` is not a tick number"))?;
    tracing::warn!(tick = n, "DEBUG fault injection on: this tick will fail (LYRE_DEBUG_FAIL_TICK)");
    Ok(Some(n))
}

/// `LYRE_DEBUG_GRID_FAULT=1`: a debug knob for fault-injection tests: the persistent layers'
/// barriers give up (as on a GPU that cannot run their grid at once), so the sessions of that
/// tick end with a GPU error and the engine falls back to separate dispatches.
fn debug_grid_fault() -> bool {
    let on = matches!(std::env::var("LYRE_DEBUG_GRID_FAULT").as_deref(), Ok("1" | "true" | "on"));
    if on {
        tracing::warn!(
            "DEBUG fault injection on: persistent layers will lose a barrier (LYRE_DEBUG_GRID_FAULT)"
        );
    }
    on
}

fn make_engine(
    model: Arc<ModelDir>,
    cfg: &ServerConfig,
    allow_cpu: bool,
    model_name: &str,
) -> anyhow::Result<Engine> {
    let gpu = GpuContext::new(&GpuOptions::from_tuning(&cfg.engine.tuning))?;
    crate::telemetry::metrics::set_build_info(&gpu.info.name, model_name);
    if gpu.is_cpu() && !allow_cpu {
        anyhow::bail!(
            "wgpu found only a CPU adapter ({}); refusing to serve on it. Check the GPU driver \
             (NVIDIA: NVIDIA_DRIVER_CAPABILITIES=compute,graphics,utility and the Vulkan ICD), or \
             set model.allow_cpu_adapter = true",
            gpu.info.name
        );
    }
    let opts = EngineOptions {
        max_sessions: cfg.engine.max_sessions,
        max_positions: cfg.engine.max_positions,
        max_rows_per_tick: cfg.engine.max_rows_per_tick,
        segment_tokens: cfg.engine.segment_tokens,
        kv_cache: cfg.engine.kv_format()?,
        capture_logits: false,
        profile: false,
        profile_dispatches: false,
        inject_grid_fault: debug_grid_fault(),
        tuning: cfg.engine.tuning.clone(),
    };
    Ok(Engine::new(Arc::new(gpu), model, opts)?)
}

/// One greedy frame of whatever voice the model has, run before the server reports ready.
fn warm_up_request(model: &ModelDir) -> SessionRequest {
    let cfg = &model.config;
    let (voice, instruct) = match cfg.tts_model_type {
        ModelType::CustomVoice => {
            (VoiceSpec::Speaker(cfg.talker_config.spk_id.keys().next().cloned().unwrap_or_default()), None)
        }
        ModelType::VoiceDesign => (VoiceSpec::None, Some("A calm, clear voice.".to_string())),
        ModelType::Base => (VoiceSpec::Vector(vec![0.0; cfg.talker_config.hidden_size]), None),
    };
    SessionRequest {
        text: TextInput::Whole("Hello.".into()),
        voice,
        language: "auto".into(),
        instruct,
        mode: TextMode::NonStreaming,
        sampling: SamplingParams::from_generation_config(&model.generation, 0).greedy(),
        max_frames: 1,
        max_frames_per_segment: None,
    }
}
