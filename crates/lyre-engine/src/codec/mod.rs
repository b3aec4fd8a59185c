//! The speech-tokenizer decoder on the GPU: codec frames (16 codes each) → 24 kHz audio,
//! streaming one frame per session per tick with exact causal state, batched over sessions.
//!
//! [`CodecDecoder`] lives inside the engine: its [`CodecDecoder::build_frame`] records the
//! dispatches of one decoder step over the tick's `codes` and `sessions` buffers, which the
//! engine replays every tick. [`StandaloneDecoder`] owns its own input buffers and runs steps
//! on its own (tools, tests, benches). See [`state`] for how the streaming state is kept.

mod plan;
mod shape;
mod standalone;
pub mod state;
mod weights;

use std::path::Path;

pub use plan::{FramePlan, StageTap};
pub use shape::DecoderShape;
pub use standalone::{ClipCapture, StageOutput, StandaloneDecoder};

use crate::checkpoint::config::SpeechTokenizerConfig;
use crate::checkpoint::weights::WeightFile;
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, GpuContext};
use crate::kernels::attention::{shift_table, RopeShift};
use crate::kernels::Env;
use crate::model::rope::RopeTables;
use plan::StepInputs;
use state::{Capacity, StreamState};
use weights::DecoderWeights;

/// What a decoder is sized for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderOptions {
    /// Sessions decoded together in one step; also the number of state slots.
    pub max_sessions: usize,
    /// Longest clip in frames: frame indices (RoPE positions) must stay below it.
    pub max_frames: usize,
    /// Most frames one session decodes in one step (1 for the engine's tick; more for
    /// whole-clip decoding, which needs fewer, larger dispatches).
    pub max_frames_per_step: usize,
}

impl DecoderOptions {
    fn validate(&self) -> Result<()> {
        for (field, v) in [
            ("max_sessions", self.max_sessions),
            ("max_frames", self.max_frames),
            ("max_frames_per_step", self.max_frames_per_step),
        ] {
            if v == 0 || v > u32::MAX as usize / 4096 {
                return Err(EngineError::invalid(field, format!("must be in 1..=1048575, got {v}")));
            }
        }
        Ok(())
    }
}

/// How the engine's decoder keeps an endless stream's RoPE positions inside its table: frame
/// `f` sits at position `f - period * wraps(f)`, where `wraps(f)` is 0 below `table` and then
/// grows by one every `period` frames; `period` is a multiple of the sliding-window KV ring's
/// length, so a frame keeps its ring row. Each time a slot's frames enter a new period its
/// cached keys are rotated back by `period` positions ([`CodecDecoder::build_rope_shift`]), so
/// every attention score equals the one at the unwrapped positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RopeWrap {
    /// Positions in the RoPE table; frames below it never wrap.
    pub table: u32,
    pub period: u32,
}

impl RopeWrap {
    /// The wrap for a table of at least `frames` positions and a KV ring of `ring` rows.
    fn new(frames: usize, ring: usize) -> Self {
        let table = frames.max(2 * ring);
        let period = ring * ((table - ring) / ring);
        RopeWrap { table: table as u32, period: period as u32 }
    }

    /// The position of frame `frame`.
    pub fn position(&self, frame: u32) -> u32 {
        frame - self.period * self.wraps(frame)
    }

    /// How many periods frame `frame` has moved back.
    pub fn wraps(&self, frame: u32) -> u32 {
        if frame < self.table {
            0
        } else {
            (frame - self.table) / self.period + 1
        }
    }

    /// Whether `frame` is the first of a period (its step must rotate the slot's keys first).
    pub fn starts_period(&self, frame: u32) -> bool {
        frame >= self.table && (frame - self.table).is_multiple_of(self.period)
    }
}

/// The decoder's weights, per-slot streaming state and one-frame step buffers (with the PCM
/// output), resident on the GPU.
pub struct CodecDecoder {
    shape: DecoderShape,
    weights: DecoderWeights,
    state: StreamState,
    rope: RopeTables,
    plan: FramePlan,
    options: DecoderOptions,
    /// Set for the engine's decoder, whose streams have no length limit.
    wrap: Option<RopeWrap>,
}

impl CodecDecoder {
    /// A decoder for the engine's tick: one frame per session per step, for streams of any
    /// length: frames past a RoPE table of at least `max_frames` positions wrap ([`RopeWrap`]).
    pub fn new(
        ctx: &GpuContext,
        cfg: &SpeechTokenizerConfig,
        weights: &WeightFile,
        max_sessions: usize,
        max_frames: usize,
    ) -> Result<Self> {
        // With one frame per step, the KV ring holds exactly the window.
        let wrap = RopeWrap::new(max_frames, cfg.decoder_config.sliding_window.max(1));
        let options =
            DecoderOptions { max_sessions, max_frames: wrap.table as usize, max_frames_per_step: 1 };
        let mut decoder = Self::with_options(ctx, cfg, weights, options)?;
        debug_assert_eq!(wrap.period % decoder.state.kv.len, 0, "a frame keeps its KV ring row");
        decoder.wrap = Some(wrap);
        Ok(decoder)
    }

    /// A decoder whose state also serves steps of up to `options.max_frames_per_step` frames
    /// (see [`CodecDecoder::new_plan`]).
    pub fn with_options(
        ctx: &GpuContext,
        cfg: &SpeechTokenizerConfig,
        file: &WeightFile,
        options: DecoderOptions,
    ) -> Result<Self> {
        options.validate()?;
        let config_path = file.path().with_file_name("config.json");
        let shape = DecoderShape::new(cfg, Path::new(&config_path))?;
        let weights = DecoderWeights::load(ctx, file, &shape)?;
        let capacity = Capacity { slots: options.max_sessions, max_chunk: options.max_frames_per_step };
        let state = StreamState::new(ctx, &shape, &weights, capacity)?;
        let hd = shape.heads.head_dim as usize;
        let rope = RopeTables::new(ctx, "decoder.rope", options.max_frames, hd, shape.rope_theta)?;
        let plan = FramePlan::new(ctx, &shape, options.max_sessions, 1)?;
        tracing::info!(
            state_mib = state.bytes() >> 20,
            max_sessions = options.max_sessions,
            "codec decoder ready"
        );
        Ok(CodecDecoder { shape, weights, state, rope, plan, options, wrap: None })
    }

    /// How positions wrap on an endless stream (the engine's decoder), if they do.
    pub fn rope_wrap(&self) -> Option<RopeWrap> {
        self.wrap
    }

    /// For a wrapping decoder: one dispatch per layer that, for each session of the step just
    /// decoded (`sessions`, as for [`CodecDecoder::build_frame`]) whose next frame begins a
    /// period its slot has not entered yet, rotates the slot's cached keys back by the period;
    /// `applied[slot]` (u32, zeroed with the slot) counts the periods. Sessions in `skip_slot`
    /// are left alone. Record them after the step's own dispatches, on steps where some frame
    /// `f` has [`RopeWrap::starts_period`]`(f + 1)`.
    pub fn build_rope_shift(
        &self,
        ctx: &GpuContext,
        env: &Env,
        sessions: &wgpu::Buffer,
        applied: &wgpu::Buffer,
        skip_slot: u32,
    ) -> Result<(Vec<Dispatch>, wgpu::Buffer)> {
        let wrap =
            self.wrap.ok_or_else(|| EngineError::invalid("rope_wrap", "this decoder does not wrap"))?;
        let s = &self.shape;
        let table = shift_table(wrap.period, s.heads.head_dim as usize, s.rope_theta);
        let shift = ctx.storage_from("decoder.rope_shift", &table)?;
        let last = s.layers - 1;
        let dispatches = (0..s.layers)
            .map(|l| {
                RopeShift {
                    label: "decoder.rope_shift",
                    heads: s.heads,
                    len: self.state.kv.len,
                    table: wrap.table,
                    period: wrap.period,
                    dump_slot: skip_slot,
                    commit: l == last,
                    shift: &shift,
                    keys: &self.state.kv.k[l],
                    applied,
                    sessions,
                }
                .build(env)
            })
            .collect();
        Ok((dispatches, shift))
    }

    /// Output samples per frame (1920 at 24 kHz).
    pub fn samples_per_frame(&self) -> usize {
        self.shape.samples_per_frame()
    }

    pub fn options(&self) -> DecoderOptions {
        self.options
    }

    pub fn shape(&self) -> &DecoderShape {
        &self.shape
    }

    /// Dispatches that decode ONE frame for each of the tick's sessions (grids sized by
    /// `RowCount::Sessions`). Session `i` reads `codes[i*16..i*16+16]` (u32, clamped to the
    /// codebook) and `sessions[i]` (a `SessionDesc`: `slot` = its state slot, distinct within a
    /// tick and below `max_sessions`; `gen_index` = the frame's index, below `max_frames`, one
    /// more than the slot's previous frame, 0 after [`CodecDecoder::reset_slot`]). It updates
    /// the slot's state and writes `pcm[i*1920..(i+1)*1920]`, clamped to [-1, 1].
    pub fn build_frame(
        &self,
        env: &Env,
        codes: &wgpu::Buffer,
        sessions: &wgpu::Buffer,
    ) -> Result<Vec<Dispatch>> {
        self.build_plan(&self.plan, env, codes, sessions)
    }

    /// `[session][samples_per_frame]` f32, written by [`CodecDecoder::build_frame`]'s dispatches.
    pub fn pcm(&self) -> &wgpu::Buffer {
        &self.plan.pcm
    }

    /// Clears `slot`'s state so that a new session starts there (clears recorded into
    /// `encoder`, to run before the decoder's next dispatches). Slots past `max_sessions` are
    /// ignored.
    pub fn reset_slot(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        if slot as usize >= self.options.max_sessions {
            tracing::warn!(slot, max = self.options.max_sessions, "reset of a decoder slot out of range");
            return;
        }
        self.state.reset_slot(encoder, slot);
    }

    /// Step buffers for `frames` frames per session (at most `max_frames_per_step`), sharing
    /// this decoder's weights and state.
    pub fn new_plan(&self, ctx: &GpuContext, frames: usize) -> Result<FramePlan> {
        if frames == 0 || frames > self.options.max_frames_per_step {
            return Err(EngineError::invalid(
                "frames_per_step",
                format!("must be in 1..={}, got {frames}", self.options.max_frames_per_step),
            ));
        }
        FramePlan::new(ctx, &self.shape, self.options.max_sessions, frames)
    }

    /// The dispatches of one step of `plan`: `codes` is `[session][plan.frames][16]` u32 and
    /// session `i` decodes frames `gen_index..gen_index + plan.frames`.
    pub fn build_plan(
        &self,
        plan: &FramePlan,
        env: &Env,
        codes: &wgpu::Buffer,
        sessions: &wgpu::Buffer,
    ) -> Result<Vec<Dispatch>> {
        let inputs = StepInputs {
            env,
            shape: &self.shape,
            weights: &self.weights,
            state: &self.state,
            rope: &self.rope,
            rope_period: self.wrap.map_or(0, |w| w.period),
            codes,
            sessions,
        };
        plan.build(&inputs)
    }

    /// Every stage's output buffer in `plan` (debug capture; see [`StandaloneDecoder`]).
    pub fn stage_taps<'a>(&'a self, plan: &'a FramePlan) -> Vec<StageTap<'a>> {
        plan.taps(&self.shape, &self.state)
    }

    /// Bytes of streaming state on the GPU.
    pub fn state_bytes(&self) -> u64 {
        self.state.bytes()
    }
}
