//! Discovery and health: models, liveness, readiness, metrics (voices: `voices`).

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use lyre_engine::checkpoint::config::ModelType;

use super::error::ApiError;
use super::AppState;
use crate::errors::{ErrorCode, Failure};

pub const DEMO_NOTE: &str = "built-in demo model with random weights: it speaks noise; start the server \
                             with --model-dir or --model to load a real Qwen3-TTS checkpoint";

/// The served model's id, e.g. `qwen3-tts-12hz-0.6b-customvoice`.
pub fn model_id(state: &AppState) -> String {
    if state.demo {
        return "lyre-demo".into();
    }
    state.model.describe().to_lowercase().replace(' ', "-")
}

pub fn instruct_support(state: &AppState) -> &'static str {
    let cfg = &state.model.config;
    match cfg.tts_model_type {
        ModelType::VoiceDesign => "required",
        ModelType::CustomVoice if cfg.tts_model_size != "0b6" => "optional",
        _ => "unsupported",
    }
}

pub async fn models(State(state): State<AppState>) -> Json<serde_json::Value> {
    let mut entry = serde_json::json!({
        "id": model_id(&state),
        "object": "model",
        "owned_by": "lyre",
        "description": state.model.describe(),
        "model_type": state.model.config.tts_model_type.as_str(),
        "sample_rate": 24000,
        "demo": state.demo,
    });
    if state.demo {
        entry["note"] = DEMO_NOTE.into();
    }
    Json(serde_json::json!({ "object": "list", "data": [entry] }))
}

/// Liveness: the process answers and its GPU worker has not died.
pub async fn healthz(State(state): State<AppState>) -> Response {
    let fatal = state.scheduler.shared.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match fatal {
        None => Json(serde_json::json!({ "status": "ok" })).into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({ "status": "failed", "reason": reason })),
        )
            .into_response(),
    }
}

/// Readiness: model loaded, warm-up frame done, not draining. `status` says which of
/// `warming_up`, `ready`, `draining` or `failed` (the GPU worker stopped) the server is in.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let s = &state.scheduler.shared;
    let draining = s.draining.load(Ordering::SeqCst);
    let failed = s.fatal.lock().unwrap_or_else(|p| p.into_inner()).is_some();
    let status = match (s.is_ready(), draining, failed) {
        (true, _, _) => "ready",
        (_, true, _) => "draining",
        (_, _, true) => "failed",
        _ => "warming_up",
    };
    let body = serde_json::json!({
        "ready": s.is_ready(),
        "status": status,
        "draining": draining,
        "live_sessions": s.live.load(Ordering::SeqCst),
        "queued_sessions": s.queued(),
    });
    let code = if s.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (code, Json(body)).into_response()
}

pub async fn metrics(State(state): State<AppState>) -> Response {
    render_metrics(state.metrics.clone()).await
}

/// The Prometheus exposition text, or 404 when no recorder is installed.
pub async fn render_metrics(handle: Option<metrics_exporter_prometheus::PrometheusHandle>) -> Response {
    match handle {
        Some(h) => ([("content-type", "text/plain; version=0.0.4")], crate::telemetry::metrics::render(&h))
            .into_response(),
        None => ApiError(Failure::new(ErrorCode::MetricsDisabled, "metrics are not enabled")).into_response(),
    }
}

pub async fn not_found() -> ApiError {
    ApiError(Failure::new(ErrorCode::NotFound, "no such endpoint"))
}
