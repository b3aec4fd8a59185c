//! Request ids and the access log.
//!
//! Every request gets an id: the client's `x-request-id` when it sends a usable one (up to 128
//! visible ASCII characters), otherwise a new random one. The response echoes it, and the
//! request runs in an `info` span carrying it, so every line logged for the request — by the
//! handler, by the GPU worker for its session (the session's span is a child of this one), by a
//! WebSocket connection — names it.
//!
//! One access line per request (target `lyre::access`, level `info`) is written when the
//! response's last byte has been handed to the connection (a WebSocket: when it closes): method,
//! path (never the query, which may carry an API key), status, latency, the caller (`TENANT/key#N`:
//! the key's tenant and the index of the API key used, never the key), bytes sent, audio frames,
//! and the error code of a stream that failed after its status was sent. It also records
//! `lyre_request_duration_seconds`.

use std::pin::Pin;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tracing::Instrument;

use crate::errors::ErrorCode;

pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The longest client-supplied request id that is kept.
const MAX_ID_LEN: usize = 128;

/// A request's id (also in the request's extensions, for handlers).
#[derive(Debug, Clone)]
pub struct RequestId(pub Arc<str>);

/// What the access line reports, filled in while the request runs. Handlers add to it through
/// the [`AccessRecord`] in the request's extensions; the line is written when the last copy drops.
#[derive(Debug)]
struct AccessLine {
    started: Instant,
    request_id: Arc<str>,
    method: String,
    path: String,
    route: Mutex<Option<String>>,
    caller: Mutex<Option<String>>,
    error: Mutex<Option<&'static str>>,
    status: AtomicU16,
    bytes: AtomicU64,
    frames: AtomicU64,
}

/// A shared handle on a request's access line.
#[derive(Debug, Clone)]
pub struct AccessRecord(Arc<AccessLine>);

impl AccessRecord {
    /// The record of the request `req`, if the access-log middleware runs in front of it.
    pub fn of(req: &Request) -> Option<AccessRecord> {
        req.extensions().get::<AccessRecord>().cloned()
    }

    /// Counts audio frames sent to the client.
    pub fn add_frames(&self, n: u64) {
        self.0.frames.fetch_add(n, Ordering::Relaxed);
    }

    /// Who called: `TENANT/key#N` for the N-th configured API key of that tenant, never a key.
    pub fn set_caller(&self, caller: impl Into<String>) {
        *self.0.caller.lock().unwrap_or_else(|p| p.into_inner()) = Some(caller.into());
    }

    /// The error code of a stream that failed after its status line was sent.
    pub fn set_error(&self, code: ErrorCode) {
        *self.0.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(code.as_str());
    }

    fn set_route(&self, route: &str) {
        *self.0.route.lock().unwrap_or_else(|p| p.into_inner()) = Some(route.to_string());
    }
}

impl Drop for AccessLine {
    fn drop(&mut self) {
        let latency = self.started.elapsed().as_secs_f64();
        let status = self.status.load(Ordering::Relaxed);
        let caller = self.caller.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        let error = *self.error.get_mut().unwrap_or_else(|p| p.into_inner());
        let route = self.route.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        tracing::info!(
            target: "lyre::access",
            request_id = %self.request_id,
            method = %self.method,
            path = %self.path,
            status,
            latency_ms = (latency * 1e4).round() / 10.0,
            caller = caller.as_deref().unwrap_or("-"),
            bytes = self.bytes.load(Ordering::Relaxed),
            frames = self.frames.load(Ordering::Relaxed),
            error = error.unwrap_or("-"),
            "request"
        );
        let class = match status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        let route = route.unwrap_or_else(|| "other".into());
        metrics::histogram!("lyre_request_duration_seconds", "route" => route, "status" => class)
            .record(latency);
    }
}

/// The client's request id if it is usable, else a new one.
fn request_id(headers: &HeaderMap) -> Arc<str> {
    let given = headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::trim);
    match given {
        Some(id) if (1..=MAX_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic()) => {
            id.into()
        }
        _ => new_request_id().into(),
    }
}

/// A new request id: 128 random bits, hex.
pub fn new_request_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The outermost middleware: the id, the request's span, the `x-request-id` response header, and
/// the access line once the response body is done.
pub async fn middleware(mut req: Request, next: Next) -> Response {
    let id = request_id(req.headers());
    let record = AccessRecord(Arc::new(AccessLine {
        started: Instant::now(),
        request_id: id.clone(),
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        route: Mutex::new(None),
        caller: Mutex::new(None),
        error: Mutex::new(None),
        status: AtomicU16::new(0),
        bytes: AtomicU64::new(0),
        frames: AtomicU64::new(0),
    }));
    req.extensions_mut().insert(RequestId(id.clone()));
    req.extensions_mut().insert(record.clone());
    let span = tracing::info_span!("request", request_id = %id);
    let mut resp = next.run(req).instrument(span).await;
    record.0.status.store(resp.status().as_u16(), Ordering::Relaxed);
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID_HEADER, v);
    }
    resp.map(|body| Body::new(Counted { inner: body, record }))
}

/// Notes the route pattern (e.g. `/v1/voices/{name}`) for the duration histogram's label; a
/// route layer, so it runs only for requests that matched a route.
pub async fn note_route(req: Request, next: Next) -> Response {
    if let (Some(path), Some(record)) =
        (req.extensions().get::<MatchedPath>(), req.extensions().get::<AccessRecord>())
    {
        record.set_route(path.as_str());
    }
    next.run(req).await
}

/// A response body that counts the bytes it yields and holds the access line until it is dropped.
struct Counted {
    inner: Body,
    record: AccessRecord,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let poll = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &poll {
            if let Some(data) = frame.data_ref() {
                self.record.0.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_for(value: Option<&str>) -> Arc<str> {
        let mut headers = HeaderMap::new();
        if let Some(v) = value {
            headers.insert(REQUEST_ID_HEADER, HeaderValue::from_str(v).unwrap());
        }
        request_id(&headers)
    }

    #[test]
    fn a_usable_client_id_is_kept_and_anything_else_replaced() {
        assert_eq!(&*id_for(Some("req-42")), "req-42");
        assert_eq!(&*id_for(Some(" 7f3a ")), "7f3a");
        for bad in [None, Some(""), Some("has space"), Some(&"x".repeat(129))] {
            let id = id_for(bad);
            assert_eq!(id.len(), 32, "{bad:?} -> {id}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        assert_ne!(id_for(None), id_for(None));
    }
}
