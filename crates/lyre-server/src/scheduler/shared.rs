//! The scheduler's state shared by the worker, the handlers and the health endpoints.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Default events buffered per session before the worker treats the client as too slow (≈ 20 s
/// of audio); `limits.max_buffered_frames` sets it.
pub const EVENT_BUFFER: usize = 256;

#[derive(Debug)]
pub struct Shared {
    /// The model is loaded and one warm-up frame ran.
    pub ready: AtomicBool,
    /// Shutting down: no new sessions.
    pub draining: AtomicBool,
    /// Sessions admitted and not yet ended (generating or queued).
    pub active: AtomicUsize,
    /// Sessions holding a GPU slot.
    pub live: AtomicUsize,
    pub max_live: usize,
    pub max_queue: usize,
    /// Events (≈ frames) a session may have waiting for its client before it is cancelled.
    pub event_buffer: usize,
    /// Why the worker stopped, if it did.
    pub fatal: Mutex<Option<String>>,
}

impl Shared {
    pub fn new(max_live: usize, max_queue: usize) -> Self {
        Shared {
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            max_live,
            max_queue,
            event_buffer: EVENT_BUFFER,
            fatal: Mutex::new(None),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && !self.draining.load(Ordering::SeqCst)
    }

    pub fn queued(&self) -> usize {
        self.active.load(Ordering::SeqCst).saturating_sub(self.live.load(Ordering::SeqCst))
    }
}
