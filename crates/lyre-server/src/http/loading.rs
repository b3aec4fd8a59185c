//! What the server answers while its model loads. It listens before the download or the
//! checkpoint's checks start, so liveness probes pass during a long download: `/healthz` is ok,
//! `/readyz` is 503 with the load's progress, `/metrics` works, and every other path gets 503
//! `not_ready` with `Retry-After`.

use std::sync::{Arc, OnceLock};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use metrics_exporter_prometheus::PrometheusHandle;

use super::error::ApiError;
use super::listener::App;
use crate::errors::{ErrorCode, Failure};
use crate::model_source::LoadProgress;

/// The loading answers until [`Startup::ready`] hands over the application's router.
#[derive(Clone)]
pub struct Startup {
    loading: Router,
    app: Arc<OnceLock<Router>>,
}

impl Startup {
    pub fn new(progress: Arc<LoadProgress>, metrics: Option<PrometheusHandle>) -> Self {
        let loading = Router::new()
            .route("/healthz", get(|| async { Json(serde_json::json!({ "status": "ok" })) }))
            .route("/readyz", get(move || readyz(progress.clone())))
            .route("/metrics", get(move || super::info::render_metrics(metrics.clone())))
            .fallback(not_ready);
        Startup { loading: super::with_request_log(loading), app: Arc::new(OnceLock::new()) }
    }

    /// From now on every request goes to `app`.
    pub fn ready(&self, app: Router) {
        let _ = self.app.set(app);
    }
}

impl App for Startup {
    fn router(&self) -> Router {
        self.app.get().cloned().unwrap_or_else(|| self.loading.clone())
    }
}

async fn readyz(progress: Arc<LoadProgress>) -> Response {
    let body = serde_json::json!({
        "ready": false,
        "status": "loading",
        "draining": false,
        "live_sessions": 0,
        "queued_sessions": 0,
        "loading": progress.snapshot(),
    });
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

async fn not_ready() -> ApiError {
    ApiError(Failure::new(ErrorCode::NotReady, "the model is still loading"))
}
