//! The seam between the worker and the engine: what the worker asks of it. [`Engine`] is the
//! real one; the scheduler's unit tests drive the worker with a small fake instead.

use std::time::Duration;

use lyre_engine::{Engine, EngineError, SessionId, SessionRequest, StepOutput, TickScope};

pub trait SessionEngine {
    /// Takes a free slot for a session, or refuses it.
    fn start(&mut self, request: SessionRequest) -> Result<SessionId, EngineError>;
    /// More text for a session started with streamed text.
    fn append_text(&mut self, id: SessionId, text: &str) -> Result<(), EngineError>;
    fn end_text(&mut self, id: SessionId) -> Result<(), EngineError>;
    /// A flush: ends the current utterance; true when it had text, whose end a later step
    /// reports (`StepOutput::flushed`).
    fn end_utterance(&mut self, id: SessionId) -> Result<bool, EngineError>;
    /// Ends a session now and frees its slot; unknown ids are ignored.
    fn cancel(&mut self, id: SessionId);
    /// Sessions holding a slot.
    fn live_sessions(&self) -> usize;
    /// Some session could produce a frame now (or a tick is in flight).
    fn has_work(&self) -> bool;
    /// One tick: a frame (or an end) for every session that has input, or with
    /// `TickScope::Prompts` for those whose prompt waits.
    fn step(&mut self, scope: TickScope) -> Result<Vec<StepOutput>, EngineError>;
    /// Sessions whose next tick would feed their prompt.
    fn prompts_waiting(&self) -> usize;
    /// The last step left a submitted tick on the GPU for the next step to read.
    fn tick_in_flight(&self) -> bool;
    /// How long the last step waited for the GPU to finish the tick it read.
    fn last_gpu_wait(&self) -> Duration;
}

impl SessionEngine for Engine {
    fn start(&mut self, request: SessionRequest) -> Result<SessionId, EngineError> {
        Engine::start(self, request)
    }

    fn append_text(&mut self, id: SessionId, text: &str) -> Result<(), EngineError> {
        Engine::append_text(self, id, text)
    }

    fn end_text(&mut self, id: SessionId) -> Result<(), EngineError> {
        Engine::end_text(self, id)
    }

    fn end_utterance(&mut self, id: SessionId) -> Result<bool, EngineError> {
        Engine::end_utterance(self, id)
    }

    fn cancel(&mut self, id: SessionId) {
        Engine::cancel(self, id);
    }

    fn live_sessions(&self) -> usize {
        Engine::live_sessions(self)
    }

    fn has_work(&self) -> bool {
        Engine::has_work(self)
    }

    fn step(&mut self, scope: TickScope) -> Result<Vec<StepOutput>, EngineError> {
        Engine::step_scoped(self, scope)
    }

    fn prompts_waiting(&self) -> usize {
        Engine::prompts_waiting(self)
    }

    fn tick_in_flight(&self) -> bool {
        Engine::tick_in_flight(self)
    }

    fn last_gpu_wait(&self) -> Duration {
        Engine::last_gpu_wait(self)
    }
}
