//! What goes over a socket: JSON messages (every `error` counted here), the close frames the
//! server ends a socket with, and the answer to a frame it cannot read.

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::stream::SplitSink;
use futures_util::SinkExt;

use crate::errors::{ErrorCode, Failure};
use crate::protocol::ServerMessage;

/// Close codes (RFC 6455) the server ends a socket with, besides 1000 after a client's close.
pub(super) mod close_code {
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

/// Sends `f` as an `error` message, then a close frame whose reason is its code.
pub(super) async fn close_with(sink: &mut Sink, code: u16, f: &Failure) {
    send(sink, &ServerMessage::error(f)).await;
    let _ = sink.send(Message::Close(Some(CloseFrame { code, reason: f.code.as_str().into() }))).await;
}

/// The socket's sending half.
pub(super) type Sink = SplitSink<WebSocket, Message>;

/// Sends one JSON message.
pub(super) async fn send(sink: &mut Sink, msg: &ServerMessage) -> bool {
    sink.send(json_message(msg)).await.is_ok()
}

/// A JSON message as a WebSocket text message. Every `error` goes out through here, so this is
/// where it is counted.
pub(super) fn json_message(msg: &ServerMessage) -> Message {
    if let ServerMessage::Error { code, .. } = msg {
        code.count();
    }
    Message::Text(serde_json::to_string(msg).expect("server messages serialise").into())
}

/// A frame the socket could not read: over `limits.max_ws_message_bytes` (close code 1009) or a
/// protocol violation (1002). The client is told why before the socket closes.
pub(super) async fn unreadable(e: axum::Error, sink: &mut Sink) {
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
}
