//! The vocoder: per block, Snake → causal ConvTranspose (stride = rate) → three residual units
//! (Snake → dilated conv k7 → Snake → conv k1, added to the stream); then the final Snake, the
//! output conv k7 → 1 channel, and the clamp into the PCM buffer.
//!
//! Where the conv GEMM's tile holds a block's channels, a unit's two convs run as one dispatch
//! from the session count where its dilated conv's GEMM runs unsplit ([`ResidualUnit`]).
//!
//! No Snake runs as a dispatch of its own: each is fused into the conv before it. A unit's second
//! Snake is its dilated conv's activation; every other Snake reads the block's stream, so the conv
//! that last wrote the stream (`decoder.0`, the ConvTranspose, a unit's conv k1) also stores the
//! stream through it into the ring the next conv reads ([`FusedSnake::Copy`]).

use super::{conv, Dense, FramePlan, StepInputs};
use crate::codec::shape::DecoderShape;
use crate::codec::state::{Ring, StreamState};
use crate::codec::weights::DecoderWeights;
use crate::error::Result;
use crate::gpu::Dispatch;
use crate::kernels::conv::{Conv1d, FusedSnake, Residual, ResidualUnit, SnakeWeights};

pub(super) struct Buffers {
    /// The block's stream: ConvTranspose output plus each unit's residual.
    pub x: Dense,
    /// A unit's dilated-conv output, through its second Snake.
    c: Dense,
}

impl Buffers {
    pub fn new(s: &DecoderShape, dense: &impl Fn(&str, usize, usize) -> Result<Dense>) -> Result<Vec<Self>> {
        (0..s.upsample_rates.len())
            .map(|i| {
                let (rows, width) = (s.block_rows(i + 1), s.block_width(i + 1));
                Ok(Buffers {
                    x: dense(&format!("block{i}.x"), rows, width)?,
                    c: dense(&format!("block{i}.c"), rows, width)?,
                })
            })
            .collect()
    }
}

/// The Snake that reads the stream after block `i`'s unit `u` (`None`: after its ConvTranspose),
/// and the ring it writes: the next unit's first Snake, the next block's Snake, or the final one.
fn snake_after<'a>(
    w: &'a DecoderWeights,
    st: &'a StreamState,
    i: usize,
    u: Option<usize>,
) -> (&'a SnakeWeights, &'a Ring) {
    let next = u.map_or(0, |u| u + 1);
    if next < w.blocks[i].units.len() {
        (&w.blocks[i].units[next].act1, &st.blocks[i].units[next])
    } else if i + 1 < w.blocks.len() {
        (&w.blocks[i + 1].snake, &st.blocks[i + 1].upsample_in)
    } else {
        (&w.final_snake, &st.final_in)
    }
}

/// How `decoder.0`, which writes the first block's input, stores it through that block's Snake.
pub(super) fn first_snake<'a>(inp: &StepInputs<'a>) -> FusedSnake<'a> {
    FusedSnake::Copy(&inp.weights.blocks[0].snake, inp.state.blocks[0].upsample_in.view())
}

pub(super) fn build(plan: &FramePlan, inp: &StepInputs) -> Result<Vec<Dispatch>> {
    let (env, w, st) = (inp.env, inp.weights, inp.state);
    let copy_after = |i: usize, u: Option<usize>| {
        let (snake, ring) = snake_after(w, st, i, u);
        FusedSnake::Copy(snake, ring.view())
    };
    let mut out = Vec::new();
    let mut rows_in = plan.decoder_out.rows;
    for (i, ((b, block), rings)) in plan.blocks.iter().zip(&w.blocks).zip(&st.blocks).enumerate() {
        let label = |n: &str| format!("decoder.block{i}.{n}");
        let rows = rows_in * block.rate as u32;
        let convt_label = label("convt");
        let convt =
            conv(inp.sessions, &convt_label, &block.upsample, rings.upsample_in.view(), b.x.view(), rows_in);
        out.push(Conv1d { snake: copy_after(i, None), ..convt }.build(env)?);
        for (u, (unit, ring)) in block.units.iter().zip(&rings.units).enumerate() {
            let label = |n: &str| format!("decoder.block{i}.unit{u}.{n}");
            let (unit_label, conv1_label, conv2_label) = (label("fused"), label("conv1"), label("conv2"));
            let conv1 = conv(inp.sessions, &conv1_label, &unit.conv1, ring.view(), b.c.view(), rows);
            let conv2 = conv(inp.sessions, &conv2_label, &unit.conv2, b.c.view(), b.x.view(), rows);
            let unit = ResidualUnit {
                label: &unit_label,
                dilated: Conv1d { snake: FusedSnake::Output(&unit.act2), ..conv1 },
                pointwise: Conv1d { residual: Residual::Accumulate, snake: copy_after(i, Some(u)), ..conv2 },
            };
            out.extend(unit.build(env)?);
        }
        rows_in = rows;
    }
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
