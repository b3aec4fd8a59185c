//! A `start` that carries `ref_audio`: its voice cloned on the fly (nothing is stored).

use base64::Engine as _;
use lyre_engine::prompt::VoiceSpec;

use super::super::voices::{check_reference_fits, check_transcript};
use super::super::AppState;
use crate::errors::Failure;
use crate::protocol::StartMessage;
use crate::voices::Encoders;

/// The voice of a `start` that carries `ref_audio`, or `None` when it names its voice.
pub(super) async fn inline_voice(
    state: AppState,
    start: &mut StartMessage,
) -> Result<Option<VoiceSpec>, Failure> {
    let Some(b64) = start.ref_audio.take() else {
        if start.ref_text.is_some() {
            return Err(Failure::invalid("ref_text", "needs `ref_audio`"));
        }
        return Ok(None);
    };
    if let Some(f) = Encoders::refusal(&state.model) {
        return Err(f.with_field("ref_audio"));
    }
    if start.voice.as_deref().is_some_and(|v| !v.trim().is_empty()) {
        return Err(Failure::invalid("ref_audio", "give either `voice` or `ref_audio`, not both"));
    }
    let audio = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| Failure::invalid("ref_audio", format!("not base64: {e}")))?;
    let text = check_transcript(&state.model, &state.config.limits, start.ref_text.take(), "ref_text")?;
    let cloned = state.encoders.clone().clone_voice_async(audio, text, "ref_audio").await?;
    check_reference_fits(&state, cloned.reference.as_ref().map_or(0, |r| r.codes.len()))
        .map_err(|f| f.with_field("ref_audio"))?;
    Ok(Some(match cloned.reference {
        Some(reference) => VoiceSpec::Icl { x_vector: cloned.x_vector, reference },
        None => VoiceSpec::Vector(cloned.x_vector),
    }))
}
