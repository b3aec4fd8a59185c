//! `GET /openapi.json`: the OpenAPI 3.1 document of the whole HTTP API, kept in the repository
//! (`crates/lyre-server/openapi.json`) and compiled into the binary. Tests hold the handlers to
//! it: here, the routes and the request fields; in CI, the real server's responses
//! (tests/e2e/test_openapi.py, and Schemathesis fuzzing it in scripts/suites/).

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
