//! Sampling settings and their GPU form, the per-session descriptor every tick uploads.

use bytemuck::{Pod, Zeroable};

use crate::checkpoint::config::GenerationConfig;
use crate::error::{EngineError, Result};

/// How one codebook is chosen: greedy, or temperature → top-k → top-p sampling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    pub do_sample: bool,
    pub temperature: f32,
    /// 0 disables top-k.
    pub top_k: u32,
    pub top_p: f32,
}

/// Everything that decides a session's codes, given its prompt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingParams {
    /// First codebook (the talker).
    pub talker: Sampler,
    /// Codebooks 1..15 (the code predictor, `subtalker_*` in generation_config.json).
    pub code_predictor: Sampler,
    /// Applied to the talker's earlier first-codebook codes; 1.0 disables it.
    pub repetition_penalty: f32,
    pub seed: u64,
    /// Never choose EOS: the session runs to its frame limit (benchmarks, load tests).
    pub ignore_eos: bool,
}

impl SamplingParams {
    /// The checkpoint's `generation_config.json` defaults.
    pub fn from_generation_config(g: &GenerationConfig, seed: u64) -> Self {
        SamplingParams {
            talker: Sampler {
                do_sample: g.do_sample,
                temperature: g.temperature,
                top_k: g.top_k,
                top_p: g.top_p,
            },
            code_predictor: Sampler {
                do_sample: g.subtalker_dosample,
                temperature: g.subtalker_temperature,
                top_k: g.subtalker_top_k,
                top_p: g.subtalker_top_p,
            },
            repetition_penalty: g.repetition_penalty,
            seed,
            ignore_eos: false,
        }
    }

    /// Greedy decoding for both models (the repetition penalty still applies, as in HF).
    pub fn greedy(mut self) -> Self {
        self.talker.do_sample = false;
        self.code_predictor.do_sample = false;
        self
    }

    /// Applies a request's overrides; each applies to both the talker and the code predictor.
    pub fn with_overrides(mut self, o: &SamplingOverrides) -> Self {
        for s in [&mut self.talker, &mut self.code_predictor] {
            if let Some(t) = o.temperature {
                s.temperature = t;
            }
            if let Some(k) = o.top_k {
                s.top_k = k;
            }
            if let Some(p) = o.top_p {
                s.top_p = p;
            }
        }
        if let Some(r) = o.repetition_penalty {
            self.repetition_penalty = r;
        }
        self.ignore_eos = o.ignore_eos;
        if o.greedy {
            self = self.greedy();
        }
        self
    }

    /// Rejects values the sampler cannot honour, naming the field.
    pub fn validate(&self) -> Result<()> {
        for (prefix, s) in [("", &self.talker), ("subtalker_", &self.code_predictor)] {
            let field = |f: &'static str, sub: &'static str| if prefix.is_empty() { f } else { sub };
            if !(s.temperature.is_finite() && s.temperature >= 1e-3 && s.temperature <= 100.0) {
                return Err(EngineError::invalid(
                    field("temperature", "subtalker_temperature"),
                    format!("must be in [0.001, 100], got {}", s.temperature),
                ));
            }
            if !(s.top_p.is_finite() && s.top_p > 0.0 && s.top_p <= 1.0) {
                return Err(EngineError::invalid(
                    field("top_p", "subtalker_top_p"),
                    format!("must be in (0, 1], got {}", s.top_p),
                ));
            }
            if s.top_k > 100_000 {
                return Err(EngineError::invalid(
                    field("top_k", "subtalker_top_k"),
                    format!("must be at most 100000, got {}", s.top_k),
                ));
            }
        }
        let rp = self.repetition_penalty;
        if !(rp.is_finite() && (0.1..=10.0).contains(&rp)) {
            return Err(EngineError::invalid(
                "repetition_penalty",
                format!("must be in [0.1, 10], got {rp}"),
            ));
        }
        Ok(())
    }
}

/// What a request may change about the checkpoint's sampling defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplingOverrides {
    pub temperature: Option<f32>,
    pub top_k: Option<u32>,
    pub top_p: Option<f32>,
    pub repetition_penalty: Option<f32>,
    pub greedy: bool,
    pub ignore_eos: bool,
}

pub const FLAG_TALKER_SAMPLE: u32 = 1;
pub const FLAG_CP_SAMPLE: u32 = 2;
pub const FLAG_IGNORE_EOS: u32 = 4;
/// The frame's codes are `SessionDesc::forced`, not the sampler's choice.
pub const FLAG_FORCED: u32 = 8;

/// One session's row of the tick's session buffer (mirrors `struct Session` in the WGSL).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub struct SessionDesc {
    pub slot: u32,
    /// The talker row whose hidden state produces this session's frame.
    pub last_row: u32,
    /// Frames generated so far (the sampler's step counter).
    pub gen_index: u32,
    pub flags: u32,
    pub seed_lo: u32,
    pub seed_hi: u32,
    pub top_k: u32,
    pub sub_top_k: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub rep_penalty: f32,
    pub sub_temperature: f32,
    pub sub_top_p: f32,
    pub _pad: [u32; 3],
    /// With `FLAG_FORCED`: the codes this frame takes (teacher forcing).
    pub forced: [u32; 16],
}

impl SessionDesc {
    pub fn new(slot: u32, last_row: u32, gen_index: u32, p: &SamplingParams) -> Self {
        let mut flags = 0;
        if p.talker.do_sample {
            flags |= FLAG_TALKER_SAMPLE;
        }
        if p.code_predictor.do_sample {
            flags |= FLAG_CP_SAMPLE;
        }
        if p.ignore_eos {
            flags |= FLAG_IGNORE_EOS;
        }
        SessionDesc {
            slot,
            last_row,
            gen_index,
            flags,
            seed_lo: p.seed as u32,
            seed_hi: (p.seed >> 32) as u32,
            top_k: p.talker.top_k,
            sub_top_k: p.code_predictor.top_k,
            temperature: p.talker.temperature,
            top_p: p.talker.top_p,
            rep_penalty: p.repetition_penalty,
            sub_temperature: p.code_predictor.temperature,
            sub_top_p: p.code_predictor.top_p,
            _pad: [0; 3],
            forced: [0; 16],
        }
    }

    /// Teacher forcing: this frame takes `codes` whatever the logits say.
    pub fn force(mut self, codes: &[u16; 16]) -> Self {
        self.flags |= FLAG_FORCED;
        self.forced = codes.map(u32::from);
        self
    }
}
