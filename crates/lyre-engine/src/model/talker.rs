//! The talker: text projection, 28 Qwen3 layers, final norm and the codec head that scores the
//! first codebook. Its weights, resident on the GPU.

use super::transformer::{load_layers, StackShape};
use super::upload::{self, ChunkedTable};
use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::weights::WeightFile;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::kernels::attention::Heads;
use crate::kernels::gather::MAX_CHUNKS;
use crate::kernels::layer::LayerWeights;

pub struct TalkerWeights {
    pub shape: StackShape,
    pub text_hidden: usize,
    pub text_vocab: usize,
    pub codec_vocab: usize,
    pub layers: Vec<LayerWeights>,
    pub norm: wgpu::Buffer,
    pub codec_embedding: wgpu::Buffer,
    pub text_embedding: ChunkedTable,
    pub text_fc1: (wgpu::Buffer, wgpu::Buffer),
    pub text_fc2: (wgpu::Buffer, wgpu::Buffer),
    pub codec_head: wgpu::Buffer,
}

pub fn shape(cfg: &ModelConfig) -> StackShape {
    let t = &cfg.talker_config;
    StackShape {
        hidden: t.hidden_size,
        inter: t.intermediate_size,
        layers: t.num_hidden_layers,
        heads: Heads {
            n_heads: t.num_attention_heads as u32,
            n_kv_heads: t.num_key_value_heads as u32,
            head_dim: t.head_dim as u32,
        },
        eps: t.rms_norm_eps as f32,
        rope_theta: t.rope_theta,
    }
}

impl TalkerWeights {
    pub fn load(ctx: &GpuContext, cfg: &ModelConfig, file: &WeightFile) -> Result<Self> {
        let t = &cfg.talker_config;
        let s = shape(cfg);
        let (h, th) = (t.hidden_size, t.text_hidden_size);
        let p = "talker.";
        let w = |n: &str, shape: &[usize]| upload::bf16(ctx, file, &format!("{p}{n}"), shape);
        Ok(TalkerWeights {
            shape: s,
            text_hidden: th,
            text_vocab: t.text_vocab_size,
            codec_vocab: t.vocab_size,
            layers: load_layers(ctx, file, "talker.model.", &s)?,
            norm: w("model.norm.weight", &[h])?,
            codec_embedding: w("model.codec_embedding.weight", &[t.vocab_size, h])?,
            text_embedding: upload::bf16_chunked(
                ctx,
                file,
                "talker.model.text_embedding.weight",
                t.text_vocab_size,
                th,
                MAX_CHUNKS,
            )?,
            text_fc1: (
                w("text_projection.linear_fc1.weight", &[th, th])?,
                w("text_projection.linear_fc1.bias", &[th])?,
            ),
            text_fc2: (
                w("text_projection.linear_fc2.weight", &[h, th])?,
                w("text_projection.linear_fc2.bias", &[h])?,
            ),
            codec_head: w("codec_head.weight", &[t.vocab_size, h])?,
        })
    }
}
