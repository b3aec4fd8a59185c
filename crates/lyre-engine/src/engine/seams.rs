//! What keeps a session's audio one continuous stream across its utterances and for as long as
//! it runs, in the codec decoder's per-slot state:
//!
//! * **Utterance ends.** The frame whose first code is EOS is not audio, and with pipelining the
//!   next tick was already submitted before the EOS was read. A dispatch after the code
//!   predictor (`decoder_redirect.wgsl`) sends the decoder steps of such sessions to a spare
//!   slot and flags the real one until the engine clears the flag at the slot's next prompt, so
//!   the next utterance's first frame continues from the last real one.
//! * **Endless streams.** The decoder's sliding-window attention uses RoPE at the frame's
//!   position, which would outgrow any table; positions wrap instead ([`RopeWrap`]) and the
//!   slot's cached keys are rotated to match (`rope_shift.wgsl`), recorded after the tick's
//!   dispatches only on ticks where some frame is the last of a period.

use crate::codec::{CodecDecoder, RopeWrap};
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext};
use crate::kernels::gather::DecoderRedirect;
use crate::kernels::Env;

pub(super) struct Seams {
    /// `[slot]` u32: the slot's utterance ended; its decoder steps go to the spare slot.
    ended: wgpu::Buffer,
    /// `[slot]` u32: RoPE periods the slot's cached keys have been moved back.
    applied: wgpu::Buffer,
    pub wrap: RopeWrap,
    /// Rotation dispatches (one per decoder layer).
    pub shift: Vec<Dispatch>,
    _shift_table: wgpu::Buffer,
}

impl Seams {
    /// `slots` real slots; the decoder has one more, the spare `slots`. Returns the redirect
    /// dispatch, to run between the code predictor and the decoder.
    pub fn new(
        ctx: &GpuContext,
        env: &Env,
        decoder: &CodecDecoder,
        slots: usize,
        eos: u32,
        decoder_sessions: &wgpu::Buffer,
        codes: &wgpu::Buffer,
    ) -> Result<(Self, Dispatch)> {
        let ended = ctx.storage_zeroed("seams.ended", (slots as u64 + 1) * 4)?;
        let applied = ctx.storage_zeroed("seams.applied", (slots as u64 + 1) * 4)?;
        let wrap = decoder.rope_wrap().expect("the engine's decoder wraps its positions");
        let spare = slots as u32;
        let redirect = DecoderRedirect {
            label: "decoder.redirect",
            eos,
            dump_slot: spare,
            sessions: decoder_sessions,
            codes,
            ended: &ended,
        }
        .build(env);
        let (shift, shift_table) = decoder.build_rope_shift(ctx, env, decoder_sessions, &applied, spare)?;
        Ok((Seams { ended, applied, wrap, shift, _shift_table: shift_table }, redirect))
    }

    /// A new prompt in `slot`: its decoder steps count again (a clear recorded into `encoder`,
    /// before the tick's dispatches).
    pub fn clear_ended(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        encoder.clear_buffer(&self.ended, slot as u64 * 4, Some(4));
    }

    /// The slot's decoder state starts over: so does its count of RoPE periods.
    pub fn reset(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        encoder.clear_buffer(&self.applied, slot as u64 * 4, Some(4));
    }

    /// Whether a tick whose decoder frames are `frames` must record [`Seams::shift`] after its
    /// own dispatches.
    pub fn needs_shift(&self, mut frames: impl Iterator<Item = u32>) -> bool {
        frames.any(|f| self.wrap.starts_period(f + 1))
    }
}
