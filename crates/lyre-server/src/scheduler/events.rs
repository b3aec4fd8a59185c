//! What a session's stream carries back to its handler, and how it ended.

use lyre_engine::FinishReason;

use crate::errors::Failure;

/// What a session's stream carries, in order: `Started`, `Frame`* (with a `Flushed` after the
/// frames of each flush), then `Done` or `Error`.
#[derive(Debug, Clone)]
pub enum SessionEvent {
    /// The session got a GPU slot after waiting `queued_ms`.
    Started {
        queued_ms: f64,
    },
    Frame(FrameEvent),
    /// The text before a flush has all been spoken: `frames` since the previous `Flushed` (0
    /// when the flush had nothing new to speak).
    Flushed {
        frames: u32,
    },
    Done(DoneStats),
    Error(Failure),
}

#[derive(Debug, Clone)]
pub struct FrameEvent {
    pub index: u32,
    /// The segment of a long text (or utterance of a stream) the frame belongs to: 0, 1, ...
    pub segment: u32,
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
