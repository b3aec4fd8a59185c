//! One speaking session: its utterances (whole-text segments, or text still arriving), its
//! prompt, and where it is.
//!
//! A session speaks one utterance after another in its KV-cache slot. Each utterance is its own
//! prompt from position zero (the same prefix: voice, language, instruct, a cloned voice's
//! reference) with its own seed ([`segment_seed`] of the request's seed and the utterance's
//! index) and its own frame limit; the sampler's history and step counter restart, so an
//! utterance's codes are those of its text spoken alone. The codec decoder's slot carries on
//! from the last frame of the previous utterance, so the audio is one stream. Utterances come
//! from cutting a long text into segments, from rolling streamed text over at a sentence end
//! before the cache fills, and from [`Session::end_utterance`] (a client's flush).

use std::collections::VecDeque;

use super::utterance::Utterance;
use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::tokenizer::TextTokenizer;
use crate::error::{EngineError, Result};
use crate::policy::frames_for_tokens;
use crate::prompt::{icl_rows, text_rows, CodecPart, PromptRow, TextMode};
use crate::sampling::SamplingParams;
use crate::segment::{rollover_cut, segment_seed, token_count};

pub type SessionId = u64;

/// Why a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// The talker chose EOS (that frame is not emitted).
    Eos,
    /// `max_frames` frames were emitted.
    MaxFrames,
    /// The session's KV-cache slot is full.
    ContextFull,
    /// Streamed text ended without a single token.
    EmptyText,
    Cancelled,
    /// The GPU's results for this session's last frame could not be trusted (a persistent
    /// layer's grid barrier gave up); the engine switched to separate dispatches.
    GpuFault,
}

/// What the talker reads next for this session.
pub(crate) enum NextInput {
    /// The whole prompt (first tick).
    Prompt(Vec<PromptRow>),
    /// One frame step with this text-channel token.
    Step(u32),
    /// Nothing yet: waiting for more text.
    Wait,
}

/// The in-context part of a cloned voice's prompt.
pub(crate) struct IclPrompt {
    /// `codec_emb(bos)`, then each reference frame's summed embedding.
    pub codec: Vec<CodecPart>,
    /// The reference frames, which prime the decoder at prefill; taken then.
    pub codes: Option<Vec<[u16; 16]>>,
    /// How many reference frames precede the generated ones in the decoder.
    pub frames: u32,
}

/// Everything a session is created with.
pub(crate) struct SessionSetup {
    pub id: SessionId,
    pub slot: u32,
    pub mode: TextMode,
    /// Prompt rows before the text, the same for every utterance.
    pub prefix: Vec<PromptRow>,
    pub sampling: SamplingParams,
    /// Frames the whole session may emit.
    pub max_frames: u32,
    /// Frames one utterance may emit; `None`: in proportion to its text tokens.
    pub utterance_max_frames: Option<u32>,
    /// The checkpoint's `max_new_tokens`, which bounds the proportional limit.
    pub max_new_tokens: u32,
    /// Text tokens per utterance before streamed text rolls over.
    pub segment_tokens: usize,
    /// A segment with more tokens than this is cut again when its turn comes (its prompt
    /// would not fit one tick).
    pub most_tokens: usize,
    /// KV-cache positions of the slot.
    pub max_positions: usize,
}

pub(crate) struct Session {
    pub id: SessionId,
    pub slot: u32,
    /// The current utterance's sampling (its seed derived from the request's).
    pub sampling: SamplingParams,
    request_seed: u64,
    pub max_frames: u32,
    utterance_max_frames: Option<u32>,
    max_new_tokens: u32,
    segment_tokens: usize,
    most_tokens: usize,
    max_positions: usize,
    mode: TextMode,
    prefix: Vec<PromptRow>,
    icl: Option<IclPrompt>,
    /// An ICL voice's reference transcript ids, which lead every utterance's text.
    lead: Vec<u32>,
    /// The current utterance first, then the ones whose text is known.
    utterances: VecDeque<Utterance>,
    /// No more text (or utterances) will come.
    text_ended: bool,
    /// Text tokens received so far (whole or streamed).
    pub text_tokens: usize,
    /// Index of the current utterance (of the next one, between utterances).
    pub utterance: u32,
    /// The current utterance's prompt has been fed.
    pub prefilled: bool,
    /// The next KV-cache position.
    pub pos: u32,
    /// Rows of the current utterance's prompt (once fed).
    pub prompt_rows: u32,
    /// Frames emitted by the session.
    pub frames: u32,
    /// Frames emitted by the current utterance.
    pub utterance_frames: u32,
    /// First-codebook samples drawn in the current utterance (the sampler's step counter).
    pub gen_index: u32,
    /// Frames emitted before the current utterance.
    frames_before: u32,
    /// The decoder slot has been reset (and primed) for this session.
    pub decoder_started: bool,
    /// Why the last utterance ended.
    last_end: Option<FinishReason>,
    /// A flushed utterance has just been spoken to its end (read once, by the tick).
    pub flush_done: bool,
}

impl Session {
    pub fn new(s: SessionSetup) -> Self {
        Session {
            id: s.id,
            slot: s.slot,
            request_seed: s.sampling.seed,
            sampling: s.sampling,
            max_frames: s.max_frames,
            utterance_max_frames: s.utterance_max_frames,
            max_new_tokens: s.max_new_tokens,
            segment_tokens: s.segment_tokens,
            most_tokens: s.most_tokens,
            max_positions: s.max_positions,
            mode: s.mode,
            prefix: s.prefix,
            icl: None,
            lead: Vec::new(),
            utterances: VecDeque::new(),
            text_ended: false,
            text_tokens: 0,
            utterance: 0,
            prefilled: false,
            pos: 0,
            prompt_rows: 0,
            frames: 0,
            utterance_frames: 0,
            gen_index: 0,
            frames_before: 0,
            decoder_started: false,
            last_end: None,
            flush_done: false,
        }
    }

    /// Makes this an in-context (ICL) session: `ref_ids` (the reference transcript) lead every
    /// utterance's text and `icl.codec` the codec channel. Call before any text.
    pub fn set_icl(&mut self, ref_ids: Vec<u32>, icl: IclPrompt) {
        self.lead = ref_ids;
        self.icl = Some(icl);
    }

    /// Reference frames the decoder runs before this session's first frame (taken once).
    pub fn take_prime(&mut self) -> Option<Vec<[u16; 16]>> {
        self.icl.as_mut().and_then(|i| i.codes.take())
    }

    /// The decoder's frame index of this session's next frame: the stream goes on across
    /// utterances (a frame that ended an utterance with EOS never reached the decoder's state).
    pub fn decoder_frame(&self) -> u32 {
        self.icl.as_ref().map_or(0, |i| i.frames) + self.frames_before + self.gen_index
    }

    /// The whole text, already tokenized (one utterance).
    pub fn set_text(&mut self, ids: Vec<u32>) {
        self.text_tokens += ids.len();
        self.utterances.push_back(Utterance::tokenized(ids, &self.lead));
        self.text_ended = true;
    }

    /// A whole text in segments, spoken one after another: the first already tokenized (its
    /// prompt was checked), the rest tokenized when their turn comes.
    pub fn set_segments(&mut self, first: Vec<u32>, rest: Vec<String>) {
        self.set_text(first);
        for text in rest {
            self.utterances.push_back(Utterance::segment(text, &self.lead));
        }
    }

    /// Text will arrive in pieces.
    pub fn start_stream(&mut self) {
        self.utterances.push_back(Utterance::streamed(&self.lead));
    }

    /// More streamed text. It goes to the last utterance while that one is open; from half the
    /// segment budget on, the utterance ends at the first sentence end and the rest starts the
    /// next one (past the budget, at the best cut that fits), so no utterance fills the cache.
    pub fn append_text(&mut self, tok: &TextTokenizer, piece: &str) -> Result<()> {
        if self.text_ended {
            return Err(EngineError::invalid("text", "this session's text has already ended"));
        }
        let mut rest = piece;
        while !rest.is_empty() {
            if self.utterances.back().is_none_or(|u| u.text_done()) {
                self.utterances.push_back(Utterance::streamed(&self.lead));
            }
            let budget = self.segment_tokens;
            let open = self.utterances.back_mut().expect("an open utterance");
            let before = open.tokens;
            let cut = rollover_cut(&open.context, rest, open.measured, budget, &mut |s| token_count(tok, s));
            let at = cut.unwrap_or(rest.len());
            if at > 0 {
                open.push(tok, &rest[..at], token_count(tok, &rest[..at]))?;
            }
            if cut.is_some() {
                open.close(tok)?;
            }
            self.text_tokens += open.tokens - before;
            rest = &rest[at..];
        }
        self.settle(tok)
    }

    /// Ends the current streamed utterance (a flush): the text so far is spoken as at the end
    /// of the session, and text that comes later starts the next utterance. True when there is
    /// something to speak, whose end the tick then reports ([`Session::flush_done`]); false when
    /// no text came since the last utterance ended.
    pub fn end_utterance(&mut self, tok: &TextTokenizer) -> Result<bool> {
        if self.text_ended {
            return Err(EngineError::invalid("text", "this session's text has already ended"));
        }
        let open = match self.utterances.back_mut() {
            Some(u) if !u.text_done() => {
                u.flushed = true;
                true
            }
            _ => false,
        };
        self.close_last(tok)?;
        self.settle(tok)?;
        // An utterance with no word is dropped: nothing is left to report.
        Ok(open && self.utterances.iter().any(|u| u.flushed))
    }

    /// No more text will come.
    pub fn end_text(&mut self, tok: &TextTokenizer) -> Result<()> {
        if self.text_ended {
            return Err(EngineError::invalid("text", "this session's text has already ended"));
        }
        self.close_last(tok)?;
        self.text_ended = true;
        self.settle(tok)
    }

    fn close_last(&mut self, tok: &TextTokenizer) -> Result<()> {
        if let Some(u) = self.utterances.back_mut() {
            let before = u.tokens;
            u.close(tok)?;
            self.text_tokens += u.tokens - before;
        }
        Ok(())
    }

    /// Readies the current utterance: drops the empty ones that have not started, tokenizes a
    /// segment whose turn has come, and derives its seed.
    fn settle(&mut self, tok: &TextTokenizer) -> Result<()> {
        if self.prefilled {
            return Ok(());
        }
        while self.utterances.front().is_some_and(Utterance::is_empty) {
            self.utterances.pop_front();
        }
        if let Some(u) = self.utterances.front_mut() {
            if let Some(parts) = u.cut_if_longer(tok, self.most_tokens, self.segment_tokens) {
                self.utterances.pop_front();
                for text in parts.into_iter().rev() {
                    self.utterances.push_front(Utterance::segment(text, &self.lead));
                }
                return self.settle(tok);
            }
            let u = self.utterances.front_mut().expect("checked above");
            let before = u.tokens;
            u.tokenize(tok)?;
            self.text_tokens += u.tokens - before;
            if u.is_empty() {
                return self.settle(tok);
            }
        }
        self.sampling.seed = segment_seed(self.request_seed, self.utterance);
        Ok(())
    }

    /// Ends the current utterance. Returns the session's finish reason when nothing more is
    /// left to say, `None` when the session goes on (with its next utterance, or waiting for
    /// text). An utterance that ended while its text was still arriving, or at a limit with
    /// text unread, leaves that text to a new utterance: nothing is dropped. (One the talker
    /// ended, EOS, drops what it did not read, as the model does alone.)
    pub fn end_current(&mut self, reason: FinishReason, tok: &TextTokenizer) -> Result<Option<FinishReason>> {
        if let Some(done) = self.utterances.pop_front() {
            let keep = !done.text_done() || reason != FinishReason::Eos;
            let flushed = done.flushed;
            match done.remainder(&self.lead).filter(|_| keep) {
                Some(rest) => self.utterances.push_front(rest),
                None => self.flush_done |= flushed,
            }
        }
        self.utterance += 1;
        self.prefilled = false;
        self.pos = 0;
        self.prompt_rows = 0;
        self.gen_index = 0;
        self.frames_before = self.frames;
        self.utterance_frames = 0;
        self.last_end = Some(reason);
        self.settle(tok)?;
        Ok(self.idle_finish())
    }

    /// The finish reason of a session with nothing left to say and no text to come: the last
    /// utterance's, or `EmptyText` when it never had a token.
    pub fn idle_finish(&self) -> Option<FinishReason> {
        if !self.text_ended || !self.utterances.is_empty() {
            return None;
        }
        Some(match (&self.last_end, self.text_tokens) {
            (_, 0) => FinishReason::EmptyText,
            (Some(r), _) => r.clone(),
            (None, _) => FinishReason::EmptyText,
        })
    }

    /// Frames the current utterance may emit: what the cache holds after its prompt, and once
    /// its text is complete its own limit (in proportion to its tokens unless the request set
    /// one).
    pub fn utterance_limit(&self) -> u32 {
        let room = (self.max_positions as u32).saturating_sub(self.prompt_rows.max(1)).max(1);
        let by_text = match self.utterances.front() {
            Some(u) if u.text_done() => {
                self.utterance_max_frames.unwrap_or_else(|| frames_for_tokens(u.tokens, self.max_new_tokens))
            }
            _ => u32::MAX,
        };
        room.min(by_text)
    }

    /// Whether a tick already submitted took the session to one of its limits.
    pub fn at_limit(&self, max_positions: usize) -> bool {
        self.prefilled
            && (self.gen_index >= self.utterance_limit()
                || self.frames_before + self.gen_index >= self.max_frames
                || self.pos as usize + 1 > max_positions)
    }

    /// Rows of the current utterance's prompt, if it can be built now, without consuming
    /// anything.
    pub fn prompt_len(&self) -> Option<usize> {
        let prefix = self.prefix.len();
        let u = self.utterances.front()?;
        let whole = u.text_done() && u.tokens > 0;
        if let Some(icl) = &self.icl {
            // Streaming ICL pairs the first `n` text tokens (reference transcript first) with
            // the `n` codec rows, so it starts once `n` tokens are known or the text is whole.
            let n = icl.codec.len();
            return match self.mode {
                TextMode::Streaming if u.text.len() >= n || whole => Some(prefix + n),
                TextMode::NonStreaming if whole => Some(prefix + u.text.len() + 1 + n),
                _ => None,
            };
        }
        match self.mode {
            TextMode::Streaming if !u.text.is_empty() => Some(prefix + 1),
            TextMode::NonStreaming if whole => Some(prefix + u.text.len() + 2),
            _ => None,
        }
    }

    /// Takes the next input; [`Session::prompt_len`] must have said the prompt is ready.
    pub fn next_input(&mut self, cfg: &ModelConfig) -> Result<NextInput> {
        let mode = self.mode;
        if !self.prefilled {
            let Some(_) = self.prompt_len() else { return Ok(NextInput::Wait) };
            let mut rows = self.prefix.clone();
            let u = self.utterances.front_mut().expect("prompt_len found an utterance");
            if let Some(icl) = &self.icl {
                let n = icl.codec.len();
                let ids = match mode {
                    TextMode::Streaming => u.take(n),
                    TextMode::NonStreaming => u.take(usize::MAX),
                };
                // A whole text shorter than the reference frames ends (tts_eos) in the prompt.
                if mode == TextMode::Streaming && ids.len() < n {
                    u.eos_read = true;
                }
                rows.extend(icl_rows(cfg, mode, &ids, &icl.codec).0);
                return Ok(NextInput::Prompt(rows));
            }
            let ids = match mode {
                TextMode::Streaming => u.take(1),
                TextMode::NonStreaming => u.take(usize::MAX),
            };
            let (text, _trailing) = text_rows(cfg, mode, &ids)?;
            rows.extend(text);
            return Ok(NextInput::Prompt(rows));
        }
        let Some(u) = self.utterances.front_mut() else { return Ok(NextInput::Wait) };
        Ok(match mode {
            TextMode::NonStreaming => NextInput::Step(cfg.tts_pad_token_id),
            TextMode::Streaming => match u.pop() {
                Some(id) => NextInput::Step(id),
                None if u.eos_read => NextInput::Step(cfg.tts_pad_token_id),
                None if u.text_done() => {
                    u.eos_read = true;
                    NextInput::Step(cfg.tts_eos_token_id)
                }
                None => NextInput::Wait,
            },
        })
    }

    /// Whether [`Session::next_input`] would return something other than `Wait`.
    pub fn is_ready(&self) -> bool {
        if !self.prefilled {
            return self.prompt_len().is_some();
        }
        match (self.mode, self.utterances.front()) {
            (_, None) => false,
            (TextMode::NonStreaming, Some(_)) => true,
            (TextMode::Streaming, Some(u)) => !u.text.is_empty() || u.text_done(),
        }
    }

    /// Utterances still to speak (the current one included), if the text is complete.
    pub fn utterances_left(&self) -> Option<usize> {
        self.text_ended.then_some(self.utterances.len())
    }
}
