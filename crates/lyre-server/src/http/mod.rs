//! The HTTP and WebSocket front end.

pub mod access_log;
mod auth;
mod error;
mod error_shape;
mod info;
pub mod listener;
pub mod loading;
mod openai;
pub mod openapi;
mod output;
mod page;
mod request;
mod sockets;
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

pub use auth::{Caller, KeyRegistry};
pub use error::ApiError;
pub use request::Validator;
pub use sockets::SocketRegistry;
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
    /// Open WebSocket connections, against their caps.
    pub sockets: Arc<SocketRegistry>,
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
        .route("/metrics", get(info::metrics))
        .route("/openapi.json", get(openapi::handle));
    let mut app = api
        .merge(open)
        .route_layer(axum::middleware::from_fn(access_log::note_route))
        .fallback(info::not_found);
    if let Some(cors) = cors {
        app = app.layer(cors);
    }
    with_request_log(app.with_state(state))
}

/// The outer layers of every router: request ids, the request's span and the access log, then
/// axum's own errors in the API's error shape.
pub(crate) fn with_request_log(router: Router) -> Router {
    router
        .layer(axum::middleware::from_fn(error_shape::middleware))
        .layer(axum::middleware::from_fn(access_log::middleware))
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
