//! The engine: many sessions, one batched GPU pass per frame.

mod probe;
mod profile;
mod reference;
mod requests;
mod seams;
mod segmenting;
mod session;
mod tick;
mod tick_plan;
mod utterance;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use probe::CodePredictorProbe;
pub use profile::TickProfile;
pub use segmenting::{plan_segments, prompt_overhead, SegmentLimits};
pub use session::{FinishReason, SessionId};
pub use tick_plan::PlanLimits;

use crate::checkpoint::ModelDir;
use crate::codec::CodecDecoder;
use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;
pub use crate::kernels::attention::KvFormat;
use crate::kernels::select::KernelChoice;
use crate::model::code_predictor::CodePredictorWeights;
use crate::model::talker::{CodecIds, TalkerWeights};
use crate::prompt::{TextMode, VoiceSpec};
use crate::sampling::SamplingParams;
use crate::tuning::EngineTuning;
use reference::ReferencePlan;
use seams::Seams;
use session::Session;
use tick_plan::TickPlan;

/// Engine-wide sizes and switches.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Sessions alive at once (KV-cache slots).
    pub max_sessions: usize,
    /// KV-cache positions per session: prompt rows + frames.
    pub max_positions: usize,
    /// How the talker's KV cache stores its values: f32, or f16 for half the memory (needs an
    /// adapter with shader-f16).
    pub kv_cache: KvFormat,
    /// Talker rows per tick, which bounds one prompt's length.
    pub max_rows_per_tick: usize,
    /// Text tokens per segment of a long text (and per utterance of streamed text before it
    /// rolls over at a sentence end); 0: [`crate::segment::default_segment_tokens`] for
    /// `max_positions`.
    pub segment_tokens: usize,
    /// Also read back the raw talker and code-predictor logits every tick (tests, debugging).
    pub capture_logits: bool,
    /// Time each part of every tick on the GPU (benchmarks), where the adapter can.
    pub profile: bool,
    /// With `profile`: time every dispatch (slower; finds the expensive kernels).
    pub profile_dispatches: bool,
    /// Fault injection (tests): the persistent layers wait for one workgroup more than they
    /// launch, so their barriers give up, as on a GPU that cannot run the whole grid at once.
    pub inject_grid_fault: bool,
    /// Which kernels run and how ticks are submitted (the device-wide keys apply where the
    /// [`GpuContext`] is made: [`GpuOptions::from_tuning`](crate::gpu::GpuOptions::from_tuning)).
    pub tuning: EngineTuning,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_sessions: 16,
            max_positions: 4096,
            kv_cache: KvFormat::F32,
            max_rows_per_tick: 512,
            segment_tokens: 0,
            capture_logits: false,
            profile: false,
            profile_dispatches: false,
            inject_grid_fault: false,
            tuning: EngineTuning::default(),
        }
    }
}

/// How the text arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextInput {
    /// The whole text, of any length: cut into segments ([`Engine::segments`]) when it is
    /// longer than one segment.
    Whole(String),
    /// A whole text already cut into segments (e.g. by a front end that reports progress
    /// per segment), spoken in this order; see [`crate::segment::split_text`].
    Segments(Vec<String>),
    /// Pieces follow through [`Engine::append_text`], then [`Engine::end_text`]; an utterance
    /// rolls over to the next at a sentence end before it fills the cache, and
    /// [`Engine::end_utterance`] ends one early.
    Streamed,
}

/// Everything that starts a session.
#[derive(Debug, Clone)]
pub struct SessionRequest {
    pub text: TextInput,
    pub voice: VoiceSpec,
    pub language: String,
    pub instruct: Option<String>,
    pub mode: TextMode,
    /// The first segment's sampling; every later segment's seed is
    /// [`crate::segment::segment_seed`] of this seed and the segment's index.
    pub sampling: SamplingParams,
    /// At most this many frames are emitted by the whole session.
    pub max_frames: u32,
    /// At most this many frames per segment (utterance); `None`: in proportion to the
    /// segment's text tokens ([`crate::policy::frames_for_tokens`]), so a model that never
    /// ends a segment cannot run on.
    pub max_frames_per_segment: Option<u32>,
}

/// One 80 ms codec frame: 16 codes and their audio.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// 0 for the session's first frame; frames of later segments go on counting.
    pub index: u32,
    /// The segment (utterance) the frame belongs to: 0, then 1 after the first seam, ...
    pub segment: u32,
    pub codes: [u16; 16],
    /// 1920 samples at 24 kHz in [-1, 1].
    pub pcm: Vec<f32>,
}

/// The raw logits behind one tick's frame (only with `capture_logits`).
#[derive(Debug, Clone)]
pub struct FrameLogits {
    pub talker: Vec<f32>,
    /// The talker's final-normed hidden state that produced `talker` (the codec head's input).
    pub talker_hidden: Vec<f32>,
    /// 15 rows, one per code-predictor step.
    pub code_predictor: Vec<Vec<f32>>,
}

/// Which sessions a step's tick takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TickScope {
    /// Every session that has input.
    #[default]
    All,
    /// Only the sessions whose next input is a prompt (a new session, or the next utterance of
    /// one): a tick of their rows alone is short, so their first audio comes sooner, while the
    /// other sessions wait one tick. Their frames are the same either way.
    Prompts,
}

/// What one step did for one session.
#[derive(Debug, Clone)]
pub struct StepOutput {
    pub id: SessionId,
    pub frame: Option<Frame>,
    pub finished: Option<FinishReason>,
    pub logits: Option<FrameLogits>,
    /// The text before a flush ([`Engine::end_utterance`]) has now all been spoken.
    pub flushed: bool,
}

pub struct Engine {
    gpu: Arc<GpuContext>,
    model: Arc<ModelDir>,
    opts: EngineOptions,
    plan: TickPlan,
    talker: TalkerWeights,
    _code_predictor: CodePredictorWeights,
    decoder: CodecDecoder,
    seams: Seams,
    reference: ReferencePlan,
    talker_probe: Option<probe::TalkerProbe>,
    profiler: Option<profile::Profiler>,
    /// Whether ticks are timed now (the profiler exists and is switched on).
    profiling: bool,
    last_profile: Option<TickProfile>,
    /// Submit the next tick before reading the current one (off: `tuning.pipeline = false`).
    pipeline: bool,
    in_flight: Option<tick::InFlight>,
    /// How long the last tick read waited for the GPU to finish it.
    last_gpu_wait: std::time::Duration,
    last_launch_cpu: std::time::Duration,
    next_readback: usize,
    /// Grid barrier waits that gave up, as of the last tick read.
    grid_give_ups: u32,
    sessions: BTreeMap<SessionId, Session>,
    /// Teacher-forced codes per session, frame by frame ([`Engine::force_codes`]).
    forced: BTreeMap<SessionId, Vec<[u16; 16]>>,
    free_slots: Vec<u32>,
    next_id: SessionId,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("model", &self.model.describe())
            .field("live", &self.sessions.len())
            .finish()
    }
}

impl Engine {
    pub fn new(gpu: Arc<GpuContext>, model: Arc<ModelDir>, opts: EngineOptions) -> Result<Self> {
        let cfg = &model.config;
        let talker = TalkerWeights::load(&gpu, cfg, &model.weights)?;
        let cp = CodePredictorWeights::load(&gpu, cfg, &model.weights)?;
        let limits = PlanLimits {
            max_rows: opts.max_rows_per_tick.max(opts.max_sessions),
            max_sessions: opts.max_sessions,
            max_positions: opts.max_positions,
            kv_cache: opts.kv_cache,
        };
        let ids = CodecIds { eos: cfg.talker_config.codec_eos_token_id, min_new_tokens: 2 };
        // One decoder slot more than sessions: the spare takes the steps of ended utterances.
        let decoder = CodecDecoder::new(
            &gpu,
            &model.speech_config,
            &model.speech_weights,
            opts.max_sessions + 1,
            opts.max_positions,
        )?;
        let kernels = KernelChoice::new(&gpu, &opts.tuning);
        let mut plan =
            TickPlan::new(&gpu, kernels, &talker, &cp, &decoder, ids, limits, opts.inject_grid_fault)?;
        let (seams, redirect) = {
            let env = plan.env(&gpu);
            let b = &plan.bufs;
            Seams::new(&gpu, &env, &decoder, opts.max_sessions, ids.eos, &b.decoder_sessions, &b.codes)?
        };
        plan.dispatches.insert(plan.stages.code_predictor, redirect);
        let reference = ReferencePlan::new(&gpu, &plan.kernels, &talker, &cp, &decoder, limits.max_rows)?;
        gpu.take_error()?;
        let profiler =
            if opts.profile { profile::Profiler::new(&gpu, &plan, opts.profile_dispatches) } else { None };
        let (pipeline, max_sessions) = (opts.tuning.pipeline, opts.max_sessions);
        Ok(Engine {
            gpu,
            model,
            opts,
            plan,
            talker,
            _code_predictor: cp,
            decoder,
            seams,
            reference,
            talker_probe: None,
            profiling: profiler.is_some(),
            profiler,
            last_profile: None,
            pipeline,
            in_flight: None,
            last_gpu_wait: std::time::Duration::ZERO,
            last_launch_cpu: std::time::Duration::ZERO,
            next_readback: 0,
            grid_give_ups: 0,
            sessions: BTreeMap::new(),
            forced: BTreeMap::new(),
            free_slots: (0..max_sessions as u32).rev().collect(),
            next_id: 1,
        })
    }

    pub fn model(&self) -> &ModelDir {
        &self.model
    }

    pub fn gpu(&self) -> &GpuContext {
        &self.gpu
    }

    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// The dispatches a tick of `counts` records (the tick plan's, then the decoder's RoPE shift
    /// that ticks at a period's end add), then the reference plan's
    /// (embedding of reference frames, priming a decoder slot): one line each, described by
    /// [`GpuContext::describe_dispatches`] (tools; needs [`GpuContext::keep_resource_names`]
    /// before the engine is built).
    pub fn describe_dispatches(&self, counts: &crate::gpu::RowCounts) -> Vec<String> {
        let mut lines: Vec<String> = self.gpu.describe_dispatches(&self.plan.dispatches, counts);
        let shift = self.gpu.describe_dispatches(&self.seams.shift, counts);
        lines.extend(shift.into_iter().map(|l| format!("seams.shift: {l}")));
        lines.extend(self.reference.describe(&self.gpu, counts));
        lines
    }

    /// Bytes of GPU memory held by the talker's KV cache.
    pub fn kv_cache_bytes(&self) -> u64 {
        self.plan.talker.kv.bytes()
    }

    /// Bytes of GPU memory held by the codec decoder's per-session streaming state.
    pub fn decoder_state_bytes(&self) -> u64 {
        self.decoder.state_bytes()
    }

    pub fn live_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Teacher forcing (fidelity checks against another implementation): frame `f` of the
    /// session takes `codes[f]` instead of what its sampler chooses — the talker's next input,
    /// the code predictor's inputs, the repetition-penalty history and the frame's output all
    /// follow the given codes, while the logits (`capture_logits`) are still the model's own.
    /// Frames past the end of `codes` are sampled as usual.
    pub fn force_codes(&mut self, id: SessionId, codes: Vec<[u16; 16]>) -> Result<()> {
        if !self.sessions.contains_key(&id) {
            return Err(EngineError::UnknownSession(id));
        }
        self.forced.insert(id, codes);
        Ok(())
    }

    /// Ends a session now and frees its slot. Unknown ids are ignored.
    pub fn cancel(&mut self, id: SessionId) -> bool {
        self.forced.remove(&id);
        match self.sessions.remove(&id) {
            Some(s) => {
                self.free_slots.push(s.slot);
                true
            }
            None => false,
        }
    }

    /// Advances every session that has input by one frame, in one batched GPU pass.
    pub fn step(&mut self) -> Result<Vec<StepOutput>> {
        tick::run(self, TickScope::All)
    }

    /// [`Engine::step`], with the next tick taking only the sessions `scope` names (a tick
    /// already in flight is read as it was submitted).
    pub fn step_scoped(&mut self, scope: TickScope) -> Result<Vec<StepOutput>> {
        tick::run(self, scope)
    }

    /// Sessions whose next tick would feed their prompt: what a [`TickScope::Prompts`] tick
    /// takes.
    pub fn prompts_waiting(&self) -> usize {
        self.sessions.values().filter(|s| !s.prefilled && s.is_ready() && s.idle_finish().is_none()).count()
    }

    /// GPU time per part of the last tick (with `EngineOptions::profile` on an adapter that
    /// has timestamp queries inside passes).
    pub fn last_tick_profile(&self) -> Option<TickProfile> {
        self.last_profile.clone()
    }

    /// Switches GPU timing of ticks on or off (it needs `EngineOptions::profile` and an adapter
    /// with timestamps in passes); timed ticks are not pipelined. Returns whether timing is on.
    pub fn set_profiling(&mut self, on: bool) -> bool {
        self.profiling = on && self.profiler.is_some();
        self.profiling
    }

    /// Switches tick pipelining on or off (on unless `tuning.pipeline` is false).
    pub fn set_pipelining(&mut self, on: bool) {
        self.pipeline = on;
    }

    fn active_profiler(&self) -> Option<&profile::Profiler> {
        self.profiler.as_ref().filter(|_| self.profiling)
    }

    /// Whether the next step overlaps CPU encoding with the GPU (see `tick::run`).
    fn pipelined(&self) -> bool {
        self.pipeline && !self.profiling && !self.opts.capture_logits
    }

    /// Whether a submitted tick is still to be read (pipelined: the next step reads it).
    pub fn tick_in_flight(&self) -> bool {
        self.in_flight.is_some()
    }

    /// How long the last step waited for the GPU to finish the tick it read: near zero means
    /// the GPU had finished before the step asked, so it may have sat idle.
    pub fn last_gpu_wait(&self) -> std::time::Duration {
        self.last_gpu_wait
    }

    /// CPU time the tick the last step read took to launch: choosing its sessions, building
    /// their rows, uploading them, encoding the pass and submitting it. For a session's first
    /// tick this is on its time to first audio, before the GPU starts.
    pub fn last_launch_cpu(&self) -> std::time::Duration {
        self.last_launch_cpu
    }

    /// True when some session could produce a frame now (or has finished while idle), or a
    /// tick is still in flight.
    pub fn has_work(&self) -> bool {
        self.in_flight.is_some() || self.sessions.values().any(|s| s.is_ready() || s.idle_finish().is_some())
    }
}
