//! `model.safetensors`: the talker, its code predictor and the Base models' speaker encoder.

use super::{div, AttentionDims, TensorList};
use crate::checkpoint::config::{ModelConfig, SpeakerEncoderConfig};

/// The widths of one Qwen3 decoder layer (talker and code predictor alike).
struct Qwen3Dims {
    attn: AttentionDims,
    intermediate: usize,
}

/// Pre-norm Qwen3 layer: attention with per-head q/k RMSNorm, then a SwiGLU MLP.
fn qwen3_layer(t: &mut TensorList, prefix: &str, d: &Qwen3Dims) {
    let hidden = d.attn.hidden;
    t.attention(&format!("{prefix}.self_attn"), &d.attn);
    t.norm(&format!("{prefix}.self_attn.q_norm"), d.attn.head_dim, false);
    t.norm(&format!("{prefix}.self_attn.k_norm"), d.attn.head_dim, false);
    t.swiglu(&format!("{prefix}.mlp"), hidden, d.intermediate);
    t.norm(&format!("{prefix}.input_layernorm"), hidden, false);
    t.norm(&format!("{prefix}.post_attention_layernorm"), hidden, false);
}

/// `talker.*` without the code predictor: embeddings, text projection, layers, norm, codec head.
pub(super) fn talker(t: &mut TensorList, cfg: &ModelConfig) {
    let c = &cfg.talker_config;
    let h = c.hidden_size;
    let dims = Qwen3Dims {
        attn: AttentionDims {
            hidden: h,
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        },
        intermediate: c.intermediate_size,
    };
    t.push("talker.model.text_embedding.weight".into(), &[c.text_vocab_size, c.text_hidden_size]);
    t.push("talker.model.codec_embedding.weight".into(), &[c.vocab_size, h]);
    // Qwen3TTSTalkerResizeMLP: text_hidden -> text_hidden -> H, both with bias.
    let th = c.text_hidden_size;
    t.linear("talker.text_projection.linear_fc1", th, th, true);
    t.linear("talker.text_projection.linear_fc2", h, th, true);
    for i in 0..c.num_hidden_layers {
        qwen3_layer(t, &format!("talker.model.layers.{i}"), &dims);
    }
    t.norm("talker.model.norm", h, false);
    t.linear("talker.codec_head", c.vocab_size, h, false);
}

/// `talker.code_predictor.*`: its layers, one embedding (talker width) and one head per residual
/// codebook, and the talker→predictor projection when the widths differ.
pub(super) fn code_predictor(t: &mut TensorList, cfg: &ModelConfig) {
    let talker_h = cfg.talker_config.hidden_size;
    let c = &cfg.talker_config.code_predictor_config;
    let h = c.hidden_size;
    let dims = Qwen3Dims {
        attn: AttentionDims {
            hidden: h,
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        },
        intermediate: c.intermediate_size,
    };
    let prefix = "talker.code_predictor";
    for i in 0..c.num_hidden_layers {
        qwen3_layer(t, &format!("{prefix}.model.layers.{i}"), &dims);
    }
    t.norm(&format!("{prefix}.model.norm"), h, false);
    // Codebook 0 is embedded by the talker itself; the predictor covers codebooks 1..groups.
    for i in 0..c.num_code_groups.saturating_sub(1) {
        t.push(format!("{prefix}.model.codec_embedding.{i}.weight"), &[c.vocab_size, talker_h]);
        t.linear(&format!("{prefix}.lm_head.{i}"), c.vocab_size, h, false);
    }
    if cfg.has_mtp_projection() {
        t.linear(&format!("{prefix}.small_to_mtp_projection"), h, talker_h, true);
    }
}

/// `speaker_encoder.*`: ECAPA-TDNN. `blocks.0` is a TDNN over the mel bins, `blocks.1..n-2` are
/// SE-Res2Net blocks, then multi-layer aggregation (`mfa`), attentive pooling (`asp`) and `fc`.
pub(super) fn speaker_encoder(t: &mut TensorList, cfg: &SpeakerEncoderConfig) {
    let channels = &cfg.enc_channels;
    let ch = |i: usize| channels.get(i).copied().unwrap_or(0);
    let kernel = |i: usize| cfg.enc_kernel_sizes.get(i).copied().unwrap_or(0);
    let last = channels.len().saturating_sub(1);
    let p = "speaker_encoder";

    tdnn(t, &format!("{p}.blocks.0"), ch(0), cfg.mel_dim, kernel(0));
    for i in 1..last {
        se_res2net_block(t, &format!("{p}.blocks.{i}"), ch(i - 1), ch(i), kernel(i), cfg);
    }
    // The official mfa is declared channels[-1] -> channels[-1]; its input is the concatenation
    // of blocks 1..n-2, so a working config has sum(channels[1..n-1]) == channels[-1].
    tdnn(t, &format!("{p}.mfa"), ch(last), ch(last), kernel(last));
    // Attentive statistics pooling sees [x, mean, std] (3 × C) and pools to [mean, std] (2 × C).
    tdnn(t, &format!("{p}.asp.tdnn"), cfg.enc_attention_channels, 3 * ch(last), 1);
    t.conv(&format!("{p}.asp.conv"), [ch(last), cfg.enc_attention_channels, 1], Some(ch(last)));
    t.conv(&format!("{p}.fc"), [cfg.enc_dim, 2 * ch(last), 1], Some(cfg.enc_dim));
}

/// `TimeDelayNetBlock`: one Conv1d with bias (then ReLU).
fn tdnn(t: &mut TensorList, prefix: &str, out: usize, inp: usize, kernel: usize) {
    t.conv(&format!("{prefix}.conv"), [out, inp, kernel], Some(out));
}

/// `SqueezeExcitationRes2NetBlock`: tdnn1 (k1), Res2Net (scale-1 convs on channel slices),
/// tdnn2 (k1), squeeze-excitation. The residual needs `inp == out`, so there is no shortcut conv.
fn se_res2net_block(
    t: &mut TensorList,
    prefix: &str,
    inp: usize,
    out: usize,
    kernel: usize,
    cfg: &SpeakerEncoderConfig,
) {
    let scale = cfg.enc_res2net_scale;
    let slice = div(out, scale);
    let se = cfg.enc_se_channels;
    tdnn(t, &format!("{prefix}.tdnn1"), out, inp, 1);
    for j in 0..scale.saturating_sub(1) {
        tdnn(t, &format!("{prefix}.res2net_block.blocks.{j}"), slice, slice, kernel);
    }
    tdnn(t, &format!("{prefix}.tdnn2"), out, out, 1);
    t.conv(&format!("{prefix}.se_block.conv1"), [se, out, 1], Some(se));
    t.conv(&format!("{prefix}.se_block.conv2"), [out, se, 1], Some(out));
}
