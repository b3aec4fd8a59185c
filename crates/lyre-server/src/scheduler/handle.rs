//! The async side: submit a session (or get 429/503 at once), then read its events.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Instant;

use lyre_engine::SessionRequest;
use tokio::sync::mpsc;

use super::command::{Command, PendingStart};
use super::events::SessionEvent;
use super::shared::Shared;
use crate::errors::{ErrorCode, Failure};

#[derive(Clone)]
pub struct Scheduler {
    commands: SyncSender<Command>,
    pub shared: Arc<Shared>,
    next_sid: Arc<AtomicU64>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler").field("shared", &self.shared).finish()
    }
}

/// A submitted session. Dropping it cancels the session.
#[derive(Debug)]
pub struct SessionHandle {
    pub sid: u64,
    events: mpsc::Receiver<SessionEvent>,
    /// Set by the worker when it cancelled the session because this client stopped reading.
    too_slow: Arc<AtomicBool>,
    commands: SyncSender<Command>,
    finished: bool,
}

impl Scheduler {
    pub(super) fn new(commands: SyncSender<Command>, shared: Arc<Shared>) -> Self {
        Scheduler { commands, shared, next_sid: Arc::new(AtomicU64::new(1)) }
    }

    /// Why no session can start now (503 `draining` or `not_ready`), if that is so.
    pub fn refusal(&self) -> Option<Failure> {
        let s = &self.shared;
        if s.draining.load(Ordering::SeqCst) {
            return Some(Failure::new(
                ErrorCode::Draining,
                "the server is shutting down; retry on another replica",
            ));
        }
        if !s.ready.load(Ordering::SeqCst) {
            return Some(Failure::new(ErrorCode::NotReady, "the model is still loading"));
        }
        None
    }

    /// Admits a session or refuses it at once: 503 while draining or not ready, 429 when the
    /// live sessions and the wait queue are full.
    pub fn submit(&self, request: SessionRequest, span: tracing::Span) -> Result<SessionHandle, Failure> {
        self.submit_played_at(request, span, 1.0)
    }

    /// [`Scheduler::submit`] for audio the client plays `playback_speed` times as fast as made
    /// (the request's `speed`): its frames last that much less in the worker's reckoning of the
    /// audio each stream has in hand.
    pub fn submit_played_at(
        &self,
        request: SessionRequest,
        span: tracing::Span,
        playback_speed: f32,
    ) -> Result<SessionHandle, Failure> {
        if let Some(f) = self.refusal() {
            return Err(f);
        }
        let s = &self.shared;
        let before = s.active.fetch_add(1, Ordering::SeqCst);
        if before >= s.max_live + s.max_queue {
            s.active.fetch_sub(1, Ordering::SeqCst);
            metrics::counter!("lyre_rejected_total", "code" => ErrorCode::Busy.as_str()).increment(1);
            return Err(busy(s.max_live, s.max_queue));
        }
        let sid = self.next_sid.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(s.event_buffer.max(4));
        let too_slow = Arc::new(AtomicBool::new(false));
        let now = Instant::now();
        let start = PendingStart {
            sid,
            request,
            sink: tx,
            too_slow: too_slow.clone(),
            span,
            received: now,
            queued_at: now,
            text_ops: Vec::new(),
            playback_speed,
        };
        match self.commands.try_send(Command::Start(Box::new(start))) {
            Ok(()) => Ok(SessionHandle {
                sid,
                events: rx,
                too_slow,
                commands: self.commands.clone(),
                finished: false,
            }),
            Err(e) => {
                s.active.fetch_sub(1, Ordering::SeqCst);
                Err(match e {
                    TrySendError::Full(_) => busy(s.max_live, s.max_queue),
                    TrySendError::Disconnected(_) => {
                        Failure::new(ErrorCode::WorkerStopped, "the GPU worker has stopped")
                    }
                })
            }
        }
    }

    /// Asks the worker thread to stop after its current tick.
    pub fn shutdown(&self) {
        let _ = self.commands.try_send(Command::Shutdown);
    }
}

fn busy(live: usize, queue: usize) -> Failure {
    Failure::new(
        ErrorCode::Busy,
        format!("all {live} sessions are busy and {queue} are waiting; retry shortly"),
    )
}

impl SessionHandle {
    /// The next event; `None` once the stream has ended. A session cancelled because its
    /// client stopped reading ends with an `Error` of code `slow_consumer` (already counted by
    /// the worker).
    pub async fn recv(&mut self) -> Option<SessionEvent> {
        let mut ev = self.events.recv().await;
        if ev.is_none() && !self.finished && self.too_slow.load(Ordering::SeqCst) {
            ev = Some(SessionEvent::Error(Failure::new(
                ErrorCode::SlowConsumer,
                "the client read the audio too slowly; the session was cancelled",
            )));
        }
        match &ev {
            Some(SessionEvent::Done(_)) | Some(SessionEvent::Error(_)) | None => self.finished = true,
            _ => {}
        }
        ev
    }

    /// More text (for a session started with streamed text).
    pub fn append_text(&self, text: String) -> Result<(), Failure> {
        self.send(Command::Text { sid: self.sid, text })
    }

    pub fn end_text(&self) -> Result<(), Failure> {
        self.send(Command::EndText { sid: self.sid })
    }

    /// A flush: the text so far is spoken to its end (then `Flushed` comes), and the session
    /// waits for more text, which starts its next utterance.
    pub fn end_utterance(&self) -> Result<(), Failure> {
        self.send(Command::EndUtterance { sid: self.sid })
    }

    pub fn cancel(&mut self) {
        if !self.finished {
            self.finished = true;
            let _ = self.commands.try_send(Command::Cancel { sid: self.sid });
        }
    }

    fn send(&self, cmd: Command) -> Result<(), Failure> {
        self.commands.try_send(cmd).map_err(|e| match e {
            TrySendError::Full(_) => Failure::new(ErrorCode::Overloaded, "the GPU worker's queue is full"),
            TrySendError::Disconnected(_) => {
                Failure::new(ErrorCode::WorkerStopped, "the GPU worker has stopped")
            }
        })
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        if !self.finished {
            // A blocking send: a cancel must not be lost, and the queue drains every tick.
            let _ = self.commands.send(Command::Cancel { sid: self.sid });
        }
    }
}
