//! The pre-transformer: input projection, pre-norm layers (RMSNorm, sliding-window attention
//! with RoPE and no q/k norm, SwiGLU, LayerScale on both branches), final norm, output projection.
//! Rows are `session × frames + t`; K and V go to the slot's ring.

use super::{Dense, FramePlan, StepInputs};
use crate::codec::shape::DecoderShape;
use crate::error::Result;
use crate::gpu::{Dispatch, RowCount};
use crate::kernels::attention::Attention;
use crate::kernels::conv1d::{Activation, Conv1d, PackedConv, Residual};
use crate::kernels::glu::Glu;
use crate::kernels::qk_norm_rope::{QkNormRope, RowLayout};
use crate::kernels::seq_norm::{NormKind, SeqNorm};
use crate::kernels::seq_view::SeqView;

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

/// A linear site over this step's transformer rows.
struct Linear<'a> {
    inp: &'a StepInputs<'a>,
    rows: u32,
}

impl<'a> Linear<'a> {
    fn run(
        &self,
        label: &str,
        weights: &'a PackedConv,
        x: SeqView<'a>,
        y: SeqView<'a>,
        scale: Option<&'a wgpu::Buffer>,
        residual: Residual<'a>,
    ) -> Result<Dispatch> {
        Conv1d {
            label,
            conv: weights,
            x,
            y,
            rows_in: self.rows,
            sessions: self.inp.sessions,
            activation: Activation::None,
            scale,
            residual,
        }
        .build(self.inp.env)
    }
}

pub(super) fn build(plan: &FramePlan, inp: &StepInputs) -> Result<Vec<Dispatch>> {
    let (env, s, w) = (inp.env, inp.shape, inp.weights);
    let b = &plan.transformer;
    let rows = plan.frames as u32;
    let lin = Linear { inp, rows };
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
    let mut out = vec![lin.run(
        "decoder.tf.input_proj",
        &w.input_proj,
        plan.pre_conv_out.view(),
        b.x.view(),
        None,
        Residual::None,
    )?];
    for (l, lw) in w.layers.iter().enumerate() {
        let label = |n: &str| format!("decoder.tf.{l}.{n}");
        let cache = inp.state.kv.layer(l);
        out.push(norm(&label("input_norm"), &lw.input_norm, &b.x, &b.h)?);
        out.push(lin.run(&label("qkv"), &lw.qkv, b.h.view(), b.qkv.view(), None, Residual::None)?);
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
        let attn_scale = Some(&lw.attn_scale);
        out.push(lin.run(&label("o"), &lw.o, b.attn.view(), b.x.view(), attn_scale, Residual::Accumulate)?);
        out.push(norm(&label("post_norm"), &lw.post_norm, &b.x, &b.h)?);
        out.push(lin.run(&label("gate_up"), &lw.gate_up, b.h.view(), b.gate_up.view(), None, Residual::None)?);
        let glu = Glu {
            label: &label("glu"),
            inter: s.inter as u32,
            x: b.gate_up.view(),
            y: b.act.view(),
            rows,
            sessions: inp.sessions,
        };
        out.push(glu.build(env)?);
        let mlp_scale = Some(&lw.mlp_scale);
        out.push(lin.run(&label("down"), &lw.down, b.act.view(), b.x.view(), mlp_scale, Residual::Accumulate)?);
    }
    out.push(norm("decoder.tf.norm", &w.norm, &b.x, &b.h)?);
    out.push(lin.run("decoder.tf.output_proj", &w.output_proj, b.h.view(), b.out.view(), None, Residual::None)?);
    Ok(out)
}
