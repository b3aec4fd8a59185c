//! The speech tokenizer's encoder (Mimi, first 16 of 32 quantizers): 24 kHz audio → codec
//! frames, the reference codes of in-context (ICL) voice cloning.

use crate::checkpoint::ModelDir;
use crate::error::{EngineError, Result};

/// The Mimi encoder weights (`encoder.*` in `speech_tokenizer/model.safetensors`).
pub struct SpeechEncoder {
    _private: (),
}

impl SpeechEncoder {
    pub fn load(model: &ModelDir) -> Result<Self> {
        let _ = model;
        Err(EngineError::ReferenceAudio("the speech encoder is not built yet".into()))
    }

    /// `ceil(len / 1920)` frames of 16 codes each.
    pub fn encode(&self, wav_24k: &[f32]) -> Result<Vec<[u16; 16]>> {
        let _ = wav_24k;
        Err(EngineError::ReferenceAudio("the speech encoder is not built yet".into()))
    }
}
