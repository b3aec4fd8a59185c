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

/// The decoder's weights, per-slot streaming state and one-frame step buffers (with the PCM
/// output), resident on the GPU.
pub struct CodecDecoder {
    shape: DecoderShape,
    weights: DecoderWeights,
    state: StreamState,
    rope: RopeTables,
    plan: FramePlan,
    options: DecoderOptions,
}

impl CodecDecoder {
    /// A decoder for the engine's tick: one frame per session per step.
    pub fn new(
        ctx: &GpuContext,
        cfg: &SpeechTokenizerConfig,
        weights: &WeightFile,
        max_sessions: usize,
        max_frames: usize,
    ) -> Result<Self> {
        let options = DecoderOptions { max_sessions, max_frames, max_frames_per_step: 1 };
        Self::with_options(ctx, cfg, weights, options)
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
        Ok(CodecDecoder { shape, weights, state, rope, plan, options })
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

    /// Clears `slot`'s state so that a new session starts there (queue writes, applied before
    /// the next submit). Slots past `max_sessions` are ignored.
    pub fn reset_slot(&self, queue: &wgpu::Queue, slot: u32) {
        if slot as usize >= self.options.max_sessions {
            tracing::warn!(slot, max = self.options.max_sessions, "reset of a decoder slot out of range");
            return;
        }
        self.state.reset_slot(queue, slot);
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
