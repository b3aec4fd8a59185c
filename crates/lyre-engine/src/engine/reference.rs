//! The GPU side of in-context (ICL) voice cloning:
//!
//! * the talker-input embedding of each reference frame: the sum of its 16 code embeddings
//!   (codebook 0 through the talker's `codec_embedding`, codebook j through the code
//!   predictor's `codec_embedding[j-1]`), formed by the same `codec_gather` kernel, in the same
//!   order, as the tick's sum for a generated frame;
//! * priming a decoder slot with the reference frames (their audio is discarded), so that the
//!   generated frames decode as the continuation of the reference clip. The official wrapper
//!   decodes `cat(ref_code, codes)` and cuts the reference's share of the samples; the decoder
//!   is exactly causal, so this gives the same samples for the generated frames.

use crate::codec::CodecDecoder;
use crate::error::Result;
use crate::gpu::{record_all, Dispatch, GpuContext, Readback, RowCounts};
use crate::kernels::gather::{Accumulate, CodecGather};
use crate::kernels::select::KernelChoice;
use crate::kernels::Env;
use crate::model::code_predictor::CodePredictorWeights;
use crate::model::talker::TalkerWeights;
use crate::sampling::SessionDesc;

const DESC_BYTES: u64 = std::mem::size_of::<SessionDesc>() as u64;
const FRAME_BYTES: u64 = 16 * 4;

/// A decoder slot to prime this tick: its state slot and the reference frames.
pub(super) struct Prime<'a> {
    pub slot: u32,
    pub codes: &'a [[u16; 16]],
}

pub(super) struct ReferencePlan {
    /// Most reference frames one call (or one tick's primes together) may carry.
    pub max_frames: usize,
    hidden: usize,
    counts: wgpu::Buffer,
    /// `[frame][16]` u32: the frames to embed, or every prime frame of a tick.
    codes: wgpu::Buffer,
    /// `[frame]` descriptors: slot = frame index for embedding; the decoder's slot and frame
    /// index for priming.
    descs: wgpu::Buffer,
    /// `[frame][H]` f32 embedding sums.
    acc: wgpu::Buffer,
    embed: Vec<Dispatch>,
    readback: Readback,
    /// The one frame the prime dispatches decode, copied from `codes`/`descs` per step.
    step_codes: wgpu::Buffer,
    step_desc: wgpu::Buffer,
    prime: Vec<Dispatch>,
    _keep: (wgpu::Buffer, wgpu::Buffer),
}

impl ReferencePlan {
    pub fn new(
        ctx: &GpuContext,
        kernels: &KernelChoice,
        talker: &TalkerWeights,
        cp: &CodePredictorWeights,
        decoder: &CodecDecoder,
        max_frames: usize,
    ) -> Result<Self> {
        let h = cp.talker_hidden;
        let z = |label: &str, bytes: u64| ctx.storage_zeroed(label, bytes);
        let counts = z("ref.counts", 16)?;
        let dummy = z("ref.dummy", 16)?;
        let scratch = z("ref.scratch", 16)?;
        let codes = z("ref.codes", max_frames as u64 * FRAME_BYTES)?;
        let descs = z("ref.descs", max_frames as u64 * DESC_BYTES)?;
        let acc = z("ref.acc", (max_frames * h * 4) as u64)?;
        let step_codes = z("ref.step_codes", FRAME_BYTES)?;
        let step_desc = z("ref.step_desc", DESC_BYTES)?;
        let env = Env { ctx, kernels, counts: &counts, dummy: &dummy, scratch: &scratch, partials: &scratch };
        let groups = cp.embeddings.len() + 1;
        let embed = (0..groups)
            .map(|j| {
                let table = if j == 0 { &talker.codec_embedding } else { &cp.embeddings[j - 1] };
                CodecGather {
                    label: "ref.embed",
                    dim: h as u32,
                    code_col: j as u32,
                    table,
                    sessions: &descs,
                    codes: &codes,
                    dst: None,
                    acc: &acc,
                    accumulate: if j == 0 { Accumulate::Set } else { Accumulate::Add },
                }
                .build(&env)
            })
            .collect();
        let prime = decoder.build_frame(&env, &step_codes, &step_desc)?;
        let readback = Readback::new(ctx, "ref.readback", (max_frames * h * 4) as u64);
        Ok(ReferencePlan {
            max_frames,
            hidden: h,
            counts,
            codes,
            descs,
            acc,
            embed,
            readback,
            step_codes,
            step_desc,
            prime,
            _keep: (dummy, scratch),
        })
    }

    /// The embedding and priming dispatches, described (see [`super::Engine::describe_dispatches`]).
    pub fn describe(&self, ctx: &GpuContext, counts: &RowCounts) -> Vec<String> {
        let embed =
            ctx.describe_dispatches(&self.embed, counts).into_iter().map(|l| format!("ref.embed: {l}"));
        let prime =
            ctx.describe_dispatches(&self.prime, counts).into_iter().map(|l| format!("ref.prime: {l}"));
        embed.chain(prime).collect()
    }

    /// The summed talker-input embedding of every frame (`max_frames` at most).
    pub fn embed_frames(&self, ctx: &GpuContext, frames: &[[u16; 16]]) -> Result<Vec<Vec<f32>>> {
        if frames.is_empty() {
            return Ok(Vec::new());
        }
        let n = frames.len().min(self.max_frames);
        let descs: Vec<SessionDesc> =
            (0..n as u32).map(|i| SessionDesc { slot: i, ..Default::default() }).collect();
        let counts = RowCounts { talker_rows: 0, sessions: n as u32 };
        let q = &ctx.queue;
        q.write_buffer(&self.counts, 0, bytemuck::cast_slice(&counts.as_array()));
        q.write_buffer(&self.codes, 0, bytemuck::cast_slice(&widen(&frames[..n])));
        q.write_buffer(&self.descs, 0, bytemuck::cast_slice(&descs));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("ref.embed"),
                timestamp_writes: None,
            });
            record_all(&self.embed, &mut pass, &counts);
        }
        let bytes = (n * self.hidden * 4) as u64;
        self.readback.copy_from(&mut encoder, &self.acc, bytes);
        q.submit(Some(encoder.finish()));
        let sums: Vec<f32> = bytemuck::pod_collect_to_vec(&self.readback.read(ctx, bytes)?);
        Ok(sums.chunks(self.hidden).map(<[f32]>::to_vec).collect())
    }

    /// Records, into `encoder`, decoder steps that run each prime's frames through its slot
    /// (frame indices from 0; the slot must have been reset). The queue writes land before the
    /// encoder's submit; the total frame count must not exceed `max_frames`.
    pub fn record_primes(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder, primes: &[Prime]) {
        let mut codes = Vec::new();
        let mut descs = Vec::new();
        for p in primes {
            codes.extend(widen(p.codes));
            descs.extend((0..p.codes.len() as u32).map(|f| SessionDesc {
                slot: p.slot,
                gen_index: f,
                ..Default::default()
            }));
        }
        if descs.is_empty() {
            return;
        }
        debug_assert!(descs.len() <= self.max_frames);
        let counts = RowCounts { talker_rows: 0, sessions: 1 };
        let q = &ctx.queue;
        q.write_buffer(&self.counts, 0, bytemuck::cast_slice(&counts.as_array()));
        q.write_buffer(&self.codes, 0, bytemuck::cast_slice(&codes));
        q.write_buffer(&self.descs, 0, bytemuck::cast_slice(&descs));
        for f in 0..descs.len() as u64 {
            encoder.copy_buffer_to_buffer(&self.codes, f * FRAME_BYTES, &self.step_codes, 0, FRAME_BYTES);
            encoder.copy_buffer_to_buffer(&self.descs, f * DESC_BYTES, &self.step_desc, 0, DESC_BYTES);
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("ref.prime"),
                timestamp_writes: None,
            });
            record_all(&self.prime, &mut pass, &counts);
        }
    }
}

fn widen(frames: &[[u16; 16]]) -> Vec<u32> {
    frames.iter().flatten().map(|&c| c as u32).collect()
}
