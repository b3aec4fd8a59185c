//! The decoder's f32 weights on the GPU, read from `speech_tokenizer/model.safetensors` with the
//! shapes the config implies and repacked into the kernels' layouts. Where the adapter has
//! cooperative matrices, every conv and linear also keeps an f16 copy ([`PackedConv`]).

use super::shape::{
    DecoderShape, CLUSTER_USAGE_EPS, CONVNEXT_EXPANSION, DILATIONS, KERNEL, PRE_CONV_KERNEL, SEMANTIC_BOOKS,
};
use crate::checkpoint::weights::{TensorDtype, WeightFile};
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::kernels::conv::SnakeWeights;
use crate::kernels::conv::{pack_conv, pack_conv_transpose, pack_linear, ConvShape, PackedConv};

/// One pre-transformer layer (q|k|v and gate|up stacked into one matmul each).
pub struct TransformerLayer {
    pub input_norm: wgpu::Buffer,
    pub qkv: PackedConv,
    pub o: PackedConv,
    pub attn_scale: wgpu::Buffer,
    pub post_norm: wgpu::Buffer,
    pub gate_up: PackedConv,
    pub down: PackedConv,
    pub mlp_scale: wgpu::Buffer,
}

/// One upsampling stage: ConvTranspose (kernel = stride), then a ConvNeXt block.
pub struct UpsampleStage {
    pub upsample: PackedConv,
    pub dw_weight: wgpu::Buffer,
    pub dw_bias: wgpu::Buffer,
    pub norm_weight: wgpu::Buffer,
    pub norm_bias: wgpu::Buffer,
    pub pw1: PackedConv,
    pub pw2: PackedConv,
    pub gamma: wgpu::Buffer,
}

/// Snake → conv k7 (dilated) → Snake → conv k1, added to the block's stream.
pub struct ResidualUnit {
    pub dilation: usize,
    pub act1: SnakeWeights,
    pub conv1: PackedConv,
    pub act2: SnakeWeights,
    pub conv2: PackedConv,
}

/// Snake → causal ConvTranspose (stride = rate) → three residual units.
pub struct VocoderBlock {
    pub rate: usize,
    pub snake: SnakeWeights,
    pub upsample: PackedConv,
    pub units: Vec<ResidualUnit>,
}

/// Every decoder weight, resident on the GPU.
pub struct DecoderWeights {
    /// `[books][codebook_size][book_dim]`: `embedding_sum / max(cluster_usage, 1e-5)`.
    pub codebooks: wgpu::Buffer,
    /// Both groups' 1×1 `output_proj` as one linear over `[first | rest]`.
    pub rvq_proj: PackedConv,
    pub pre_conv: PackedConv,
    pub input_proj: PackedConv,
    pub layers: Vec<TransformerLayer>,
    pub norm: wgpu::Buffer,
    pub output_proj: PackedConv,
    pub upsample: Vec<UpsampleStage>,
    pub decoder_in: PackedConv,
    pub blocks: Vec<VocoderBlock>,
    pub final_snake: SnakeWeights,
    pub final_conv: PackedConv,
}

impl DecoderWeights {
    pub fn load(ctx: &GpuContext, file: &WeightFile, s: &DecoderShape) -> Result<Self> {
        let l = Loader { ctx, file };
        let n = s.upsample_rates.len();
        Ok(DecoderWeights {
            codebooks: l.codebooks(s)?,
            rvq_proj: l.rvq_projection(s)?,
            pre_conv: l.conv("decoder.pre_conv.conv", s.latent, s.codebook_dim, PRE_CONV_KERNEL, 1)?,
            input_proj: l.linear("decoder.pre_transformer.input_proj", s.hidden, s.latent, true)?,
            layers: (0..s.layers).map(|i| l.transformer_layer(s, i)).collect::<Result<_>>()?,
            norm: l.buffer("decoder.pre_transformer.norm.weight", &[s.hidden])?,
            output_proj: l.linear("decoder.pre_transformer.output_proj", s.latent, s.hidden, true)?,
            upsample: (0..s.upsampling_ratios.len())
                .map(|i| l.upsample_stage(s, i))
                .collect::<Result<_>>()?,
            decoder_in: l.conv("decoder.decoder.0.conv", s.decoder_dim, s.latent, KERNEL, 1)?,
            blocks: (0..n).map(|i| l.vocoder_block(s, i)).collect::<Result<_>>()?,
            final_snake: l.snake(&format!("decoder.decoder.{}", n + 1), s.output_width())?,
            final_conv: l.conv(&format!("decoder.decoder.{}.conv", n + 2), 1, s.output_width(), KERNEL, 1)?,
        })
    }
}

struct Loader<'a> {
    ctx: &'a GpuContext,
    file: &'a WeightFile,
}

impl Loader<'_> {
    fn values(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        Ok(self.file.get(name, shape, TensorDtype::F32)?.to_f32())
    }

    fn buffer(&self, name: &str, shape: &[usize]) -> Result<wgpu::Buffer> {
        self.ctx.storage_from(name, &self.values(name, shape)?)
    }

    fn upload(
        &self,
        label: &str,
        (shape, packed): (ConvShape, Vec<f32>),
        bias: Option<Vec<f32>>,
    ) -> Result<PackedConv> {
        PackedConv::upload(self.ctx, label, shape, &packed, bias.as_deref())
    }

    fn bias(&self, prefix: &str, n: usize) -> Result<Vec<f32>> {
        self.values(&format!("{prefix}.bias"), &[n])
    }

    /// `{prefix}.weight` `[cout][cin][k]` and `{prefix}.bias`.
    fn conv(&self, prefix: &str, cout: usize, cin: usize, k: usize, dil: usize) -> Result<PackedConv> {
        let w = self.values(&format!("{prefix}.weight"), &[cout, cin, k])?;
        self.upload(prefix, pack_conv(&w, cout, cin, k, dil), Some(self.bias(prefix, cout)?))
    }

    /// `{prefix}.weight` `[cin][cout][k]` (ConvTranspose1d) and `{prefix}.bias`.
    fn conv_transpose(
        &self,
        prefix: &str,
        cin: usize,
        cout: usize,
        k: usize,
        stride: usize,
    ) -> Result<PackedConv> {
        let w = self.values(&format!("{prefix}.weight"), &[cin, cout, k])?;
        self.upload(prefix, pack_conv_transpose(&w, cin, cout, k, stride)?, Some(self.bias(prefix, cout)?))
    }

    fn linear(&self, prefix: &str, out: usize, inp: usize, bias: bool) -> Result<PackedConv> {
        let w = self.values(&format!("{prefix}.weight"), &[out, inp])?;
        let b = if bias { Some(self.bias(prefix, out)?) } else { None };
        self.upload(prefix, pack_linear(&w, out, inp), b)
    }

    /// Several bias-free `[rows][inp]` matrices stacked along rows, as one linear.
    fn stacked(&self, label: &str, parts: &[(String, usize)], inp: usize) -> Result<PackedConv> {
        let mut w = Vec::new();
        for (name, rows) in parts {
            w.extend(self.values(name, &[*rows, inp])?);
        }
        let out = parts.iter().map(|p| p.1).sum();
        self.upload(label, pack_linear(&w, out, inp), None)
    }

    fn snake(&self, prefix: &str, channels: usize) -> Result<SnakeWeights> {
        let alpha = self.values(&format!("{prefix}.alpha"), &[channels])?;
        let beta = self.values(&format!("{prefix}.beta"), &[channels])?;
        SnakeWeights::upload(self.ctx, prefix, &alpha, &beta)
    }

    fn codebooks(&self, s: &DecoderShape) -> Result<wgpu::Buffer> {
        let mut table = Vec::with_capacity(s.books * s.codebook_size * s.book_dim);
        for q in 0..s.books {
            let (group, layer) = book_name(q);
            let p = format!("decoder.quantizer.{group}.vq.layers.{layer}._codebook");
            let usage = self.values(&format!("{p}.cluster_usage"), &[s.codebook_size])?;
            let sum = self.values(&format!("{p}.embedding_sum"), &[s.codebook_size, s.book_dim])?;
            for (row, u) in sum.chunks_exact(s.book_dim).zip(&usage) {
                let u = u.max(CLUSTER_USAGE_EPS);
                table.extend(row.iter().map(|e| e / u));
            }
        }
        self.ctx.storage_from("decoder.codebooks", &table)
    }

    /// `out = W_first · first + W_rest · rest` = `[W_first | W_rest] · [first | rest]`.
    fn rvq_projection(&self, s: &DecoderShape) -> Result<PackedConv> {
        let (out, dim) = (s.codebook_dim, s.book_dim);
        let proj = |group: &str| {
            self.values(&format!("decoder.quantizer.{group}.output_proj.weight"), &[out, dim, 1])
        };
        let (first, rest) = (proj("rvq_first")?, proj("rvq_rest")?);
        let mut w = Vec::with_capacity(out * 2 * dim);
        for o in 0..out {
            w.extend_from_slice(&first[o * dim..(o + 1) * dim]);
            w.extend_from_slice(&rest[o * dim..(o + 1) * dim]);
        }
        self.upload("decoder.quantizer.output_proj", pack_linear(&w, out, 2 * dim), None)
    }

    fn transformer_layer(&self, s: &DecoderShape, i: usize) -> Result<TransformerLayer> {
        let p = format!("decoder.pre_transformer.layers.{i}");
        let name = |n: &str| format!("{p}.{n}");
        let (h, q, kv) = (s.hidden, s.heads.q_width() as usize, s.heads.kv_width() as usize);
        let qkv = [
            (name("self_attn.q_proj.weight"), q),
            (name("self_attn.k_proj.weight"), kv),
            (name("self_attn.v_proj.weight"), kv),
        ];
        let gate_up = [(name("mlp.gate_proj.weight"), s.inter), (name("mlp.up_proj.weight"), s.inter)];
        Ok(TransformerLayer {
            input_norm: self.buffer(&name("input_layernorm.weight"), &[h])?,
            qkv: self.stacked(&name("self_attn.qkv"), &qkv, h)?,
            o: self.linear(&name("self_attn.o_proj"), h, q, false)?,
            attn_scale: self.buffer(&name("self_attn_layer_scale.scale"), &[h])?,
            post_norm: self.buffer(&name("post_attention_layernorm.weight"), &[h])?,
            gate_up: self.stacked(&name("mlp.gate_up"), &gate_up, h)?,
            down: self.linear(&name("mlp.down_proj"), h, s.inter, false)?,
            mlp_scale: self.buffer(&name("mlp_layer_scale.scale"), &[h])?,
        })
    }

    fn upsample_stage(&self, s: &DecoderShape, i: usize) -> Result<UpsampleStage> {
        let (l, ratio) = (s.latent, s.upsampling_ratios[i]);
        let wide = CONVNEXT_EXPANSION * l;
        let p = format!("decoder.upsample.{i}.1");
        Ok(UpsampleStage {
            upsample: self.conv_transpose(&format!("decoder.upsample.{i}.0.conv"), l, l, ratio, ratio)?,
            dw_weight: self.buffer(&format!("{p}.dwconv.conv.weight"), &[l, 1, KERNEL])?,
            dw_bias: self.buffer(&format!("{p}.dwconv.conv.bias"), &[l])?,
            norm_weight: self.buffer(&format!("{p}.norm.weight"), &[l])?,
            norm_bias: self.buffer(&format!("{p}.norm.bias"), &[l])?,
            pw1: self.linear(&format!("{p}.pwconv1"), wide, l, true)?,
            pw2: self.linear(&format!("{p}.pwconv2"), l, wide, true)?,
            gamma: self.buffer(&format!("{p}.gamma"), &[l])?,
        })
    }

    fn vocoder_block(&self, s: &DecoderShape, i: usize) -> Result<VocoderBlock> {
        let (inp, out, rate) = (s.block_width(i), s.block_width(i + 1), s.upsample_rates[i]);
        let p = format!("decoder.decoder.{}.block", i + 1);
        let units = DILATIONS
            .iter()
            .enumerate()
            .map(|(u, &dilation)| {
                let up = format!("{p}.{}", u + 2);
                Ok(ResidualUnit {
                    dilation,
                    act1: self.snake(&format!("{up}.act1"), out)?,
                    conv1: self.conv(&format!("{up}.conv1.conv"), out, out, KERNEL, dilation)?,
                    act2: self.snake(&format!("{up}.act2"), out)?,
                    conv2: self.conv(&format!("{up}.conv2.conv"), out, out, 1, 1)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(VocoderBlock {
            rate,
            snake: self.snake(&format!("{p}.0"), inp)?,
            upsample: self.conv_transpose(&format!("{p}.1.conv"), inp, out, 2 * rate, rate)?,
            units,
        })
    }
}

/// Codebook `q`'s group and index within it.
fn book_name(q: usize) -> (&'static str, usize) {
    if q < SEMANTIC_BOOKS {
        ("rvq_first", q)
    } else {
        ("rvq_rest", q - SEMANTIC_BOOKS)
    }
}
