//! Starting sessions and feeding them text: validation, prompts, and the segments a long text
//! is spoken in.

use super::segmenting::{fixed_positions, plan_segments, segments_within, transcript_ids, SegmentLimits};
use super::session::{IclPrompt, Session, SessionSetup};
use super::utterance::segment_ids;
use super::{Engine, SessionId, SessionRequest, TextInput};
use crate::error::{EngineError, Result};
use crate::prompt::{
    icl_rows, prefix_rows, text_rows, CodecPart, PromptRow, PromptSpec, TextMode, VoiceSpec,
};

impl Engine {
    /// Validates the request, reserves a KV-cache slot and queues the first prompt. A whole
    /// text longer than one segment is cut into segments ([`Engine::segments`]).
    pub fn start(&mut self, req: SessionRequest) -> Result<SessionId> {
        req.sampling.validate()?;
        if req.max_frames == 0 {
            return Err(EngineError::invalid("max_frames", "must be at least 1"));
        }
        if req.max_frames_per_segment == Some(0) {
            return Err(EngineError::invalid("max_frames_per_segment", "must be at least 1"));
        }
        let prefix = self.prefix_for(&req)?;
        let icl = self.icl_for(&req.voice)?;
        let limits = SegmentLimits::of(&self.opts);
        // As `prompt_overhead` counts it, from the prefix and reference already tokenized.
        let reference = icl.as_ref().map(|(ref_ids, p)| (ref_ids.len(), p.frames as usize));
        let overhead = fixed_positions(prefix.len(), reference);
        let budget = limits.budget(overhead);
        let segments = match &req.text {
            TextInput::Streamed => None,
            _ => Some(segments_within(&self.model, &req, || Ok(budget))?),
        };
        let text_ids = match &segments {
            Some(s) => Some(self.text_ids(&s[0])?),
            None => None,
        };
        let prompt_rows = prefix.len()
            + match (&icl, &text_ids, req.mode) {
                (Some((ref_ids, p)), Some(ids), mode) => {
                    let all: Vec<u32> = ref_ids.iter().chain(ids).copied().collect();
                    icl_rows(&self.model.config, mode, &all, &p.codec).0.len()
                }
                (Some((_, p)), None, _) => p.codec.len(),
                (None, Some(ids), TextMode::NonStreaming) => ids.len() + 2,
                _ => 1,
            };
        self.check_prompt_fits(prompt_rows)?;
        let slot = self.free_slots.pop().ok_or_else(|| {
            EngineError::Capacity(format!("all {} session slots are in use", self.opts.max_sessions))
        })?;
        let id = self.next_id;
        self.next_id += 1;
        // A later segment whose prompt would not fit one tick is cut again when its turn comes.
        let most_tokens = match req.mode {
            TextMode::NonStreaming => limits.prompt_limit().saturating_sub(overhead + 2).min(2 * budget),
            TextMode::Streaming => 2 * budget,
        };
        let mut s = Session::new(SessionSetup {
            id,
            slot,
            mode: req.mode,
            prefix,
            sampling: req.sampling,
            max_frames: req.max_frames,
            utterance_max_frames: req.max_frames_per_segment,
            max_new_tokens: self.model.generation.max_new_tokens,
            segment_tokens: budget,
            most_tokens: most_tokens.max(budget),
            max_positions: self.opts.max_positions,
        });
        if let Some((ref_ids, icl)) = icl {
            s.set_icl(ref_ids, icl);
        }
        match (text_ids, segments) {
            (Some(ids), Some(segments)) => s.set_segments(ids, segments.into_iter().skip(1).collect()),
            _ => s.start_stream(),
        }
        self.sessions.insert(id, s);
        Ok(id)
    }

    /// The segments a request's whole text is spoken in ([`plan_segments`] for this engine):
    /// each is spoken as [`Engine::start`] would speak it alone, with the seed
    /// [`crate::segment::segment_seed`] of its index.
    pub fn segments(&self, req: &SessionRequest) -> Result<Vec<String>> {
        plan_segments(&self.model, SegmentLimits::of(&self.opts), req)
    }

    /// The prompt rows of a whole-text request and the text tokens its frames read afterwards
    /// (after those, every frame reads `tts_pad`).
    pub fn prompt_for(&self, req: &SessionRequest) -> Result<(Vec<PromptRow>, Vec<u32>)> {
        let TextInput::Whole(text) = &req.text else {
            return Err(EngineError::invalid("text", "prompt_for needs the whole text"));
        };
        let mut rows = self.prefix_for(req)?;
        let ids = self.text_ids(text)?;
        let (text_rows, trailing) = match self.icl_for(&req.voice)? {
            Some((ref_ids, icl)) => {
                let all: Vec<u32> = ref_ids.into_iter().chain(ids).collect();
                icl_rows(&self.model.config, req.mode, &all, &icl.codec)
            }
            None => text_rows(&self.model.config, req.mode, &ids)?,
        };
        rows.extend(text_rows);
        Ok((rows, trailing))
    }

    /// For an ICL voice: the reference transcript's ids (`ref_ids[3:-2]`) and the codec rows
    /// (`codec_emb(bos)` and one summed embedding per reference frame, from the GPU).
    fn icl_for(&self, voice: &VoiceSpec) -> Result<Option<(Vec<u32>, IclPrompt)>> {
        let Some(r) = voice.reference() else { return Ok(None) };
        if r.text.trim().is_empty() {
            return Err(EngineError::invalid(
                "ref_text",
                "is empty; leave it out for an x-vector-only clone",
            ));
        }
        if r.codes.is_empty() {
            return Err(EngineError::invalid("ref_audio", "the reference has no codec frames"));
        }
        let limit = self.reference.max_frames.min(self.plan.limits.max_rows) - 1;
        if r.codes.len() > limit {
            return Err(EngineError::invalid(
                "ref_audio",
                format!("the reference has {} frames; this engine takes at most {limit}", r.codes.len()),
            ));
        }
        let codebook = self.model.speech_config.decoder_config.codebook_size;
        if r.codes.iter().flatten().any(|&c| c as usize >= codebook) {
            return Err(EngineError::invalid("ref_codes", format!("codes must be below {codebook}")));
        }
        let ref_ids = transcript_ids(&self.model.tokenizer, &r.text)?;
        let sums = self.reference.embed_frames(&self.gpu, &r.codes)?;
        let bos = CodecPart::Id(self.model.config.talker_config.codec_bos_id);
        let codec = std::iter::once(bos).chain(sums.into_iter().map(CodecPart::Vector)).collect();
        let frames = r.codes.len() as u32;
        Ok(Some((ref_ids, IclPrompt { codec, codes: Some(r.codes.clone()), frames })))
    }

    fn prefix_for(&self, req: &SessionRequest) -> Result<Vec<PromptRow>> {
        let instruct_ids = match req.instruct.as_deref() {
            Some(s) if !s.trim().is_empty() => Some(self.model.tokenizer.instruct_ids(s)?),
            _ => None,
        };
        let spec =
            PromptSpec { voice: &req.voice, language: &req.language, instruct_ids: instruct_ids.as_deref() };
        prefix_rows(&self.model.config, &spec, &self.model.tokenizer.role_ids())
    }

    /// The ids of `text` inside the assistant turn of the chat template.
    fn text_ids(&self, text: &str) -> Result<Vec<u32>> {
        segment_ids(&self.model.tokenizer, text)
    }

    fn prompt_limit(&self) -> usize {
        SegmentLimits::of(&self.opts).prompt_limit()
    }

    fn check_prompt_fits(&self, rows: usize) -> Result<()> {
        let limit = self.prompt_limit();
        if rows > limit {
            return Err(EngineError::invalid(
                "text",
                format!("the prompt needs {rows} positions, more than the {limit} one tick can take"),
            ));
        }
        Ok(())
    }

    /// More text for a session started with [`TextInput::Streamed`]. It joins the utterance
    /// being spoken (or the next, after [`Engine::end_utterance`]); from half a segment's
    /// budget on, the utterance ends at the next sentence end and the text after it starts a
    /// new utterance in the same session (the same for a long piece: it is cut as a whole text
    /// would be), so a stream of any length never fills the cache.
    pub fn append_text(&mut self, id: SessionId, text: &str) -> Result<()> {
        let limit = self.prompt_limit();
        let s = self.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        s.append_text(&self.model.tokenizer, text)?;
        if let Some(n) = s.prompt_len() {
            if n > limit {
                return Err(EngineError::invalid(
                    "text",
                    format!("the prompt needs {n} positions (limit {limit})"),
                ));
            }
        }
        Ok(())
    }

    /// No more text will come for this session: its last utterance is spoken to its end, and
    /// then the session finishes.
    pub fn end_text(&mut self, id: SessionId) -> Result<()> {
        let s = self.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        s.end_text(&self.model.tokenizer)
    }

    /// Ends the utterance of a streamed session's text so far, as [`Engine::end_text`] would,
    /// but keeps the session: text appended later starts the next utterance in the same slot
    /// (a new prompt from position zero, the next segment's seed), and its audio continues the
    /// same stream. Frames carry the utterance's index in [`Frame::segment`](super::Frame::segment). With nothing
    /// appended since the last utterance ended, this does nothing and returns false; otherwise
    /// the step that speaks the flushed text's last frame reports [`StepOutput::flushed`](super::StepOutput::flushed).
    pub fn end_utterance(&mut self, id: SessionId) -> Result<bool> {
        let s = self.sessions.get_mut(&id).ok_or(EngineError::UnknownSession(id))?;
        s.end_utterance(&self.model.tokenizer)
    }

    /// Utterances the session has still to speak, the current one included (`None` while its
    /// text is still arriving, or for an unknown session).
    pub fn segments_left(&self, id: SessionId) -> Option<usize> {
        self.sessions.get(&id).and_then(|s| s.utterances_left())
    }

    /// Text tokens the session has received so far (`None` for an unknown session).
    pub fn text_tokens(&self, id: SessionId) -> Option<usize> {
        self.sessions.get(&id).map(|s| s.text_tokens)
    }

    /// Lowers a session's frame limit (never raises it); for caps known only once text ends.
    pub fn cap_frames(&mut self, id: SessionId, max_frames: u32) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.max_frames = s.max_frames.min(max_frames.max(1));
        }
    }
}
