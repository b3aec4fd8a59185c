//! One speaking session: its text (whole or still arriving), its prompt, and where it is.

use std::collections::VecDeque;

use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::tokenizer::TextTokenizer;
use crate::error::{EngineError, Result};
use crate::prompt::{icl_rows, text_rows, CodecPart, PromptRow, TextMode};
use crate::sampling::SamplingParams;
use crate::text_stream::TextStream;

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

pub(crate) struct Session {
    pub id: SessionId,
    pub slot: u32,
    pub sampling: SamplingParams,
    pub max_frames: u32,
    mode: TextMode,
    /// Prompt rows before the text; taken at prefill.
    prefix: Option<Vec<PromptRow>>,
    stream: Option<TextStream>,
    icl: Option<IclPrompt>,
    /// Released text tokens not yet placed in the prompt or read by a frame.
    text: VecDeque<u32>,
    text_done: bool,
    /// Text tokens received so far (whole or streamed).
    pub text_tokens: usize,
    eos_read: bool,
    pub prefilled: bool,
    /// The next KV-cache position.
    pub pos: u32,
    pub frames: u32,
    /// First-codebook samples drawn so far (the sampler's step counter).
    pub gen_index: u32,
}

impl Session {
    pub fn new(
        id: SessionId,
        slot: u32,
        mode: TextMode,
        prefix: Vec<PromptRow>,
        sampling: SamplingParams,
        max_frames: u32,
    ) -> Self {
        Session {
            id,
            slot,
            sampling,
            max_frames,
            mode,
            prefix: Some(prefix),
            stream: None,
            icl: None,
            text: VecDeque::new(),
            text_done: false,
            text_tokens: 0,
            eos_read: false,
            prefilled: false,
            pos: 0,
            frames: 0,
            gen_index: 0,
        }
    }

    /// Makes this an in-context (ICL) session: `ref_ids` (the reference transcript) lead the
    /// text and `icl.codec` the codec channel. Call before any text.
    pub fn set_icl(&mut self, ref_ids: Vec<u32>, icl: IclPrompt) {
        self.text.extend(ref_ids);
        self.icl = Some(icl);
    }

    /// Reference frames the decoder runs before this session's first frame (taken once).
    pub fn take_prime(&mut self) -> Option<Vec<[u16; 16]>> {
        self.icl.as_mut().and_then(|i| i.codes.take())
    }

    /// The decoder's frame index of this session's next frame.
    pub fn decoder_frame(&self) -> u32 {
        self.gen_index + self.icl.as_ref().map_or(0, |i| i.frames)
    }

    /// The whole text, already tokenized (ids between the template's role and end).
    pub fn set_text(&mut self, ids: Vec<u32>) {
        self.text_tokens += ids.len();
        self.text.extend(ids);
        self.text_done = true;
    }

    /// Text will arrive in pieces.
    pub fn start_stream(&mut self) {
        self.stream = Some(TextStream::new());
    }

    pub fn append_text(&mut self, tok: &TextTokenizer, piece: &str) -> Result<()> {
        let stream = self.open_stream()?;
        let ids = stream.push(tok, piece)?;
        self.text_tokens += ids.len();
        self.text.extend(ids);
        Ok(())
    }

    pub fn end_text(&mut self, tok: &TextTokenizer) -> Result<()> {
        let stream = self.open_stream()?;
        let ids = stream.finish(tok)?;
        self.text_tokens += ids.len();
        self.text.extend(ids);
        self.text_done = true;
        Ok(())
    }

    fn open_stream(&mut self) -> Result<&mut TextStream> {
        match self.stream.as_mut() {
            Some(s) if !self.text_done => Ok(s),
            _ => Err(EngineError::invalid("text", "this session's text has already ended")),
        }
    }

    /// True when streamed text ended without producing a token.
    pub fn text_is_empty(&self) -> bool {
        self.text_done && !self.prefilled && self.text_tokens == 0
    }

    /// The rows of the whole prompt, if it can be built now, without consuming anything.
    pub fn prompt_len(&self) -> Option<usize> {
        let prefix = self.prefix.as_ref()?.len();
        if let Some(icl) = &self.icl {
            // Streaming ICL pairs the first `n` text tokens (reference transcript first) with
            // the `n` codec rows, so it starts once `n` tokens are known or the text is whole.
            let n = icl.codec.len();
            let whole = self.text_done && self.text_tokens > 0;
            return match self.mode {
                TextMode::Streaming if self.text.len() >= n || whole => Some(prefix + n),
                TextMode::NonStreaming if whole => Some(prefix + self.text.len() + 1 + n),
                _ => None,
            };
        }
        match self.mode {
            TextMode::Streaming if !self.text.is_empty() => Some(prefix + 1),
            TextMode::NonStreaming if self.text_done && !self.text.is_empty() => {
                Some(prefix + self.text.len() + 2)
            }
            _ => None,
        }
    }

    /// Takes the next input; [`Session::prompt_len`] must have said the prompt is ready.
    pub fn next_input(&mut self, cfg: &ModelConfig) -> Result<NextInput> {
        if !self.prefilled {
            let Some(_) = self.prompt_len() else { return Ok(NextInput::Wait) };
            let mut rows = self.prefix.take().unwrap_or_default();
            if let Some(icl) = &self.icl {
                let n = icl.codec.len();
                let ids: Vec<u32> = match self.mode {
                    TextMode::Streaming => self.text.drain(..n.min(self.text.len())).collect(),
                    TextMode::NonStreaming => self.text.drain(..).collect(),
                };
                // A whole text shorter than the reference frames ends (tts_eos) in the prompt.
                if self.mode == TextMode::Streaming && ids.len() < n {
                    self.eos_read = true;
                }
                rows.extend(icl_rows(cfg, self.mode, &ids, &icl.codec).0);
                return Ok(NextInput::Prompt(rows));
            }
            let ids: Vec<u32> = match self.mode {
                TextMode::Streaming => self.text.pop_front().into_iter().collect(),
                TextMode::NonStreaming => self.text.drain(..).collect(),
            };
            let (text, _trailing) = text_rows(cfg, self.mode, &ids)?;
            rows.extend(text);
            return Ok(NextInput::Prompt(rows));
        }
        Ok(match self.mode {
            TextMode::NonStreaming => NextInput::Step(cfg.tts_pad_token_id),
            TextMode::Streaming => match self.text.pop_front() {
                Some(id) => NextInput::Step(id),
                None if self.eos_read => NextInput::Step(cfg.tts_pad_token_id),
                None if self.text_done => {
                    self.eos_read = true;
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
        match self.mode {
            TextMode::NonStreaming => true,
            TextMode::Streaming => !self.text.is_empty() || self.text_done,
        }
    }
}
