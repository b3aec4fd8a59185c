//! The code predictor ("sub-talker"): 5 Qwen3 layers that, per frame, turn the talker's hidden
//! state and the first code into codes 1..15, with one embedding table and one head per code.
//! Its weights, resident on the GPU, and its part of a tick: fifteen steps, each a stack run over
//! its rows, a head and a sample, with the embeddings that feed the next step and the frame
//! accumulator.

use super::rope::RopeTables;
use super::talker::TalkerWeights;
use super::transformer::{load_layers, KvBuffers, StackBuffers, StackRun, StackShape};
use super::upload;
use super::TickIo;
use crate::checkpoint::config::ModelConfig;
use crate::checkpoint::weights::WeightFile;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, RowCount};
use crate::kernels::attention::{Heads, KvFormat};
use crate::kernels::gather::{Accumulate, CodecGather, CopyRows, Source};
use crate::kernels::layer::LayerWeights;
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::sample::Sample;
use crate::kernels::{Env, Rows};

/// Positions the code predictor uses per frame (2-token prefill + 14 steps).
const POSITIONS: usize = 16;

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

/// The code predictor's activations for up to `sessions` sessions, its KV cache (16 positions
/// per session, f32), rotary tables and the static row descriptors of its steps.
pub struct CodePredictorBuffers {
    /// Embeddings at the talker's width, where a projection maps them to the code predictor's.
    cp_in: Option<wgpu::Buffer>,
    stack: StackBuffers,
    kv: KvBuffers,
    rope: RopeTables,
    /// Step 0 has rows (i, pos 0), (i, pos 1) for session i; step j ≥ 1 has row (i, pos j + 1).
    row_descs: Vec<wgpu::Buffer>,
    /// Logits of every step, `[step][session][vocab]`.
    pub logits: wgpu::Buffer,
    sessions: usize,
}

impl CodePredictorBuffers {
    pub fn new(ctx: &GpuContext, w: &CodePredictorWeights, sessions: usize) -> Result<Self> {
        let s = &w.shape;
        let steps = w.heads.len();
        let cp_in = match w.projection {
            Some(_) => Some(ctx.storage_zeroed("cp_in", (2 * sessions * w.talker_hidden * 4) as u64)?),
            None => None,
        };
        let mut row_descs = Vec::with_capacity(steps);
        let ms = sessions as u32;
        let step0: Vec<u32> = (0..ms).flat_map(|i| [i, 0, 0, 0, i, 1, 0, 0]).collect();
        row_descs.push(ctx.storage_from("cp.rows.0", &step0)?);
        for j in 1..steps as u32 {
            let rows: Vec<u32> = (0..ms).flat_map(|i| [i, j + 1, 0, 0]).collect();
            row_descs.push(ctx.storage_from(&format!("cp.rows.{j}"), &rows)?);
        }
        Ok(CodePredictorBuffers {
            cp_in,
            stack: StackBuffers::new(ctx, "cp", s, 2 * sessions)?,
            kv: KvBuffers::new(ctx, "cp.kv", s, sessions, POSITIONS, KvFormat::F32)?,
            rope: RopeTables::new(ctx, "cp.rope", POSITIONS, s.heads.head_dim as usize, s.rope_theta)?,
            row_descs,
            logits: ctx.storage_zeroed("cp_logits", (steps * sessions * w.vocab * 4) as u64)?,
            sessions,
        })
    }
}

impl CodePredictorWeights {
    /// Fifteen steps: step 0 runs the 2-row prefill `[talker hidden, embed(c0)]` (`hidden`: the
    /// talker's final-normed last rows); step j ≥ 1 feeds `embedding[j-1](c_j)`. Each step ends
    /// with `lm_head[j]` and a sample into code column j+1. Every looked-up embedding is also
    /// added to the session's frame accumulator, the last code's too.
    pub fn record(
        &self,
        env: &Env,
        talker: &TalkerWeights,
        b: &CodePredictorBuffers,
        io: &TickIo,
        hidden: &wgpu::Buffer,
    ) -> Result<Vec<Dispatch>> {
        let th = self.talker_hidden as u32;
        // Where embeddings are written: straight into the stack input, or into `cp_in` when the
        // projection maps them to the code predictor's width first.
        let input = b.cp_in.as_ref().unwrap_or(&b.stack.x);
        let steps = self.heads.len();
        let mut d = vec![CopyRows {
            label: "cp.0.hidden_in",
            dim: th,
            sessions: io.sessions,
            src: hidden,
            src_stride: th,
            source: Source::Affine { first: 0, step: 1 },
            dst: Rows::strided(input, th, 0, 2),
            rows: RowCount::Sessions,
        }
        .build(env)];
        for j in 0..steps {
            let (table, dst) = if j == 0 {
                (&talker.codec_embedding, Rows::strided(input, th, 1, 2))
            } else {
                (&self.embeddings[j - 1], Rows::dense(input, th))
            };
            let accumulate = if j == 0 { Accumulate::Set } else { Accumulate::Add };
            d.push(self.gather(env, io, &format!("cp.{j}.embed"), j, table, Some(dst), accumulate));
            d.extend(self.step(env, b, io, j)?);
        }
        // The last code is never fed back, but it belongs to the frame embedding.
        let last = &self.embeddings[steps - 1];
        d.push(self.gather(env, io, "cp.last_embed", steps, last, None, Accumulate::Add));
        Ok(d)
    }

    /// Looks up code column `col`'s embedding in `table` for every session, into `dst` and the
    /// frame accumulator.
    #[allow(clippy::too_many_arguments)]
    fn gather(
        &self,
        env: &Env,
        io: &TickIo,
        label: &str,
        col: usize,
        table: &wgpu::Buffer,
        dst: Option<Rows>,
        accumulate: Accumulate,
    ) -> Dispatch {
        let gather = CodecGather {
            label,
            dim: self.talker_hidden as u32,
            code_col: col as u32,
            table,
            sessions: io.sessions,
            codes: io.codes,
            dst,
            acc: io.acc,
            accumulate,
        };
        gather.build(env)
    }

    /// Step `j` after its embedding: the projection (1.7B), the stack over the step's rows, the
    /// head on each session's last position (the final norm fused into its input load) and the
    /// sample into code column `j + 1`.
    fn step(&self, env: &Env, b: &CodePredictorBuffers, io: &TickIo, j: usize) -> Result<Vec<Dispatch>> {
        let (th, ch, v) = (self.talker_hidden as u32, self.shape.hidden as u32, self.vocab as u32);
        let rows = if j == 0 { RowCount::CpPrefill } else { RowCount::Sessions };
        let label = |n: &str| format!("cp.{j}.{n}");
        let mut d = Vec::new();
        if let (Some((w, bias)), Some(cp_in)) = (&self.projection, &b.cp_in) {
            let projection = Matmul {
                label: &label("projection"),
                weight: w,
                bias: Some(bias),
                k: th,
                n: ch,
                x: Rows::dense(cp_in, th),
                input: Input::Plain,
                y: Rows::dense(&b.stack.x, ch),
                rows,
                output: Output::Overwrite,
                activation: Activation::None,
            };
            d.push(projection.build(env)?);
        }
        let stack = StackRun {
            label: &label("stack"),
            shape: &self.shape,
            layers: &self.layers,
            bufs: &b.stack,
            kv: &b.kv,
            rope: &b.rope,
            row_desc: &b.row_descs[j],
            rows,
            grid: io.grid,
        };
        d.extend(stack.build(env)?);
        // The last position of each session: row 2i+1 at step 0, row i afterwards.
        let last = if j == 0 { Rows::strided(&b.stack.x, ch, 1, 2) } else { Rows::dense(&b.stack.x, ch) };
        let logits = Rows { buffer: &b.logits, stride: v, offset: (j * b.sessions) as u32 * v, row_step: 1 };
        let head = Matmul {
            label: &label("head"),
            weight: &self.heads[j],
            bias: None,
            k: ch,
            n: v,
            x: last,
            input: Input::RmsNormed { gamma: &self.norm, eps: self.shape.eps },
            y: logits,
            rows: RowCount::Sessions,
            output: Output::Overwrite,
            activation: Activation::None,
        };
        let sample = Sample {
            label: &label("sample"),
            vocab: v,
            logits,
            code_col: j as u32 + 1,
            talker: None,
            sessions: io.sessions,
            codes: io.codes,
            history: io.history,
        };
        d.push(head.build(env)?);
        d.push(sample.build(env)?);
        Ok(d)
    }
}
