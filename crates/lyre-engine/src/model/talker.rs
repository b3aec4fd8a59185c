//! The talker: text projection, 28 Qwen3 layers, final norm and the codec head that scores the
//! first codebook. Its weights, resident on the GPU, and its part of a tick: every row's input
//! (text projection + codec part), the stack over every row, then each session's last row to a
//! sampled first code.

use super::rope::RopeTables;
use super::transformer::{load_layers, KvBuffers, StackBuffers, StackRun, StackShape};
use super::upload::{self, ChunkedTable};
use super::TickIo;
use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::weights::WeightFile;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, RowCount};
use crate::kernels::attention::{Heads, KvFormat};
use crate::kernels::gather::{CombineInput, CopyRows, EmbedText, Source, MAX_CHUNKS};
use crate::kernels::layer::LayerWeights;
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::norm::{RmsNorm, WeightFormat};
use crate::kernels::sample::{Sample, TalkerProcessors};
use crate::kernels::{Env, Rows};

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

/// Special ids the talker's sampler needs.
#[derive(Debug, Clone, Copy)]
pub struct CodecIds {
    pub eos: u32,
    /// EOS is masked while fewer frames than this have been generated.
    pub min_new_tokens: u32,
}

/// The talker's activations for ticks of up to `rows` rows and `sessions` sessions, its KV
/// cache and its rotary tables.
pub struct TalkerBuffers {
    text_emb: wgpu::Buffer,
    text_h: wgpu::Buffer,
    text_proj: wgpu::Buffer,
    /// The stack's activations: `stack.x` holds the input rows, then the residual stream.
    pub stack: StackBuffers,
    last: wgpu::Buffer,
    /// Final-normed hidden state of each session's last row, `[session][H]`.
    pub normed: wgpu::Buffer,
    /// `[session][codec vocab]`.
    pub logits: wgpu::Buffer,
    pub kv: KvBuffers,
    rope: RopeTables,
}

impl TalkerBuffers {
    pub fn new(
        ctx: &GpuContext,
        w: &TalkerWeights,
        (rows, sessions): (usize, usize),
        max_positions: usize,
        kv_cache: KvFormat,
    ) -> Result<Self> {
        let s = &w.shape;
        let z = |label: &str, bytes: usize| ctx.storage_zeroed(label, bytes as u64);
        Ok(TalkerBuffers {
            text_emb: z("text_emb", rows * w.text_hidden * 4)?,
            text_h: z("text_h", rows * w.text_hidden * 4)?,
            text_proj: z("text_proj", rows * s.hidden * 4)?,
            stack: StackBuffers::new(ctx, "talker", s, rows)?,
            last: z("last_hidden", sessions * s.hidden * 4)?,
            normed: z("normed", sessions * s.hidden * 4)?,
            logits: z("logits", sessions * w.codec_vocab * 4)?,
            kv: KvBuffers::new(ctx, "talker.kv", s, sessions, max_positions, kv_cache)?,
            rope: RopeTables::new(
                ctx,
                "talker.rope",
                max_positions,
                s.heads.head_dim as usize,
                s.rope_theta,
            )?,
        })
    }
}

/// The talker's dispatches of a tick, by stage.
pub struct TalkerSteps {
    /// Text projection and input assembly.
    pub input: Vec<Dispatch>,
    /// The stack over every row.
    pub stack: Vec<Dispatch>,
    /// Each session's last row, final norm, codec head and the first code's sample.
    pub first_code: Vec<Dispatch>,
}

impl TalkerWeights {
    /// The talker's part of a tick over `io`'s rows and sessions.
    pub fn record(&self, env: &Env, b: &TalkerBuffers, io: &TickIo, ids: CodecIds) -> Result<TalkerSteps> {
        let stack = StackRun {
            label: "talker",
            shape: &self.shape,
            layers: &self.layers,
            bufs: &b.stack,
            kv: &b.kv,
            rope: &b.rope,
            row_desc: io.row_desc,
            rows: RowCount::Talker,
            grid: io.grid,
        }
        .build(env)?;
        Ok(TalkerSteps {
            input: self.input(env, b, io)?,
            stack,
            first_code: self.first_code(env, b, io, ids)?,
        })
    }

    /// Every row's input = text part (embedding gather, then the SiLU MLP) + codec part.
    fn input(&self, env: &Env, b: &TalkerBuffers, io: &TickIo) -> Result<Vec<Dispatch>> {
        let (th, h) = (self.text_hidden as u32, self.shape.hidden as u32);
        let rows = RowCount::Talker;
        let embed = EmbedText {
            label: "text.embed",
            chunks: &self.text_embedding.chunks,
            rows_per_chunk: self.text_embedding.rows_per_chunk,
            vocab: self.text_vocab as u32,
            dim: th,
            row_desc: io.row_desc,
            out: &b.text_emb,
            rows,
        };
        let combine = CombineInput {
            label: "talker.input",
            dim: h,
            codec_vocab: self.codec_vocab as u32,
            row_desc: io.row_desc,
            text: &b.text_proj,
            codec_embedding: &self.codec_embedding,
            acc: io.acc,
            extra: io.extra,
            out: &b.stack.x,
            rows,
        };
        Ok(vec![
            embed.build(env)?,
            linear("text.fc1", &self.text_fc1, (th, th), (&b.text_emb, &b.text_h), Activation::Silu)
                .build(env)?,
            linear("text.fc2", &self.text_fc2, (th, h), (&b.text_h, &b.text_proj), Activation::None)
                .build(env)?,
            combine.build(env),
        ])
    }

    /// Each session's last row → final norm → codec head → first code.
    fn first_code(&self, env: &Env, b: &TalkerBuffers, io: &TickIo, ids: CodecIds) -> Result<Vec<Dispatch>> {
        let (h, v) = (self.shape.hidden as u32, self.codec_vocab as u32);
        let rows = RowCount::Sessions;
        let last = CopyRows {
            label: "talker.last_rows",
            dim: h,
            sessions: io.sessions,
            src: &b.stack.x,
            src_stride: h,
            source: Source::LastRow,
            dst: Rows::dense(&b.last, h),
            rows,
        };
        let norm = RmsNorm {
            label: "talker.norm",
            weight: &self.norm,
            format: WeightFormat::Bf16,
            dim: h,
            eps: self.shape.eps,
            x: Rows::dense(&b.last, h),
            y: Rows::dense(&b.normed, h),
            rows,
        };
        let head = Matmul {
            label: "talker.codec_head",
            weight: &self.codec_head,
            bias: None,
            k: h,
            n: v,
            x: Rows::dense(&b.normed, h),
            input: Input::Plain,
            y: Rows::dense(&b.logits, v),
            rows,
            output: Output::Overwrite,
            activation: Activation::None,
        };
        let processors = TalkerProcessors {
            eos: ids.eos,
            suppress_start: v - 1024,
            min_new_tokens: ids.min_new_tokens,
            history_words: io.history_words,
        };
        let sample = Sample {
            label: "talker.sample",
            vocab: v,
            logits: Rows::dense(&b.logits, v),
            code_col: 0,
            talker: Some(processors),
            sessions: io.sessions,
            codes: io.codes,
            history: io.history,
        };
        Ok(vec![last.build(env), norm.build(env), head.build(env)?, sample.build(env)?])
    }
}

/// `y = act(x · Wᵀ + b)` over the tick's talker rows, `k` inputs and `n` outputs each.
fn linear<'a>(
    label: &'a str,
    (weight, bias): &'a (wgpu::Buffer, wgpu::Buffer),
    (k, n): (u32, u32),
    (x, y): (&'a wgpu::Buffer, &'a wgpu::Buffer),
    activation: Activation,
) -> Matmul<'a> {
    Matmul {
        label,
        weight,
        bias: Some(bias),
        k,
        n,
        x: Rows::dense(x, k),
        input: Input::Plain,
        y: Rows::dense(y, n),
        rows: RowCount::Talker,
        output: Output::Overwrite,
        activation,
    }
}
