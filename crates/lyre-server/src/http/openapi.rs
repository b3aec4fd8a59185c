//! `GET /openapi.json`: the OpenAPI 3.1 document of the whole HTTP API, kept in the repository
//! (`crates/lyre-server/openapi.json`) and compiled into the binary. Tests hold the handlers to
//! it: here, the routes, the request fields and their bounds, the WebSocket messages, the SSE
//! events, the `x-lyre-*` headers and the configuration keys it names; in CI, the real server's
//! responses (tests/e2e/test_openapi.py, and Schemathesis fuzzing it in scripts/suites/).

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

/// The document, as served.
pub const DOCUMENT: &str = include_str!("../../openapi.json");

pub async fn handle() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], DOCUMENT)
}

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "openapi_stream_tests.rs"]
mod stream_tests;
