//! One error shape for every endpoint, OpenAI-compatible:
//! `{"error": {"message", "type", "param", "code"}}`, with `Retry-After` when a retry may
//! succeed. Every error response is counted here, once, in `lyre_errors_total`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::errors::{ErrorCode, Failure};

#[derive(Debug)]
pub struct ApiError(pub Failure);

impl From<Failure> for ApiError {
    fn from(f: Failure) -> Self {
        ApiError(f)
    }
}

pub fn error_body(f: &Failure) -> serde_json::Value {
    let kind = if f.status() < 500 { "invalid_request_error" } else { "server_error" };
    serde_json::json!({
        "error": { "message": f.message, "type": kind, "param": f.field, "code": f.code }
    })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let f = self.0;
        f.code.count();
        let status = StatusCode::from_u16(f.status()).unwrap_or(StatusCode::BAD_REQUEST);
        let mut resp = (status, axum::Json(error_body(&f))).into_response();
        if let Some(seconds) = f.retry_after_s() {
            resp.headers_mut().insert("retry-after", HeaderValue::from(seconds));
        }
        resp
    }
}

/// Parses a JSON body, naming the field at fault (e.g. `top_k: invalid type: string "x"`).
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = format!("invalid JSON body: {inner}");
        let field = if path == "." || path == "?" { None } else { Some(path) };
        ApiError(Failure { code: ErrorCode::InvalidJson, message, field })
    })
}

/// Reads a request body up to `limit` bytes (413 beyond). A body announced larger in its
/// `content-length` is refused from the headers, before any of it is read.
pub async fn read_body(req: axum::extract::Request, limit: usize) -> Result<axum::body::Bytes, ApiError> {
    let too_large =
        || ApiError(Failure::new(ErrorCode::BodyTooLarge, format!("the request body exceeds {limit} bytes")));
    let announced = req.headers().get(axum::http::header::CONTENT_LENGTH);
    if announced.and_then(|v| v.to_str().ok()?.parse::<u64>().ok()).is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(req.into_body(), limit).await.map_err(|_| too_large())
}

/// A JSON object body, from which an endpoint takes its own keys before the shared ones.
pub struct JsonObject(pub serde_json::Map<String, serde_json::Value>);

impl JsonObject {
    pub fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        match parse_json::<serde_json::Value>(bytes)? {
            serde_json::Value::Object(m) => Ok(JsonObject(m)),
            _ => Err(ApiError(Failure::new(ErrorCode::InvalidJson, "the body must be a JSON object"))),
        }
    }

    /// Removes `key`; `None` when absent or null; a 400 naming it when not a string.
    pub fn take_string(&mut self, key: &str) -> Result<Option<String>, ApiError> {
        match self.0.remove(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(ApiError(Failure::invalid(key, format!("must be a string, got {other}")))),
        }
    }

    pub fn require_string(&mut self, key: &str) -> Result<String, ApiError> {
        self.take_string(key)?.ok_or_else(|| ApiError(Failure::invalid(key, "is required")))
    }

    /// Deserializes what is left, rejecting unknown keys by name.
    pub fn rest<T: serde::de::DeserializeOwned>(self) -> Result<T, ApiError> {
        serde_path_to_error::deserialize(serde_json::Value::Object(self.0)).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            let field = if path == "." || path == "?" { unknown_field(&message) } else { Some(path) };
            ApiError(Failure { code: ErrorCode::InvalidRequest, message, field })
        })
    }
}

/// serde reports an unknown key at the root as "unknown field `x`, expected ...".
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::tests::errors_counted_during;
    use crate::errors::ErrorCode;

    #[test]
    fn an_error_response_is_counted_once_and_says_when_to_retry() {
        let mut responses = Vec::new();
        let counted = errors_counted_during(|| {
            responses
                .push(ApiError(Failure::new(ErrorCode::GpuError, "the GPU step failed")).into_response());
            responses.push(ApiError(Failure::invalid("top_k", "must be positive")).into_response());
        });
        let counted: Vec<_> = counted.into_iter().collect();
        assert_eq!(counted, [("gpu_error".to_string(), 1), ("invalid_request".to_string(), 1)]);
        let retry: Vec<_> =
            responses.iter().map(|r| (r.status().as_u16(), r.headers().get("retry-after"))).collect();
        assert_eq!(retry, [(503, Some(&HeaderValue::from(1))), (400, None)]);
    }
}
