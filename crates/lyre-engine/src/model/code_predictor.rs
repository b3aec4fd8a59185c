//! The code predictor ("sub-talker"): 5 Qwen3 layers that, per frame, turn the talker's hidden
//! state and the first code into codes 1..15, with one embedding table and one head per code.

use super::transformer::{load_layers, StackShape};
use super::upload;
use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::weights::WeightFile;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::kernels::attention::Heads;
use crate::kernels::layer::LayerWeights;

pub struct CodePredictorWeights {
    pub shape: StackShape,
    /// Talker width: the embeddings and the input hidden state have it.
    pub talker_hidden: usize,
    pub vocab: usize,
    pub layers: Vec<LayerWeights>,
    pub norm: wgpu::Buffer,
    /// `codec_embedding.{g}` for g in 0..15 (embeds code g+1), `[vocab][talker_hidden]`.
    pub embeddings: Vec<wgpu::Buffer>,
    /// `lm_head.{g}` for g in 0..15 (predicts code g+1), `[vocab][hidden]`.
    pub heads: Vec<wgpu::Buffer>,
    /// `small_to_mtp_projection` (talker width → code-predictor width), on the 1.7B models.
    pub projection: Option<(wgpu::Buffer, wgpu::Buffer)>,
}

pub fn shape(cfg: &ModelConfig) -> StackShape {
    let c = &cfg.talker_config.code_predictor_config;
    StackShape {
        hidden: c.hidden_size,
        inter: c.intermediate_size,
        layers: c.num_hidden_layers,
        heads: Heads {
            n_heads: c.num_attention_heads as u32,
            n_kv_heads: c.num_key_value_heads as u32,
            head_dim: c.head_dim as u32,
        },
        eps: c.rms_norm_eps as f32,
        rope_theta: c.rope_theta,
    }
}

impl CodePredictorWeights {
    pub fn load(ctx: &GpuContext, cfg: &ModelConfig, file: &WeightFile) -> Result<Self> {
        let c = &cfg.talker_config.code_predictor_config;
        let th = cfg.talker_config.hidden_size;
        let s = shape(cfg);
        let p = "talker.code_predictor.";
        let w = |n: String, shape: &[usize]| upload::bf16(ctx, file, &format!("{p}{n}"), shape);
        let groups = cfg.talker_config.num_code_groups - 1;
        let projection = if cfg.has_mtp_projection() {
            Some((
                w("small_to_mtp_projection.weight".into(), &[c.hidden_size, th])?,
                w("small_to_mtp_projection.bias".into(), &[c.hidden_size])?,
            ))
        } else {
            None
        };
        Ok(CodePredictorWeights {
            shape: s,
            talker_hidden: th,
            vocab: c.vocab_size,
            layers: load_layers(ctx, file, &format!("{p}model."), &s)?,
            norm: w("model.norm.weight".into(), &[c.hidden_size])?,
            embeddings: (0..groups)
                .map(|g| w(format!("model.codec_embedding.{g}.weight"), &[c.vocab_size, th]))
                .collect::<Result<_>>()?,
            heads: (0..groups)
                .map(|g| w(format!("lm_head.{g}.weight"), &[c.vocab_size, c.hidden_size]))
                .collect::<Result<_>>()?,
            projection,
        })
    }
}
