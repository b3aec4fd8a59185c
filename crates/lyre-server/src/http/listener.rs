//! The accept loop: HTTP/1.1 with WebSocket upgrades, hardened against clients that hold
//! connections without using them.
//!
//! * A request's headers must arrive within `server.header_read_timeout_s`: a client that opens a
//!   connection and sends headers slowly or never finishes them (slowloris) is disconnected.
//! * At most `server.max_connections` connections are open at once (a WebSocket counts until it
//!   closes); one beyond that gets a 503 with `Retry-After` and is closed at once.
//! * On shutdown the listener stops accepting and each connection finishes its current request.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use crate::errors::{ErrorCode, Failure};

/// How connections are accepted and served.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    pub header_read_timeout: Duration,
    pub max_connections: usize,
    /// Kernel send buffer per connection in bytes; 0 keeps the OS default.
    pub send_buffer_bytes: usize,
}

/// Held by a connection (and by its WebSocket, once upgraded) while it is open; in each
/// request's extensions, so that an upgraded connection keeps its place under the cap.
#[derive(Debug, Clone)]
pub struct ConnectionSlot {
    _open: Arc<OpenConnection>,
}

/// Counts itself in `lyre_open_connections` and returns its permit when dropped.
#[derive(Debug)]
struct OpenConnection {
    _permit: OwnedSemaphorePermit,
}

impl OpenConnection {
    fn new(permit: OwnedSemaphorePermit) -> Self {
        metrics::gauge!("lyre_open_connections").increment(1.0);
        OpenConnection { _permit: permit }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        metrics::gauge!("lyre_open_connections").decrement(1.0);
    }
}

/// Something that answers requests: the application's router, or the one that answers while the
/// model loads.
pub trait App: Clone + Send + Sync + 'static {
    fn router(&self) -> axum::Router;
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: TcpListener,
    app: impl App,
    opts: ListenOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(opts.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (open_tx, open_rx) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        tune_socket(&tcp, opts.send_buffer_bytes);
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            metrics::counter!("lyre_rejected_total", "code" => "too_many_connections").increment(1);
            tokio::spawn(refuse(tcp, opts.max_connections));
            continue;
        };
        let slot = ConnectionSlot { _open: Arc::new(OpenConnection::new(permit)) };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
            req.extensions_mut().insert(slot.clone());
            app.router().oneshot(req.map(Body::new))
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(opts.header_read_timeout)
            .serve_connection(TokioIo::new(tcp), service)
            .with_upgrades();
        let mut stop = stop_rx.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let _open = open;
            let stopping = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopping => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(open_rx);
    // Every connection task holds a receiver; closed() resolves when the last one ends.
    open_tx.closed().await;
    Ok(())
}

/// The answer to a connection over the cap: a 503 in the API's error shape, then close.
async fn refuse(mut tcp: TcpStream, max: usize) {
    let failure = Failure::new(
        ErrorCode::TooManyConnections,
        format!("the server has {max} connections open; retry shortly"),
    );
    failure.code.count();
    let body = super::error::error_body(&failure).to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {}\r\n\
         x-request-id: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        failure.retry_after_s().unwrap_or(1),
        super::access_log::new_request_id(),
        body.len()
    );
    let write = async {
        tcp.write_all(head.as_bytes()).await?;
        tcp.write_all(body.as_bytes()).await?;
        tcp.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), write).await;
}

/// Frames go out as soon as they are made (no Nagle delay); a configured send buffer bounds
/// what the kernel holds for a client that stops reading.
fn tune_socket(tcp: &TcpStream, send_buffer: usize) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY not set");
    }
    if send_buffer > 0 {
        if let Err(e) = socket2::SockRef::from(tcp).set_send_buffer_size(send_buffer) {
            tracing::warn!(error = %e, send_buffer, "could not set the socket send buffer");
        }
    }
}

impl App for axum::Router {
    fn router(&self) -> axum::Router {
        self.clone()
    }
}
