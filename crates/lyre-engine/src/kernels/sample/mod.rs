//! The GPU sampler: processors, greedy or temperature/top-k/top-p sampling, one code per
//! session.

use bytemuck::{Pod, Zeroable};

use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::select::SampleKernel;
use crate::kernels::{Env, Rows};

pub const SOURCE: KernelSource = KernelSource {
    name: "sample",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("sample_common.wgsl"),
        include_str!("sample.wgsl")
    ),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "sample_sg",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("sample_common.wgsl"),
        include_str!("sample_sg.wgsl")
    ),
};

/// The kernels of this family.
pub(super) const SOURCES: [KernelSource; 2] = [SOURCE, SOURCE_SUBGROUP];

/// The largest vocabulary the sampler holds in workgroup memory.
pub const MAX_VOCAB: u32 = 4096;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    vocab: u32,
    logits_stride: u32,
    logits_first: u32,
    logits_step: u32,
    code_col: u32,
    talker_mode: u32,
    eos: u32,
    suppress_start: u32,
    min_new_tokens: u32,
    history_words: u32,
    _pad0: u32,
    _pad1: u32,
}

/// The talker's logits processors.
#[derive(Debug, Clone, Copy)]
pub struct TalkerProcessors {
    pub eos: u32,
    /// Ids `suppress_start..vocab` except EOS are never chosen.
    pub suppress_start: u32,
    /// EOS is masked while fewer frames than this have been generated.
    pub min_new_tokens: u32,
    /// `u32` words per slot in the repetition-history bitmask.
    pub history_words: u32,
}

pub struct Sample<'a> {
    pub label: &'a str,
    pub vocab: u32,
    pub logits: Rows<'a>,
    /// Column of the `[session][16]` code buffer this sampler fills.
    pub code_col: u32,
    /// `Some` for the talker (first codebook), `None` for the code predictor.
    pub talker: Option<TalkerProcessors>,
    pub sessions: &'a wgpu::Buffer,
    pub codes: &'a wgpu::Buffer,
    pub history: &'a wgpu::Buffer,
}

impl Sample<'_> {
    /// With the adapter's kernel
    /// ([`KernelChoice::sampler`](crate::kernels::select::KernelChoice::sampler)).
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.build_with(env, env.kernels.sampler())
    }

    pub fn build_with(&self, env: &Env, kernel: SampleKernel) -> Result<Dispatch> {
        if self.vocab > MAX_VOCAB {
            return Err(EngineError::Gpu(format!(
                "sampler `{}`: vocabulary {} exceeds {MAX_VOCAB}",
                self.label, self.vocab
            )));
        }
        let tp = self.talker.unwrap_or(TalkerProcessors {
            eos: u32::MAX,
            suppress_start: u32::MAX,
            min_new_tokens: 0,
            history_words: 0,
        });
        let params = Params {
            vocab: self.vocab,
            logits_stride: self.logits.stride,
            logits_first: self.logits.offset / self.logits.stride.max(1),
            logits_step: self.logits.row_step,
            code_col: self.code_col,
            talker_mode: self.talker.is_some() as u32,
            eos: tp.eos,
            suppress_start: tp.suppress_start,
            min_new_tokens: tp.min_new_tokens,
            history_words: tp.history_words,
            _pad0: 0,
            _pad1: 0,
        };
        let pipeline = match kernel {
            SampleKernel::Portable => env.ctx.pipeline(SOURCE, &[]),
            SampleKernel::Subgroup { size } => {
                if !SampleKernel::supports(size) {
                    return Err(EngineError::Gpu(format!(
                        "sampler `{}`: subgroup size {size} is not a power of two in [4, 128]",
                        self.label
                    )));
                }
                env.ctx.pipeline(SOURCE_SUBGROUP, &[("SG", size as f64)])
            }
        };
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[&uniform, self.sessions, self.logits.buffer, self.codes, self.history],
        );
        Ok(Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::rows(RowCount::Sessions), Extent::Fixed(1)),
        })
    }
}
