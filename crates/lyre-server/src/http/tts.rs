//! `POST /v1/tts`: Lyre's own whole-clip endpoint. A clip no longer than one segment can be
//! (`engine.max_positions` frames) is sent whole, with its frame count, finish reason and codes
//! fingerprint in headers; a longer text streams chunk by chunk as it is generated, in every
//! format, so memory does not grow with the text.

use std::time::Duration;

use super::access_log::AccessRecord;
use super::auth::Caller;
use super::error::{read_body, ApiError, JsonObject};
use super::output::{audio_failure, OutputFields};
use super::request::{blocking, Validator};
use super::stream::{chunked_body, collect};
use super::AppState;
use crate::audio::{AudioFormat, OutputSpec};
use crate::errors::Failure;
use crate::protocol::SynthesisFields;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use lyre_engine::prompt::TextMode;
use lyre_engine::SessionRequest;

pub async fn handle(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let caller = Caller::of(&req);
    let access = AccessRecord::of(&req);
    let bytes = read_body(req, state.config.server.max_body_bytes).await?;
    let (text, fields, output) = blocking(move || parse_body(&bytes)).await?;
    let voice = super::voices::lookup(&state, &caller, fields.voice.as_deref(), "voice").await?;
    let prep = state.clone();
    let (request, segments) = blocking(move || {
        let validator = prep.validator();
        let mut request = validator.build_with_voice(&fields, Some(&text), TextMode::NonStreaming, voice)?;
        let segments = validator.segment(&mut request)?;
        Ok((request, segments))
    })
    .await?;
    let slot = state.keys.acquire(caller.key)?;
    let whole = segments <= 1 || request.max_frames as usize <= state.config.engine.max_positions;
    let span = tracing::info_span!("tts", format = %output.format, segments);
    let mut handle = state.scheduler.submit_played_at(request, span, output.playback_speed())?;
    if !whole {
        let mut resp = chunked_body(handle, &output, slot, access)?.into_response();
        let h = resp.headers_mut();
        h.insert("content-type", HeaderValue::from_static(output.format.content_type()));
        h.insert("x-lyre-sample-rate", HeaderValue::from(output.sample_rate));
        h.insert("x-lyre-segments", HeaderValue::from(segments));
        return Ok(resp);
    }
    let clip = collect(&mut handle, Duration::from_secs(state.config.server.request_timeout_s)).await?;
    if let Some(a) = &access {
        a.add_frames(clip.codes.len() as u64);
    }
    let audio = output.encode_clip(&clip.samples).map_err(audio_failure)?;
    drop(slot);
    let mut resp = Body::from(audio).into_response();
    let h = resp.headers_mut();
    h.insert("content-type", HeaderValue::from_static(output.format.content_type()));
    h.insert("x-lyre-sample-rate", HeaderValue::from(output.sample_rate));
    h.insert("x-lyre-frames", HeaderValue::from(clip.stats.frames));
    h.insert("x-lyre-finish-reason", HeaderValue::from_static(clip.stats.reason_str()));
    h.insert("x-lyre-ttfa-ms", HeaderValue::from(clip.stats.ttfa_ms.round() as u64));
    h.insert("x-lyre-segments", HeaderValue::from(segments.max(1)));
    if let Ok(v) = HeaderValue::from_str(&codes_fingerprint(&clip.codes)) {
        h.insert("x-lyre-codes-fnv1a", v);
    }
    Ok(resp)
}

/// Parses and validates a body, with presets only (no I/O; the fuzz tests call it directly).
pub fn parse_request(validator: &Validator, bytes: &[u8]) -> Result<(SessionRequest, OutputSpec), ApiError> {
    let (text, fields, output) = parse_body(bytes)?;
    let request = validator.build(&fields, Some(&text), TextMode::NonStreaming)?;
    Ok((request, output))
}

/// The body's text, synthesis fields and output.
fn parse_body(bytes: &[u8]) -> Result<(String, SynthesisFields, OutputSpec), ApiError> {
    let mut body = JsonObject::parse(bytes)?;
    let text = body.require_string("text")?;
    let format = match body.take_string("format")?.as_deref() {
        None => AudioFormat::Wav,
        Some(f) => {
            f.parse().map_err(|e: crate::audio::AudioError| Failure::invalid("format", e.to_string()))?
        }
    };
    let output = OutputFields::take(&mut body)?.spec(format)?;
    let fields: SynthesisFields = body.rest()?;
    Ok((text, fields, output))
}

/// FNV-1a (64-bit, hex) over the clip's codes as little-endian u16s, frame by frame: a
/// fingerprint that lets clients compare runs without decoding audio.
pub fn codes_fingerprint(codes: &[[u16; 16]]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for c in codes.iter().flatten() {
        for b in c.to_le_bytes() {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}
