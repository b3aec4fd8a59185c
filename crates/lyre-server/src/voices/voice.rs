//! One cloned voice: the model it was made with, its x-vector and, for in-context (ICL) cloning,
//! the reference transcript and codec frames. The same JSON is a row's `voice` column and a
//! voice file (`NAME.json`, as older servers wrote them and `lyre voices import` reads them).

use lyre_engine::checkpoint::config::ModelConfig;
use lyre_engine::prompt::{VoiceReference, VoiceSpec};
use serde::{Deserialize, Serialize};

use crate::errors::{ErrorCode, Failure};

/// The format's version.
const FORMAT: u32 = 1;

/// The model a voice was computed with: x-vectors and codes only mean something to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelStamp {
    #[serde(rename = "type")]
    pub model_type: String,
    pub size: String,
    pub hidden_size: usize,
}

impl ModelStamp {
    pub fn of(cfg: &ModelConfig) -> Self {
        ModelStamp {
            model_type: cfg.tts_model_type.as_str().to_string(),
            size: cfg.tts_model_size.clone(),
            hidden_size: cfg.talker_config.hidden_size,
        }
    }
}

impl std::fmt::Display for ModelStamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (hidden size {})", self.model_type, self.size, self.hidden_size)
    }
}

/// One stored voice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredVoice {
    pub lyre_voice: u32,
    pub name: String,
    pub model: ModelStamp,
    pub x_vector: Vec<f32>,
    /// The transcript of the reference clip (ICL voices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_text: Option<String>,
    /// The reference clip's codec frames (ICL voices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_codes: Option<Vec<[u16; 16]>>,
    /// Seconds of reference audio the voice was made from.
    pub seconds: f32,
    pub created_unix_s: u64,
}

/// What a listing shows of a voice (everything but the vectors).
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceSummary {
    pub name: String,
    pub model: ModelStamp,
    pub has_transcript: bool,
    pub reference_frames: usize,
    pub seconds: f32,
    pub created_unix_s: u64,
}

impl StoredVoice {
    pub fn new(
        name: &str,
        cfg: &ModelConfig,
        x_vector: Vec<f32>,
        reference: Option<VoiceReference>,
        seconds: f32,
    ) -> Self {
        let created_unix_s =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let (ref_text, ref_codes) = match reference {
            Some(r) => (Some(r.text), Some(r.codes)),
            None => (None, None),
        };
        StoredVoice {
            lyre_voice: FORMAT,
            name: name.to_string(),
            model: ModelStamp::of(cfg),
            x_vector,
            ref_text,
            ref_codes,
            seconds,
            created_unix_s,
        }
    }

    pub fn has_transcript(&self) -> bool {
        self.ref_text.is_some() && self.ref_codes.is_some()
    }

    pub fn summary(&self) -> VoiceSummary {
        VoiceSummary {
            name: self.name.clone(),
            model: self.model.clone(),
            has_transcript: self.has_transcript(),
            reference_frames: self.ref_codes.as_ref().map_or(0, Vec::len),
            seconds: self.seconds,
            created_unix_s: self.created_unix_s,
        }
    }

    /// The engine's voice, or a 400 when the voice belongs to another model.
    pub fn voice_spec(&self, cfg: &ModelConfig, field: &str) -> Result<VoiceSpec, Failure> {
        let here = ModelStamp::of(cfg);
        if self.model != here {
            return Err(Failure::new(
                ErrorCode::VoiceModelMismatch,
                format!(
                    "voice `{}` was made with a {} model; this server runs a {} model. Upload the clip again here",
                    self.name, self.model, here
                ),
            )
            .with_field(field));
        }
        Ok(match (&self.ref_text, &self.ref_codes) {
            (Some(text), Some(codes)) => VoiceSpec::Icl {
                x_vector: self.x_vector.clone(),
                reference: VoiceReference { text: text.clone(), codes: codes.clone() },
            },
            _ => VoiceSpec::Vector(self.x_vector.clone()),
        })
    }

    /// Parses the JSON form and checks it is whole: the format version, the name it must carry
    /// (a file's stem, a row's key) and a finite x-vector of the model's hidden size.
    pub fn from_json(bytes: &[u8], expected_name: &str) -> Result<Self, String> {
        let voice: StoredVoice = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if voice.lyre_voice != FORMAT {
            return Err(format!("format version {} (this server reads {FORMAT})", voice.lyre_voice));
        }
        if voice.name != expected_name {
            return Err(format!("names voice `{}`", voice.name));
        }
        if voice.x_vector.len() != voice.model.hidden_size || voice.x_vector.iter().any(|v| !v.is_finite()) {
            return Err("has a bad x-vector".into());
        }
        Ok(voice)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a voice serialises")
    }
}
