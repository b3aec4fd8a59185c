//! The vocoder: per block, Snake → causal ConvTranspose (stride = rate) → three residual units
//! (Snake → dilated conv k7 → Snake → conv k1, added to the stream); then the final Snake, the
//! output conv k7 → 1 channel, and the clamp into the PCM buffer.

use super::{conv, Dense, FramePlan, StepInputs};
use crate::codec::shape::DecoderShape;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::kernels::conv::{Conv1d, Residual};
use crate::kernels::elementwise::{Snake, SnakeWeights};
use crate::kernels::seq_view::SeqView;

pub(super) struct Buffers {
    /// The block's stream: ConvTranspose output plus each unit's residual.
    pub x: Dense,
    /// A unit's dilated-conv output.
    b: Dense,
    /// Its Snake.
    c: Dense,
}

impl Buffers {
    pub fn new(s: &DecoderShape, dense: &impl Fn(&str, usize, usize) -> Result<Dense>) -> Result<Vec<Self>> {
        (0..s.upsample_rates.len())
            .map(|i| {
                let (rows, width) = (s.block_rows(i + 1), s.block_width(i + 1));
                Ok(Buffers {
                    x: dense(&format!("block{i}.x"), rows, width)?,
                    b: dense(&format!("block{i}.b"), rows, width)?,
                    c: dense(&format!("block{i}.c"), rows, width)?,
                })
            })
            .collect()
    }
}

pub(super) fn build(plan: &FramePlan, inp: &StepInputs) -> Result<Vec<Dispatch>> {
    let (env, w, st) = (inp.env, inp.weights, inp.state);
    let snake = |label: &str, weights: &SnakeWeights, x: SeqView, y: SeqView, rows: u32| {
        Snake { label, weights, x, y, rows, sessions: inp.sessions }.build(env)
    };
    let mut out = Vec::new();
    let mut input = plan.decoder_out.view();
    let mut rows_in = plan.decoder_out.rows;
    for (i, ((b, block), rings)) in plan.blocks.iter().zip(&w.blocks).zip(&st.blocks).enumerate() {
        let label = |n: &str| format!("decoder.block{i}.{n}");
        let rows = rows_in * block.rate as u32;
        out.push(snake(&label("snake"), &block.snake, input, rings.upsample_in.view(), rows_in)?);
        let convt_label = label("convt");
        let convt =
            conv(inp.sessions, &convt_label, &block.upsample, rings.upsample_in.view(), b.x.view(), rows_in);
        out.push(convt.build(env)?);
        for (u, (unit, ring)) in block.units.iter().zip(&rings.units).enumerate() {
            let label = |n: &str| format!("decoder.block{i}.unit{u}.{n}");
            out.push(snake(&label("act1"), &unit.act1, b.x.view(), ring.view(), rows)?);
            out.push(
                conv(inp.sessions, &label("conv1"), &unit.conv1, ring.view(), b.b.view(), rows).build(env)?,
            );
            out.push(snake(&label("act2"), &unit.act2, b.b.view(), b.c.view(), rows)?);
            let conv2_label = label("conv2");
            let conv2 = conv(inp.sessions, &conv2_label, &unit.conv2, b.c.view(), b.x.view(), rows);
            out.push(Conv1d { residual: Residual::Accumulate, ..conv2 }.build(env)?);
        }
        input = b.x.view();
        rows_in = rows;
    }
    out.push(snake("decoder.final_snake", &w.final_snake, input, st.final_in.view(), rows_in)?);
    let last = conv(
        inp.sessions,
        "decoder.final_conv",
        &w.final_conv,
        st.final_in.view(),
        plan.pre_clamp.view(),
        rows_in,
    );
    out.push(last.build(env)?);
    out.push(plan.clamp(inp)?);
    Ok(out)
}
