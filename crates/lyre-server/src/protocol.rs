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

/// Client → server. (A `start` is much larger than the other messages; each message is parsed
/// and consumed at once, so it is not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    Start(StartMessage),
    Text { text: String },
    End {},
    Cancel {},
}

/// Parses one client text message; a failure is a 400 `invalid_message` naming the problem.
pub fn parse_client_message(text: &str) -> Result<ClientMessage, Failure> {
    serde_json::from_str(text)
        .map_err(|e| Failure::new(ErrorCode::InvalidMessage, format!("not a valid message: {e}")))
}

/// Opens a session. Text follows in `text` messages (and may be given here too).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartMessage {
    /// `pcm16` (default) or `opus`.
    pub format: Option<String>,
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

/// Server → client (audio itself goes in binary messages).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Started {
        session_id: String,
        format: &'static str,
        sample_rate: u32,
        samples_per_frame: u32,
        queued_ms: f64,
    },
    Codes {
        frame: u32,
        codes: [u16; 16],
    },
    /// The audio that follows starts segment (utterance) `index` of the session: a seam of a
    /// long text or of a stream that rolled over.
    Segment {
        index: u32,
    },
    Done {
        frames: u32,
        audio_ms: f64,
        ttfa_ms: f64,
        rtf: f64,
        finish_reason: &'static str,
    },
    Error {
        code: ErrorCode,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        field: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_s: Option<u32>,
    },
}

impl ServerMessage {
    pub fn error(f: &Failure) -> Self {
        ServerMessage::Error {
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
        assert!(matches!(serde_json::from_str(r#"{"type":"end"}"#).unwrap(), ClientMessage::End {}));
        for bad in [r#"{"type":"pause"}"#, r#"{"type":"text"}"#, r#"{"type":"start","voise":"x"}"#, r#"[1]"#]
        {
            assert!(serde_json::from_str::<ClientMessage>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn server_messages_are_tagged() {
        let s = serde_json::to_string(&ServerMessage::Codes { frame: 3, codes: [1; 16] }).unwrap();
        assert!(s.starts_with(r#"{"type":"codes","frame":3"#), "{s}");
    }
}
