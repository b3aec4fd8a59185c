//! The worker's session table: sessions waiting for an engine slot, in arrival order, and
//! those holding one, found by the scheduler's id or by the engine's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use lyre_engine::SessionId;
use tokio::sync::mpsc;

use super::command::PendingStart;
use super::events::SessionEvent;

/// A session holding an engine slot.
pub(super) struct Live {
    pub engine_id: SessionId,
    pub sink: mpsc::Sender<SessionEvent>,
    /// The handle's flag: set before the sink is dropped for a client that stopped reading.
    pub too_slow: Arc<AtomicBool>,
    pub span: tracing::Span,
    pub received: Instant,
    pub first_frame_ms: Option<f64>,
    pub frames: u32,
    /// When the audio sent so far runs out, played at `playback_speed` (see `first_audio`).
    pub audio_end: Option<Instant>,
    /// How fast the client plays the audio (the request's `speed`).
    pub playback_speed: f32,
    /// Flushes not yet reported, in order: true for one whose text the engine is speaking,
    /// false for one that had nothing new (reported right after the one before it).
    pub flushes: std::collections::VecDeque<bool>,
    /// `frames` at the last `Flushed`.
    pub frames_at_flush: u32,
}

#[derive(Default)]
pub(super) struct SessionTable {
    queue: VecDeque<Box<PendingStart>>,
    live: HashMap<u64, Live>,
    by_engine_id: HashMap<SessionId, u64>,
}

impl SessionTable {
    pub fn enqueue(&mut self, mut start: Box<PendingStart>) {
        start.queued_at = Instant::now();
        self.queue.push_back(start);
    }

    /// The session that has waited longest.
    pub fn next_queued(&mut self) -> Option<Box<PendingStart>> {
        self.queue.pop_front()
    }

    pub fn queued_mut(&mut self, sid: u64) -> Option<&mut PendingStart> {
        self.queue.iter_mut().find(|p| p.sid == sid).map(|p| &mut **p)
    }

    /// Takes a session out of the queue; false if it is not waiting.
    pub fn remove_queued(&mut self, sid: u64) -> bool {
        match self.queue.iter().position(|p| p.sid == sid) {
            Some(i) => self.queue.remove(i).is_some(),
            None => false,
        }
    }

    pub fn insert_live(&mut self, sid: u64, live: Live) {
        self.by_engine_id.insert(live.engine_id, sid);
        self.live.insert(sid, live);
    }

    pub fn live(&self, sid: u64) -> Option<&Live> {
        self.live.get(&sid)
    }

    /// The live session an engine id belongs to.
    pub fn live_mut(&mut self, sid: u64) -> Option<&mut Live> {
        self.live.get_mut(&sid)
    }

    pub fn live_by_engine_id(&mut self, id: SessionId) -> Option<(u64, &mut Live)> {
        let sid = *self.by_engine_id.get(&id)?;
        self.live.get_mut(&sid).map(|live| (sid, live))
    }

    pub fn remove_live(&mut self, sid: u64) -> Option<Live> {
        let live = self.live.remove(&sid)?;
        self.by_engine_id.remove(&live.engine_id);
        Some(live)
    }

    /// When each live stream's audio runs out (`None` before its first frame).
    pub fn audio_ends(&self) -> impl Iterator<Item = Option<Instant>> + '_ {
        self.live.values().map(|l| l.audio_end)
    }

    pub fn live_sids(&self) -> Vec<u64> {
        self.live.keys().copied().collect()
    }

    pub fn live_len(&self) -> usize {
        self.live.len()
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }
}
