//! `GET /v1/tts/stream`: live sessions over a WebSocket. Text may keep arriving while audio
//! plays; each 80 ms frame goes out the moment its tick finishes (a binary message, or a JSON
//! `audio` message on a multiplexed socket, which holds several contexts at once). Closing the
//! socket cancels its sessions. The server pings every `server.ws_ping_interval_s` and closes
//! sockets that stop answering, and sockets that hold no context for
//! `limits.ws_idle_timeout_s`. docs/protocol.md specifies the messages.

mod connection;
mod context;
mod voice;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use tracing::Instrument;

use self::connection::{Connection, Flow};
use super::access_log::AccessRecord;
use super::auth::Caller;
use super::error::ApiError;
use super::listener::ConnectionSlot;
use super::AppState;
use crate::errors::{ErrorCode, Failure};
use crate::protocol::ServerMessage;

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

/// What the request handed over to its socket.
struct Held {
    access: Option<AccessRecord>,
    _slot: Option<ConnectionSlot>,
}

/// Close codes (RFC 6455) the server ends a socket with, besides 1000 after a client's close.
mod close_code {
    /// No session for `limits.ws_idle_timeout_s`, or two pings unanswered.
    pub const IDLE: u16 = 1000;
    /// A frame that breaks the WebSocket protocol.
    pub const PROTOCOL: u16 = 1002;
    /// Too many messages a second.
    pub const POLICY: u16 = 1008;
    /// A message over `limits.max_ws_message_bytes`.
    pub const TOO_BIG: u16 = 1009;
    /// Over the connection caps: try again later.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Tells a socket over the connection caps why, and closes it.
async fn refuse(socket: WebSocket, f: Failure, held: Held) {
    if let Some(a) = &held.access {
        a.set_error(f.code);
    }
    let (mut sink, _) = socket.split();
    close_with(&mut sink, close_code::TRY_AGAIN_LATER, &f).await;
}

/// Sends `f` as an `error` message, then a close frame whose reason is its code.
async fn close_with(sink: &mut Sink, code: u16, f: &Failure) {
    send(sink, &ServerMessage::error(f)).await;
    let _ = sink.send(Message::Close(Some(CloseFrame { code, reason: f.code.as_str().into() }))).await;
}

/// The socket's sending half.
type Sink = SplitSink<WebSocket, Message>;

/// Sends one JSON message.
async fn send(sink: &mut Sink, msg: &ServerMessage) -> bool {
    sink.send(json_message(msg)).await.is_ok()
}

/// A JSON message as a WebSocket text message. Every `error` goes out through here, so this is
/// where it is counted.
fn json_message(msg: &ServerMessage) -> Message {
    if let ServerMessage::Error { code, .. } = msg {
        code.count();
    }
    Message::Text(serde_json::to_string(msg).expect("server messages serialise").into())
}

/// A frame the socket could not read: over `limits.max_ws_message_bytes` (close code 1009) or a
/// protocol violation (1002). The client is told why before the socket closes.
async fn unreadable(e: axum::Error, sink: &mut Sink) -> Flow {
    let text = e.to_string();
    // tungstenite reports an oversize frame as a capacity error ("Message too long", "Space limit").
    let (code, failure) = if text.contains("too long") || text.contains("Space limit") {
        (
            close_code::TOO_BIG,
            Failure::new(
                ErrorCode::MessageTooLarge,
                "the message is larger than limits.max_ws_message_bytes",
            ),
        )
    } else {
        (
            close_code::PROTOCOL,
            Failure::new(ErrorCode::InvalidMessage, format!("unreadable WebSocket frame: {text}")),
        )
    };
    close_with(sink, code, &failure).await;
    Flow::Close
}
