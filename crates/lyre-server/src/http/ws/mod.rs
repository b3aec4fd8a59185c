//! `GET /v1/tts/stream`: live sessions over a WebSocket. Text may keep arriving while audio
//! plays; each 80 ms frame goes out the moment its tick finishes (a binary message, or a JSON
//! `audio` message on a multiplexed socket, which holds several contexts at once). Closing the
//! socket cancels its sessions. The server pings every `server.ws_ping_interval_s` and closes
//! sockets that stop answering, and sockets that hold no context for
//! `limits.ws_idle_timeout_s`. docs/protocol.md specifies the messages.

mod connection;
mod context;
mod voice;
mod wire;

use axum::extract::ws::{WebSocket, WebSocketUpgrade};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use tracing::Instrument;

use self::connection::{Connection, Held};
use self::wire::{close_code, close_with};
use super::access_log::AccessRecord;
use super::auth::Caller;
use super::error::ApiError;
use super::listener::ConnectionSlot;
use super::AppState;
use crate::errors::Failure;

pub async fn handle(State(state): State<AppState>, ws: WebSocketUpgrade, req: Request) -> Response {
    // Refused before the upgrade, so a load balancer can still send the client elsewhere.
    if let Some(f) = state.scheduler.refusal() {
        return ApiError(f).into_response();
    }
    let caller = Caller::of(&req);
    // The socket outlives this handler: it keeps the request's span (so its lines carry the
    // request id), its access line (written when it closes) and its place under the connection cap.
    let span = tracing::Span::current();
    let held =
        Held { access: AccessRecord::of(&req), _slot: req.extensions().get::<ConnectionSlot>().cloned() };
    // A socket over the caps is still upgraded, so that browsers too see why it closes.
    let slot = state.sockets.acquire(caller.key);
    ws.max_message_size(state.config.limits.max_ws_message_bytes)
        .protocols(["lyre"])
        .on_upgrade(move |socket| {
            async move {
                match slot {
                    Ok(slot) => Connection::new(state, caller, slot, held).run(socket).await,
                    Err(f) => refuse(socket, f, held).await,
                }
            }
            .instrument(span)
        })
        .into_response()
}

/// Tells a socket over the connection caps why, and closes it.
async fn refuse(socket: WebSocket, f: Failure, held: Held) {
    if let Some(a) = &held.access {
        a.set_error(f.code);
    }
    let (mut sink, _) = socket.split();
    close_with(&mut sink, close_code::TRY_AGAIN_LATER, &f).await;
}
