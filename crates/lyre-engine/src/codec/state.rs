//! The decoder's streaming state: everything a slot carries from one frame to the next so that
//! decoding frame by frame is exactly decoding the whole clip.
//!
//! Every causal conv (and causal transposed conv) reads its input through a per-slot **ring**:
//! the producer writes the session's absolute row `frame * rows_per_frame + t` at ring row
//! `(…) mod len`, and the conv reads `history` rows further back, which earlier steps wrote.
//! `len = history + rows_per_frame * max_chunk`, so a step never overwrites history it still
//! reads. No copy or shift is needed between steps. At a session's start the rows standing for
//! negative time (the conv's zero left padding) are zeroed; every other row a step reads was
//! written by that session.
//!
//! The pre-transformer's sliding-window attention keeps K and V of the last positions in a ring
//! of `window + max_chunk - 1` rows per slot (position p at row `p mod len`), with RoPE at the
//! absolute frame position. Attention only reads positions `[p - window + 1, p]` of the
//! session itself, so the KV rings need no reset.

use super::shape::DecoderShape;
use super::weights::DecoderWeights;
use crate::error::Result;
use crate::gpu::GpuContext;
use crate::kernels::attention::{KvCache, KvFormat};
use crate::kernels::seq_view::{SeqLayout, SeqView};

/// One conv input's history ring, `[slot][len][stride]` f32.
pub struct Ring {
    pub buffer: wgpu::Buffer,
    pub len: u32,
    /// Rows before the step's first that the consumer reads.
    pub history: u32,
    /// Row width: the channels rounded up to a multiple of 4 (pad channels stay 0).
    pub stride: u32,
    pub channels: u32,
    pub rows_per_frame: u32,
}

impl Ring {
    fn new(
        ctx: &GpuContext,
        label: &str,
        cap: &Capacity,
        channels: usize,
        history: u32,
        rows_per_frame: usize,
    ) -> Result<Self> {
        let stride = channels.next_multiple_of(4) as u32;
        let rows_per_frame = rows_per_frame as u32;
        let len = history + rows_per_frame * cap.max_chunk as u32;
        let bytes = cap.slots as u64 * len as u64 * stride as u64 * 4;
        Ok(Ring {
            buffer: ctx.storage_zeroed(label, bytes)?,
            len,
            history,
            stride,
            channels: channels as u32,
            rows_per_frame,
        })
    }

    pub fn view(&self) -> SeqView<'_> {
        SeqView {
            buffer: &self.buffer,
            stride: self.stride,
            layout: SeqLayout::Ring { len: self.len, rows_per_frame: self.rows_per_frame },
        }
    }

    /// Zeroes the rows standing for times `-history..0` of `slot`.
    fn reset(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        if self.history == 0 {
            return;
        }
        let row_bytes = self.stride as u64 * 4;
        let first = (slot as u64 * self.len as u64 + (self.len - self.history) as u64) * row_bytes;
        encoder.clear_buffer(&self.buffer, first, Some(self.history as u64 * row_bytes));
    }
}

/// How many slots and how many frames per step the state is sized for.
#[derive(Debug, Clone, Copy)]
pub struct Capacity {
    pub slots: usize,
    pub max_chunk: usize,
}

/// The rings of one vocoder block.
pub struct BlockRings {
    /// Snake output feeding the block's transposed conv.
    pub upsample_in: Ring,
    /// Snake outputs feeding each residual unit's dilated conv.
    pub units: Vec<Ring>,
}

/// Per-layer K and V rings, `[slot][kv_head][len][head_dim]` f32.
pub struct KvRing {
    pub k: Vec<wgpu::Buffer>,
    pub v: Vec<wgpu::Buffer>,
    pub len: u32,
}

impl KvRing {
    pub fn layer(&self, l: usize) -> KvCache<'_> {
        KvCache { k: &self.k[l], v: &self.v[l], max_pos: self.len, format: KvFormat::F32 }
    }
}

/// All per-slot state of the decoder.
pub struct StreamState {
    pub capacity: Capacity,
    /// RVQ output → `pre_conv`.
    pub pre_conv_in: Ring,
    /// Each upsampling ConvTranspose's output → its ConvNeXt depthwise conv (and residual).
    pub upsample_out: Vec<Ring>,
    /// Last ConvNeXt output → `decoder.0`.
    pub decoder_in: Ring,
    pub blocks: Vec<BlockRings>,
    /// Final Snake output → the output conv.
    pub final_in: Ring,
    pub kv: KvRing,
}

impl StreamState {
    pub fn new(ctx: &GpuContext, s: &DecoderShape, w: &DecoderWeights, cap: Capacity) -> Result<Self> {
        let ring =
            |label: &str, channels, history, rows| Ring::new(ctx, label, &cap, channels, history, rows);
        let upsample_out = (0..s.upsampling_ratios.len())
            .map(|i| {
                let rows = s.upsampling_ratios[..=i].iter().product();
                ring(&format!("decoder.ring.upsample{i}"), s.latent, dwconv_history(), rows)
            })
            .collect::<Result<_>>()?;
        let blocks = w
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (inp, out) = (s.block_width(i), s.block_width(i + 1));
                let units = b
                    .units
                    .iter()
                    .enumerate()
                    .map(|(u, unit)| {
                        let label = format!("decoder.ring.block{i}.unit{u}");
                        ring(&label, out, unit.conv1.shape.history(), s.block_rows(i + 1))
                    })
                    .collect::<Result<_>>()?;
                let label = format!("decoder.ring.block{i}.upsample");
                let upsample_in = ring(&label, inp, b.upsample.shape.history(), s.block_rows(i))?;
                Ok(BlockRings { upsample_in, units })
            })
            .collect::<Result<_>>()?;
        let n = s.upsample_rates.len();
        Ok(StreamState {
            capacity: cap,
            pre_conv_in: ring("decoder.ring.pre_conv", s.codebook_dim, w.pre_conv.shape.history(), 1)?,
            upsample_out,
            decoder_in: ring(
                "decoder.ring.decoder0",
                s.latent,
                w.decoder_in.shape.history(),
                s.upsampled_rows(),
            )?,
            blocks,
            final_in: ring(
                "decoder.ring.final",
                s.output_width(),
                w.final_conv.shape.history(),
                s.block_rows(n),
            )?,
            kv: kv_ring(ctx, s, cap)?,
        })
    }

    fn rings(&self) -> impl Iterator<Item = &Ring> {
        let blocks = self.blocks.iter().flat_map(|b| std::iter::once(&b.upsample_in).chain(&b.units));
        std::iter::once(&self.pre_conv_in)
            .chain(&self.upsample_out)
            .chain(std::iter::once(&self.decoder_in))
            .chain(blocks)
            .chain(std::iter::once(&self.final_in))
    }

    /// Makes `slot` start a new session (clears recorded into `encoder`, before the decoder's
    /// dispatches).
    pub fn reset_slot(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        for ring in self.rings() {
            ring.reset(encoder, slot);
        }
    }

    /// Bytes held on the GPU.
    pub fn bytes(&self) -> u64 {
        let kv: u64 = self.kv.k.iter().chain(&self.kv.v).map(|b| b.size()).sum();
        self.rings().map(|r| r.buffer.size()).sum::<u64>() + kv
    }
}

/// History of the ConvNeXt depthwise conv (kernel 7, dilation 1).
fn dwconv_history() -> u32 {
    super::shape::KERNEL as u32 - 1
}

fn kv_ring(ctx: &GpuContext, s: &DecoderShape, cap: Capacity) -> Result<KvRing> {
    let len = (s.window + cap.max_chunk - 1) as u32;
    let bytes = cap.slots as u64 * s.heads.kv_width() as u64 * len as u64 * 4;
    let make = |kind: &str| {
        (0..s.layers)
            .map(|l| ctx.storage_zeroed(&format!("decoder.kv.{kind}{l}"), bytes))
            .collect::<Result<Vec<_>>>()
    };
    Ok(KvRing { k: make("k")?, v: make("v")?, len })
}
