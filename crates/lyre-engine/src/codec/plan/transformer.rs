//! The pre-transformer: input projection, pre-norm layers (RMSNorm, sliding-window attention
//! with RoPE and no q/k norm, SwiGLU, LayerScale on both branches), final norm, output projection.
//! Rows are `session × frames + t`; K and V go to the slot's ring.

use super::{conv, Dense, FramePlan, StepInputs};
use crate::codec::shape::DecoderShape;
use crate::error::Result;
use crate::gpu::{Dispatch, RowCount};
use crate::kernels::attention::Attention;
use crate::kernels::attention::{QkNormRope, RowLayout};
use crate::kernels::conv::{Conv1d, Residual};
use crate::kernels::elementwise::Glu;
use crate::kernels::norm::{NormKind, SeqNorm};

pub(super) struct Buffers {
    /// The residual stream.
    x: Dense,
    /// Normed rows.
    h: Dense,
    qkv: Dense,
    q: Dense,
    attn: Dense,
    gate_up: Dense,
    act: Dense,
    /// After the final norm and the output projection.
    pub out: Dense,
}

impl Buffers {
    pub fn new(s: &DecoderShape, dense: &impl Fn(&str, usize, usize) -> Result<Dense>) -> Result<Self> {
        let (h, q) = (s.hidden, s.heads.q_width() as usize);
        Ok(Buffers {
            x: dense("tf.x", 1, h)?,
            h: dense("tf.h", 1, h)?,
            qkv: dense("tf.qkv", 1, s.heads.qkv_width() as usize)?,
            q: dense("tf.q", 1, q)?,
            attn: dense("tf.attn", 1, q)?,
            gate_up: dense("tf.gate_up", 1, 2 * s.inter)?,
            act: dense("tf.act", 1, s.inter)?,
            out: dense("pre_transformer_out", 1, s.latent)?,
        })
    }
}

pub(super) fn build(plan: &FramePlan, inp: &StepInputs) -> Result<Vec<Dispatch>> {
    let (env, s, w) = (inp.env, inp.shape, inp.weights);
    let b = &plan.transformer;
    let rows = plan.frames as u32;
    let lin = |label: &str, weights, x: &Dense, y: &Dense| {
        conv(inp.sessions, label, weights, x.view(), y.view(), rows).build(env)
    };
    // `x += scale * (W · h)`: the LayerScale'd residual branches.
    let branch = |label: &str, weights, x: &Dense, scale| {
        let c = conv(inp.sessions, label, weights, x.view(), b.x.view(), rows);
        Conv1d { scale: Some(scale), residual: Residual::Accumulate, ..c }.build(env)
    };
    let norm = |label: &str, weight, x: &Dense, y: &Dense| {
        SeqNorm {
            label,
            kind: NormKind::Rms,
            weight,
            bias: None,
            dim: s.hidden as u32,
            eps: s.rms_eps,
            x: x.view(),
            y: y.view(),
            rows,
            sessions: inp.sessions,
        }
        .build(env)
    };
    let layout = RowLayout { wrap: true, rows_per_group: rows };
    let mut out = vec![lin("decoder.tf.input_proj", &w.input_proj, &plan.pre_conv_out, &b.x)?];
    for (l, lw) in w.layers.iter().enumerate() {
        let label = |n: &str| format!("decoder.tf.{l}.{n}");
        let cache = inp.state.kv.layer(l);
        out.push(norm(&label("input_norm"), &lw.input_norm, &b.x, &b.h)?);
        out.push(lin(&label("qkv"), &lw.qkv, &b.h, &b.qkv)?);
        let rope = QkNormRope {
            label: &label("rope"),
            heads: s.heads,
            norms: None,
            eps: s.rms_eps,
            rope_cos: &inp.rope.cos,
            rope_sin: &inp.rope.sin,
            row_desc: &plan.rows,
            qkv: &b.qkv.buffer,
            q_out: &b.q.buffer,
            cache,
            rows: RowCount::Sessions,
        };
        out.push(rope.build_with(env, layout));
        let attention = Attention {
            label: &label("attention"),
            heads: s.heads,
            window: s.window as u32,
            row_desc: &plan.rows,
            q: &b.q.buffer,
            cache,
            out: &b.attn.buffer,
            rows: RowCount::Sessions,
        };
        out.push(attention.build_with(env, layout));
        out.push(branch(&label("o"), &lw.o, &b.attn, &lw.attn_scale)?);
        out.push(norm(&label("post_norm"), &lw.post_norm, &b.x, &b.h)?);
        out.push(lin(&label("gate_up"), &lw.gate_up, &b.h, &b.gate_up)?);
        let glu = Glu {
            label: &label("glu"),
            inter: s.inter as u32,
            x: b.gate_up.view(),
            y: b.act.view(),
            rows,
            sessions: inp.sessions,
        };
        out.push(glu.build(env)?);
        out.push(branch(&label("down"), &lw.down, &b.act, &lw.mlp_scale)?);
    }
    out.push(norm("decoder.tf.norm", &w.norm, &b.x, &b.h)?);
    out.push(lin("decoder.tf.output_proj", &w.output_proj, &b.h, &b.out)?);
    Ok(out)
}
