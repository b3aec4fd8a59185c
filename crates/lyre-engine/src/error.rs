//! The engine's one error type. Every variant names what went wrong precisely enough for a
//! user to act on it: the file and tensor for checkpoint problems, the field for bad requests.

use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },

    #[error("{path}: invalid JSON: {message}")]
    Json { path: PathBuf, message: String },

    #[error("{path}: config field `{field}`: {message}")]
    Config { path: PathBuf, field: String, message: String },

    #[error("{path}: not a valid safetensors file: {message}")]
    Safetensors { path: PathBuf, message: String },

    #[error("{path}: missing tensor `{tensor}`")]
    MissingTensor { path: PathBuf, tensor: String },

    #[error("{path}: tensor `{tensor}` has shape {found:?}, but config.json implies {expected:?}")]
    TensorShape { path: PathBuf, tensor: String, expected: Vec<usize>, found: Vec<usize> },

    #[error("{path}: tensor `{tensor}` has dtype {found}, expected {expected}")]
    TensorDtype { path: PathBuf, tensor: String, expected: String, found: String },

    #[error("{path}: unexpected tensor `{tensor}` (not used by a `{model_type}` model)")]
    UnexpectedTensor { path: PathBuf, tensor: String, model_type: String },

    #[error("tokenizer: {0}")]
    Tokenizer(String),

    #[error("unknown speaker `{name}`; valid speakers: {}", valid.join(", "))]
    UnknownSpeaker { name: String, valid: Vec<String> },

    #[error("unknown language `{name}`; valid languages: {}", valid.join(", "))]
    UnknownLanguage { name: String, valid: Vec<String> },

    #[error("invalid request field `{field}`: {message}")]
    InvalidRequest { field: &'static str, message: String },

    /// Reference audio for voice cloning that cannot be used (format, length, content).
    #[error("reference audio: {0}")]
    ReferenceAudio(String),

    /// A bad `[engine.tuning]` key or value.
    #[error("engine.tuning.{key}: {message}")]
    Tuning { key: String, message: String },

    #[error("no GPU adapter found ({0})")]
    NoAdapter(String),

    #[error("GPU: {0}")]
    Gpu(String),

    #[error("capacity: {0}")]
    Capacity(String),

    #[error("unknown session {0}")]
    UnknownSession(u64),
}

impl EngineError {
    pub(crate) fn io(path: impl Into<PathBuf>, err: impl std::fmt::Display) -> Self {
        EngineError::Io { path: path.into(), message: err.to_string() }
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        EngineError::InvalidRequest { field, message: message.into() }
    }
}
