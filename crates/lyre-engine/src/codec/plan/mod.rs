//! One decoder step for every session of a tick: the activation buffers of a step of `frames`
//! frames per session and the dispatch list that turns `[session][frames][16]` codes into
//! `[session][frames × 1920]` samples, reading and advancing each session's [`StreamState`].
//!
//! Stage by stage (rows per session per frame in brackets):
//! RVQ [1] → pre_conv [1] → pre-transformer [1] → 2 × (ConvTranspose + ConvNeXt) [2, 4] →
//! decoder.0 [4] → 4 vocoder blocks [32, 160, 640, 1920] → Snake → output conv → clamp.

mod transformer;
mod upsample;
mod vocoder;

use super::shape::DecoderShape;
use super::state::StreamState;
use super::weights::DecoderWeights;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext};
use crate::kernels::conv::{Activation, Conv1d, FusedSnake, PackedConv, Residual};
use crate::kernels::elementwise::ClampPcm;
use crate::kernels::gather::FrameRows;
use crate::kernels::gather::RvqDequant;
use crate::kernels::seq_view::SeqView;
use crate::kernels::Env;
use crate::model::rope::RopeTables;

/// A dense `[session][rows][stride]` activation buffer (stride = channels rounded up to 4).
pub(super) struct Dense {
    pub buffer: wgpu::Buffer,
    pub stride: u32,
    pub rows: u32,
}

impl Dense {
    fn new(ctx: &GpuContext, label: &str, sessions: usize, rows: usize, channels: usize) -> Result<Self> {
        let stride = channels.next_multiple_of(4);
        let buffer = ctx.storage_zeroed(label, (sessions * rows * stride * 4) as u64)?;
        Ok(Dense { buffer, stride: stride as u32, rows: rows as u32 })
    }

    pub fn view(&self) -> SeqView<'_> {
        SeqView::dense(&self.buffer, self.stride, self.rows)
    }
}

/// One stage's output, as the debug capture reads it.
#[derive(Clone)]
pub struct StageTap<'a> {
    /// The stage's name in `refs/speech_decoder.safetensors`.
    pub name: String,
    pub view: SeqView<'a>,
    pub channels: u32,
    pub rows_per_frame: u32,
}

/// The buffers of one step of `frames` frames per session, for up to `max_sessions` sessions.
pub struct FramePlan {
    pub frames: usize,
    /// Attention row descriptors, `[session × frames][4]` u32.
    rows: wgpu::Buffer,
    rvq: Dense,
    pre_conv_out: Dense,
    transformer: transformer::Buffers,
    upsample: Vec<upsample::Buffers>,
    decoder_out: Dense,
    blocks: Vec<vocoder::Buffers>,
    pre_clamp: Dense,
    /// `[session][frames × samples_per_frame]` f32 in [-1, 1].
    pub pcm: wgpu::Buffer,
}

/// Everything a step reads besides its own buffers.
pub(super) struct StepInputs<'a> {
    pub env: &'a Env<'a>,
    pub shape: &'a DecoderShape,
    pub weights: &'a DecoderWeights,
    pub state: &'a StreamState,
    pub rope: &'a RopeTables,
    /// Positions past the table wrap back by this many (0: clamped); see `RopeWrap`.
    pub rope_period: u32,
    /// `[session][frames][16]` u32.
    pub codes: &'a wgpu::Buffer,
    /// `[session]` of `SessionDesc`.
    pub sessions: &'a wgpu::Buffer,
}

impl FramePlan {
    pub fn new(ctx: &GpuContext, s: &DecoderShape, max_sessions: usize, frames: usize) -> Result<Self> {
        let dense = |label: &str, rows_per_frame: usize, channels: usize| {
            Dense::new(ctx, &format!("decoder.{label}"), max_sessions, frames * rows_per_frame, channels)
        };
        let samples = frames * s.samples_per_frame();
        Ok(FramePlan {
            frames,
            rows: ctx.storage_zeroed("decoder.rows", (max_sessions * frames * 16) as u64)?,
            rvq: dense("rvq", 1, 2 * s.book_dim)?,
            pre_conv_out: dense("pre_conv_out", 1, s.latent)?,
            transformer: transformer::Buffers::new(s, &dense)?,
            upsample: upsample::Buffers::new(s, &dense)?,
            decoder_out: dense("decoder0_out", s.upsampled_rows(), s.decoder_dim)?,
            blocks: vocoder::Buffers::new(s, &dense)?,
            pre_clamp: dense("pre_clamp", s.samples_per_frame(), 1)?,
            pcm: ctx.storage_zeroed("decoder.pcm", (max_sessions * samples * 4) as u64)?,
        })
    }

    /// Records the step; `inp.codes` and `inp.sessions` are bound, so the engine can replay the
    /// list every tick after uploading them.
    pub(super) fn build(&self, inp: &StepInputs) -> Result<Vec<Dispatch>> {
        let mut out = self.build_input(inp)?;
        out.extend(transformer::build(self, inp)?);
        out.extend(upsample::build(self, inp)?);
        out.extend(vocoder::build(self, inp)?);
        Ok(out)
    }

    /// Row descriptors, RVQ dequantisation and its projection, `pre_conv`.
    fn build_input(&self, inp: &StepInputs) -> Result<Vec<Dispatch>> {
        let (env, s, w, st) = (inp.env, inp.shape, inp.weights, inp.state);
        let f = self.frames as u32;
        let rows = FrameRows {
            label: "decoder.rows",
            frames: f,
            max_pos: inp.rope.positions as u32,
            period: inp.rope_period,
            rows: &self.rows,
            sessions: inp.sessions,
        }
        .build(env);
        let rvq = RvqDequant {
            label: "decoder.rvq",
            table: &w.codebooks,
            books: s.books as u32,
            codebook_size: s.codebook_size as u32,
            dim: s.book_dim as u32,
            codes: inp.codes,
            frames: f,
            y: self.rvq.view(),
            sessions: inp.sessions,
        }
        .build(env)?;
        let proj =
            conv(inp.sessions, "decoder.rvq_proj", &w.rvq_proj, self.rvq.view(), st.pre_conv_in.view(), f);
        let pre = conv(
            inp.sessions,
            "decoder.pre_conv",
            &w.pre_conv,
            st.pre_conv_in.view(),
            self.pre_conv_out.view(),
            f,
        );
        Ok(vec![rows, rvq, proj.build(env)?, pre.build(env)?])
    }

    /// Each stage's output, for the debug capture; these buffers are written once per step
    /// and not modified afterwards within it.
    pub fn taps<'a>(&'a self, s: &DecoderShape, state: &'a StreamState) -> Vec<StageTap<'a>> {
        let tap = |name: &str, view, channels: usize, rows_per_frame: usize| StageTap {
            name: name.to_string(),
            view,
            channels: channels as u32,
            rows_per_frame: rows_per_frame as u32,
        };
        let mut taps = vec![
            tap("quantizer_out", state.pre_conv_in.view(), s.codebook_dim, 1),
            tap("pre_conv_out", self.pre_conv_out.view(), s.latent, 1),
            tap("pre_transformer_out", self.transformer.out.view(), s.latent, 1),
            tap("upsample_out", state.decoder_in.view(), s.latent, s.upsampled_rows()),
            tap("decoder0_out", self.decoder_out.view(), s.decoder_dim, s.upsampled_rows()),
        ];
        for (i, b) in self.blocks.iter().enumerate() {
            let name = format!("decoder_block{}_out", i + 1);
            taps.push(tap(&name, b.x.view(), s.block_width(i + 1), s.block_rows(i + 1)));
        }
        taps.push(tap("final_conv_out_preclamp", self.pre_clamp.view(), 1, s.samples_per_frame()));
        taps
    }

    fn clamp(&self, inp: &StepInputs) -> Result<Dispatch> {
        ClampPcm {
            label: "decoder.clamp",
            x: self.pre_clamp.view(),
            pcm: &self.pcm,
            rows: self.pre_clamp.rows,
            sessions: inp.sessions,
        }
        .build(inp.env)
    }
}

/// A conv site with no activation, scale or residual.
fn conv<'a>(
    sessions: &'a wgpu::Buffer,
    label: &'a str,
    weights: &'a PackedConv,
    x: SeqView<'a>,
    y: SeqView<'a>,
    rows_in: u32,
) -> Conv1d<'a> {
    Conv1d {
        label,
        conv: weights,
        x,
        y,
        rows_in,
        sessions,
        activation: Activation::None,
        scale: None,
        residual: Residual::None,
        snake: FusedSnake::None,
    }
}
