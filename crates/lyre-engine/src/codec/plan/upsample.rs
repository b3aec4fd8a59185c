//! The upsampling stages: ConvTranspose (kernel = stride, so no history), then a ConvNeXt block
//! (causal depthwise conv k7 over the slot's ring, LayerNorm, Linear 4× + exact GELU, Linear,
//! × gamma, + the ConvTranspose output). The last stage writes `decoder.0`'s input ring.

use super::{conv, Dense, FramePlan, StepInputs};
use crate::codec::shape::{DecoderShape, CONVNEXT_EXPANSION, KERNEL, LAYER_NORM_EPS};
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::kernels::conv::DepthwiseConv;
use crate::kernels::conv::{Activation, Conv1d, Residual};
use crate::kernels::norm::{NormKind, SeqNorm};
use crate::kernels::seq_view::SeqView;

pub(super) struct Buffers {
    dw: Dense,
    norm: Dense,
    wide: Dense,
    /// The stage's output, or `None` for the last stage (it writes `state.decoder_in`).
    out: Option<Dense>,
}

impl Buffers {
    pub fn new(s: &DecoderShape, dense: &impl Fn(&str, usize, usize) -> Result<Dense>) -> Result<Vec<Self>> {
        let n = s.upsampling_ratios.len();
        (0..n)
            .map(|i| {
                let rows = s.upsampling_ratios[..=i].iter().product();
                let label = |what: &str| format!("up{i}.{what}");
                Ok(Buffers {
                    dw: dense(&label("dw"), rows, s.latent)?,
                    norm: dense(&label("norm"), rows, s.latent)?,
                    wide: dense(&label("wide"), rows, CONVNEXT_EXPANSION * s.latent)?,
                    out: if i + 1 < n { Some(dense(&label("out"), rows, s.latent)?) } else { None },
                })
            })
            .collect()
    }
}

pub(super) fn build(plan: &FramePlan, inp: &StepInputs) -> Result<Vec<Dispatch>> {
    let (env, s, w, st) = (inp.env, inp.shape, inp.weights, inp.state);
    let mut out = Vec::new();
    let mut input: SeqView = plan.transformer.out.view();
    let mut rows_in = plan.frames as u32;
    for (i, (b, stage)) in plan.upsample.iter().zip(&w.upsample).enumerate() {
        let label = |n: &str| format!("decoder.up{i}.{n}");
        let ring = st.upsample_out[i].view();
        let rows = rows_in * stage.upsample.shape.up;
        let sessions = inp.sessions;
        let convt = label("convt");
        out.push(conv(sessions, &convt, &stage.upsample, input, ring, rows_in).build(env)?);
        let dw = DepthwiseConv {
            label: &label("dwconv"),
            weight: &stage.dw_weight,
            bias: Some(&stage.dw_bias),
            channels: s.latent as u32,
            taps: KERNEL as u32,
            dilation: 1,
            x: ring,
            y: b.dw.view(),
            rows,
            sessions: inp.sessions,
        };
        out.push(dw.build(env)?);
        let norm = SeqNorm {
            label: &label("norm"),
            kind: NormKind::Layer,
            weight: &stage.norm_weight,
            bias: Some(&stage.norm_bias),
            dim: s.latent as u32,
            eps: LAYER_NORM_EPS,
            x: b.dw.view(),
            y: b.norm.view(),
            rows,
            sessions: inp.sessions,
        };
        out.push(norm.build(env)?);
        let pw1_label = label("pw1");
        let pw1 = conv(sessions, &pw1_label, &stage.pw1, b.norm.view(), b.wide.view(), rows);
        out.push(Conv1d { activation: Activation::Gelu, ..pw1 }.build(env)?);
        let y = b.out.as_ref().map(Dense::view).unwrap_or_else(|| st.decoder_in.view());
        let pw2_label = label("pw2");
        let pw2 = conv(sessions, &pw2_label, &stage.pw2, b.wide.view(), y, rows);
        out.push(Conv1d { scale: Some(&stage.gamma), residual: Residual::From(ring), ..pw2 }.build(env)?);
        input = y;
        rows_in = rows;
    }
    let dec = conv(
        inp.sessions,
        "decoder.decoder0",
        &w.decoder_in,
        st.decoder_in.view(),
        plan.decoder_out.view(),
        rows_in,
    );
    // decoder.0's output is the first vocoder block's input: stored through its Snake too.
    out.push(Conv1d { snake: super::vocoder::first_snake(inp), ..dec }.build(env)?);
    Ok(out)
}
