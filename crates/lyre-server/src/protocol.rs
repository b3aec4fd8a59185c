//! The API's JSON vocabulary: the synthesis fields every endpoint accepts, and the WebSocket
//! protocol's messages (docs/protocol.md is the specification).

use serde::{Deserialize, Serialize};

use crate::errors::{ErrorCode, Failure};

/// Voice, language, style and sampling, as every endpoint accepts them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynthesisFields {
    pub voice: Option<String>,
    pub language: Option<String>,
    pub instruct: Option<String>,
    /// `whole` (the text goes into the prompt) or `streaming` (one token per frame).
    pub text_mode: Option<String>,
    pub seed: Option<u64>,
    /// Read as f64 and checked against the documented bounds before the sampler's f32, so a
    /// value just outside a bound is refused rather than rounded onto it.
    pub temperature: Option<f64>,
    pub top_k: Option<u32>,
    pub top_p: Option<f64>,
    pub repetition_penalty: Option<f64>,
    /// Both models greedy (deterministic, like `--greedy`).
    pub greedy: Option<bool>,
    pub max_frames: Option<u32>,
    /// Never stop at the model's end-of-speech token: always emit `max_frames` frames.
    pub ignore_eos: Option<bool>,
}

/// Client → server. Every message may name the context it concerns (`context_id`); without
/// one it concerns the socket's only open context. (A `start` is much larger than the other
/// messages; each message is parsed and consumed at once, so it is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    Start(StartMessage),
    Text {
        text: String,
        context_id: Option<String>,
    },
    /// Speak everything received so far, and keep the context open for more.
    Flush {
        context_id: Option<String>,
    },
    End {
        context_id: Option<String>,
    },
    Cancel {
        context_id: Option<String>,
    },
}

/// The id of a `start` without `context_id`.
pub const DEFAULT_CONTEXT_ID: &str = "default";

/// Longest accepted `context_id`, in characters.
pub const MAX_CONTEXT_ID_CHARS: usize = 64;

/// Parses one client text message; a failure is a 400 `invalid_message` naming the problem.
pub fn parse_client_message(text: &str) -> Result<ClientMessage, Failure> {
    serde_json::from_str(text)
        .map_err(|e| Failure::new(ErrorCode::InvalidMessage, format!("not a valid message: {e}")))
}

/// Opens a session. Text follows in `text` messages (and may be given here too).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartMessage {
    /// The context this session is (default: `"default"`); at most 64 characters.
    pub context_id: Option<String>,
    /// On the socket's first `start`: allow several contexts at once, with audio in JSON
    /// `audio` messages.
    pub multiplex: Option<bool>,
    /// `pcm16` (default; also `pcm`), `opus`, `mulaw`, `alaw`, `wav`, `flac` or `mp3`.
    pub format: Option<String>,
    /// Output rate in Hz for `pcm16`, `wav`, `flac`, `mp3` (8000 to 48000; default 24000).
    pub sample_rate: Option<u32>,
    /// Tempo, 0.25 to 4.0 (pitch kept; default 1.0).
    pub speed: Option<f64>,
    /// `wav` only: `pcm16` (default), `mulaw` or `alaw`.
    pub encoding: Option<String>,
    /// Also send a `codes` message per frame.
    #[serde(default)]
    pub codes: bool,
    /// Text to begin with (more may follow in `text` messages).
    pub text: Option<String>,
    pub voice: Option<String>,
    /// A reference clip for one-off cloning (Base models): an audio file, base64.
    pub ref_audio: Option<String>,
    /// The clip's transcript: in-context cloning when given, x-vector only otherwise.
    pub ref_text: Option<String>,
    pub language: Option<String>,
    pub instruct: Option<String>,
    pub text_mode: Option<String>,
    pub seed: Option<u64>,
    pub temperature: Option<f64>,
    pub top_k: Option<u32>,
    pub top_p: Option<f64>,
    pub repetition_penalty: Option<f64>,
    pub greedy: Option<bool>,
    pub max_frames: Option<u32>,
    pub ignore_eos: Option<bool>,
}

impl StartMessage {
    pub fn fields(&self) -> SynthesisFields {
        SynthesisFields {
            voice: self.voice.clone(),
            language: self.language.clone(),
            instruct: self.instruct.clone(),
            text_mode: self.text_mode.clone(),
            seed: self.seed,
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            repetition_penalty: self.repetition_penalty,
            greedy: self.greedy,
            max_frames: self.max_frames,
            ignore_eos: self.ignore_eos,
        }
    }
}

/// Server → client. Audio goes in binary messages, or in `audio` messages on a multiplexed
/// socket. Every message names the context it concerns (an `error` about a message that named
/// none has no `context_id`).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Started {
        context_id: String,
        session_id: String,
        format: &'static str,
        sample_rate: u32,
        samples_per_frame: u32,
        /// The size of every binary audio message, where it is fixed (raw formats at speed 1).
        bytes_per_frame: Option<u32>,
        speed: f32,
        queued_ms: f64,
    },
    /// One frame's audio on a multiplexed socket (base64 of what a binary message would carry).
    Audio {
        context_id: String,
        frame: u32,
        data: String,
    },
    Codes {
        context_id: String,
        frame: u32,
        codes: [u16; 16],
    },
    /// The audio that follows starts segment (utterance) `index` of the context: a seam of a
    /// long text, of a stream that rolled over, or of a flush.
    Segment {
        context_id: String,
        index: u32,
    },
    /// The text before a `flush` has been spoken; the context stays open.
    Flushed {
        context_id: String,
        frames: u32,
    },
    /// The context was cancelled by the client (multiplexed sockets).
    Cancelled {
        context_id: String,
    },
    Done {
        context_id: String,
        frames: u32,
        audio_ms: f64,
        ttfa_ms: f64,
        rtf: f64,
        finish_reason: &'static str,
    },
    Error {
        #[serde(skip_serializing_if = "Option::is_none")]
        context_id: Option<String>,
        code: ErrorCode,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        field: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_s: Option<u32>,
    },
}

impl ServerMessage {
    /// An `error` about a message or the socket, not about one context.
    pub fn error(f: &Failure) -> Self {
        ServerMessage::error_in(None, f)
    }

    /// An `error` about the context `context_id`.
    pub fn error_in(context_id: Option<&str>, f: &Failure) -> Self {
        ServerMessage::Error {
            context_id: context_id.map(str::to_string),
            code: f.code,
            message: f.message.clone(),
            field: f.field.clone(),
            retry_after_s: f.retry_after_s(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_parse_strictly() {
        let m: ClientMessage =
            serde_json::from_str(r#"{"type":"start","voice":"ryan","codes":true}"#).unwrap();
        assert!(matches!(m, ClientMessage::Start(StartMessage { codes: true, .. })));
        assert!(matches!(
            serde_json::from_str(r#"{"type":"end"}"#).unwrap(),
            ClientMessage::End { context_id: None }
        ));
        let m: ClientMessage = serde_json::from_str(r#"{"type":"flush","context_id":"b"}"#).unwrap();
        assert!(matches!(m, ClientMessage::Flush { context_id: Some(id) } if id == "b"));
        for bad in [
            r#"{"type":"pause"}"#,
            r#"{"type":"text"}"#,
            r#"{"type":"start","voise":"x"}"#,
            r#"{"type":"flush","context":"a"}"#,
            r#"[1]"#,
        ] {
            assert!(serde_json::from_str::<ClientMessage>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn server_messages_are_tagged() {
        let codes = ServerMessage::Codes { context_id: "a".into(), frame: 3, codes: [1; 16] };
        let s = serde_json::to_string(&codes).unwrap();
        assert!(s.starts_with(r#"{"type":"codes","context_id":"a","frame":3"#), "{s}");
        let f = crate::errors::Failure::new(ErrorCode::InvalidMessage, "x");
        let s = serde_json::to_string(&ServerMessage::error(&f)).unwrap();
        assert!(s.starts_with(r#"{"type":"error","code":"invalid_message""#), "{s}");
    }
}
