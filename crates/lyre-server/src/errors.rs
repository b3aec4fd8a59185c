//! Every error a client can see, in one table: [`ErrorCode`] gives each its HTTP status, its
//! stable code string and whether a retry may succeed. HTTP bodies, WebSocket `error` messages
//! and the `lyre_errors_total` metric all read it; `docs/protocol.md` lists the same table (a
//! test holds the two together).

use lyre_engine::EngineError;

/// Seconds a client should wait before retrying a retryable failure (`Retry-After`,
/// `retry_after_s`).
pub const RETRY_AFTER_S: u32 = 1;

/// Declares [`ErrorCode`] and its table from one list of `Variant = (status, "code", retryable)`.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident = ($status:literal, $code:literal, $retryable:literal),)*) => {
        /// A stable, machine-readable error code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The HTTP status it is sent with.
            pub const fn status(self) -> u16 {
                match self { $(ErrorCode::$variant => $status,)* }
            }

            /// The code string clients match on.
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            /// Whether the same request may succeed later (or on another replica): such
            /// failures carry `Retry-After`.
            pub const fn retryable(self) -> bool {
                match self { $(ErrorCode::$variant => $retryable,)* }
            }
        }
    };
}

error_codes! {
    /// The body is not JSON, or a field has the wrong type.
    InvalidJson = (400, "invalid_json", false),
    /// A field's value is not acceptable, or a field is unknown.
    InvalidRequest = (400, "invalid_request", false),
    /// The text cannot be tokenized.
    InvalidText = (400, "invalid_text", false),
    /// A WebSocket message that is not a valid client message.
    InvalidMessage = (400, "invalid_message", false),
    /// A voice the model does not have (synthesis requests).
    UnknownVoice = (400, "unknown_voice", false),
    UnknownLanguage = (400, "unknown_language", false),
    InvalidReferenceAudio = (400, "invalid_reference_audio", false),
    InvalidVoiceName = (400, "invalid_voice_name", false),
    InvalidMultipart = (400, "invalid_multipart", false),
    CloningUnsupported = (400, "cloning_unsupported", false),
    VoiceModelMismatch = (400, "voice_model_mismatch", false),
    PresetVoice = (400, "preset_voice", false),
    Unauthorized = (401, "unauthorized", false),
    /// No such endpoint.
    NotFound = (404, "not_found", false),
    /// `GET /metrics` on a server without a metrics recorder.
    MetricsDisabled = (404, "metrics_disabled", false),
    /// `DELETE /v1/voices/{name}` of a voice that is not stored.
    VoiceNotFound = (404, "unknown_voice", false),
    UnknownSession = (404, "unknown_session", false),
    /// The path does not take the request's method (axum's own answer, in the error shape).
    MethodNotAllowed = (405, "method_not_allowed", false),
    IdleTimeout = (408, "idle_timeout", false),
    /// WebSocket: two of the server's pings went unanswered.
    PingTimeout = (408, "ping_timeout", false),
    VoiceExists = (409, "voice_exists", false),
    SessionActive = (409, "session_active", false),
    NoSession = (409, "no_session", false),
    TextEnded = (409, "text_ended", false),
    /// WebSocket: a `start` for a context that is already open.
    ContextActive = (409, "context_active", false),
    BodyTooLarge = (413, "body_too_large", false),
    TextTooLong = (413, "text_too_long", false),
    MessageTooLarge = (413, "message_too_large", false),
    /// A body of a media type the endpoint does not read (axum's own answer).
    UnsupportedMediaType = (415, "unsupported_media_type", false),
    /// `GET /v1/tts/stream` on a connection that cannot be upgraded to a WebSocket.
    UpgradeRequired = (426, "upgrade_required", false),
    /// Every session slot and every queue place is taken.
    Busy = (429, "busy", true),
    /// The API key holds all the sessions it may.
    KeyBusy = (429, "key_busy", true),
    RateLimited = (429, "rate_limited", true),
    /// WebSocket: the socket holds `limits.max_ws_contexts` contexts.
    TooManyContexts = (429, "too_many_contexts", true),
    /// WebSocket: the API key holds `limits.max_ws_connections_per_key` sockets.
    KeyTooManyConnections = (429, "key_too_many_connections", true),
    /// The client cancelled its session (WebSocket `cancel`).
    Cancelled = (499, "cancelled", false),
    /// An error the server made without a more precise code (axum's own 5xx answers).
    Internal = (500, "internal_error", false),
    Draining = (503, "draining", true),
    NotReady = (503, "not_ready", true),
    WorkerStopped = (503, "worker_stopped", true),
    /// The GPU worker's command queue is full.
    Overloaded = (503, "overloaded", true),
    /// The server stopped while the session ran.
    Shutdown = (503, "shutdown", true),
    GpuError = (503, "gpu_error", true),
    /// The engine has no room for the session.
    Capacity = (503, "capacity", true),
    EngineError = (503, "engine_error", true),
    EncoderError = (503, "encoder_error", true),
    /// The session's stream ended without a result.
    SessionLost = (503, "session_lost", true),
    /// A client stopped reading and its session was cancelled. Counted by the worker, which is
    /// the only one to see it happen; the client is told if it reads again.
    SlowConsumer = (503, "slow_consumer", true),
    /// The voice database did not answer in time (voice operations only).
    StoreUnavailable = (503, "store_unavailable", true),
    /// A stored voice could not be read back.
    VoiceStoreError = (503, "voice_store_error", true),
    /// `server.max_connections` connections are open (answered before the request is read), or
    /// `limits.max_ws_connections` WebSockets (an `error` message, then close 1013).
    TooManyConnections = (503, "too_many_connections", true),
    Timeout = (504, "timeout", false),
    VoiceStoreFull = (507, "voice_store_full", false),
}

impl ErrorCode {
    /// Adds one to `lyre_errors_total{code}` as a client is told of this error. Two codes are
    /// not counted here: `cancelled` answers the client's own `cancel` (not an error; the session
    /// is counted in `lyre_sessions_total{outcome="cancelled"}`), and `slow_consumer` is counted
    /// by the worker when it cancels the session (`count_where_seen`), whether or not the client
    /// ever reads the message.
    pub fn count(self) {
        if !matches!(self, ErrorCode::Cancelled | ErrorCode::SlowConsumer) {
            self.count_where_seen();
        }
    }

    /// Adds one to `lyre_errors_total{code}` where the error happens rather than where a client
    /// is told of it.
    pub fn count_where_seen(self) {
        metrics::counter!("lyre_errors_total", "code" => self.as_str()).increment(1);
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Codes compare with their wire strings (`failure.code == "busy"`).
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One failure as clients see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: ErrorCode,
    pub message: String,
    /// The request field at fault, when there is one.
    pub field: Option<String>,
}

impl Failure {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure { code, message: message.into(), field: None }
    }

    /// A 400 `invalid_request` naming the field at fault.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Failure::new(ErrorCode::InvalidRequest, message).with_field(field)
    }

    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }

    pub fn status(&self) -> u16 {
        self.code.status()
    }

    /// How long to wait before retrying, for a retryable failure.
    pub fn retry_after_s(&self) -> Option<u32> {
        self.code.retryable().then_some(RETRY_AFTER_S)
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
            EngineError::UnknownSpeaker { .. } => {
                Failure::new(ErrorCode::UnknownVoice, msg).with_field("voice")
            }
            EngineError::UnknownLanguage { .. } => {
                Failure::new(ErrorCode::UnknownLanguage, msg).with_field("language")
            }
            EngineError::Tokenizer(_) => Failure::new(ErrorCode::InvalidText, msg).with_field("text"),
            EngineError::Capacity(_) => Failure::new(ErrorCode::Capacity, msg),
            EngineError::ReferenceAudio(_) => {
                Failure::new(ErrorCode::InvalidReferenceAudio, msg).with_field("audio")
            }
            EngineError::UnknownSession(_) => Failure::new(ErrorCode::UnknownSession, msg),
            _ => Failure::new(ErrorCode::EngineError, msg),
        }
    }
}

#[cfg(test)]
#[path = "errors_tests.rs"]
pub(crate) mod tests;
