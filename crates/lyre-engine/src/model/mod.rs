//! The two transformers of the main checkpoint, resident on the GPU: the talker (first
//! codebook) and the code predictor (codebooks 1..15), built from one generic Qwen3 stack. Each
//! records its part of a tick ([`talker::TalkerWeights::record`],
//! [`code_predictor::CodePredictorWeights::record`]) over the tick's buffers ([`TickIo`]); the
//! engine's tick plan strings them together with the codec decoder.

pub mod code_predictor;
pub mod rope;
pub mod talker;
pub mod transformer;
pub mod upload;

use crate::kernels::layer::GridSync;

/// The buffers of a tick that both models read or write, all sized for the tick plan's limits.
#[derive(Clone, Copy)]
pub struct TickIo<'a> {
    /// `[row]` descriptors (`slot, pos, text, codec`) of the talker's input rows.
    pub row_desc: &'a wgpu::Buffer,
    /// `[session]` descriptors ([`SessionDesc`](crate::sampling::SessionDesc)).
    pub sessions: &'a wgpu::Buffer,
    /// Speaker and reference vectors that prompt rows point into.
    pub extra: &'a wgpu::Buffer,
    /// `[session][talker hidden]`: the sum of the frame's code embeddings, the talker's input
    /// for the session's next row.
    pub acc: &'a wgpu::Buffer,
    /// `[session][16]` codes: the talker samples column 0, the code predictor the others.
    pub codes: &'a wgpu::Buffer,
    /// `[session][history_words]` bitmask of the codes a session generated (repetition penalty).
    pub history: &'a wgpu::Buffer,
    pub history_words: u32,
    /// Where set, the stacks run a one-row tick's layers as persistent dispatches.
    pub grid: Option<GridSync<'a>>,
}
