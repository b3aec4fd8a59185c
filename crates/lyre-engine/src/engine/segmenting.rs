//! How a request's whole text is cut into segments: the token budget its prompt leaves in the
//! KV cache. Needs no GPU, so a front end can cut a long text (and count its segments) off the
//! engine's thread and pass [`TextInput::Segments`](super::TextInput::Segments).

use super::{EngineOptions, SessionRequest, TextInput};
use crate::checkpoint::tokenizer::TextTokenizer;
use crate::checkpoint::ModelDir;
use crate::error::{EngineError, Result};
use crate::prompt::{prefix_rows, PromptSpec};
use crate::segment::{default_segment_tokens, split_text, MIN_SEGMENT_TOKENS};

/// The engine sizes that decide a segment's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentLimits {
    pub max_positions: usize,
    /// Rows one tick takes, which bounds a prompt.
    pub max_rows: usize,
    /// [`EngineOptions::segment_tokens`] (0: the default for the cache).
    pub segment_tokens: usize,
}

impl SegmentLimits {
    pub fn of(opts: &EngineOptions) -> Self {
        SegmentLimits {
            max_positions: opts.max_positions,
            max_rows: opts.max_rows_per_tick.max(opts.max_sessions),
            segment_tokens: opts.segment_tokens,
        }
    }

    /// Most rows one prompt may have: one tick takes it whole, and the cache must hold it.
    pub fn prompt_limit(&self) -> usize {
        self.max_rows.min(self.max_positions.saturating_sub(1))
    }

    /// Text tokens per segment for a prompt whose fixed part takes `overhead` positions.
    pub fn budget(&self, overhead: usize) -> usize {
        match self.segment_tokens {
            0 => default_segment_tokens(self.max_positions, overhead)
                .min(self.prompt_limit().saturating_sub(overhead + 2))
                .max(MIN_SEGMENT_TOKENS),
            n => n,
        }
    }
}

/// Positions the fixed part of `req`'s prompt takes: the prefix (instruct, role, codec prefix
/// with the speaker) and, for a voice cloned in context, its reference transcript and frames.
pub fn prompt_overhead(model: &ModelDir, req: &SessionRequest) -> Result<usize> {
    let tok = &model.tokenizer;
    let instruct_ids = match req.instruct.as_deref() {
        Some(s) if !s.trim().is_empty() => Some(tok.instruct_ids(s)?),
        _ => None,
    };
    let spec =
        PromptSpec { voice: &req.voice, language: &req.language, instruct_ids: instruct_ids.as_deref() };
    let prefix = prefix_rows(&model.config, &spec, &tok.role_ids())?.len();
    let reference = match req.voice.reference() {
        Some(r) => Some((transcript_ids(tok, &r.text)?.len(), r.codes.len())),
        None => None,
    };
    Ok(fixed_positions(prefix, reference))
}

/// The ids a reference transcript puts in an ICL prompt: `ref_ids[3:-2]`, without the chat
/// template around it.
pub(super) fn transcript_ids(tok: &TextTokenizer, ref_text: &str) -> Result<Vec<u32>> {
    let ids = tok.ref_text_ids(ref_text)?;
    Ok(ids[3..ids.len().saturating_sub(2).max(3)].to_vec())
}

/// [`prompt_overhead`] of a prompt whose prefix has `prefix` rows and whose voice, cloned in
/// context, has a reference transcript of `(ids, frames)`.
pub(super) fn fixed_positions(prefix: usize, reference: Option<(usize, usize)>) -> usize {
    // The transcript, `codec_emb(bos)` + one row per frame, and the text's closing row.
    prefix + reference.map_or(0, |(ids, frames)| ids + 1 + frames + 1)
}

/// The segments `req`'s whole text is spoken in on an engine of these limits: one for a text
/// that fits, else cut at sentence ends (then clauses, then spaces; see
/// [`crate::segment::split`]) into pieces of at most the budget's text tokens, each trimmed.
pub fn plan_segments(model: &ModelDir, limits: SegmentLimits, req: &SessionRequest) -> Result<Vec<String>> {
    segments_within(model, req, || Ok(limits.budget(prompt_overhead(model, req)?)))
}

/// [`plan_segments`] with the segment budget from `budget`, asked for only to cut a whole text.
pub(super) fn segments_within(
    model: &ModelDir,
    req: &SessionRequest,
    budget: impl FnOnce() -> Result<usize>,
) -> Result<Vec<String>> {
    match &req.text {
        TextInput::Whole(text) => {
            if text.trim().is_empty() {
                return Err(EngineError::invalid("text", "is empty"));
            }
            model.tokenizer.reject_reserved("text", text)?;
            Ok(split_text(&model.tokenizer, text, budget()?))
        }
        TextInput::Segments(given) => nonempty(given),
        TextInput::Streamed => Err(EngineError::invalid("text", "streamed text has no segments yet")),
    }
}

/// The given segments, trimmed, without empty ones; at least one.
pub(super) fn nonempty(segments: &[String]) -> Result<Vec<String>> {
    let kept: Vec<String> =
        segments.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    if kept.is_empty() {
        return Err(EngineError::invalid("text", "is empty"));
    }
    Ok(kept)
}
