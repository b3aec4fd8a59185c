//! What the async side asks of the worker thread, over one bounded channel.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use lyre_engine::SessionRequest;
use tokio::sync::mpsc;

use super::events::SessionEvent;

pub(crate) enum Command {
    Start(Box<PendingStart>),
    Text {
        sid: u64,
        text: String,
    },
    EndText {
        sid: u64,
    },
    /// A flush: the utterance so far ends; later text starts the next one.
    EndUtterance {
        sid: u64,
    },
    Cancel {
        sid: u64,
    },
    Shutdown,
}

/// A change to a streamed session's text.
pub(crate) enum TextOp {
    Append(String),
    End,
    Flush,
}

/// A session admitted by the scheduler and waiting for an engine slot.
pub(crate) struct PendingStart {
    pub sid: u64,
    pub request: SessionRequest,
    pub sink: mpsc::Sender<SessionEvent>,
    /// Set by the worker when it cancels the session because its client stopped reading.
    pub too_slow: Arc<AtomicBool>,
    pub span: tracing::Span,
    pub received: Instant,
    /// When the worker took the request into its queue (set by `SessionTable::enqueue`).
    pub queued_at: Instant,
    /// Text that arrived while the session waited for a slot.
    pub text_ops: Vec<TextOp>,
    /// How fast the client plays the audio (the request's `speed`; 1: as made).
    pub playback_speed: f32,
}
