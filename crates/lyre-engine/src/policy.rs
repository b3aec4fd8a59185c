//! What each model type accepts, as the official wrapper's entry points define it. The engine
//! itself runs any prompt (the fixtures include instruct on a 0.6B CustomVoice model, made by
//! calling the model directly); front ends check requests here first.

use crate::checkpoint::config::{GenerationConfig, ModelConfig, ModelType};
use crate::error::{EngineError, Result};
use crate::prompt::VoiceSpec;

/// Rejects a voice/instruct combination the model does not support, naming the field.
pub fn check_voice_and_instruct(cfg: &ModelConfig, voice: &VoiceSpec, instruct: Option<&str>) -> Result<()> {
    let has_instruct = instruct.is_some_and(|s| !s.trim().is_empty());
    match cfg.tts_model_type {
        ModelType::CustomVoice => {
            if !matches!(voice, VoiceSpec::Speaker(_)) {
                return Err(EngineError::invalid("voice", "a CustomVoice model needs a preset speaker name"));
            }
            if has_instruct && cfg.tts_model_size == "0b6" {
                return Err(EngineError::invalid(
                    "instruct",
                    "the 0.6B CustomVoice model does not follow instructions (the official wrapper \
                     silently drops them); use a 1.7B CustomVoice or VoiceDesign model",
                ));
            }
        }
        ModelType::VoiceDesign => {
            if !matches!(voice, VoiceSpec::None) {
                return Err(EngineError::invalid(
                    "voice",
                    "a VoiceDesign model takes no speaker; describe the voice in `instruct`",
                ));
            }
            if !has_instruct {
                return Err(EngineError::invalid(
                    "instruct",
                    "a VoiceDesign model needs a voice description",
                ));
            }
        }
        ModelType::Base => {
            if voice.x_vector().is_none() {
                return Err(EngineError::invalid(
                    "voice",
                    "a Base model clones a voice: give reference audio",
                ));
            }
            if has_instruct {
                return Err(EngineError::invalid("instruct", "Base models do not take instructions"));
            }
        }
    }
    Ok(())
}

/// Frames per second of audio (12.5 Hz codec).
pub const FRAMES_PER_SECOND: f64 = 12.5;

/// The frame limit when a request gives none: 5 s plus 1 s per text token (generous for speech,
/// which runs at about 3 tokens per second), never above the checkpoint's `max_new_tokens - 1`.
/// A model that never emits EOS cannot run on for ever.
pub fn default_max_frames(text_tokens: usize, generation: &GenerationConfig) -> u32 {
    frames_for_tokens(text_tokens, generation.max_new_tokens)
}

/// [`default_max_frames`] for a checkpoint whose `max_new_tokens` is given. The engine applies
/// it to each segment of a long text, so the limit holds per segment.
pub fn frames_for_tokens(text_tokens: usize, max_new_tokens: u32) -> u32 {
    let by_text = ((5.0 + text_tokens as f64) * FRAMES_PER_SECOND).ceil() as u32;
    by_text.min(max_new_tokens.saturating_sub(1).max(1))
}
