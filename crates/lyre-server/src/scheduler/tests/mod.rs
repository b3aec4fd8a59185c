//! The scheduler without a GPU: the real `Scheduler`, `SessionHandle` and `Worker` around a
//! fake engine. The worker runs on the test's thread, one `turn` at a time, so every test is
//! deterministic.

mod admission;
mod failures;
mod fake_engine;
mod first_audio;
mod first_audio_engine;
mod keys;
mod lifecycle;
mod pacing;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::FutureExt;
use lyre_engine::checkpoint::config::GenerationConfig;
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{FinishReason, SessionRequest, TextInput};

use super::handle::{Scheduler, SessionHandle};
use super::worker::Worker;
use super::{SessionEvent, Shared};
use crate::errors::ErrorCode;
use fake_engine::{FakeEngine, FakeState};

struct Harness {
    scheduler: Scheduler,
    worker: Worker<FakeEngine>,
    engine: Arc<Mutex<FakeState>>,
    shared: Arc<Shared>,
}

/// A ready scheduler: `max_live` engine slots, `max_queue` places to wait.
fn harness(max_live: usize, max_queue: usize) -> Harness {
    harness_with(max_live, max_queue, 64, 64)
}

fn harness_with(max_live: usize, max_queue: usize, command_buffer: usize, event_buffer: usize) -> Harness {
    let mut shared = Shared::new(max_live, max_queue);
    shared.event_buffer = event_buffer;
    shared.ready.store(true, Ordering::SeqCst);
    let shared = Arc::new(shared);
    let (tx, rx) = std::sync::mpsc::sync_channel(command_buffer);
    let (fake, engine) = FakeEngine::new(max_live);
    let worker = Worker::new(fake, rx, shared.clone());
    Harness { scheduler: Scheduler::new(tx, shared.clone()), worker, engine, shared }
}

impl Harness {
    fn submit(&self, request: SessionRequest) -> SessionHandle {
        self.scheduler.submit(request, tracing::Span::none()).expect("admitted")
    }

    /// One round of the worker loop.
    fn turn(&mut self) {
        assert!(self.worker.turn(), "the worker stopped");
    }

    fn engine(&self) -> MutexGuard<'_, FakeState> {
        self.engine.lock().unwrap()
    }

    /// Sessions admitted and not ended, and those of them holding an engine slot.
    fn counts(&self) -> (usize, usize) {
        (self.shared.active.load(Ordering::SeqCst), self.shared.live.load(Ordering::SeqCst))
    }
}

/// A whole-text request; `label` is its text, which the fake engine records.
fn whole(label: &str, max_frames: u32) -> SessionRequest {
    request(TextInput::Whole(label.to_string()), TextMode::NonStreaming, max_frames)
}

fn streamed(max_frames: u32) -> SessionRequest {
    request(TextInput::Streamed, TextMode::Streaming, max_frames)
}

fn request(text: TextInput, mode: TextMode, max_frames: u32) -> SessionRequest {
    SessionRequest {
        text,
        voice: VoiceSpec::None,
        language: "auto".into(),
        instruct: None,
        mode,
        sampling: SamplingParams::from_generation_config(&GenerationConfig::default(), 0),
        max_frames,
        max_frames_per_segment: None,
    }
}

/// An event, as far as these tests care.
#[derive(Debug, PartialEq)]
enum Seen {
    Started,
    Frame(u32),
    Flushed(u32),
    Done {
        frames: u32,
        reason: FinishReason,
    },
    Error(ErrorCode),
    /// The stream ended without `Done` or `Error`.
    Closed,
}

/// The events a handle has waiting now (without waiting for more), up to the stream's end.
fn seen(handle: &mut SessionHandle) -> Vec<Seen> {
    let mut out = Vec::new();
    while let Some(ev) = handle.recv().now_or_never() {
        out.push(match ev {
            Some(SessionEvent::Started { .. }) => Seen::Started,
            Some(SessionEvent::Frame(f)) => Seen::Frame(f.index),
            Some(SessionEvent::Flushed { frames }) => Seen::Flushed(frames),
            Some(SessionEvent::Done(d)) => Seen::Done { frames: d.frames, reason: d.reason },
            Some(SessionEvent::Error(f)) => Seen::Error(f.code),
            None => Seen::Closed,
        });
        if matches!(out.last(), Some(Seen::Done { .. } | Seen::Error(_) | Seen::Closed)) {
            break;
        }
    }
    out
}
