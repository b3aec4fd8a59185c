//! The talker's two-channel prompt: each position is a text-channel embedding (a projected
//! text token) plus a codec-channel embedding (a codec token or a speaker vector). See the
//! model spec, "Special ids and prompt format".

use crate::checkpoint::config::{ModelConfig, ModelType};
use crate::error::{EngineError, Result};

/// The codec channel of one prompt position.
#[derive(Debug, Clone, PartialEq)]
pub enum CodecPart {
    None,
    Id(u32),
    /// A vector of talker width (a speaker x-vector).
    Vector(Vec<f32>),
}

/// One talker input position.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptRow {
    pub text: Option<u32>,
    pub codec: CodecPart,
}

impl PromptRow {
    fn text(id: u32) -> Self {
        PromptRow { text: Some(id), codec: CodecPart::None }
    }
    fn both(text: u32, codec: u32) -> Self {
        PromptRow { text: Some(text), codec: CodecPart::Id(codec) }
    }
}

/// How the text reaches the talker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextMode {
    /// The whole text is in the prefill; every frame then reads `tts_pad`.
    NonStreaming,
    /// The first text token is in the prefill and one more is read per frame.
    Streaming,
}

/// Who speaks.
#[derive(Debug, Clone, PartialEq)]
pub enum VoiceSpec {
    /// A CustomVoice preset speaker, by name (case-insensitive).
    Speaker(String),
    /// No speaker position (VoiceDesign: the instruct describes the voice).
    None,
    /// A speaker vector (Base models: an x-vector from reference audio).
    Vector(Vec<f32>),
    /// A cloned voice with its reference (Base models, in-context learning): the x-vector
    /// takes the speaker position and the reference's transcript and codec frames lead the
    /// prompt, so the model continues the reference clip.
    Icl { x_vector: Vec<f32>, reference: VoiceReference },
}

/// The in-context part of a cloned voice: what the reference clip says and its codec frames.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceReference {
    pub text: String,
    pub codes: Vec<[u16; 16]>,
}

impl VoiceSpec {
    /// The speaker vector of a cloned voice.
    pub fn x_vector(&self) -> Option<&[f32]> {
        match self {
            VoiceSpec::Vector(v) | VoiceSpec::Icl { x_vector: v, .. } => Some(v),
            _ => None,
        }
    }

    pub fn reference(&self) -> Option<&VoiceReference> {
        match self {
            VoiceSpec::Icl { reference, .. } => Some(reference),
            _ => None,
        }
    }
}

/// What decides the prompt besides the text.
#[derive(Debug, Clone)]
pub struct PromptSpec<'a> {
    pub voice: &'a VoiceSpec,
    /// `auto` or a key of `codec_language_id` (case-insensitive).
    pub language: &'a str,
    /// Token ids of `<|im_start|>user\n{instruct}<|im_end|>\n`.
    pub instruct_ids: Option<&'a [u32]>,
}

/// The positions before the text: instruct, role, codec prefix with speaker.
/// `role_ids` are the three ids of `<|im_start|>assistant\n`.
pub fn prefix_rows(cfg: &ModelConfig, spec: &PromptSpec, role_ids: &[u32; 3]) -> Result<Vec<PromptRow>> {
    let t = &cfg.talker_config;
    let mut rows = Vec::new();
    if let Some(ids) = spec.instruct_ids {
        rows.extend(ids.iter().map(|&id| PromptRow::text(id)));
    }
    rows.extend(role_ids.iter().map(|&id| PromptRow::text(id)));
    let mut codec = Vec::new();
    match language_id(cfg, spec)? {
        None => {
            codec.extend([t.codec_nothink_id, t.codec_think_bos_id, t.codec_think_eos_id].map(CodecPart::Id))
        }
        Some(lang) => codec
            .extend([t.codec_think_id, t.codec_think_bos_id, lang, t.codec_think_eos_id].map(CodecPart::Id)),
    }
    match spec.voice {
        VoiceSpec::Speaker(name) => codec.push(CodecPart::Id(speaker_id(cfg, name)?)),
        VoiceSpec::Vector(v) | VoiceSpec::Icl { x_vector: v, .. } => {
            if v.len() != t.hidden_size {
                return Err(EngineError::invalid(
                    "voice",
                    format!("speaker vector has {} values, the talker needs {}", v.len(), t.hidden_size),
                ));
            }
            codec.push(CodecPart::Vector(v.clone()))
        }
        VoiceSpec::None => {}
    }
    codec.push(CodecPart::Id(t.codec_pad_id));
    // The last codec entry (bos) pairs with the first text token, after this prefix.
    let n = codec.len();
    for (i, c) in codec.into_iter().enumerate() {
        let text = if i + 1 == n { cfg.tts_bos_token_id } else { cfg.tts_pad_token_id };
        rows.push(PromptRow { text: Some(text), codec: c });
    }
    Ok(rows)
}

/// The rows that carry the text, and the text tokens read one per frame afterwards.
pub fn text_rows(cfg: &ModelConfig, mode: TextMode, text_ids: &[u32]) -> Result<(Vec<PromptRow>, Vec<u32>)> {
    let t = &cfg.talker_config;
    let (first, rest) = text_ids.split_first().ok_or_else(|| EngineError::invalid("text", "is empty"))?;
    Ok(match mode {
        TextMode::Streaming => {
            let mut trailing = rest.to_vec();
            trailing.push(cfg.tts_eos_token_id);
            (vec![PromptRow::both(*first, t.codec_bos_id)], trailing)
        }
        TextMode::NonStreaming => {
            let mut rows: Vec<PromptRow> =
                text_ids.iter().map(|&id| PromptRow::both(id, t.codec_pad_id)).collect();
            rows.push(PromptRow::both(cfg.tts_eos_token_id, t.codec_pad_id));
            rows.push(PromptRow::both(cfg.tts_pad_token_id, t.codec_bos_id));
            (rows, Vec::new())
        }
    })
}

/// The ICL rows after the prefix and the text tokens read one per frame afterwards.
/// `text_ids` are the reference transcript's ids followed by the text's (no `tts_eos`);
/// `codec` is `codec_emb(bos)` followed by one summed embedding per reference frame.
/// Streaming pairs text and codec position by position (the longer text continues one token
/// per frame; a shorter one is padded with `tts_pad`); non-streaming puts the whole text
/// (with `codec_pad`) first and the reference frames (with `tts_pad`) after it.
pub fn icl_rows(
    cfg: &ModelConfig,
    mode: TextMode,
    text_ids: &[u32],
    codec: &[CodecPart],
) -> (Vec<PromptRow>, Vec<u32>) {
    let t = &cfg.talker_config;
    let mut text = text_ids.to_vec();
    text.push(cfg.tts_eos_token_id);
    match mode {
        TextMode::Streaming => {
            let n = codec.len();
            let trailing = if text.len() > n { text.split_off(n) } else { Vec::new() };
            text.resize(n, cfg.tts_pad_token_id);
            let rows =
                text.into_iter().zip(codec).map(|(id, c)| PromptRow { text: Some(id), codec: c.clone() });
            (rows.collect(), trailing)
        }
        TextMode::NonStreaming => {
            let mut rows: Vec<PromptRow> =
                text.into_iter().map(|id| PromptRow::both(id, t.codec_pad_id)).collect();
            rows.extend(
                codec.iter().map(|c| PromptRow { text: Some(cfg.tts_pad_token_id), codec: c.clone() }),
            );
            (rows, Vec::new())
        }
    }
}

/// `None` for automatic language detection. A speaker with a dialect turns `auto` and
/// `chinese` into that dialect.
fn language_id(cfg: &ModelConfig, spec: &PromptSpec) -> Result<Option<u32>> {
    let t = &cfg.talker_config;
    let lang = spec.language.to_lowercase();
    if let VoiceSpec::Speaker(name) = spec.voice {
        if lang == "auto" || lang == "chinese" {
            if let Some(dialect) = t.spk_is_dialect.get(&name.to_lowercase()).and_then(|d| d.language()) {
                return Ok(t.codec_language_id.get(dialect).copied());
            }
        }
    }
    if lang == "auto" {
        return Ok(None);
    }
    t.codec_language_id.get(&lang).copied().map(Some).ok_or_else(|| EngineError::UnknownLanguage {
        name: spec.language.to_string(),
        valid: std::iter::once("auto".to_string()).chain(t.codec_language_id.keys().cloned()).collect(),
    })
}

fn speaker_id(cfg: &ModelConfig, name: &str) -> Result<u32> {
    let t = &cfg.talker_config;
    if cfg.tts_model_type != ModelType::CustomVoice || t.spk_id.is_empty() {
        return Err(EngineError::invalid(
            "voice",
            format!("this {} model has no preset speakers", cfg.tts_model_type.as_str()),
        ));
    }
    t.spk_id.get(&name.to_lowercase()).copied().ok_or_else(|| EngineError::UnknownSpeaker {
        name: name.to_string(),
        valid: t.spk_id.keys().cloned().collect(),
    })
}

/// The preset speakers of a CustomVoice model, sorted.
pub fn speakers(cfg: &ModelConfig) -> Vec<String> {
    cfg.talker_config.spk_id.keys().cloned().collect()
}

/// `auto` followed by every language of the model.
pub fn languages(cfg: &ModelConfig) -> Vec<String> {
    std::iter::once("auto".to_string()).chain(cfg.talker_config.codec_language_id.keys().cloned()).collect()
}
