//! Validation of the synthesis fields every endpoint accepts into an engine
//! [`SessionRequest`]. Errors name the field.

use std::collections::BTreeMap;

use lyre_engine::checkpoint::config::ModelType;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::policy::check_voice_and_instruct;
use lyre_engine::prompt::{prefix_rows, PromptSpec, TextMode, VoiceSpec};
use lyre_engine::sampling::{SamplingOverrides, SamplingParams};
use lyre_engine::{plan_segments, SegmentLimits, SessionRequest, TextInput};

use crate::config::LimitsSection;
use crate::errors::{ErrorCode, Failure};
use crate::protocol::SynthesisFields;
use crate::voices::{is_preset, preset_alias};

/// Longest `instruct`, in characters: it is part of every segment's prompt.
pub const MAX_INSTRUCT_CHARS: usize = 4096;

/// What validation needs to know about the served model.
pub struct Validator<'a> {
    pub model: &'a ModelDir,
    pub limits: &'a LimitsSection,
    /// `voices.aliases`: other names for presets (OpenAI's `alloy`, ...).
    pub aliases: Option<&'a BTreeMap<String, String>>,
    /// How the engine cuts a long text into segments.
    pub segments: SegmentLimits,
}

impl Validator<'_> {
    /// Checks the text of a whole-text request; returns its token count.
    pub fn check_text(&self, text: &str, field: &str) -> Result<usize, Failure> {
        if text.trim().is_empty() {
            return Err(Failure::invalid(field, "is empty"));
        }
        let chars = text.chars().count();
        if chars > self.limits.max_text_chars {
            return Err(Failure::new(
                ErrorCode::TextTooLong,
                format!("{chars} characters; the limit is {}", self.limits.max_text_chars),
            )
            .with_field(field));
        }
        if let Some(tok) = self.model.tokenizer.find_reserved(text) {
            return Err(Failure::invalid(field, format!("contains the reserved token `{tok}`")));
        }
        let ids =
            self.model.tokenizer.assistant_text_ids(text).map_err(|e| Failure::from(&e).with_field(field))?;
        Ok(ids.len().saturating_sub(8))
    }

    /// Builds the engine request. `text` is `None` for text that will be streamed.
    pub fn build(
        &self,
        fields: &SynthesisFields,
        text: Option<&str>,
        default_mode: TextMode,
    ) -> Result<SessionRequest, Failure> {
        self.build_with_voice(fields, text, default_mode, None)
    }

    /// [`Validator::build`] with a voice found beforehand (a stored voice, looked up by the
    /// async handler, or one cloned from WebSocket `ref_audio`), which takes the place of `voice`.
    pub fn build_with_voice(
        &self,
        fields: &SynthesisFields,
        text: Option<&str>,
        default_mode: TextMode,
        inline: Option<VoiceSpec>,
    ) -> Result<SessionRequest, Failure> {
        let cfg = &self.model.config;
        if let Some(t) = text {
            self.check_text(t, "text")?;
        }
        let voice = match inline {
            Some(v) => v,
            None => self.resolve_voice(fields.voice.as_deref())?,
        };
        let instruct = fields.instruct.clone().filter(|s| !s.trim().is_empty());
        if let Some(i) = &instruct {
            if let Some(tok) = self.model.tokenizer.find_reserved(i) {
                return Err(Failure::invalid("instruct", format!("contains the reserved token `{tok}`")));
            }
            if i.chars().count() > MAX_INSTRUCT_CHARS {
                return Err(Failure::new(
                    ErrorCode::TextTooLong,
                    format!("instruct is longer than {MAX_INSTRUCT_CHARS} characters"),
                )
                .with_field("instruct"));
            }
        }
        if matches!(voice, VoiceSpec::None) && cfg.tts_model_type == ModelType::CustomVoice {
            let valid = lyre_engine::prompt::speakers(cfg).join(", ");
            return Err(Failure::new(
                ErrorCode::UnknownVoice,
                format!("give a voice; this model has: {valid}"),
            )
            .with_field("voice"));
        }
        check_voice_and_instruct(cfg, &voice, instruct.as_deref()).map_err(|e| Failure::from(&e))?;
        let language = fields.language.clone().unwrap_or_else(|| "auto".into());
        // The prompt prefix checks the speaker and the language exactly as the engine will.
        let spec = PromptSpec { voice: &voice, language: &language, instruct_ids: None };
        let role = self.model.tokenizer.assistant_text_ids("").map_err(|e| Failure::from(&e))?;
        prefix_rows(cfg, &spec, &[role[0], role[1], role[2]]).map_err(|e| Failure::from(&e))?;
        let mode = match fields.text_mode.as_deref() {
            None => default_mode,
            Some("whole") | Some("non_streaming") => TextMode::NonStreaming,
            Some("streaming") => TextMode::Streaming,
            Some(other) => {
                return Err(Failure::invalid(
                    "text_mode",
                    format!("`{other}` is not `whole` or `streaming`"),
                ));
            }
        };
        let sampling = self.sampling(fields)?;
        // Each segment is also held to a limit in proportion to its text (the engine's), so
        // a session that never hears EOS still ends; these caps are on the whole session.
        let cap = if self.limits.max_frames > 0 { self.limits.max_frames } else { u32::MAX };
        let max_frames = match fields.max_frames {
            Some(0) => return Err(Failure::invalid("max_frames", "must be at least 1")),
            Some(n) => n.min(cap),
            None => cap,
        };
        Ok(SessionRequest {
            text: match text {
                Some(t) => TextInput::Whole(t.to_string()),
                None => TextInput::Streamed,
            },
            voice,
            language,
            instruct,
            mode,
            sampling,
            max_frames,
            max_frames_per_segment: None,
        })
    }

    /// Cuts a whole-text request's text into the segments the engine will speak (see
    /// [`plan_segments`]) and returns how many there are. Tokenizes the whole text: call it
    /// off the async threads (`blocking`) for long texts.
    pub fn segment(&self, request: &mut SessionRequest) -> Result<usize, Failure> {
        if !matches!(request.text, TextInput::Whole(_)) {
            return Ok(0);
        }
        let segments = plan_segments(self.model, self.segments, request).map_err(|e| Failure::from(&e))?;
        let n = segments.len();
        request.text = TextInput::Segments(segments);
        Ok(n)
    }

    /// A preset speaker (by name or alias), or no voice. Stored voices were looked up before
    /// (`voices::stored_voice`): a name that reaches here on a Base model is unknown.
    pub fn resolve_voice(&self, name: Option<&str>) -> Result<VoiceSpec, Failure> {
        let cfg = &self.model.config;
        let name = name.map(str::trim).filter(|n| !n.is_empty());
        match (cfg.tts_model_type, name) {
            (ModelType::Base, None) => Err(Failure::invalid(
                "voice",
                "a Base model clones a voice: upload one with POST /v1/voices and give its name, \
                 or send `ref_audio` in a WebSocket `start`",
            )),
            (ModelType::Base, Some(name)) => Err(Failure::new(
                ErrorCode::UnknownVoice,
                format!(
                    "no voice `{}` among your voices; upload one with POST /v1/voices (GET /v1/voices lists them)",
                    name.escape_debug()
                ),
            )
            .with_field("voice")),
            (_, Some(name)) if !is_preset(cfg, name) => {
                let alias = self.aliases.and_then(|a| preset_alias(cfg, a, name));
                Ok(VoiceSpec::Speaker(alias.unwrap_or(name).to_string()))
            }
            (_, Some(name)) => Ok(VoiceSpec::Speaker(name.to_string())),
            (_, None) => Ok(VoiceSpec::None),
        }
    }

    fn sampling(&self, f: &SynthesisFields) -> Result<SamplingParams, Failure> {
        let seed = f.seed.unwrap_or_else(rand::random);
        let overrides = SamplingOverrides {
            temperature: bounded(
                f.temperature,
                "temperature",
                |t| (0.001..=100.0).contains(&t),
                "[0.001, 100]",
            )?,
            top_k: f.top_k,
            // A positive top_p too small for f32 still means "the likeliest token only".
            top_p: bounded(f.top_p, "top_p", |p| p > 0.0 && p <= 1.0, "(0, 1]")?
                .map(|p| p.max(f32::MIN_POSITIVE)),
            repetition_penalty: bounded(
                f.repetition_penalty,
                "repetition_penalty",
                |r| (0.1..=10.0).contains(&r),
                "[0.1, 10]",
            )?,
            greedy: f.greedy == Some(true),
            ignore_eos: f.ignore_eos == Some(true),
        };
        let s =
            SamplingParams::from_generation_config(&self.model.generation, seed).with_overrides(&overrides);
        s.validate().map_err(|e| Failure::from(&e))?;
        Ok(s)
    }
}

/// A sampling number checked in f64 against its bounds, then as the sampler's f32.
fn bounded(
    value: Option<f64>,
    field: &str,
    ok: impl Fn(f64) -> bool,
    range: &str,
) -> Result<Option<f32>, Failure> {
    match value {
        Some(v) if !ok(v) => Err(Failure::invalid(field, format!("must be in {range}, got {v}"))),
        v => Ok(v.map(|v| v as f32)),
    }
}

/// Runs CPU-heavy request work (tokenizing and cutting a long text) on tokio's blocking pool.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::http::error::ApiError> + Send + 'static,
) -> Result<T, crate::http::error::ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Failure::new(ErrorCode::EngineError, format!("preparing the request failed: {e}")))?
}
