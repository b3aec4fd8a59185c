//! Graceful shutdown: on SIGTERM or SIGINT readiness turns false and new sessions are refused
//! (503 `draining`), live sessions run to their end for at most the drain timeout, then the
//! server stops.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::scheduler::Shared;

/// Resolves once a signal arrived and the sessions drained (or the timeout passed).
pub async fn drained(shared: Arc<Shared>, timeout: Duration) {
    signal().await;
    shared.draining.store(true, Ordering::SeqCst);
    let started = Instant::now();
    tracing::info!(active = shared.active.load(Ordering::SeqCst), "draining");
    while shared.active.load(Ordering::SeqCst) > 0 && started.elapsed() < timeout {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = shared.active.load(Ordering::SeqCst);
    if left > 0 {
        tracing::warn!(left, "drain timeout: stopping with sessions still running");
    } else {
        tracing::info!(ms = started.elapsed().as_millis() as u64, "drained");
    }
    // Let the final messages of the last sessions reach their sockets.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
