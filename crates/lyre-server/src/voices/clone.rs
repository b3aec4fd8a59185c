//! Reference audio → a cloned voice: decode and resample to 24 kHz, the speaker encoder's
//! x-vector, and (with a transcript) the speech encoder's reference codes. CPU work, run on a
//! blocking thread, never on the async runtime.

use std::sync::{Arc, Mutex};

use lyre_engine::audio_input::{load_reference, ENCODER_SAMPLE_RATE};
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::prompt::VoiceReference;
use lyre_engine::speaker_encoder::SpeakerEncoder;
use lyre_engine::speech_encoder::SpeechEncoder;
use lyre_engine::EngineError;

use crate::errors::{ErrorCode, Failure};

/// What the encoders made of one clip.
#[derive(Debug, Clone)]
pub struct ClonedVoice {
    pub x_vector: Vec<f32>,
    pub reference: Option<VoiceReference>,
    pub seconds: f32,
}

/// The Base model's encoders, loaded on first use and kept.
pub struct Encoders {
    model: Arc<ModelDir>,
    speaker: Mutex<Option<SpeakerEncoder>>,
    speech: Mutex<Option<SpeechEncoder>>,
}

impl std::fmt::Debug for Encoders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoders").finish_non_exhaustive()
    }
}

impl Encoders {
    pub fn new(model: Arc<ModelDir>) -> Self {
        Encoders { model, speaker: Mutex::new(None), speech: Mutex::new(None) }
    }

    /// Why this model cannot clone voices, if it cannot.
    pub fn refusal(model: &ModelDir) -> Option<Failure> {
        match model.config.tts_model_type {
            ModelType::Base => None,
            other => Some(
                Failure::new(
                    ErrorCode::CloningUnsupported,
                    format!(
                        "this server runs a {} model, which does not clone voices; use a Base model",
                        other.as_str()
                    ),
                )
                .with_field("audio"),
            ),
        }
    }

    /// Blocking: the voice of an audio file (any format `audio_input` reads). With a
    /// transcript the voice also carries the reference codes (ICL); without, x-vector only.
    pub fn clone_voice(&self, audio: &[u8], transcript: Option<&str>) -> Result<ClonedVoice, EngineError> {
        let wav = load_reference(audio)?;
        let seconds = wav.len() as f32 / ENCODER_SAMPLE_RATE as f32;
        let x_vector = {
            let mut slot = self.speaker.lock().unwrap_or_else(|p| p.into_inner());
            if slot.is_none() {
                *slot = Some(SpeakerEncoder::load(&self.model)?);
            }
            slot.as_ref().expect("loaded above").embed(&wav)?
        };
        let reference = match transcript {
            Some(text) => {
                let mut slot = self.speech.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    *slot = Some(SpeechEncoder::load(&self.model)?);
                }
                let codes = slot.as_ref().expect("loaded above").encode(&wav)?;
                Some(VoiceReference { text: text.to_string(), codes })
            }
            None => None,
        };
        Ok(ClonedVoice { x_vector, reference, seconds })
    }

    /// [`Encoders::clone_voice`] on a blocking thread; errors as the API reports them
    /// (bad audio: 400 `invalid_reference_audio` on `audio_field`).
    pub async fn clone_voice_async(
        self: Arc<Self>,
        audio: Vec<u8>,
        transcript: Option<String>,
        audio_field: &'static str,
    ) -> Result<ClonedVoice, Failure> {
        let joined =
            tokio::task::spawn_blocking(move || self.clone_voice(&audio, transcript.as_deref())).await;
        match joined {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                let f = Failure::from(&e);
                Err(if f.code == ErrorCode::InvalidReferenceAudio { f.with_field(audio_field) } else { f })
            }
            Err(e) => Err(Failure::new(ErrorCode::EncoderError, format!("the voice encoders failed: {e}"))),
        }
    }
}
