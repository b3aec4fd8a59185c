//! The voice directory: one `NAME.json` per voice, written atomically (temporary file, fsync,
//! rename), read once at startup and kept in memory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use lyre_engine::checkpoint::config::ModelConfig;
use lyre_engine::prompt::{VoiceReference, VoiceSpec};
use serde::{Deserialize, Serialize};

use super::name::validate_name;
use crate::errors::{ErrorCode, Failure};

/// The file format's version.
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

/// One stored voice, as in its file.
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

    /// The engine's voice, or a 400 when the voice belongs to another model.
    pub fn voice_spec(&self, cfg: &ModelConfig, field: &str) -> Result<VoiceSpec, Failure> {
        let here = ModelStamp::of(cfg);
        if self.model != here {
            return Err(Failure::new(ErrorCode::VoiceModelMismatch, format!(
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

    fn check(&self, file_stem: &str) -> Result<(), String> {
        if self.lyre_voice != FORMAT {
            return Err(format!("format version {} (this server reads {FORMAT})", self.lyre_voice));
        }
        if self.name != file_stem {
            return Err(format!("names voice `{}`", self.name));
        }
        if self.x_vector.len() != self.model.hidden_size || self.x_vector.iter().any(|v| !v.is_finite()) {
            return Err("has a bad x-vector".into());
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("a voice named `{0}` already exists; delete it first")]
    Exists(String),
    #[error("the voice store is full ({0} voices); delete some first")]
    Full(usize),
    #[error("voice store {path}: {message}")]
    Io { path: PathBuf, message: String },
}

impl From<&StoreError> for Failure {
    fn from(e: &StoreError) -> Self {
        match e {
            StoreError::Exists(_) => Failure::new(ErrorCode::VoiceExists, e.to_string()).with_field("name"),
            StoreError::Full(_) => Failure::new(ErrorCode::VoiceStoreFull, e.to_string()),
            StoreError::Io { .. } => Failure::new(ErrorCode::VoiceStoreError, e.to_string()),
        }
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Io { path: path.to_path_buf(), message: e.to_string() }
}

/// The stored voices of one directory.
#[derive(Debug)]
pub struct VoiceStore {
    dir: PathBuf,
    max_voices: usize,
    voices: RwLock<BTreeMap<String, Arc<StoredVoice>>>,
}

impl VoiceStore {
    /// Reads every `*.json` voice in `dir` (which need not exist yet; it is made on the first
    /// upload). Unreadable files are skipped with a warning, never fatal.
    pub fn open(dir: &Path, max_voices: usize) -> Result<Self, StoreError> {
        let mut voices = BTreeMap::new();
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let path = entry.path();
                    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else { continue };
                    if path.extension().and_then(|e| e.to_str()) != Some("json")
                        || validate_name(stem, "name").is_err()
                    {
                        continue;
                    }
                    match read_voice(&path, stem) {
                        Ok(v) => {
                            voices.insert(stem.to_string(), Arc::new(v));
                        }
                        Err(e) => {
                            tracing::warn!(file = %path.display(), error = %e, "skipping a stored voice")
                        }
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(dir, e)),
        }
        tracing::info!(dir = %dir.display(), voices = voices.len(), "voice store opened");
        Ok(VoiceStore { dir: dir.to_path_buf(), max_voices, voices: RwLock::new(voices) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn get(&self, name: &str) -> Option<Arc<StoredVoice>> {
        self.voices.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// Every stored voice, by name.
    pub fn list(&self) -> Vec<Arc<StoredVoice>> {
        self.voices.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// Writes a new voice (its name already validated); never replaces one.
    pub fn insert(&self, voice: StoredVoice) -> Result<Arc<StoredVoice>, StoreError> {
        let mut voices = self.voices.write().unwrap_or_else(|p| p.into_inner());
        if voices.contains_key(&voice.name) {
            return Err(StoreError::Exists(voice.name));
        }
        if voices.len() >= self.max_voices {
            return Err(StoreError::Full(self.max_voices));
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let path = self.dir.join(format!("{}.json", voice.name));
        let tmp = self.dir.join(format!(".{}.json.tmp-{}", voice.name, std::process::id()));
        let bytes = serde_json::to_vec(&voice).map_err(|e| io_err(&path, e))?;
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, &path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_err(&path, e));
        }
        let voice = Arc::new(voice);
        voices.insert(voice.name.clone(), voice.clone());
        Ok(voice)
    }

    /// Deletes a voice; `false` if there was none.
    pub fn remove(&self, name: &str) -> Result<bool, StoreError> {
        let mut voices = self.voices.write().unwrap_or_else(|p| p.into_inner());
        if !voices.contains_key(name) {
            return Ok(false);
        }
        let path = self.dir.join(format!("{name}.json"));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path, e)),
        }
        voices.remove(name);
        Ok(true)
    }
}

fn read_voice(path: &Path, stem: &str) -> Result<StoredVoice, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let voice: StoredVoice = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    voice.check(stem)?;
    Ok(voice)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
