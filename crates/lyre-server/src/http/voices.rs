//! The caller's voices: `GET /v1/voices` (also `GET /v1/audio/voices`) lists the model's presets
//! and the tenant's stored voices; `POST /v1/voices` (multipart: `name`, `audio`, optional
//! `transcript`) stores a cloned voice; `DELETE /v1/voices/{name}` removes one. Another tenant's
//! voice is answered exactly as a voice that does not exist.

use axum::extract::multipart::{Field, Multipart, MultipartError, MultipartRejection};
use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::prompt::VoiceSpec;

use super::auth::Caller;
use super::error::ApiError;
use super::AppState;
use crate::config::LimitsSection;
use crate::errors::{ErrorCode, Failure};
use crate::voices::{is_preset, validate_name, Encoders, ModelStamp, StoredVoice, VoiceSummary};

pub async fn list(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Result<Response, ApiError> {
    let tenant = caller_of(caller).tenant;
    let cfg = &state.model.config;
    let t = &cfg.talker_config;
    let stored = state.voices.list(Some(&tenant)).await.map_err(Failure::from)?;
    let mut voices: Vec<serde_json::Value> = t
        .spk_id
        .keys()
        .map(|name| {
            let dialect = t.spk_is_dialect.get(name).and_then(|d| d.language());
            serde_json::json!({ "name": name, "kind": "preset", "dialect": dialect })
        })
        .collect();
    let here = ModelStamp::of(cfg);
    voices.extend(stored.iter().map(|(_, v)| describe(v, v.model == here)));
    // The aliases that lead somewhere for this caller: to a preset, or (Base) to one of its voices.
    let aliases: serde_json::Map<String, serde_json::Value> = state
        .config
        .voices
        .aliases
        .iter()
        .filter(|(alias, target)| {
            !is_preset(cfg, alias) && is_preset(cfg, target)
                || (!is_preset(cfg, alias)
                    && cfg.tts_model_type == ModelType::Base
                    && stored.iter().any(|(_, v)| &v.name == *target))
        })
        .map(|(alias, target)| (alias.clone(), target.clone().into()))
        .collect();
    Ok(Json(serde_json::json!({
        "model": super::info::model_id(&state),
        "model_type": cfg.tts_model_type.as_str(),
        "voices": voices,
        "aliases": aliases,
        "languages": lyre_engine::prompt::languages(cfg),
        "instruct": super::info::instruct_support(&state),
        "cloning": Encoders::refusal(&state.model).is_none(),
        "max_upload_bytes": state.config.voices.max_upload_bytes,
    }))
    .into_response())
}

/// The stored voice a request's `voice` means for the caller (see `voices::resolve`).
pub async fn lookup(
    state: &AppState,
    caller: &Caller,
    name: Option<&str>,
    field: &str,
) -> Result<Option<VoiceSpec>, Failure> {
    let cfg = &state.model.config;
    crate::voices::stored_voice(&state.voices, cfg, &state.config.voices.aliases, &caller.tenant, name, field)
        .await
}

fn caller_of(caller: Option<Extension<Caller>>) -> Caller {
    caller.map_or_else(Caller::anonymous, |Extension(c)| c)
}

/// The upload's parts.
#[derive(Default)]
struct Upload {
    name: Option<String>,
    audio: Option<Vec<u8>>,
    transcript: Option<String>,
}

pub async fn create(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let tenant = caller_of(caller).tenant;
    if let Some(f) = Encoders::refusal(&state.model) {
        return Err(f.into());
    }
    let mut multipart = multipart.map_err(|e| not_multipart(&headers, e))?;
    let limit = state.config.voices.max_upload_bytes;
    let upload = read_upload(&mut multipart, limit).await?;
    let name = upload.name.ok_or_else(|| Failure::invalid("name", "is required"))?;
    let name = name.trim().to_string();
    validate_name(&name, "name")?;
    if is_preset(&state.model.config, &name) {
        return Err(Failure::new(ErrorCode::VoiceExists, format!("`{name}` is a preset voice"))
            .with_field("name")
            .into());
    }
    // Before the encoders run; the insert below settles a race between two uploads.
    if state.voices.exists(&tenant, &name).await.map_err(Failure::from)? {
        return Err(Failure::new(
            ErrorCode::VoiceExists,
            format!("a voice named `{name}` already exists; delete it first"),
        )
        .with_field("name")
        .into());
    }
    let audio = upload.audio.ok_or_else(|| Failure::invalid("audio", "is required (the reference clip)"))?;
    let transcript = check_transcript(&state.model, &state.config.limits, upload.transcript, "transcript")?;
    let cloned = state.encoders.clone().clone_voice_async(audio, transcript, "audio").await?;
    check_reference_fits(&state, cloned.reference.as_ref().map_or(0, |r| r.codes.len()))?;
    let voice =
        StoredVoice::new(&name, &state.model.config, cloned.x_vector, cloned.reference, cloned.seconds);
    state.voices.insert(&tenant, &voice).await.map_err(Failure::from)?;
    tracing::info!(voice = %name, %tenant, icl = voice.has_transcript(), seconds = voice.seconds, "voice stored");
    Ok((StatusCode::CREATED, Json(describe(&voice.summary(), true))).into_response())
}

pub async fn remove(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let tenant = caller_of(caller).tenant;
    validate_name(&name, "name")?;
    if is_preset(&state.model.config, &name) {
        return Err(Failure::new(
            ErrorCode::PresetVoice,
            format!("`{name}` is a preset voice of the model; it cannot be deleted"),
        )
        .with_field("name")
        .into());
    }
    if state.voices.remove(&tenant, &name).await.map_err(Failure::from)? {
        tracing::info!(voice = %name, %tenant, "voice deleted");
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(Failure::new(ErrorCode::VoiceNotFound, format!("no stored voice `{name}`"))
            .with_field("name")
            .into())
    }
}

/// A stored voice as `GET /v1/voices` and `POST /v1/voices` show it.
pub fn describe(v: &VoiceSummary, usable: bool) -> serde_json::Value {
    serde_json::json!({
        "name": v.name,
        "kind": "cloned",
        "has_transcript": v.has_transcript,
        "seconds": v.seconds,
        "reference_frames": v.reference_frames,
        "model": v.model.to_string(),
        "usable": usable,
        "created_unix_s": v.created_unix_s,
    })
}

/// A body that is not multipart. A url-encoded form (`curl -d`) is a form without its file, so
/// that error names `audio`.
fn not_multipart(headers: &HeaderMap, e: MultipartRejection) -> Failure {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/x-www-form-urlencoded") {
        return Failure::new(
            ErrorCode::InvalidMultipart,
            "a url-encoded form cannot carry the reference clip: send multipart/form-data (curl -F) \
             with the file in `audio`",
        )
        .with_field("audio");
    }
    Failure::new(
        ErrorCode::InvalidMultipart,
        format!("send multipart/form-data with fields `name`, `audio` and optionally `transcript`: {e}"),
    )
}

async fn read_upload(multipart: &mut Multipart, limit: usize) -> Result<Upload, Failure> {
    let mut up = Upload::default();
    while let Some(field) = multipart.next_field().await.map_err(|e| multipart_error(e, limit))? {
        let name = field.name().unwrap_or("").to_string();
        match name.as_str() {
            "name" => up.name = Some(text(field, "name", limit).await?),
            "transcript" => up.transcript = Some(text(field, "transcript", limit).await?),
            "audio" => up.audio = Some(field.bytes().await.map_err(|e| multipart_error(e, limit))?.to_vec()),
            other => {
                return Err(Failure::invalid(
                    other,
                    format!(
                        "unknown field `{}`; the fields are `name`, `audio` and `transcript`",
                        other.escape_debug()
                    ),
                ))
            }
        }
    }
    Ok(up)
}

async fn text(field: Field<'_>, what: &str, limit: usize) -> Result<String, Failure> {
    let bytes = field.bytes().await.map_err(|e| multipart_error(e, limit))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| Failure::invalid(what, "must be UTF-8 text"))
}

fn multipart_error(e: MultipartError, limit: usize) -> Failure {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return Failure::new(
            ErrorCode::BodyTooLarge,
            format!("the upload exceeds {limit} bytes (voices.max_upload_bytes)"),
        );
    }
    Failure::new(ErrorCode::InvalidMultipart, format!("the multipart body is malformed: {}", e.body_text()))
}

/// An optional transcript: blank means none (x-vector-only cloning).
pub fn check_transcript(
    model: &ModelDir,
    limits: &LimitsSection,
    text: Option<String>,
    field: &str,
) -> Result<Option<String>, Failure> {
    let Some(text) = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) else { return Ok(None) };
    if text.chars().count() > limits.max_text_chars {
        return Err(Failure::new(
            ErrorCode::TextTooLong,
            format!("the {field} exceeds {} characters", limits.max_text_chars),
        )
        .with_field(field));
    }
    if let Some(tok) = model.tokenizer.find_reserved(&text) {
        return Err(Failure::invalid(field, format!("contains the reserved token `{tok}`")));
    }
    Ok(Some(text))
}

/// The reference frames lead every prompt of an ICL voice, which must fit one tick.
pub fn check_reference_fits(state: &AppState, frames: usize) -> Result<(), Failure> {
    let rows = state.config.engine.max_rows_per_tick.min(state.config.engine.max_positions);
    if frames + 64 > rows {
        return Err(Failure::new(ErrorCode::InvalidReferenceAudio, format!(
                "the clip gives {frames} reference frames ({:.1} s); with engine.max_rows_per_tick = {rows} at most {} fit",
                frames as f64 * 0.08,
                rows.saturating_sub(64)
            ),
        )
        .with_field("audio"));
    }
    Ok(())
}
