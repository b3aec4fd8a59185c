//! Lyre's engine: Qwen3-TTS 12 Hz inference on wgpu.
//!
//! A synchronous library. [`checkpoint::ModelDir`] opens and validates a checkpoint directory,
//! [`gpu::GpuContext`] owns the wgpu device, and [`Engine`] runs many speaking sessions
//! together, one 80 ms codec frame per session per [`Engine::step`].

pub mod audio_input;
pub mod checkpoint;
pub mod codec;
pub mod engine;
pub mod error;
pub mod text_stream;

pub use error::{EngineError, Result};
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod policy;
pub mod prompt;
pub mod sampling;
pub mod segment;
pub mod speaker_encoder;
pub mod speech_encoder;
pub mod tuning;

pub use engine::{
    plan_segments, prompt_overhead, Engine, EngineOptions, FinishReason, Frame, FrameLogits, KvFormat,
    SegmentLimits, SessionId, SessionRequest, StepOutput, TextInput, TickProfile, TickScope,
};
pub use tuning::EngineTuning;
