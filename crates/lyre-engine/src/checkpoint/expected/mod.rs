//! The tensors each config implies: every name, shape and dtype that `model.safetensors` and
//! `speech_tokenizer/model.safetensors` must hold, derived from the config fields alone.
//!
//! Shapes follow the PyTorch layouts of the official classes: Linear `[out, in]`, Conv1d
//! `[out, in / groups, kernel]`, ConvTranspose1d `[in, out, kernel]`. Kernel sizes that the
//! official code fixes (not the config) are named constants in the component modules.
//!
//! A degenerate config (an empty channel list, a zero divisor) never panics here: the affected
//! dimensions come out as 0, so validation against the real file reports a shape mismatch.

mod main_model;
mod speech_tokenizer;
#[cfg(test)]
mod tests;

use crate::checkpoint::config::{ModelConfig, SpeechTokenizerConfig};
use crate::checkpoint::weights::{ExpectedTensor, TensorDtype};

/// Every tensor `model.safetensors` must hold for this config (all BF16): talker, code predictor
/// (with `talker.code_predictor.small_to_mtp_projection.{weight,bias}` iff
/// `cfg.has_mtp_projection()`), and the ECAPA-TDNN speaker encoder (`speaker_encoder.*`) only for
/// `tts_model_type == Base`.
pub fn main_model_tensors(cfg: &ModelConfig) -> Vec<ExpectedTensor> {
    let mut t = TensorList::new(TensorDtype::Bf16);
    main_model::talker(&mut t, cfg);
    main_model::code_predictor(&mut t, cfg);
    if cfg.tts_model_type == crate::checkpoint::config::ModelType::Base {
        main_model::speaker_encoder(&mut t, &cfg.speaker_encoder_config);
    }
    t.into_vec()
}

/// Every tensor `speech_tokenizer/model.safetensors` must hold (all F32): the decoder and the
/// Mimi encoder.
pub fn speech_tokenizer_tensors(cfg: &SpeechTokenizerConfig) -> Vec<ExpectedTensor> {
    let mut t = TensorList::new(TensorDtype::F32);
    speech_tokenizer::decoder(&mut t, &cfg.decoder_config);
    speech_tokenizer::mimi_encoder(&mut t, cfg);
    t.into_vec()
}

/// Collects expected tensors of one dtype, with helpers for the common PyTorch modules.
struct TensorList {
    dtype: TensorDtype,
    tensors: Vec<ExpectedTensor>,
}

impl TensorList {
    fn new(dtype: TensorDtype) -> Self {
        TensorList { dtype, tensors: Vec::new() }
    }

    fn into_vec(self) -> Vec<ExpectedTensor> {
        self.tensors
    }

    fn push(&mut self, name: String, shape: &[usize]) {
        self.tensors.push(ExpectedTensor::new(name, shape, self.dtype));
    }

    /// `nn.Linear(inp, out)`: `weight [out, inp]`, plus `bias [out]` if `bias`.
    fn linear(&mut self, prefix: &str, out: usize, inp: usize, bias: bool) {
        self.push(format!("{prefix}.weight"), &[out, inp]);
        if bias {
            self.push(format!("{prefix}.bias"), &[out]);
        }
    }

    /// `nn.Conv1d` / `nn.ConvTranspose1d`: `weight [d0, d1, kernel]`, plus `bias [bias_dim]`.
    fn conv(&mut self, prefix: &str, weight: [usize; 3], bias: Option<usize>) {
        self.push(format!("{prefix}.weight"), &weight);
        if let Some(dim) = bias {
            self.push(format!("{prefix}.bias"), &[dim]);
        }
    }

    /// A norm's `weight [dim]`, plus `bias [dim]` for LayerNorm.
    fn norm(&mut self, prefix: &str, dim: usize, bias: bool) {
        self.push(format!("{prefix}.weight"), &[dim]);
        if bias {
            self.push(format!("{prefix}.bias"), &[dim]);
        }
    }

    /// Bias-free attention projections: q `heads·head_dim`, k/v `kv_heads·head_dim`, o back.
    fn attention(&mut self, prefix: &str, a: &AttentionDims) {
        let q = a.heads * a.head_dim;
        let kv = a.kv_heads * a.head_dim;
        self.linear(&format!("{prefix}.q_proj"), q, a.hidden, false);
        self.linear(&format!("{prefix}.k_proj"), kv, a.hidden, false);
        self.linear(&format!("{prefix}.v_proj"), kv, a.hidden, false);
        self.linear(&format!("{prefix}.o_proj"), a.hidden, q, false);
    }

    /// Bias-free SwiGLU MLP: `gate_proj`, `up_proj`, `down_proj`.
    fn swiglu(&mut self, prefix: &str, hidden: usize, intermediate: usize) {
        self.linear(&format!("{prefix}.gate_proj"), intermediate, hidden, false);
        self.linear(&format!("{prefix}.up_proj"), intermediate, hidden, false);
        self.linear(&format!("{prefix}.down_proj"), hidden, intermediate, false);
    }
}

/// The widths of one attention block.
struct AttentionDims {
    hidden: usize,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
}

/// `a / b`, or 0 when `b` is 0 (see the module comment on degenerate configs).
fn div(a: usize, b: usize) -> usize {
    a.checked_div(b).unwrap_or(0)
}
