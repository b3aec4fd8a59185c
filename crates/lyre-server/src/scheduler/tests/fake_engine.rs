//! A stand-in for the engine, as the worker sees it: each session makes one frame per step
//! until its frame limit; a streamed session waits for text; a request's text picks odd
//! behaviour (`refuse`: no slot for it; `fault`: its first step is a GPU fault). The state is
//! shared so a test can look inside while the worker owns the engine.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use lyre_engine::{
    EngineError, FinishReason, Frame, SessionId, SessionRequest, StepOutput, TextInput, TickScope,
};

use crate::scheduler::SessionEngine;

pub struct FakeEngine {
    state: Arc<Mutex<FakeState>>,
}

#[derive(Default)]
pub struct FakeState {
    /// Sessions that fit at once.
    pub slots: usize,
    pub sessions: BTreeMap<SessionId, FakeSession>,
    next_id: SessionId,
    /// The label of every session started, in order.
    pub started: Vec<String>,
    /// The engine ids of the sessions cancelled, in order.
    pub cancelled: Vec<SessionId>,
    /// The next this many steps fail.
    pub failing_steps: u32,
    /// Steps leave a tick in flight while sessions are live, as the pipelined engine does.
    pub pipelined: bool,
    /// What each step reports as its wait for the GPU.
    pub gpu_wait: Duration,
    /// Each step's scope and the labels of the sessions it stepped, in order.
    pub steps: Vec<(TickScope, Vec<String>)>,
}

#[derive(Debug)]
pub struct FakeSession {
    pub label: String,
    pub streamed: bool,
    pub words: Vec<String>,
    pub text_ended: bool,
    pub frames: u32,
    pub max_frames: u32,
    /// Words at the last flush, and whether its end is still to be reported (with the next
    /// frame: the fake speaks a flushed text in one frame).
    pub flushed_words: usize,
    pub flush_due: bool,
}

impl FakeSession {
    fn has_input(&self) -> bool {
        !self.streamed || !self.words.is_empty() || self.text_ended
    }

    /// The fake's prompt is its first frame.
    fn in_scope(&self, scope: TickScope) -> bool {
        self.has_input() && (scope == TickScope::All || self.frames == 0)
    }
}

impl FakeEngine {
    pub fn new(slots: usize) -> (Self, Arc<Mutex<FakeState>>) {
        let state = Arc::new(Mutex::new(FakeState { slots, ..FakeState::default() }));
        (FakeEngine { state: state.clone() }, state)
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap()
    }
}

impl FakeState {
    /// The engine id of the live session with this label.
    pub fn id_of(&self, label: &str) -> SessionId {
        *self.sessions.iter().find(|(_, s)| s.label == label).unwrap_or_else(|| panic!("no `{label}`")).0
    }

    pub fn session(&self, label: &str) -> &FakeSession {
        &self.sessions[&self.id_of(label)]
    }
}

impl SessionEngine for FakeEngine {
    fn start(&mut self, request: SessionRequest) -> Result<SessionId, EngineError> {
        let mut s = self.state();
        let (label, streamed) = match request.text {
            TextInput::Whole(text) => (text, false),
            TextInput::Segments(segments) => (segments.join(" "), false),
            TextInput::Streamed => ("streamed".to_string(), true),
        };
        if label == "refuse" || s.sessions.len() >= s.slots {
            return Err(EngineError::Capacity(format!("no slot for `{label}`")));
        }
        s.next_id += 1;
        let id = s.next_id;
        s.started.push(label.clone());
        let session = FakeSession {
            label,
            streamed,
            words: Vec::new(),
            text_ended: false,
            frames: 0,
            max_frames: request.max_frames,
            flushed_words: 0,
            flush_due: false,
        };
        s.sessions.insert(id, session);
        Ok(id)
    }

    fn append_text(&mut self, id: SessionId, text: &str) -> Result<(), EngineError> {
        let mut s = self.state();
        let session = s.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        session.words.extend(text.split_whitespace().map(str::to_string));
        Ok(())
    }

    fn end_text(&mut self, id: SessionId) -> Result<(), EngineError> {
        let mut s = self.state();
        s.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?.text_ended = true;
        Ok(())
    }

    fn end_utterance(&mut self, id: SessionId) -> Result<bool, EngineError> {
        let mut s = self.state();
        let session = s.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        let new_words = session.words.len() > session.flushed_words;
        session.flushed_words = session.words.len();
        session.flush_due |= new_words;
        Ok(new_words)
    }

    fn cancel(&mut self, id: SessionId) {
        let mut s = self.state();
        if s.sessions.remove(&id).is_some() {
            s.cancelled.push(id);
        }
    }

    fn live_sessions(&self) -> usize {
        self.state().sessions.len()
    }

    fn has_work(&self) -> bool {
        self.state().sessions.values().any(FakeSession::has_input)
    }

    fn tick_in_flight(&self) -> bool {
        let s = self.state();
        s.pipelined && !s.sessions.is_empty() && !s.steps.is_empty()
    }

    fn last_gpu_wait(&self) -> Duration {
        self.state().gpu_wait
    }

    fn prompts_waiting(&self) -> usize {
        self.state().sessions.values().filter(|s| s.in_scope(TickScope::Prompts)).count()
    }

    fn step(&mut self, scope: TickScope) -> Result<Vec<StepOutput>, EngineError> {
        let mut s = self.state();
        if s.failing_steps > 0 {
            s.failing_steps -= 1;
            return Err(EngineError::Gpu("the device was lost".into()));
        }
        let stepped = s.sessions.values().filter(|x| x.in_scope(scope)).map(|x| x.label.clone()).collect();
        s.steps.push((scope, stepped));
        let mut outs = Vec::new();
        for (&id, session) in s.sessions.iter_mut().filter(|(_, s)| s.in_scope(scope)) {
            let out = |frame, finished| StepOutput { id, frame, finished, logits: None, flushed: false };
            if session.label == "fault" {
                outs.push(out(None, Some(FinishReason::GpuFault)));
            } else if session.streamed && session.text_ended && session.words.is_empty() {
                outs.push(out(None, Some(FinishReason::EmptyText)));
            } else {
                let index = session.frames;
                session.frames += 1;
                let frame = Frame { index, segment: 0, codes: [index as u16; 16], pcm: vec![0.0; 4] };
                let done = (session.frames >= session.max_frames).then_some(FinishReason::MaxFrames);
                let flushed = std::mem::take(&mut session.flush_due);
                outs.push(StepOutput { flushed, ..out(Some(frame), done) });
            }
        }
        for o in outs.iter().filter(|o| o.finished.is_some()) {
            s.sessions.remove(&o.id);
        }
        Ok(outs)
    }
}
