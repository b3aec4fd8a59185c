//! The `gpu-worker` thread: owns the engine, admits queued sessions into free slots, steps
//! every live session together once per tick, and hands each session its events. It never
//! awaits and never does I/O; a session whose client stops reading is cancelled rather than
//! allowed to stall the others.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lyre_engine::{EngineError, FinishReason, SessionRequest, StepOutput, TickScope};
use tokio::sync::mpsc;

use super::command::{Command, PendingStart, TextOp};
use super::events::{DoneStats, FrameEvent, SessionEvent};
use super::first_audio::FirstAudio;
use super::handle::Scheduler;
use super::launch_pacer::LaunchPacer;
use super::session_engine::SessionEngine;
use super::sessions::{Live, SessionTable};
use super::shared::Shared;
use super::text_backlog::TextBacklog;
use crate::errors::{ErrorCode, Failure};

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Commands buffered between the front end and the worker.
    pub command_buffer: usize,
    /// A warm-up request run before the server reports ready.
    pub warm_up: Option<SessionRequest>,
    /// DEBUG ONLY (fault-injection tests): the tick with this number (1 = the first after
    /// warm-up) fails as if the GPU step had returned an error. Set by `LYRE_DEBUG_FAIL_TICK`.
    pub debug_fail_tick: Option<u64>,
    /// The GPU wait each step aims for while the next tick's launch is held
    /// (`engine.launch_slack_ms`; zero: submit at once). See `launch_pacer`.
    pub launch_slack: Duration,
    /// Prompts waiting get a short tick of their own when the playing streams can spare it
    /// (`engine.fast_first_audio`). See `first_audio`.
    pub fast_first_audio: bool,
    /// Audio kept in hand beyond a prompt tick and a full tick (`engine.first_audio_margin_ms`).
    pub first_audio_margin: Duration,
}

/// Starts the worker thread. `make_engine` runs on that thread (the GPU device lives there);
/// if it fails, the error is kept in `Shared::fatal` and the server never turns ready.
pub fn spawn_worker<E, F>(
    make_engine: F,
    shared: Arc<Shared>,
    opts: WorkerOptions,
) -> (Scheduler, JoinHandle<()>)
where
    E: SessionEngine,
    F: FnOnce() -> anyhow::Result<E> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(opts.command_buffer);
    let scheduler = Scheduler::new(tx, shared.clone());
    let thread = std::thread::Builder::new()
        .name("gpu-worker".into())
        .spawn(move || {
            let result = make_engine().and_then(|engine| {
                let mut worker = Worker::new(engine, rx, shared.clone());
                worker.debug_fail_tick = opts.debug_fail_tick;
                worker.pacer = LaunchPacer::new(opts.launch_slack);
                worker.first_audio =
                    FirstAudio::new(opts.fast_first_audio).with_margin(opts.first_audio_margin);
                worker.run(opts.warm_up)
            });
            if let Err(e) = result {
                tracing::error!(error = %format!("{e:#}"), "GPU worker stopped");
                *shared.fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{e:#}"));
                shared.ready.store(false, Ordering::SeqCst);
            }
        })
        .expect("spawn the gpu-worker thread");
    (scheduler, thread)
}

pub(super) struct Worker<E> {
    engine: E,
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    sessions: SessionTable,
    /// Streamed text not yet handed to the engine (see `text_backlog`).
    text: TextBacklog,
    consecutive_errors: u32,
    ticks: u64,
    pub(super) pacer: LaunchPacer,
    pub(super) first_audio: FirstAudio,
    pub(super) debug_fail_tick: Option<u64>,
}

impl<E: SessionEngine> Worker<E> {
    pub(super) fn new(engine: E, commands: Receiver<Command>, shared: Arc<Shared>) -> Self {
        Worker {
            engine,
            commands,
            shared,
            sessions: SessionTable::default(),
            text: TextBacklog::default(),
            consecutive_errors: 0,
            ticks: 0,
            pacer: LaunchPacer::new(Duration::ZERO),
            first_audio: FirstAudio::new(false),
            debug_fail_tick: None,
        }
    }

    fn run(mut self, warm_up: Option<SessionRequest>) -> anyhow::Result<()> {
        if let Some(req) = warm_up {
            self.warm_up(req)?;
        }
        self.shared.ready.store(true, Ordering::SeqCst);
        tracing::info!("GPU worker ready");
        loop {
            if !self.engine.has_work() && self.text.is_empty() && !self.wait_for_command() {
                return Ok(());
            }
            if !self.turn() {
                return Ok(());
            }
        }
    }

    /// Blocks a while for a command when there is nothing to step; false means stop.
    fn wait_for_command(&mut self) -> bool {
        match self.commands.recv_timeout(Duration::from_millis(250)) {
            Ok(cmd) => self.handle(cmd),
            Err(RecvTimeoutError::Timeout) => true,
            Err(RecvTimeoutError::Disconnected) => false,
        }
    }

    /// One round without blocking: apply every waiting command, fill free slots from the queue,
    /// and step the engine if some session can make a frame. False means stop.
    pub(super) fn turn(&mut self) -> bool {
        self.text.new_turn();
        while let Ok(cmd) = self.commands.try_recv() {
            if !self.handle(cmd) {
                return false;
            }
        }
        self.admit();
        self.take_text();
        if self.engine.has_work() {
            if !self.hold_launch() {
                return false;
            }
            self.tick();
        }
        self.publish_gauges();
        true
    }

    /// While a tick is on the GPU, holds the next launch until just before it finishes (see
    /// `launch_pacer`), applying commands meanwhile so that new sessions join the next tick.
    /// False means stop.
    fn hold_launch(&mut self) -> bool {
        while let Some(at) = self.pacer.launch_at() {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.commands.recv_timeout(left) {
                Ok(cmd) => {
                    if !self.handle(cmd) {
                        return false;
                    }
                    self.admit();
                    self.take_text();
                }
                Err(_) => break,
            }
        }
        true
    }

    fn warm_up(&mut self, req: SessionRequest) -> anyhow::Result<()> {
        let started = Instant::now();
        let id = self.engine.start(req)?;
        while self.engine.live_sessions() > 0 {
            let outs = self.engine.step(TickScope::All)?;
            if outs.iter().any(|o| o.id == id && o.finished.is_some()) {
                break;
            }
        }
        self.engine.cancel(id);
        tracing::info!(ms = started.elapsed().as_secs_f64() * 1e3, "warm-up frame done");
        Ok(())
    }

    /// Applies one command; false means stop.
    fn handle(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Start(start) => self.sessions.enqueue(start),
            Command::Text { sid, text } => self.text_op(sid, TextOp::Append(text)),
            Command::EndText { sid } => self.text_op(sid, TextOp::End),
            Command::EndUtterance { sid } => self.text_op(sid, TextOp::Flush),
            Command::Cancel { sid } => self.cancel(sid),
            Command::Shutdown => {
                for sid in self.sessions.live_sids() {
                    self.fail(sid, Failure::new(ErrorCode::Shutdown, "the server stopped"));
                }
                return false;
            }
        }
        true
    }

    /// Text for a session: kept with it while it waits for a slot, else queued for the engine.
    fn text_op(&mut self, sid: u64, op: TextOp) {
        if let Some(p) = self.sessions.queued_mut(sid) {
            p.text_ops.push(op);
        } else if self.sessions.live(sid).is_some() {
            self.text.push(sid, op);
        }
    }

    /// Hands the engine the text waiting for it, as much as this turn allows.
    fn take_text(&mut self) {
        while let Some((sid, op)) = self.text.next() {
            self.apply_text(sid, op);
        }
    }

    fn apply_text(&mut self, sid: u64, op: TextOp) {
        let Some(live) = self.sessions.live(sid) else { return };
        let id = live.engine_id;
        let result = match op {
            TextOp::Append(t) => self.engine.append_text(id, &t),
            // The engine holds each utterance to a frame limit in proportion to its text.
            TextOp::End => self.engine.end_text(id),
            TextOp::Flush => self.engine.end_utterance(id).map(|speaking| self.flush(sid, speaking)),
        };
        if let Err(e) = result {
            self.fail(sid, Failure::from(&e));
        }
    }

    /// A flush the engine took: one with text is reported when that text has been spoken; one
    /// without is reported at once, or right after the flush before it.
    fn flush(&mut self, sid: u64, speaking: bool) {
        let Some(live) = self.sessions.live_mut(sid) else { return };
        if speaking || !live.flushes.is_empty() {
            live.flushes.push_back(speaking);
        } else {
            let _ = live.sink.try_send(SessionEvent::Flushed { frames: 0 });
        }
    }

    /// The engine spoke a flush's text to its end: its `Flushed`, and those of the empty
    /// flushes that came after it.
    fn flushed(&mut self, sid: u64) {
        let Some(live) = self.sessions.live_mut(sid) else { return };
        let frames = live.frames - std::mem::replace(&mut live.frames_at_flush, live.frames);
        live.flushes.pop_front();
        let _ = live.sink.try_send(SessionEvent::Flushed { frames });
        while live.flushes.front() == Some(&false) {
            live.flushes.pop_front();
            let _ = live.sink.try_send(SessionEvent::Flushed { frames: 0 });
        }
    }

    fn cancel(&mut self, sid: u64) {
        if self.sessions.remove_queued(sid) {
            self.shared.active.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        if let Some(live) = self.remove_live(sid) {
            self.engine.cancel(live.engine_id);
            self.ended("cancelled");
        }
    }

    /// Moves queued sessions into free engine slots.
    fn admit(&mut self) {
        while self.sessions.live_len() < self.shared.max_live {
            let Some(p) = self.sessions.next_queued() else { break };
            let PendingStart {
                sid,
                request,
                sink,
                too_slow,
                span,
                received,
                queued_at,
                text_ops,
                playback_speed,
            } = *p;
            let id = match self.engine.start(request) {
                Ok(id) => id,
                Err(e) => {
                    let _ = sink.try_send(SessionEvent::Error(Failure::from(&e)));
                    self.shared.active.fetch_sub(1, Ordering::SeqCst);
                    continue;
                }
            };
            // The client hears of the whole wait; the metric counts only the wait for a slot
            // (before the worker took the request it may have been finishing a tick, which
            // lyre_ttfa_seconds shows).
            let queued_ms = received.elapsed().as_secs_f64() * 1e3;
            metrics::histogram!("lyre_queue_wait_seconds").record(queued_at.elapsed().as_secs_f64());
            let _ = sink.try_send(SessionEvent::Started { queued_ms });
            span.in_scope(|| tracing::debug!(sid, queued_ms, "session started"));
            let live = Live {
                engine_id: id,
                sink,
                too_slow,
                span,
                received,
                first_frame_ms: None,
                frames: 0,
                audio_end: None,
                playback_speed,
                flushes: Default::default(),
                frames_at_flush: 0,
            };
            self.sessions.insert_live(sid, live);
            for op in text_ops {
                self.text_op(sid, op);
            }
        }
        self.shared.live.store(self.sessions.live_len(), Ordering::SeqCst);
    }

    fn tick(&mut self) {
        // A tick read by this step has been on the GPU since the last step ended.
        let started = self.pacer.in_flight_since().unwrap_or_else(Instant::now);
        self.ticks += 1;
        let scope = self.first_audio.scope(
            Instant::now(),
            self.engine.prompts_waiting(),
            self.engine.tick_in_flight(),
            self.sessions.audio_ends(),
        );
        if scope == TickScope::Prompts {
            metrics::counter!("lyre_prompt_ticks_total").increment(1);
        }
        let result = if self.debug_fail_tick == Some(self.ticks) {
            Err(EngineError::Gpu(format!("injected failure at tick {} (LYRE_DEBUG_FAIL_TICK)", self.ticks)))
        } else {
            self.engine.step(scope)
        };
        let in_flight = result.is_ok() && self.engine.tick_in_flight();
        let frames = result.as_ref().map_or(0, |outs| outs.iter().filter(|o| o.frame.is_some()).count());
        let took = started.elapsed();
        let read = self.first_audio.stepped(took, scope, in_flight, frames > 0);
        self.pacer.stepped(Instant::now(), self.engine.last_gpu_wait(), in_flight, scope, read);
        match result {
            Ok(outs) => {
                self.consecutive_errors = 0;
                if frames > 0 {
                    metrics::histogram!("lyre_tick_seconds").record(took.as_secs_f64());
                    metrics::histogram!("lyre_batch_size").record(frames as f64);
                }
                for out in outs {
                    self.deliver(out);
                }
            }
            Err(e) => {
                self.consecutive_errors += 1;
                tracing::error!(error = %e, consecutive = self.consecutive_errors, "tick failed");
                for sid in self.sessions.live_sids() {
                    self.fail(sid, Failure::new(ErrorCode::GpuError, format!("the GPU step failed: {e}")));
                }
                if self.consecutive_errors >= 3 {
                    self.shared.ready.store(false, Ordering::SeqCst);
                }
            }
        }
    }

    fn deliver(&mut self, out: StepOutput) {
        let Some((sid, live)) = self.sessions.live_by_engine_id(out.id) else { return };
        if let Some(frame) = out.frame {
            let elapsed_ms = live.received.elapsed().as_secs_f64() * 1e3;
            if live.first_frame_ms.is_none() {
                live.first_frame_ms = Some(elapsed_ms);
                metrics::histogram!("lyre_ttfa_seconds").record(elapsed_ms / 1e3);
            }
            live.frames += 1;
            live.audio_end = Some(self.first_audio.audio_end_after_frame(
                live.audio_end,
                Instant::now(),
                live.playback_speed,
            ));
            crate::telemetry::metrics::count_frame();
            let ev = SessionEvent::Frame(FrameEvent {
                index: frame.index,
                segment: frame.segment,
                codes: frame.codes,
                pcm: frame.pcm,
            });
            match live.sink.try_send(ev) {
                Ok(()) => {}
                // The client went away between its last read and this frame.
                Err(mpsc::error::TrySendError::Closed(_)) => return self.cancel(sid),
                Err(mpsc::error::TrySendError::Full(_)) => return self.drop_slow(sid),
            }
        }
        if out.flushed {
            self.flushed(sid);
        }
        if let Some(reason) = out.finished {
            if reason == FinishReason::GpuFault {
                let failure = Failure::new(
                    ErrorCode::GpuError,
                    "the GPU's results for this stream could not be trusted (a persistent layer's \
                     barrier gave up); the server now runs the safer kernels, so a retry succeeds",
                );
                return self.fail(sid, failure);
            }
            let live = self.remove_live(sid).expect("present above");
            let elapsed_ms = live.received.elapsed().as_secs_f64() * 1e3;
            let ev = match reason {
                FinishReason::EmptyText => {
                    SessionEvent::Error(Failure::invalid("text", "the text ended without any words"))
                }
                reason => SessionEvent::Done(DoneStats {
                    frames: live.frames,
                    reason,
                    ttfa_ms: live.first_frame_ms.unwrap_or(elapsed_ms),
                    elapsed_ms,
                }),
            };
            live.span.in_scope(|| tracing::info!(sid, frames = live.frames, elapsed_ms, "session finished"));
            let _ = live.sink.try_send(ev);
            self.ended("finished");
        }
    }

    /// The client stopped reading: cancel so the others keep their pace. This is the one
    /// failure counted here rather than where the client is told: its handler may be blocked on
    /// the client for a long while, and tells it (`slow_consumer`, from the handle) only if it
    /// reads again.
    fn drop_slow(&mut self, sid: u64) {
        if let Some(live) = self.remove_live(sid) {
            self.engine.cancel(live.engine_id);
            live.span.in_scope(|| tracing::warn!(sid, "client too slow; session cancelled"));
            live.too_slow.store(true, Ordering::SeqCst);
            ErrorCode::SlowConsumer.count_where_seen();
            self.ended("slow_consumer");
        }
    }

    /// Ends a live session with an error event; the handler that passes it on counts it.
    fn fail(&mut self, sid: u64, failure: Failure) {
        if let Some(live) = self.remove_live(sid) {
            self.engine.cancel(live.engine_id);
            let _ = live.sink.try_send(SessionEvent::Error(failure));
            self.ended("failed");
        }
    }

    /// Takes a session out of the live table, with any of its text still waiting.
    fn remove_live(&mut self, sid: u64) -> Option<Live> {
        self.text.forget(sid);
        self.sessions.remove_live(sid)
    }

    fn ended(&mut self, outcome: &'static str) {
        self.shared.active.fetch_sub(1, Ordering::SeqCst);
        self.shared.live.store(self.sessions.live_len(), Ordering::SeqCst);
        metrics::counter!("lyre_sessions_total", "outcome" => outcome).increment(1);
    }

    fn publish_gauges(&self) {
        metrics::gauge!("lyre_live_sessions").set(self.sessions.live_len() as f64);
        metrics::gauge!("lyre_queue_depth").set(self.sessions.queue_len() as f64);
        let hold = self.pacer.launch_at().map_or(0.0, |_| self.pacer.hold().as_secs_f64());
        metrics::gauge!("lyre_launch_hold_seconds").set(hold);
    }
}
