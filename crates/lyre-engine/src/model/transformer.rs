//! A stack of pre-norm Qwen3 decoder layers (q/k RMSNorm, GQA, RoPE, SwiGLU) with bf16
//! weights, recorded as dispatches over the tick's rows. The talker and the code predictor are
//! both such stacks; they differ only in sizes, weights and which rows they run over.
//!
//! Six dispatches per layer: qkv (with the input RMSNorm fused into its x load), q/k norm +
//! RoPE, attention, o (+= x), gate_up (post-attention RMSNorm fused), down (SwiGLU fused, += x);
//! five on decode steps, where q/k norm + RoPE and attention are one dispatch; one (the
//! persistent [`DecodeLayer`]) in ticks of a single row where the adapter runs it.

use super::rope::RopeTables;
use super::upload;
use crate::checkpoint::weights::WeightFile;
use crate::error::{EngineError, Result};
use crate::gpu::{Alternative, Dispatch, GpuContext, RowCount};
use crate::kernels::attention::{Attention, AttentionRope, Heads, KvCache, KvFormat, QkNormRope};
use crate::kernels::elementwise::SwiGlu;
use crate::kernels::layer::{DecodeLayer, GridSync, LayerWeights};
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::{Env, Rows};

/// The sizes of one stack.
#[derive(Debug, Clone, Copy)]
pub struct StackShape {
    pub hidden: usize,
    pub inter: usize,
    pub layers: usize,
    pub heads: Heads,
    pub eps: f32,
    pub rope_theta: f64,
}

impl StackShape {
    fn q(&self) -> usize {
        self.heads.q_width() as usize
    }
    fn kv(&self) -> usize {
        self.heads.kv_width() as usize
    }
}

/// Loads `{prefix}layers.{i}.*` for every layer.
pub fn load_layers(
    ctx: &GpuContext,
    file: &WeightFile,
    prefix: &str,
    s: &StackShape,
) -> Result<Vec<LayerWeights>> {
    let (h, i, hd) = (s.hidden, s.inter, s.heads.head_dim as usize);
    (0..s.layers)
        .map(|l| {
            let p = format!("{prefix}layers.{l}.");
            let name = |n: &str| format!("{p}{n}");
            Ok(LayerWeights {
                input_norm: upload::bf16(ctx, file, &name("input_layernorm.weight"), &[h])?,
                qkv: upload::bf16_rows(
                    ctx,
                    file,
                    &name("self_attn.qkv"),
                    &[
                        (name("self_attn.q_proj.weight"), vec![s.q(), h]),
                        (name("self_attn.k_proj.weight"), vec![s.kv(), h]),
                        (name("self_attn.v_proj.weight"), vec![s.kv(), h]),
                    ],
                )?,
                q_norm: upload::bf16(ctx, file, &name("self_attn.q_norm.weight"), &[hd])?,
                k_norm: upload::bf16(ctx, file, &name("self_attn.k_norm.weight"), &[hd])?,
                o: upload::bf16(ctx, file, &name("self_attn.o_proj.weight"), &[h, s.q()])?,
                post_norm: upload::bf16(ctx, file, &name("post_attention_layernorm.weight"), &[h])?,
                gate_up: upload::bf16_rows(
                    ctx,
                    file,
                    &name("mlp.gate_up"),
                    &[(name("mlp.gate_proj.weight"), vec![i, h]), (name("mlp.up_proj.weight"), vec![i, h])],
                )?,
                down: upload::bf16(ctx, file, &name("mlp.down_proj.weight"), &[h, i])?,
            })
        })
        .collect()
}

/// Activation buffers for up to `max_rows` rows. `x` carries the residual stream in and out.
/// The RMSNorms are fused into the matmuls' input loads, so there is no normed `h` buffer: qkv
/// and gate_up read `x`. Down reads `gate_up` through the fused SwiGLU for small ticks, else
/// the gated `act` (see
/// [`KernelChoice::fused_swiglu_max_rows`](crate::kernels::select::KernelChoice::fused_swiglu_max_rows)).
pub struct StackBuffers {
    pub x: wgpu::Buffer,
    /// One row of the residual stream between a persistent layer's attention and its MLP.
    pub x_mid: wgpu::Buffer,
    pub qkv: wgpu::Buffer,
    pub q: wgpu::Buffer,
    pub attn: wgpu::Buffer,
    pub gate_up: wgpu::Buffer,
    pub act: wgpu::Buffer,
}

impl StackBuffers {
    pub fn new(ctx: &GpuContext, label: &str, s: &StackShape, max_rows: usize) -> Result<Self> {
        let f = |n: &str, width: usize| {
            ctx.storage_zeroed(&format!("{label}.{n}"), (max_rows * width * 4) as u64)
        };
        Ok(StackBuffers {
            x: f("x", s.hidden)?,
            x_mid: ctx.storage_zeroed(&format!("{label}.x_mid"), (s.hidden * 4) as u64)?,
            qkv: f("qkv", s.heads.qkv_width() as usize)?,
            q: f("q", s.q())?,
            attn: f("attn", s.q())?,
            gate_up: f("gate_up", 2 * s.inter)?,
            act: f("act", s.inter)?,
        })
    }
}

/// Per-layer K and V caches, `[slot][kv_head][max_pos][head_dim]` each.
pub struct KvBuffers {
    pub k: Vec<wgpu::Buffer>,
    pub v: Vec<wgpu::Buffer>,
    pub max_pos: u32,
    pub format: KvFormat,
}

impl KvBuffers {
    pub fn new(
        ctx: &GpuContext,
        label: &str,
        s: &StackShape,
        slots: usize,
        max_pos: usize,
        format: KvFormat,
    ) -> Result<Self> {
        if format == KvFormat::F16 && !ctx.features.contains(wgpu::Features::SHADER_F16) {
            return Err(EngineError::invalid(
                "kv_cache",
                format!("an f16 KV cache needs shader-f16, which {} lacks; use f32", ctx.info.name),
            ));
        }
        let size = (slots * s.kv() * max_pos * format.bytes()) as u64;
        // A layer's buffer over the adapter's largest binding: storage_zeroed's error, with the
        // remedy that keeps the sessions and positions.
        let too_large = |e| match e {
            EngineError::Capacity(m) if format == KvFormat::F32 => {
                EngineError::Capacity(format!("{m}; an f16 KV cache (engine.kv_cache = \"f16\") halves it"))
            }
            e => e,
        };
        let mk = |kind: &str| {
            (0..s.layers)
                .map(|l| ctx.storage_zeroed(&format!("{label}.{kind}{l}"), size).map_err(too_large))
                .collect::<Result<Vec<_>>>()
        };
        Ok(KvBuffers { k: mk("k")?, v: mk("v")?, max_pos: max_pos as u32, format })
    }

    pub fn layer(&self, l: usize) -> KvCache<'_> {
        KvCache { k: &self.k[l], v: &self.v[l], max_pos: self.max_pos, format: self.format }
    }

    /// Bytes held on the GPU.
    pub fn bytes(&self) -> u64 {
        self.k.iter().chain(&self.v).map(|b| b.size()).sum()
    }
}

/// What a stack runs over in one recording.
pub struct StackRun<'a> {
    pub label: &'a str,
    pub shape: &'a StackShape,
    pub layers: &'a [LayerWeights],
    pub bufs: &'a StackBuffers,
    pub kv: &'a KvBuffers,
    pub rope: &'a RopeTables,
    pub row_desc: &'a wgpu::Buffer,
    pub rows: RowCount,
    /// Where set, a tick of one row runs each layer as one persistent dispatch.
    pub grid: Option<GridSync<'a>>,
}

impl StackRun<'_> {
    /// Records every layer; afterwards `bufs.x` holds the residual stream (before the final norm).
    pub fn build(&self, env: &Env) -> Result<Vec<Dispatch>> {
        let mut out = Vec::with_capacity(self.shape.layers * 6);
        for (l, w) in self.layers.iter().enumerate() {
            let layer = self.layer(env, w, l)?;
            match self.decode_layer(env, w, l) {
                Some(mut one) => {
                    one.add_alternative(Alternative { rows: self.rows, min_rows: 2, dispatches: layer });
                    out.push(one);
                }
                None => out.extend(layer),
            }
        }
        Ok(out)
    }

    /// Layer `l` as one persistent dispatch, where the adapter runs it and the stack's row count
    /// can be one (not the code predictor's first step, two rows per session).
    fn decode_layer(&self, env: &Env, w: &LayerWeights, l: usize) -> Option<Dispatch> {
        if !matches!(self.rows, RowCount::Sessions | RowCount::Talker) {
            return None;
        }
        let s = self.shape;
        DecodeLayer {
            label: &format!("{}.{l}.layer", self.label),
            heads: s.heads,
            hidden: s.hidden as u32,
            inter: s.inter as u32,
            eps: s.eps,
            weights: w,
            x: &self.bufs.x,
            x_mid: &self.bufs.x_mid,
            qkv: &self.bufs.qkv,
            attn: &self.bufs.attn,
            act: &self.bufs.act,
            cache: self.kv.layer(l),
            rope_cos: &self.rope.cos,
            rope_sin: &self.rope.sin,
            row_desc: self.row_desc,
            rows: self.rows,
            sync: self.grid?,
        }
        .build(env)
    }

    /// Layer `l`'s dispatches for any number of rows.
    fn layer(&self, env: &Env, w: &LayerWeights, l: usize) -> Result<Vec<Dispatch>> {
        let s = self.shape;
        let b = self.bufs;
        let (h, i) = (s.hidden as u32, s.inter as u32);
        let dense = |buf, w| Rows::dense(buf, w);
        let label = |n: &str| format!("{}.{l}.{n}", self.label);
        let mut out = Vec::with_capacity(6);
        out.push(
            Matmul {
                label: &label("qkv"),
                weight: &w.qkv,
                bias: None,
                k: h,
                n: s.heads.qkv_width(),
                x: dense(&b.x, h),
                input: Input::RmsNormed { gamma: &w.input_norm, eps: s.eps },
                y: dense(&b.qkv, s.heads.qkv_width()),
                rows: self.rows,
                output: Output::Overwrite,
                activation: Activation::None,
            }
            .build(env)?,
        );
        out.extend(self.attention(env, w, l));
        out.push(
            Matmul {
                label: &label("o"),
                weight: &w.o,
                bias: None,
                k: s.heads.q_width(),
                n: h,
                x: dense(&b.attn, s.heads.q_width()),
                input: Input::Plain,
                y: dense(&b.x, h),
                rows: self.rows,
                output: Output::Accumulate,
                activation: Activation::None,
            }
            .build(env)?,
        );
        out.push(
            Matmul {
                label: &label("gate_up"),
                weight: &w.gate_up,
                bias: None,
                k: h,
                n: 2 * i,
                x: dense(&b.x, h),
                input: Input::RmsNormed { gamma: &w.post_norm, eps: s.eps },
                y: dense(&b.gate_up, 2 * i),
                rows: self.rows,
                output: Output::Overwrite,
                activation: Activation::None,
            }
            .build(env)?,
        );
        out.extend(self.down(env, w, &label("swiglu"), &label("down"))?);
        Ok(out)
    }

    /// q/k-norm + RoPE and attention: one fused dispatch where every row is its session's only
    /// row (decode steps; the code predictor's first step has two), else the two kernels. For
    /// the talker, whose ticks may carry prompt rows, the two are the fused dispatch's
    /// alternative when the tick has more rows than sessions.
    fn attention(&self, env: &Env, w: &LayerWeights, l: usize) -> Vec<Dispatch> {
        let s = self.shape;
        let b = self.bufs;
        let label = |n: &str| format!("{}.{l}.{n}", self.label);
        let cache = self.kv.layer(l);
        let norms = Some((&w.q_norm, &w.k_norm));
        let rope = QkNormRope {
            label: &label("rope"),
            heads: s.heads,
            norms,
            eps: s.eps,
            rope_cos: &self.rope.cos,
            rope_sin: &self.rope.sin,
            row_desc: self.row_desc,
            qkv: &b.qkv,
            q_out: &b.q,
            cache,
            rows: self.rows,
        }
        .build(env);
        let attention = Attention {
            label: &label("attention"),
            heads: s.heads,
            window: 0,
            row_desc: self.row_desc,
            q: &b.q,
            cache,
            out: &b.attn,
            rows: self.rows,
        }
        .build(env);
        let fused = AttentionRope {
            label: &label("attention_rope"),
            heads: s.heads,
            norms,
            eps: s.eps,
            rope_cos: &self.rope.cos,
            rope_sin: &self.rope.sin,
            row_desc: self.row_desc,
            qkv: &b.qkv,
            cache,
            out: &b.attn,
            rows: self.rows,
        };
        let fused = match self.rows {
            RowCount::CpPrefill => None,
            _ => fused.build(env),
        };
        let Some(mut fused) = fused else {
            return vec![rope, attention];
        };
        if self.rows == RowCount::Talker {
            fused.add_alternative(Alternative {
                rows: RowCount::TalkerExtra,
                min_rows: 1,
                dispatches: vec![rope, attention],
            });
        }
        vec![fused]
    }

    /// SwiGLU and down (+= x). The mat-vec kernels read SwiGLU(gate_up) in their input load up
    /// to `fused_swiglu_max_rows` rows; above that a SwiGLU dispatch writes `act` and a plain
    /// down reads it. The GEMM levels gate once per staged value, so they always read gate_up;
    /// the SwiGLU dispatch runs only for the row counts where the plain down does.
    fn down(&self, env: &Env, w: &LayerWeights, swiglu: &str, down: &str) -> Result<[Dispatch; 2]> {
        let (h, i) = (self.shape.hidden as u32, self.shape.inter as u32);
        let b = self.bufs;
        let matmul = |x: Rows, input: Input| {
            Matmul {
                label: down,
                weight: &w.down,
                bias: None,
                k: i,
                n: h,
                x,
                input,
                y: Rows::dense(&b.x, h),
                rows: self.rows,
                output: Output::Accumulate,
                activation: Activation::None,
            }
            .build(env)
        };
        let split_from = env.kernels.fused_swiglu_max_rows() + 1;
        let mut fused = matmul(Rows::dense(&b.gate_up, 2 * i), Input::SwiGlu)?;
        // Where a GEMM level takes over from the plain down, the SwiGLU dispatch stops.
        let gemm_from = fused.alternatives.iter().map(|a| a.min_rows).filter(|&m| m > split_from).min();
        let plain = matmul(Rows::dense(&b.act, i), Input::Plain)?;
        fused.add_alternative(Alternative { rows: self.rows, min_rows: split_from, dispatches: vec![plain] });
        let gate = SwiGlu { label: swiglu, inter: i, gate_up: &b.gate_up, out: &b.act, rows: self.rows };
        let mut gate = Dispatch::only_from(self.rows, split_from, gate.build(env));
        if let Some(min_rows) = gemm_from {
            gate.add_alternative(Alternative { rows: self.rows, min_rows, dispatches: Vec::new() });
        }
        Ok([gate, fused])
    }
}
