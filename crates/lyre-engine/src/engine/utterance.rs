//! One utterance of a session: a text spoken as its own prompt from KV position zero, until
//! the talker ends it (EOS) or a limit does. Its text is a whole segment (tokenized when its
//! turn comes) or arrives in pieces (tokenized as it streams in).

use std::collections::VecDeque;

use crate::checkpoint::tokenizer::TextTokenizer;
use crate::error::Result;
use crate::segment::{fits_tokens, split_text};
use crate::text_stream::TextStream;

/// Characters of the streamed text kept to find a sentence end that straddles two pieces.
const CONTEXT_CHARS: usize = 8;

pub(crate) struct Utterance {
    /// A whole-text segment not tokenized yet.
    segment: Option<String>,
    /// Streamed text still arriving (`None` once its text is closed, or for a segment).
    stream: Option<TextStream>,
    /// Released ids not yet placed in the prompt or read by a frame: first the lead ids (an
    /// ICL voice's reference transcript), then the text's.
    pub text: VecDeque<u32>,
    /// Lead ids still at the front of `text`.
    lead_left: usize,
    /// Text tokens received (lead ids not counted).
    pub tokens: usize,
    /// Tokens the streamed text measured so far, piece by piece (for the rollover).
    pub measured: usize,
    /// The last characters of the streamed text.
    pub context: String,
    /// Spaces at the end of the streamed text, held back until a word follows: an utterance's
    /// text is spoken without the spaces at its ends, as a whole-text segment is.
    space: String,
    /// Some streamed text other than spaces has arrived.
    started: bool,
    /// The talker has read `tts_eos` (streaming mode).
    pub eos_read: bool,
    /// A client's flush closed this utterance's text: its end is reported (and so is the end
    /// of a remainder that carries the flush on).
    pub flushed: bool,
}

impl Utterance {
    /// A whole-text segment, led by `lead` ids.
    pub fn segment(text: String, lead: &[u32]) -> Self {
        Utterance { segment: Some(text), ..Self::open(lead) }
    }

    /// Text that will stream in, led by `lead` ids.
    pub fn streamed(lead: &[u32]) -> Self {
        Utterance { stream: Some(TextStream::new()), ..Self::open(lead) }
    }

    /// Already tokenized text (closed).
    pub fn tokenized(ids: Vec<u32>, lead: &[u32]) -> Self {
        let mut u = Self::open(lead);
        u.tokens = ids.len();
        u.text.extend(ids);
        u
    }

    fn open(lead: &[u32]) -> Self {
        Utterance {
            segment: None,
            stream: None,
            text: lead.iter().copied().collect(),
            lead_left: lead.len(),
            tokens: 0,
            measured: 0,
            context: String::new(),
            space: String::new(),
            started: false,
            eos_read: false,
            flushed: false,
        }
    }

    /// Whether its text is complete (no more will arrive).
    pub fn text_done(&self) -> bool {
        self.stream.is_none()
    }

    /// Tokenizes a whole-text segment (once, when its turn comes).
    pub fn tokenize(&mut self, tok: &TextTokenizer) -> Result<()> {
        if let Some(text) = self.segment.take() {
            let ids = segment_ids(tok, &text)?;
            self.tokens += ids.len();
            self.text.extend(ids);
        }
        Ok(())
    }

    /// A whole-text segment of more than `most` tokens, cut into segments of `budget` tokens
    /// (`None` when it is short enough, or cannot be cut).
    pub fn cut_if_longer(&self, tok: &TextTokenizer, most: usize, budget: usize) -> Option<Vec<String>> {
        let text = self.segment.as_deref()?;
        if fits_tokens(tok, text, most) {
            return None;
        }
        Some(split_text(tok, text, budget)).filter(|parts| parts.len() > 1)
    }

    /// Appends streamed text.
    pub fn push(&mut self, tok: &TextTokenizer, piece: &str, measured: usize) -> Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(crate::EngineError::invalid("text", "this utterance's text has already ended"));
        };
        let body = piece.trim_end();
        let trailing = &piece[body.len()..];
        if body.is_empty() {
            if self.started {
                self.space.push_str(piece);
            }
        } else {
            let body = if self.started { body } else { body.trim_start() };
            let ids = stream.push(tok, &(std::mem::take(&mut self.space) + body))?;
            self.tokens += ids.len();
            self.text.extend(ids);
            self.started = true;
            self.space.push_str(trailing);
        }
        self.measured += measured;
        self.context.push_str(piece);
        let keep = self.context.char_indices().rev().nth(CONTEXT_CHARS - 1).map_or(0, |(at, _)| at);
        self.context.drain(..keep);
        Ok(())
    }

    /// Ends the streamed text: what the stream still held is released.
    pub fn close(&mut self, tok: &TextTokenizer) -> Result<()> {
        if let Some(mut stream) = self.stream.take() {
            let ids = stream.finish(tok)?;
            self.tokens += ids.len();
            self.text.extend(ids);
        }
        Ok(())
    }

    /// Takes `n` ids from the front of the text (fewer if there are not as many).
    pub fn take(&mut self, n: usize) -> Vec<u32> {
        let n = n.min(self.text.len());
        self.lead_left = self.lead_left.saturating_sub(n);
        self.text.drain(..n).collect()
    }

    /// The next id a frame reads.
    pub fn pop(&mut self) -> Option<u32> {
        self.lead_left = self.lead_left.saturating_sub(1);
        self.text.pop_front()
    }

    /// An utterance that ended before reading all its text: what it had not read (and, while
    /// its text is still arriving, the stream) as a new utterance led by `lead`. `None` when
    /// nothing is left to say.
    pub fn remainder(mut self, lead: &[u32]) -> Option<Utterance> {
        let unread: Vec<u32> = self.text.drain(self.lead_left.min(self.text.len())..).collect();
        if unread.is_empty() && self.stream.is_none() {
            return None;
        }
        let mut next = Utterance::tokenized(unread, lead);
        next.stream = self.stream.take();
        next.context = std::mem::take(&mut self.context);
        next.space = std::mem::take(&mut self.space);
        next.started = self.started;
        next.flushed = self.flushed;
        next.measured = next.tokens;
        Some(next)
    }

    /// Closed without a single text token: nothing to say.
    pub fn is_empty(&self) -> bool {
        self.text_done() && self.segment.is_none() && self.tokens == 0
    }
}

/// The ids of `text` inside the assistant turn of the chat template.
pub(crate) fn segment_ids(tok: &TextTokenizer, text: &str) -> Result<Vec<u32>> {
    if text.trim().is_empty() {
        return Err(crate::EngineError::invalid("text", "is empty"));
    }
    let ids = tok.assistant_text_ids(text)?;
    Ok(ids[3..ids.len() - 5].to_vec())
}
