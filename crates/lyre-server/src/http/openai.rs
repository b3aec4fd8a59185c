//! `POST /v1/audio/speech`: OpenAI's text-to-speech request and responses. Audio streams as
//! it is generated (chunked), or as Server-Sent Events with `stream_format: "sse"`; a long
//! text is spoken in segments, and its SSE stream says when each one starts
//! (`speech.progress`).

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use lyre_engine::prompt::TextMode;

use super::access_log::AccessRecord;
use super::auth::Caller;
use super::error::{read_body, ApiError, JsonObject};
use super::output::OutputFields;
use super::request::blocking;
use super::stream::{chunked_body, sse};
use super::AppState;
use crate::audio::AudioFormat;
use crate::errors::Failure;
use crate::protocol::SynthesisFields;

/// OpenAI's formats that Lyre does not produce.
const UNSUPPORTED_FORMATS: &[&str] = &["aac"];

pub async fn handle(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let caller = Caller::of(&req);
    let access = AccessRecord::of(&req);
    let bytes = read_body(req, state.config.server.max_body_bytes).await?;
    let mut body = JsonObject::parse(&bytes)?;
    let model = body.require_string("model")?;
    if model.trim().is_empty() {
        return Err(Failure::invalid("model", "is empty").into());
    }
    let input = body.require_string("input")?;
    let instructions = body.take_string("instructions")?;
    let format = response_format(body.take_string("response_format")?)?;
    let output = OutputFields::take(&mut body)?.spec(format)?;
    let stream_format = body.take_string("stream_format")?;
    if let Some(other) = stream_format.as_deref().filter(|f| !matches!(*f, "audio" | "sse")) {
        return Err(Failure::invalid("stream_format", format!("`{other}` is not `audio` or `sse`")).into());
    }
    let mut fields: SynthesisFields = body.rest()?;
    // OpenAI's names in errors: `input` for the text, `instructions` when the client used it.
    let named_instructions = instructions.is_some();
    if instructions.is_some() {
        if fields.instruct.is_some() {
            let why = "is OpenAI's name for `instruct`: give one of them, not both";
            return Err(Failure::invalid("instructions", why).into());
        }
        fields.instruct = instructions;
    }
    if fields.voice.is_none() {
        return Err(Failure::invalid("voice", "is required").into());
    }
    let voice = super::voices::lookup(&state, &caller, fields.voice.as_deref(), "voice").await?;
    let prep = state.clone();
    let (request, tokens, segments) = blocking(move || {
        let validator = prep.validator();
        let as_input = |f: Failure| match f.field.as_deref() {
            Some("text") => f.with_field("input"),
            Some("instruct") if named_instructions => f.with_field("instructions"),
            _ => f,
        };
        let tokens = validator.check_text(&input, "input")?;
        let mut request = validator
            .build_with_voice(&fields, Some(&input), TextMode::NonStreaming, voice)
            .map_err(as_input)?;
        let segments = validator.segment(&mut request).map_err(as_input)?;
        Ok((request, tokens, segments))
    })
    .await?;
    let slot = state.keys.acquire(caller.key)?;
    let span = tracing::info_span!("speech", format = %format, segments);
    let handle = state.scheduler.submit_played_at(request, span, output.playback_speed())?;
    match stream_format.as_deref() {
        None | Some("audio") => {
            let mut resp = chunked_body(handle, &output, slot, access)?.into_response();
            let h = resp.headers_mut();
            h.insert("content-type", HeaderValue::from_static(format.content_type()));
            h.insert("x-lyre-sample-rate", HeaderValue::from(output.sample_rate));
            h.insert("x-lyre-segments", HeaderValue::from(segments.max(1)));
            Ok(resp)
        }
        _ => Ok(sse(handle, &output, slot, tokens, segments, access)?.into_response()),
    }
}

fn response_format(name: Option<String>) -> Result<AudioFormat, ApiError> {
    // OpenAI's default is mp3; a build without it says so rather than sending another format.
    let name = name.unwrap_or_else(|| AudioFormat::Mp3.as_str().to_string());
    if UNSUPPORTED_FORMATS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(Failure::invalid(
            "response_format",
            format!("`{name}` is not supported; use one of {}", AudioFormat::built_names()),
        )
        .into());
    }
    name.parse()
        .map_err(|e: crate::audio::AudioError| Failure::invalid("response_format", e.to_string()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(name: Option<&str>) -> Option<String> {
        response_format(name.map(String::from)).err().and_then(|e| e.0.field)
    }

    #[test]
    fn formats_parse_and_aac_names_the_field() {
        assert_eq!(response_format(Some("OPUS".into())).unwrap(), AudioFormat::Opus);
        assert_eq!(field_of(Some("aac")).as_deref(), Some("response_format"));
        assert_eq!(field_of(Some("ogg")).as_deref(), Some("response_format"));
    }

    #[cfg(feature = "mp3")]
    #[test]
    fn mp3_is_the_default() {
        assert_eq!(response_format(None).unwrap(), AudioFormat::Mp3);
    }

    /// A server built without the `mp3` feature answers mp3 (asked for, or OpenAI's default) with
    /// a 400 naming `response_format`.
    #[cfg(not(feature = "mp3"))]
    #[test]
    fn without_the_mp3_feature_mp3_is_a_400_naming_response_format() {
        for name in [Some("mp3"), None] {
            let f = response_format(name.map(String::from)).unwrap_err().0;
            assert_eq!((f.status(), f.field.as_deref()), (400, Some("response_format")), "{name:?}");
            assert!(f.message.contains("`mp3` feature"), "{}", f.message);
        }
    }
}
