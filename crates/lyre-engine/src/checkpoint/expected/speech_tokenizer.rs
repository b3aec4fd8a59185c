//! `speech_tokenizer/model.safetensors`: the codes→waveform decoder and the Mimi encoder.

use super::{div, AttentionDims, TensorList};
use crate::checkpoint::config::{DecoderConfig, MimiEncoderConfig, SpeechTokenizerConfig};

/// Kernel of the decoder's plain convs (input conv, residual-unit conv1, output conv) and of the
/// ConvNeXt depthwise conv; fixed in the official code.
const DECODER_KERNEL: usize = 7;
/// Kernel of `decoder.pre_conv`; fixed in the official code.
const PRE_CONV_KERNEL: usize = 3;
/// Residual units per decoder block (dilations 1, 3, 9).
const RESIDUAL_UNITS: usize = 3;
/// ConvNeXt hidden width = 4 × channels.
const CONVNEXT_EXPANSION: usize = 4;
/// The official decoder hard-codes `n_q_semantic=1` (`rvq_first`); the config key is not read.
const DECODER_SEMANTIC_QUANTIZERS: usize = 1;

/// `decoder.*`: split RVQ, pre-conv, pre-transformer, ConvNeXt upsampling, then the
/// SnakeBeta/ConvTranspose blocks down to one output channel.
pub(super) fn decoder(t: &mut TensorList, c: &DecoderConfig) {
    let latent = c.latent_dim;
    decoder_quantizer(t, c);
    t.conv("decoder.pre_conv.conv", [latent, c.codebook_dim, PRE_CONV_KERNEL], Some(latent));
    pre_transformer(t, c);
    for (i, &ratio) in c.upsampling_ratios.iter().enumerate() {
        // ConvTranspose1d(latent, latent, kernel = stride = ratio).
        t.conv(&format!("decoder.upsample.{i}.0.conv"), [latent, latent, ratio], Some(latent));
        convnext(t, &format!("decoder.upsample.{i}.1"), latent);
    }

    let width = |i: usize| c.decoder_dim.checked_shr(i as u32).unwrap_or(0);
    t.conv("decoder.decoder.0.conv", [width(0), latent, DECODER_KERNEL], Some(width(0)));
    for (i, &rate) in c.upsample_rates.iter().enumerate() {
        decoder_block(t, &format!("decoder.decoder.{}", i + 1), width(i), width(i + 1), rate);
    }
    let n = c.upsample_rates.len();
    snake(t, &format!("decoder.decoder.{}", n + 1), width(n));
    t.conv(&format!("decoder.decoder.{}.conv", n + 2), [1, width(n), DECODER_KERNEL], Some(1));
}

/// `decoder.quantizer`: `rvq_first` (semantic) and `rvq_rest`, each with forced 1×1 in/out
/// projections between `codebook_dim` and the codebook width `codebook_dim / 2`.
fn decoder_quantizer(t: &mut TensorList, c: &DecoderConfig) {
    let semantic = DECODER_SEMANTIC_QUANTIZERS.min(c.num_quantizers);
    let acoustic = c.num_quantizers - semantic;
    for (name, layers) in [("rvq_first", semantic), ("rvq_rest", acoustic)] {
        let p = format!("decoder.quantizer.{name}");
        let (io, dim) = (c.codebook_dim, c.codebook_dim / 2);
        t.conv(&format!("{p}.input_proj"), [dim, io, 1], None);
        t.conv(&format!("{p}.output_proj"), [io, dim, 1], None);
        for l in 0..layers {
            let book = format!("{p}.vq.layers.{l}._codebook");
            t.push(format!("{book}.cluster_usage"), &[c.codebook_size]);
            t.push(format!("{book}.embedding_sum"), &[c.codebook_size, dim]);
        }
    }
}

/// `decoder.pre_transformer`: latent→hidden projection, RMSNorm/LayerScale/SwiGLU layers without
/// q/k norms, final norm, hidden→latent projection.
fn pre_transformer(t: &mut TensorList, c: &DecoderConfig) {
    let p = "decoder.pre_transformer";
    let h = c.hidden_size;
    let attn = AttentionDims {
        hidden: h,
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        head_dim: c.head_dim,
    };
    t.linear(&format!("{p}.input_proj"), h, c.latent_dim, true);
    for i in 0..c.num_hidden_layers {
        let l = format!("{p}.layers.{i}");
        t.attention(&format!("{l}.self_attn"), &attn);
        t.swiglu(&format!("{l}.mlp"), h, c.intermediate_size);
        t.norm(&format!("{l}.input_layernorm"), h, false);
        t.norm(&format!("{l}.post_attention_layernorm"), h, false);
        layer_scales(t, &l, h);
    }
    t.norm(&format!("{p}.norm"), h, false);
    t.linear(&format!("{p}.output_proj"), c.latent_dim, h, true);
}

/// `self_attn_layer_scale.scale` and `mlp_layer_scale.scale`, one per residual branch.
fn layer_scales(t: &mut TensorList, layer: &str, dim: usize) {
    t.push(format!("{layer}.self_attn_layer_scale.scale"), &[dim]);
    t.push(format!("{layer}.mlp_layer_scale.scale"), &[dim]);
}

/// ConvNeXt block: depthwise conv, LayerNorm, pointwise MLP, `gamma`.
fn convnext(t: &mut TensorList, prefix: &str, dim: usize) {
    let wide = CONVNEXT_EXPANSION * dim;
    t.conv(&format!("{prefix}.dwconv.conv"), [dim, 1, DECODER_KERNEL], Some(dim));
    t.norm(&format!("{prefix}.norm"), dim, true);
    t.linear(&format!("{prefix}.pwconv1"), wide, dim, true);
    t.linear(&format!("{prefix}.pwconv2"), dim, wide, true);
    t.push(format!("{prefix}.gamma"), &[dim]);
}

/// SnakeBeta activation: log-space `alpha` and `beta`, one per channel.
fn snake(t: &mut TensorList, prefix: &str, dim: usize) {
    t.push(format!("{prefix}.alpha"), &[dim]);
    t.push(format!("{prefix}.beta"), &[dim]);
}

/// One upsampling block: SnakeBeta, ConvTranspose1d(inp, out, 2·rate), residual units.
fn decoder_block(t: &mut TensorList, prefix: &str, inp: usize, out: usize, rate: usize) {
    snake(t, &format!("{prefix}.block.0"), inp);
    t.conv(&format!("{prefix}.block.1.conv"), [inp, out, 2 * rate], Some(out));
    for u in 0..RESIDUAL_UNITS {
        let p = format!("{prefix}.block.{}", u + 2);
        snake(t, &format!("{p}.act1"), out);
        t.conv(&format!("{p}.conv1.conv"), [out, out, DECODER_KERNEL], Some(out));
        snake(t, &format!("{p}.act2"), out);
        t.conv(&format!("{p}.conv2.conv"), [out, out, 1], Some(out));
    }
}

/// `encoder.*`: transformers' `MimiModel` without its decoder half: the SEANet conv encoder, the
/// encoder transformer, the frame-rate downsample and the split RVQ (all `num_quantizers`, even
/// though only the first `encoder_valid_num_quantizers` are used).
pub(super) fn mimi_encoder(t: &mut TensorList, st: &SpeechTokenizerConfig) {
    let c = &st.encoder_config;
    seanet_encoder(t, c);
    mimi_transformer(t, c);
    // MimiModel downsamples from the SEANet rate to the frame rate with kernel 2·factor (stride 2)
    // only when the rates differ. `_frame_rate` is not in the config struct, but the frame hop
    // `encode_downsample_rate` over the SEANet hop gives the same factor.
    let seanet_hop: usize = c.upsampling_ratios.iter().product();
    let factor = div(st.encode_downsample_rate, seanet_hop);
    if factor != 1 {
        t.conv("encoder.downsample.conv", [c.hidden_size, c.hidden_size, 2 * factor], None);
    }
    let semantic = c.num_semantic_quantizers;
    let acoustic = c.num_quantizers.saturating_sub(semantic);
    mimi_rvq(t, "encoder.quantizer.semantic_residual_vector_quantizer", semantic, c);
    mimi_rvq(t, "encoder.quantizer.acoustic_residual_vector_quantizer", acoustic, c);
}

/// `encoder.encoder.layers.*`: a conv, then per ratio (in reverse) residual blocks, an ELU and a
/// strided conv doubling the channels, then ELU and the final conv to `hidden_size`. ELUs hold no
/// weights but take a layer index, hence the gaps (2, 5, 8, ...).
fn seanet_encoder(t: &mut TensorList, c: &MimiEncoderConfig) {
    let layer = |i: usize| format!("encoder.encoder.layers.{i}");
    let mut ch = c.num_filters;
    t.conv(&format!("{}.conv", layer(0)), [ch, c.audio_channels, c.kernel_size], Some(ch));
    let mut index = 1;
    for &ratio in c.upsampling_ratios.iter().rev() {
        for _ in 0..c.num_residual_layers {
            mimi_resnet_block(t, &layer(index), ch, c);
            index += 1;
        }
        index += 1; // ELU
        t.conv(&format!("{}.conv", layer(index)), [2 * ch, ch, 2 * ratio], Some(2 * ch));
        index += 1;
        ch *= 2;
    }
    index += 1; // ELU
    let hidden = c.hidden_size;
    t.conv(&format!("{}.conv", layer(index)), [hidden, ch, c.last_kernel_size], Some(hidden));
}

/// `MimiResnetBlock`: ELU, conv (residual kernel) to `dim / compress`, ELU, 1×1 conv back.
fn mimi_resnet_block(t: &mut TensorList, prefix: &str, dim: usize, c: &MimiEncoderConfig) {
    let hidden = div(dim, c.compress);
    let kernel = c.residual_kernel_size;
    t.conv(&format!("{prefix}.block.1.conv"), [hidden, dim, kernel], Some(hidden));
    t.conv(&format!("{prefix}.block.3.conv"), [dim, hidden, 1], Some(dim));
    if c.use_conv_shortcut {
        t.conv(&format!("{prefix}.shortcut.conv"), [dim, dim, 1], Some(dim));
    }
}

/// `encoder.encoder_transformer`: LayerNorm (with bias), bias-free attention and GELU MLP,
/// LayerScale on both branches; no final norm.
fn mimi_transformer(t: &mut TensorList, c: &MimiEncoderConfig) {
    let h = c.hidden_size;
    let attn = AttentionDims {
        hidden: h,
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        head_dim: c.head_dim,
    };
    for i in 0..c.num_hidden_layers {
        let l = format!("encoder.encoder_transformer.layers.{i}");
        t.attention(&format!("{l}.self_attn"), &attn);
        t.linear(&format!("{l}.mlp.fc1"), c.intermediate_size, h, false);
        t.linear(&format!("{l}.mlp.fc2"), h, c.intermediate_size, false);
        t.norm(&format!("{l}.input_layernorm"), h, true);
        t.norm(&format!("{l}.post_attention_layernorm"), h, true);
        layer_scales(t, &l, h);
    }
}

/// `MimiResidualVectorQuantizer`: codebooks of `codebook_dim` (their buffers are saved too), and
/// 1×1 projections to `vector_quantization_hidden_dimension` only when it differs from
/// `hidden_size`.
fn mimi_rvq(t: &mut TensorList, prefix: &str, layers: usize, c: &MimiEncoderConfig) {
    for l in 0..layers {
        let book = format!("{prefix}.layers.{l}.codebook");
        t.push(format!("{book}.initialized"), &[1]);
        t.push(format!("{book}.cluster_usage"), &[c.codebook_size]);
        t.push(format!("{book}.embed_sum"), &[c.codebook_size, c.codebook_dim]);
    }
    let vq = c.vector_quantization_hidden_dimension;
    if vq != c.hidden_size {
        t.conv(&format!("{prefix}.input_proj"), [vq, c.hidden_size, 1], None);
        t.conv(&format!("{prefix}.output_proj"), [c.hidden_size, vq, 1], None);
    }
}
