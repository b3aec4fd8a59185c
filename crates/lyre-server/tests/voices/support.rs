//! The server in-process over a real engine on the tiny fixtures (one GPU worker per fixture,
//! shared by the tests), requests through the router, and voices made from the fixtures'
//! stored encoder outputs (`ref_spk_embedding`, `ref_code`), so no encoder has to run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::VoiceReference;
use lyre_engine::{Engine, EngineOptions};
use lyre_server::config::{EngineSection, ServerConfig};
use lyre_server::http::{router, AppState, KeyRegistry};
use lyre_server::scheduler::{spawn_worker, Scheduler, Shared, WorkerOptions};
use lyre_server::tenants::Tenant;
use lyre_server::voices::{Encoders, StoredVoice, VoiceStore};
use tower::ServiceExt;

pub fn shared_dir() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    std::env::var_os("LYRE_SHARED").map(PathBuf::from).unwrap_or(p)
}

pub fn fixture(name: &str) -> PathBuf {
    shared_dir().join("fixtures").join(name)
}

/// A fresh, not yet existing directory under the system temp dir.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    // Cargo's scratch folder for integration tests (inside target/, so runs do not pile up in /tmp).
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("voices-api-{n}-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Small engine sizes (lavapipe) and a 64 KiB upload limit, so the 413 is cheap to reach.
pub fn config(voices_dir: &Path) -> ServerConfig {
    let mut cfg = ServerConfig::default();
    cfg.voices.dir = voices_dir.display().to_string();
    cfg.voices.max_upload_bytes = 64 * 1024;
    cfg.engine = EngineSection {
        max_sessions: 2,
        max_queue: 8,
        max_positions: 256,
        max_rows_per_tick: 128,
        ..Default::default()
    };
    cfg
}

type Worker = (Scheduler, Arc<ModelDir>);

/// One GPU worker per model directory for the whole test binary.
fn worker(model_dir: &Path, cfg: &ServerConfig) -> Worker {
    static WORKERS: OnceLock<Mutex<HashMap<PathBuf, Worker>>> = OnceLock::new();
    let mut workers = WORKERS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(w) = workers.get(model_dir) {
        return w.clone();
    }
    let model = Arc::new(ModelDir::open(model_dir).unwrap());
    let shared = Arc::new(Shared::new(cfg.engine.max_sessions, cfg.engine.max_queue));
    let e = cfg.engine.clone();
    let engine_model = model.clone();
    let make = move || {
        let gpu = Arc::new(GpuContext::new(&GpuOptions::from_tuning(&e.tuning))?);
        let opts = EngineOptions {
            max_sessions: e.max_sessions,
            max_positions: e.max_positions,
            kv_cache: lyre_engine::KvFormat::F32,
            max_rows_per_tick: e.max_rows_per_tick,
            segment_tokens: 0,
            capture_logits: false,
            profile: false,
            profile_dispatches: false,
            inject_grid_fault: false,
            tuning: e.tuning.clone(),
        };
        Ok(Engine::new(gpu, engine_model, opts)?)
    };
    let opts = WorkerOptions {
        command_buffer: 64,
        warm_up: None,
        debug_fail_tick: None,
        launch_slack: std::time::Duration::from_millis(2),
        fast_first_audio: true,
        first_audio_margin: std::time::Duration::from_millis(15),
    };
    let (scheduler, _thread) = spawn_worker(make, shared.clone(), opts);
    let start = Instant::now();
    while !shared.is_ready() {
        if let Some(e) = shared.fatal.lock().unwrap().clone() {
            panic!("the GPU worker failed: {e}");
        }
        assert!(start.elapsed() < Duration::from_secs(300), "the GPU worker never got ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let w = (scheduler, model);
    workers.insert(model_dir.to_path_buf(), w.clone());
    w
}

/// The server's state for a model, with its voice store in `voices_dir` (a SQLite database
/// opened afresh: a new store instance reads what is on disk, as after a restart).
pub fn app(model_dir: &Path, voices_dir: &Path) -> AppState {
    app_with(model_dir, voices_dir, |_| {})
}

/// [`app`] with changes to the configuration (keys and tenants, another database, ...).
pub fn app_with(model_dir: &Path, voices_dir: &Path, edit: impl FnOnce(&mut ServerConfig)) -> AppState {
    let mut cfg = config(voices_dir);
    edit(&mut cfg);
    cfg.validate().unwrap();
    let (scheduler, model) = worker(model_dir, &cfg);
    let voices = Arc::new(VoiceStore::from_config(&cfg).unwrap());
    AppState {
        scheduler,
        model: model.clone(),
        keys: Arc::new(KeyRegistry::from_config(&cfg.auth).unwrap()),
        config: Arc::new(cfg),
        metrics: None,
        demo: false,
        voices,
        encoders: Arc::new(Encoders::new(model)),
        sockets: Arc::new(lyre_server::http::SocketRegistry::new(0, 0)),
    }
}

/// Stores a voice for the tenant of a server without keys.
pub async fn keep(state: &AppState, voice: &StoredVoice) {
    state.voices.insert(&Tenant::default_tenant(), voice).await.unwrap();
}

/// The names of the default tenant's stored voices.
pub async fn stored_names(state: &AppState) -> Vec<String> {
    let list = state.voices.list(Some(&Tenant::default_tenant())).await.unwrap();
    list.into_iter().map(|(_, v)| v.name).collect()
}

pub struct Reply {
    pub status: u16,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    /// `(status, code, param)` of an error reply.
    pub fn error(&self) -> (u16, String, Option<String>) {
        let v = self.json();
        let e = &v["error"];
        assert!(e.is_object(), "not an error body: {v}");
        (self.status, e["code"].as_str().unwrap().to_string(), e["param"].as_str().map(str::to_string))
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
}

pub async fn call(state: &AppState, req: Request<Body>) -> Reply {
    let resp = router(state.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap().to_vec();
    Reply { status, headers, body }
}

pub async fn get(state: &AppState, uri: &str) -> Reply {
    call(state, Request::get(uri).body(Body::empty()).unwrap()).await
}

pub async fn delete(state: &AppState, uri: &str) -> Reply {
    call(state, Request::delete(uri).body(Body::empty()).unwrap()).await
}

pub async fn post_json(state: &AppState, uri: &str, body: serde_json::Value) -> Reply {
    let req =
        Request::post(uri).header("content-type", "application/json").body(Body::from(body.to_string()));
    call(state, req.unwrap()).await
}

/// One part of a multipart body: a text field, or a file.
pub enum Part<'a> {
    Text(&'a str, &'a str),
    File(&'a str, &'a [u8]),
}

pub fn multipart_body(parts: &[Part]) -> (String, Vec<u8>) {
    let boundary = "lyre-test-boundary-7f3a";
    let mut body = Vec::new();
    for p in parts {
        body.extend(format!("--{boundary}\r\n").as_bytes());
        match p {
            Part::Text(name, value) => {
                body.extend(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes());
                body.extend(value.as_bytes());
            }
            Part::File(name, bytes) => {
                body.extend(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"clip.wav\"\r\n\
                         Content-Type: audio/wav\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend(*bytes);
            }
        }
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub async fn post_multipart(state: &AppState, parts: &[Part<'_>]) -> Reply {
    let (content_type, body) = multipart_body(parts);
    let req = Request::post("/v1/voices").header("content-type", content_type).body(Body::from(body));
    call(state, req.unwrap()).await
}

/// The `meta` of a reference case of the tiny Base fixture.
pub fn meta(case: &str) -> serde_json::Value {
    let path = fixture("tiny-base").join("refs/manifest.json");
    let m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    m[case]["meta"].clone()
}

fn tensor<T: bytemuck::Pod>(case: &str, name: &str) -> Vec<T> {
    let path = fixture("tiny-base").join("refs").join(format!("{case}.safetensors"));
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    bytemuck::pod_collect_to_vec(st.tensor(name).unwrap().data())
}

pub fn ref_f32(case: &str, name: &str) -> Vec<f32> {
    tensor(case, name)
}

/// A tensor of codes as frames of 16.
pub fn ref_frames(case: &str, name: &str) -> Vec<[u16; 16]> {
    let v: Vec<i64> = tensor(case, name);
    v.chunks(16).map(|c| std::array::from_fn(|i| c[i] as u16)).collect()
}

/// The voice `POST /v1/voices` would store for a case's reference clip: its stored x-vector
/// and, for the ICL cases, its transcript and reference codes.
pub fn case_voice(name: &str, case: &str, model: &ModelDir) -> StoredVoice {
    let m = meta(case);
    let reference = (m["mode"] == "icl").then(|| VoiceReference {
        text: m["ref_text"].as_str().unwrap().to_string(),
        codes: ref_frames(case, "ref_code"),
    });
    StoredVoice::new(name, &model.config, ref_f32(case, "ref_spk_embedding"), reference, 1.0)
}

/// The `x-lyre-codes-fnv1a` fingerprint of the given codes.
pub use lyre_server::http::codes_fingerprint as fnv;

/// Raw s16le PCM as f32.
pub fn pcm16(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0).collect()
}

/// A mono 16-bit WAV of `seconds` of a quiet two-tone signal.
pub fn wav_clip(seconds: f32, rate: u32) -> Vec<u8> {
    let n = (seconds * rate as f32) as usize;
    let mut out = Vec::with_capacity(44 + 2 * n);
    let data_len = (2 * n) as u32;
    out.extend(b"RIFF");
    out.extend((36 + data_len).to_le_bytes());
    out.extend(b"WAVEfmt ");
    out.extend(16u32.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(rate.to_le_bytes());
    out.extend((rate * 2).to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend(b"data");
    out.extend(data_len.to_le_bytes());
    for i in 0..n {
        let t = i as f32 / rate as f32;
        let s = 0.2 * (2.0 * std::f32::consts::PI * 180.0 * t).sin()
            + 0.1 * (2.0 * std::f32::consts::PI * 420.0 * t).sin();
        out.extend(((s * 32767.0) as i16).to_le_bytes());
    }
    out
}
