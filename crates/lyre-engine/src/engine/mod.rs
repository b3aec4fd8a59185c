//! The engine: many sessions, one batched GPU pass per frame.

mod cp_plan;
mod probe;
mod profile;
mod reference;
mod session;
mod tick;
mod tick_plan;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use probe::CodePredictorProbe;
pub use profile::TickProfile;
pub use session::{FinishReason, SessionId};
pub use tick_plan::PlanLimits;

use crate::checkpoint::ModelDir;
use crate::codec::CodecDecoder;
use crate::error::{EngineError, Result};
use crate::gpu::GpuContext;
pub use crate::kernels::qk_norm_rope::KvFormat;
use crate::model::code_predictor::CodePredictorWeights;
use crate::model::talker::TalkerWeights;
use crate::prompt::{
    icl_rows, prefix_rows, text_rows, CodecPart, PromptRow, PromptSpec, TextMode, VoiceSpec,
};
use crate::sampling::SamplingParams;
use reference::ReferencePlan;
use session::{IclPrompt, Session};
use tick_plan::{CodecIds, TickPlan};

/// Engine-wide sizes.
#[derive(Debug, Clone, Copy)]
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
    /// Also read back the raw talker and code-predictor logits every tick (tests, debugging).
    pub capture_logits: bool,
    /// Time each part of every tick on the GPU (benchmarks), where the adapter can.
    pub profile: bool,
    /// With `profile`: time every dispatch (slower; finds the expensive kernels).
    pub profile_dispatches: bool,
    /// Fault injection (tests): the persistent layers wait for one workgroup more than they
    /// launch, so their barriers give up, as on a GPU that cannot run the whole grid at once.
    pub inject_grid_fault: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_sessions: 16,
            max_positions: 4096,
            kv_cache: KvFormat::F32,
            max_rows_per_tick: 512,
            capture_logits: false,
            profile: false,
            profile_dispatches: false,
            inject_grid_fault: false,
        }
    }
}

/// How the text arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextInput {
    Whole(String),
    /// Pieces follow through [`Engine::append_text`], then [`Engine::end_text`].
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
    pub sampling: SamplingParams,
    /// At most this many frames are emitted.
    pub max_frames: u32,
}

/// One 80 ms codec frame: 16 codes and their audio.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// 0 for the session's first frame.
    pub index: u32,
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

/// What one step did for one session.
#[derive(Debug, Clone)]
pub struct StepOutput {
    pub id: SessionId,
    pub frame: Option<Frame>,
    pub finished: Option<FinishReason>,
    pub logits: Option<FrameLogits>,
}

pub struct Engine {
    gpu: Arc<GpuContext>,
    model: Arc<ModelDir>,
    opts: EngineOptions,
    plan: TickPlan,
    talker: TalkerWeights,
    _code_predictor: CodePredictorWeights,
    decoder: CodecDecoder,
    reference: ReferencePlan,
    talker_probe: Option<probe::TalkerProbe>,
    profiler: Option<profile::Profiler>,
    /// Whether ticks are timed now (the profiler exists and is switched on).
    profiling: bool,
    last_profile: Option<TickProfile>,
    /// Submit the next tick before reading the current one (off: `LYRE_PIPELINE=0`).
    pipeline: bool,
    in_flight: Option<tick::InFlight>,
    next_readback: usize,
    /// Grid barrier waits that gave up, as of the last tick read.
    grid_give_ups: u32,
    sessions: BTreeMap<SessionId, Session>,
    /// Teacher-forced codes per session, frame by frame ([`Engine::force_codes`]).
    forced: BTreeMap<SessionId, Vec<[u16; 16]>>,
    free_slots: Vec<u32>,
    next_id: SessionId,
    role_ids: [u32; 3],
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
        let decoder = CodecDecoder::new(
            &gpu,
            &model.speech_config,
            &model.speech_weights,
            opts.max_sessions,
            opts.max_positions,
        )?;
        let plan = TickPlan::new(&gpu, &talker, &cp, &decoder, ids, limits, opts.inject_grid_fault)?;
        let reference = ReferencePlan::new(&gpu, &talker, &cp, &decoder, limits.max_rows)?;
        let role = model.tokenizer.assistant_text_ids("")?;
        let role_ids = [role[0], role[1], role[2]];
        gpu.take_error()?;
        let profiler =
            if opts.profile { profile::Profiler::new(&gpu, &plan, opts.profile_dispatches) } else { None };
        Ok(Engine {
            gpu,
            model,
            opts,
            plan,
            talker,
            _code_predictor: cp,
            decoder,
            reference,
            talker_probe: None,
            profiling: profiler.is_some(),
            profiler,
            last_profile: None,
            pipeline: !matches!(std::env::var("LYRE_PIPELINE").as_deref(), Ok("0" | "off" | "false")),
            in_flight: None,
            next_readback: 0,
            grid_give_ups: 0,
            sessions: BTreeMap::new(),
            forced: BTreeMap::new(),
            free_slots: (0..opts.max_sessions as u32).rev().collect(),
            next_id: 1,
            role_ids,
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

    /// Bytes of GPU memory held by the talker's KV cache.
    pub fn kv_cache_bytes(&self) -> u64 {
        self.plan.talker_kv.bytes()
    }

    /// Bytes of GPU memory held by the codec decoder's per-session streaming state.
    pub fn decoder_state_bytes(&self) -> u64 {
        self.decoder.state_bytes()
    }

    pub fn live_sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Validates the request, reserves a KV-cache slot and queues the prompt.
    pub fn start(&mut self, req: SessionRequest) -> Result<SessionId> {
        req.sampling.validate()?;
        if req.max_frames == 0 {
            return Err(EngineError::invalid("max_frames", "must be at least 1"));
        }
        let prefix = self.prefix_for(&req)?;
        let text_ids = match &req.text {
            TextInput::Whole(text) => Some(self.text_ids(text)?),
            TextInput::Streamed => None,
        };
        let icl = self.icl_for(&req.voice)?;
        let prompt_rows = prefix.len()
            + match (&icl, &text_ids, req.mode) {
                (Some((ref_ids, p)), Some(ids), mode) => {
                    let all: Vec<u32> = ref_ids.iter().chain(ids).copied().collect();
                    icl_rows(&self.model.config, mode, &all, &p.codec).0.len()
                }
                (Some((_, p)), None, _) => p.codec.len(),
                (None, Some(ids), TextMode::NonStreaming) => ids.len() + 2,
                _ => 1,
            };
        self.check_prompt_fits(prompt_rows)?;
        let slot = self.free_slots.pop().ok_or_else(|| {
            EngineError::Capacity(format!("all {} session slots are in use", self.opts.max_sessions))
        })?;
        let id = self.next_id;
        self.next_id += 1;
        let mut s = Session::new(id, slot, req.mode, prefix, req.sampling, req.max_frames);
        if let Some((ref_ids, icl)) = icl {
            s.set_icl(ref_ids, icl);
        }
        match text_ids {
            Some(ids) => s.set_text(ids),
            None => s.start_stream(),
        }
        self.sessions.insert(id, s);
        Ok(id)
    }

    /// The prompt rows of a whole-text request and the text tokens its frames read afterwards
    /// (after those, every frame reads `tts_pad`).
    pub fn prompt_for(&self, req: &SessionRequest) -> Result<(Vec<PromptRow>, Vec<u32>)> {
        let TextInput::Whole(text) = &req.text else {
            return Err(EngineError::invalid("text", "prompt_for needs the whole text"));
        };
        let mut rows = self.prefix_for(req)?;
        let ids = self.text_ids(text)?;
        let (text_rows, trailing) = match self.icl_for(&req.voice)? {
            Some((ref_ids, icl)) => {
                let all: Vec<u32> = ref_ids.into_iter().chain(ids).collect();
                icl_rows(&self.model.config, req.mode, &all, &icl.codec)
            }
            None => text_rows(&self.model.config, req.mode, &ids)?,
        };
        rows.extend(text_rows);
        Ok((rows, trailing))
    }

    /// For an ICL voice: the reference transcript's ids (`ref_ids[3:-2]`) and the codec rows
    /// (`codec_emb(bos)` and one summed embedding per reference frame, from the GPU).
    fn icl_for(&self, voice: &VoiceSpec) -> Result<Option<(Vec<u32>, IclPrompt)>> {
        let Some(r) = voice.reference() else { return Ok(None) };
        if r.text.trim().is_empty() {
            return Err(EngineError::invalid(
                "ref_text",
                "is empty; leave it out for an x-vector-only clone",
            ));
        }
        if r.codes.is_empty() {
            return Err(EngineError::invalid("ref_audio", "the reference has no codec frames"));
        }
        let limit = self.reference.max_frames.min(self.plan.limits.max_rows) - 1;
        if r.codes.len() > limit {
            return Err(EngineError::invalid(
                "ref_audio",
                format!("the reference has {} frames; this engine takes at most {limit}", r.codes.len()),
            ));
        }
        let codebook = self.model.speech_config.decoder_config.codebook_size;
        if r.codes.iter().flatten().any(|&c| c as usize >= codebook) {
            return Err(EngineError::invalid("ref_codes", format!("codes must be below {codebook}")));
        }
        let ids = self.model.tokenizer.ref_text_ids(&r.text)?;
        let ref_ids = ids[3..ids.len().saturating_sub(2).max(3)].to_vec();
        let sums = self.reference.embed_frames(&self.gpu, &r.codes)?;
        let bos = CodecPart::Id(self.model.config.talker_config.codec_bos_id);
        let codec = std::iter::once(bos).chain(sums.into_iter().map(CodecPart::Vector)).collect();
        let frames = r.codes.len() as u32;
        Ok(Some((ref_ids, IclPrompt { codec, codes: Some(r.codes.clone()), frames })))
    }

    fn prefix_for(&self, req: &SessionRequest) -> Result<Vec<PromptRow>> {
        let instruct_ids = match req.instruct.as_deref() {
            Some(s) if !s.trim().is_empty() => Some(self.model.tokenizer.instruct_ids(s)?),
            _ => None,
        };
        let spec =
            PromptSpec { voice: &req.voice, language: &req.language, instruct_ids: instruct_ids.as_deref() };
        prefix_rows(&self.model.config, &spec, &self.role_ids)
    }

    /// The ids of `text` inside the assistant turn of the chat template.
    fn text_ids(&self, text: &str) -> Result<Vec<u32>> {
        if text.trim().is_empty() {
            return Err(EngineError::invalid("text", "is empty"));
        }
        let ids = self.model.tokenizer.assistant_text_ids(text)?;
        Ok(ids[3..ids.len() - 5].to_vec())
    }

    fn check_prompt_fits(&self, rows: usize) -> Result<()> {
        let limit = self.plan.limits.max_rows.min(self.opts.max_positions.saturating_sub(1));
        if rows > limit {
            return Err(EngineError::invalid(
                "text",
                format!("the prompt needs {rows} positions, more than the {limit} one tick can take"),
            ));
        }
        Ok(())
    }

    /// More text for a session started with [`TextInput::Streamed`].
    pub fn append_text(&mut self, id: SessionId, text: &str) -> Result<()> {
        let s = self.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        s.append_text(&self.model.tokenizer, text)?;
        if let Some(n) = s.prompt_len() {
            let limit = self.plan.limits.max_rows.min(self.opts.max_positions.saturating_sub(1));
            if n > limit {
                return Err(EngineError::invalid(
                    "text",
                    format!("the prompt needs {n} positions (limit {limit})"),
                ));
            }
        }
        Ok(())
    }

    /// No more text will come for this session.
    pub fn end_text(&mut self, id: SessionId) -> Result<()> {
        let s = self.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        s.end_text(&self.model.tokenizer)
    }

    /// Text tokens the session has received so far (`None` for an unknown session).
    pub fn text_tokens(&self, id: SessionId) -> Option<usize> {
        self.sessions.get(&id).map(|s| s.text_tokens)
    }

    /// Lowers a session's frame limit (never raises it); for caps known only once text ends.
    pub fn cap_frames(&mut self, id: SessionId, max_frames: u32) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.max_frames = s.max_frames.min(max_frames.max(1));
        }
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
        tick::run(self)
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

    /// Switches tick pipelining on or off (on by default unless `LYRE_PIPELINE=0`).
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

    /// True when some session could produce a frame now, or a tick is still in flight.
    pub fn has_work(&self) -> bool {
        self.in_flight.is_some() || self.sessions.values().any(|s| s.is_ready() || s.text_is_empty())
    }
}
