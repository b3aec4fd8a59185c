//! The bridge between the async front end and the GPU worker thread: admission control, a
//! bounded command channel into the worker, and one bounded event channel per session back.

mod handle;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

pub use handle::{Scheduler, SessionHandle};
use lyre_engine::FinishReason;
pub use worker::{spawn_worker, WorkerOptions};

/// What a session's stream carries, in order: `Started`, `Frame`*, then `Done` or `Error`.
#[derive(Debug, Clone)]
pub enum SessionEvent {
    /// The session got a GPU slot after waiting `queued_ms`.
    Started {
        queued_ms: f64,
    },
    Frame(FrameEvent),
    Done(DoneStats),
    Error(crate::errors::Failure),
}

#[derive(Debug, Clone)]
pub struct FrameEvent {
    pub index: u32,
    pub codes: [u16; 16],
    /// 1920 samples at 24 kHz.
    pub pcm: Vec<f32>,
}

#[derive(Debug, Clone)]
pub struct DoneStats {
    pub frames: u32,
    pub reason: FinishReason,
    /// From the request reaching the scheduler to its first frame being ready.
    pub ttfa_ms: f64,
    /// From the request reaching the scheduler to its end.
    pub elapsed_ms: f64,
}

impl DoneStats {
    pub fn audio_ms(&self) -> f64 {
        self.frames as f64 * 80.0
    }

    /// Real-time factor: generation time over audio time (< 1 is faster than real time).
    pub fn rtf(&self) -> f64 {
        if self.frames == 0 {
            return 0.0;
        }
        self.elapsed_ms / self.audio_ms()
    }

    pub fn reason_str(&self) -> &'static str {
        finish_reason_str(&self.reason)
    }
}

pub fn finish_reason_str(r: &FinishReason) -> &'static str {
    match r {
        FinishReason::Eos => "eos",
        FinishReason::MaxFrames => "max_frames",
        FinishReason::ContextFull => "context_full",
        FinishReason::EmptyText => "empty_text",
        FinishReason::Cancelled => "cancelled",
        FinishReason::GpuFault => "gpu_fault",
    }
}

/// State shared by the worker, the handlers and the health endpoints.
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
            event_buffer: handle::EVENT_BUFFER,
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
