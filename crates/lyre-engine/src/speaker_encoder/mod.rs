//! The Base models' speaker encoder (ECAPA-TDNN): 24 kHz audio → log-mel → x-vector of talker
//! width, which takes the speaker position of the prompt.

use crate::checkpoint::ModelDir;
use crate::error::{EngineError, Result};

/// The ECAPA-TDNN weights of a Base checkpoint (`speaker_encoder.*` in `model.safetensors`).
pub struct SpeakerEncoder {
    _private: (),
}

impl SpeakerEncoder {
    /// Fails for checkpoints without a speaker encoder (CustomVoice, VoiceDesign).
    pub fn load(model: &ModelDir) -> Result<Self> {
        let _ = model;
        Err(EngineError::ReferenceAudio("the speaker encoder is not built yet".into()))
    }

    /// The x-vector (`enc_dim` values) of 24 kHz mono audio.
    pub fn embed(&self, wav_24k: &[f32]) -> Result<Vec<f32>> {
        let _ = wav_24k;
        Err(EngineError::ReferenceAudio("the speaker encoder is not built yet".into()))
    }
}
