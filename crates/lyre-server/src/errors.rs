//! Stable error codes, shared by the HTTP responses, the WebSocket `error` message and the
//! `lyre_errors_total` metric.

use lyre_engine::EngineError;

/// One failure as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub status: u16,
    /// Stable, machine-readable (`invalid_request`, `unknown_voice`, `busy`, ...).
    pub code: &'static str,
    pub message: String,
    /// The request field at fault, when there is one.
    pub field: Option<String>,
}

impl Failure {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Failure { status, code, message: message.into(), field: None }
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Failure {
            status: 400,
            code: "invalid_request",
            message: message.into(),
            field: Some(field.to_string()),
        }
    }

    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} ({field}): {}", self.code, self.message),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

impl From<&EngineError> for Failure {
    fn from(e: &EngineError) -> Self {
        let msg = e.to_string();
        match e {
            EngineError::InvalidRequest { field, .. } => Failure::invalid(field, msg),
            EngineError::UnknownSpeaker { .. } => Failure::new(400, "unknown_voice", msg).with_field("voice"),
            EngineError::UnknownLanguage { .. } => {
                Failure::new(400, "unknown_language", msg).with_field("language")
            }
            EngineError::Tokenizer(_) => Failure::new(400, "invalid_text", msg).with_field("text"),
            EngineError::Capacity(_) => Failure::new(503, "capacity", msg),
            EngineError::ReferenceAudio(_) => {
                Failure::new(400, "invalid_reference_audio", msg).with_field("audio")
            }
            EngineError::UnknownSession(_) => Failure::new(404, "unknown_session", msg),
            _ => Failure::new(503, "engine_error", msg),
        }
    }
}
