//! The HTTP and WebSocket front end.

mod auth;
mod error;
mod info;
mod openai;
mod page;
mod request;
mod stream;
mod tts;
mod voices;
mod ws;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::Router;
use lyre_engine::checkpoint::ModelDir;
use metrics_exporter_prometheus::PrometheusHandle;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;

pub use auth::{Caller, KeyRegistry};
pub use error::ApiError;
pub use request::Validator;
pub use tts::codes_fingerprint;
pub use tts::parse_request as parse_tts_request;

use crate::config::ServerConfig;
use crate::scheduler::Scheduler;
use crate::voices::{Encoders, VoiceStore};

/// Everything the handlers share.
#[derive(Clone)]
pub struct AppState {
    pub scheduler: Scheduler,
    pub model: Arc<ModelDir>,
    pub config: Arc<ServerConfig>,
    pub metrics: Option<PrometheusHandle>,
    pub keys: Arc<KeyRegistry>,
    /// True for the built-in demo model, which speaks noise.
    pub demo: bool,
    /// Stored cloned voices (each tenant's).
    pub voices: Arc<VoiceStore>,
    /// The Base model's speaker and speech encoders (loaded on first use).
    pub encoders: Arc<Encoders>,
}

impl AppState {
    pub fn validator(&self) -> Validator<'_> {
        Validator {
            model: &self.model,
            limits: &self.config.limits,
            aliases: Some(&self.config.voices.aliases),
            segments: self.config.engine.segment_limits(),
        }
    }
}

/// The whole API.
pub fn router(state: AppState) -> Router {
    let cors = cors_layer(&state.config.server.cors_origins);
    let api = Router::new()
        .route("/v1/tts", post(tts::handle))
        .route("/v1/audio/speech", post(openai::handle))
        .route("/v1/tts/stream", get(ws::handle))
        .route(
            "/v1/voices",
            get(voices::list)
                .post(voices::create)
                .layer(DefaultBodyLimit::max(state.config.voices.max_upload_bytes)),
        )
        .route("/v1/voices/{name}", delete(voices::remove))
        .route("/v1/audio/voices", get(voices::list))
        .route("/v1/models", get(info::models))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_key));
    let open = page::routes()
        .route("/healthz", get(info::healthz))
        .route("/readyz", get(info::readyz))
        .route("/metrics", get(info::metrics));
    // Spans name the path only: a query may carry `?token=KEY`, and keys are never logged.
    let trace = TraceLayer::new_for_http().make_span_with(|req: &axum::extract::Request| {
        tracing::debug_span!("request", method = %req.method(), path = %req.uri().path())
    });
    let mut app = api.merge(open).fallback(info::not_found).with_state(state).layer(trace);
    if let Some(cors) = cors {
        app = app.layer(cors);
    }
    app
}

fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| o.parse().ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods(tower_http::cors::Any)
            .allow_headers(tower_http::cors::Any)
            .max_age(Duration::from_secs(600)),
    )
}
