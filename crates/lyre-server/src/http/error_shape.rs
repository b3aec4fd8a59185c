//! Errors that axum itself answers — a request its extractors reject (not a WebSocket upgrade, a
//! path segment that is not UTF-8, ...) or a method a path does not take — come as plain text or
//! an empty body. This layer gives them the API's one error shape (`Error` in openapi.json),
//! keeping their status and headers (`Allow` on a 405).

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use crate::errors::{ErrorCode, Failure};

/// Bodies of axum's own errors are short sentences; anything longer is cut.
const MAX_MESSAGE_BYTES: usize = 4096;

pub async fn middleware(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let message =
        if text.is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { text };
    let mut shaped = ApiError(Failure::new(code(status), message)).into_response();
    for (name, value) in &parts.headers {
        if name != CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            shaped.headers_mut().insert(name.clone(), value.clone());
        }
    }
    *shaped.status_mut() = status;
    shaped.map(Body::new)
}

/// The code for an axum status; the status itself is kept even where the code's own differs
/// (a 422 is `invalid_request`).
fn code(status: StatusCode) -> ErrorCode {
    match status {
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::BodyTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        StatusCode::UPGRADE_REQUIRED => ErrorCode::UpgradeRequired,
        s if s.is_client_error() => ErrorCode::InvalidRequest,
        _ => ErrorCode::Internal,
    }
}
