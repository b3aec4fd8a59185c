//! Reference audio for voice cloning: an uploaded WAV, FLAC, MP3 or Ogg Vorbis file decoded to
//! mono f32 ([`decode`]) and resampled to the 24 kHz that the speaker and speech encoders need
//! ([`resample`]), giving the samples the official `qwen-tts` loader gives for the same file.

mod decode;
mod resample;

pub use decode::{decode, DecodedAudio};
pub use resample::resample;

use crate::error::{EngineError, Result};

/// The sample rate both encoders run at.
pub const ENCODER_SAMPLE_RATE: u32 = 24_000;
/// Shorter clips carry too little of a voice to clone.
pub const MIN_REFERENCE_SECONDS: f32 = 0.5;
/// Longer clips are refused: the reference becomes part of every prompt that uses it.
pub const MAX_REFERENCE_SECONDS: f32 = 60.0;

/// `decode` + `resample` to 24 kHz + the length limits: what every caller wants.
pub fn load_reference(bytes: &[u8]) -> Result<Vec<f32>> {
    let audio = decode(bytes)?;
    let wav = resample(&audio, ENCODER_SAMPLE_RATE)?;
    check_length(wav.len())?;
    Ok(wav)
}

/// Refuses clips outside [`MIN_REFERENCE_SECONDS`, `MAX_REFERENCE_SECONDS`].
pub fn check_length(samples_24k: usize) -> Result<()> {
    let seconds = samples_24k as f32 / ENCODER_SAMPLE_RATE as f32;
    if seconds < MIN_REFERENCE_SECONDS {
        return Err(EngineError::ReferenceAudio(format!(
            "the clip is {seconds:.2} s long; at least {MIN_REFERENCE_SECONDS} s is needed"
        )));
    }
    if seconds > MAX_REFERENCE_SECONDS {
        return Err(EngineError::ReferenceAudio(format!(
            "the clip is {seconds:.1} s long; at most {MAX_REFERENCE_SECONDS} s is accepted"
        )));
    }
    Ok(())
}

fn reference(message: impl Into<String>) -> EngineError {
    EngineError::ReferenceAudio(message.into())
}
