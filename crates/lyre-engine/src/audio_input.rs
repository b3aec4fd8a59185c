//! Reference audio for voice cloning: a WAV, FLAC, MP3 or Ogg file decoded to mono f32 and
//! resampled to the 24 kHz that the speaker and speech encoders need.

use crate::error::{EngineError, Result};

/// The sample rate both encoders run at.
pub const ENCODER_SAMPLE_RATE: u32 = 24_000;
/// Shorter clips carry too little of a voice to clone.
pub const MIN_REFERENCE_SECONDS: f32 = 0.5;
/// Longer clips are refused: the reference becomes part of every prompt that uses it.
pub const MAX_REFERENCE_SECONDS: f32 = 60.0;

/// Decoded audio, mono, at its own rate.
#[derive(Debug, Clone)]
pub struct DecodedAudio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

/// Decodes any supported container (the format is sniffed from the bytes) and mixes to mono.
pub fn decode(bytes: &[u8]) -> Result<DecodedAudio> {
    let _ = bytes;
    Err(EngineError::ReferenceAudio("audio decoding is not built yet".into()))
}

/// Resamples mono audio to `rate`.
pub fn resample(audio: &DecodedAudio, rate: u32) -> Result<Vec<f32>> {
    let _ = (audio, rate);
    Err(EngineError::ReferenceAudio("resampling is not built yet".into()))
}

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
