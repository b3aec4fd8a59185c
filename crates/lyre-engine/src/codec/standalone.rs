//! A decoder that owns its input buffers and runs steps by itself: for `lyre synth --codes-in`,
//! tests and benches. Each step is one submit and one readback; buffers and bind groups are made
//! once.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::plan::FramePlan;
use super::{CodecDecoder, DecoderOptions, StageTap};
use crate::checkpoint::config::SpeechTokenizerConfig;
use crate::checkpoint::weights::WeightFile;
use crate::codec::shape::BOOKS;
use crate::error::{EngineError, Result};
use crate::gpu::{read_buffer, record_all, Dispatch, GpuContext, Readback, RowCounts};
use crate::kernels::select::KernelChoice;
use crate::kernels::seq_view::SeqLayout;
use crate::kernels::Env;
use crate::sampling::SessionDesc;
use crate::tuning::EngineTuning;

/// One step's worth of input buffers and its recorded dispatches.
struct Runner {
    frames: usize,
    /// `None`: the decoder's own one-frame plan.
    plan: Option<FramePlan>,
    codes: wgpu::Buffer,
    sessions: wgpu::Buffer,
    dispatches: Vec<Dispatch>,
    readback: Readback,
}

impl Runner {
    fn pcm<'a>(&'a self, decoder: &'a CodecDecoder) -> &'a wgpu::Buffer {
        self.plan.as_ref().map_or(decoder.pcm(), |p| &p.pcm)
    }
}

/// One session's input to a step: its slot, the index of its first frame, its frames' codes.
struct Entry<'a> {
    slot: u32,
    frame: u32,
    codes: &'a [[u16; BOOKS]],
}

/// One stage's output over a clip, `[row][channel]`.
#[derive(Debug, Clone, Default)]
pub struct StageOutput {
    pub channels: usize,
    pub values: Vec<f32>,
}

/// A clip's waveform and every stage's output, from [`StandaloneDecoder::decode_clip_capture`].
#[derive(Debug, Clone, Default)]
pub struct ClipCapture {
    pub pcm: Vec<f32>,
    pub stages: BTreeMap<String, StageOutput>,
}

pub struct StandaloneDecoder {
    ctx: Arc<GpuContext>,
    decoder: CodecDecoder,
    counts: wgpu::Buffer,
    _env_buffers: (wgpu::Buffer, wgpu::Buffer, wgpu::Buffer),
    single: Runner,
    /// Steps of `max_frames_per_step` frames, when that is more than 1.
    chunked: Option<Runner>,
}

impl StandaloneDecoder {
    /// A decoder of one frame per session per step, with the kernels `tuning` chooses.
    pub fn new(
        ctx: Arc<GpuContext>,
        cfg: &SpeechTokenizerConfig,
        weights: &WeightFile,
        max_sessions: usize,
        max_frames: usize,
        tuning: &EngineTuning,
    ) -> Result<Self> {
        let options = DecoderOptions { max_sessions, max_frames, max_frames_per_step: 1 };
        Self::with_options(ctx, cfg, weights, options, tuning)
    }

    /// With `options.max_frames_per_step` > 1, [`StandaloneDecoder::decode_clip`] decodes that
    /// many frames per step (the same causal computation with fewer, larger dispatches).
    pub fn with_options(
        ctx: Arc<GpuContext>,
        cfg: &SpeechTokenizerConfig,
        weights: &WeightFile,
        options: DecoderOptions,
        tuning: &EngineTuning,
    ) -> Result<Self> {
        let decoder = CodecDecoder::with_options(&ctx, cfg, weights, options)?;
        let kernels = KernelChoice::new(&ctx, tuning);
        let counts = ctx.storage_zeroed("decoder.counts", 16)?;
        let dummy = ctx.storage_zeroed("decoder.dummy", 16)?;
        let scratch = ctx.storage_zeroed("decoder.scratch", 16)?;
        let partials = ctx.storage_zeroed("decoder.partials", kernels.partials_bytes())?;
        let env = Env {
            ctx: &ctx,
            kernels: &kernels,
            counts: &counts,
            dummy: &dummy,
            scratch: &scratch,
            partials: &partials,
        };
        let single = runner(&ctx, &decoder, &env, 1)?;
        let chunk = options.max_frames_per_step;
        let chunked = if chunk > 1 { Some(runner(&ctx, &decoder, &env, chunk)?) } else { None };
        Ok(StandaloneDecoder {
            ctx,
            decoder,
            counts,
            _env_buffers: (dummy, scratch, partials),
            single,
            chunked,
        })
    }

    pub fn decoder(&self) -> &CodecDecoder {
        &self.decoder
    }

    pub fn samples_per_frame(&self) -> usize {
        self.decoder.samples_per_frame()
    }

    /// Decodes a whole clip from scratch in slot 0 (which it resets): the same streaming code,
    /// `max_frames_per_step` frames per step, then single frames for the rest.
    pub fn decode_clip(&mut self, codes: &[[u16; BOOKS]]) -> Result<Vec<f32>> {
        Ok(self.clip(codes, false)?.pcm)
    }

    /// [`StandaloneDecoder::decode_clip`], also reading back every stage's output after each
    /// step (slow; for tests and debugging).
    pub fn decode_clip_capture(&mut self, codes: &[[u16; BOOKS]]) -> Result<ClipCapture> {
        self.clip(codes, true)
    }

    /// One batched step: each entry `(slot, frame index, codes)` decodes one frame in its slot;
    /// returns each entry's samples.
    pub fn step(&mut self, frames: &[(u32, u32, [u16; BOOKS])]) -> Result<Vec<Vec<f32>>> {
        let entries: Vec<Entry> = frames
            .iter()
            .map(|(slot, frame, codes)| Entry {
                slot: *slot,
                frame: *frame,
                codes: std::slice::from_ref(codes),
            })
            .collect();
        run(&self.ctx, &self.decoder, &self.counts, &self.single, &entries)
    }

    /// Like [`StandaloneDecoder::step`], but with every dispatch in its own timed compute
    /// pass; returns each dispatch's label and GPU time in microseconds (needs
    /// `TIMESTAMP_QUERY`; for performance work, not for production).
    pub fn profile_step(&mut self, frames: &[(u32, u32, [u16; BOOKS])]) -> Result<Vec<(String, f64)>> {
        let entries: Vec<Entry> = frames
            .iter()
            .map(|(slot, frame, codes)| Entry {
                slot: *slot,
                frame: *frame,
                codes: std::slice::from_ref(codes),
            })
            .collect();
        profile(&self.ctx, &self.decoder, &self.counts, &self.single, &entries)
    }

    /// Starts a new session in `slot`.
    pub fn reset(&mut self, slot: u32) {
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        self.decoder.reset_slot(&mut encoder, slot);
        self.ctx.queue.submit(Some(encoder.finish()));
    }

    fn clip(&mut self, codes: &[[u16; BOOKS]], capture: bool) -> Result<ClipCapture> {
        if codes.len() > self.decoder.options().max_frames {
            return Err(EngineError::invalid(
                "codes",
                format!(
                    "{} frames is more than max_frames ({})",
                    codes.len(),
                    self.decoder.options().max_frames
                ),
            ));
        }
        self.reset(0);
        let mut out = ClipCapture::default();
        let mut done = 0;
        while done < codes.len() {
            let runner = match &self.chunked {
                Some(r) if codes.len() - done >= r.frames => r,
                _ => &self.single,
            };
            let entry = Entry { slot: 0, frame: done as u32, codes: &codes[done..done + runner.frames] };
            let pcm = run(&self.ctx, &self.decoder, &self.counts, runner, std::slice::from_ref(&entry))?;
            out.pcm.extend(pcm.into_iter().flatten());
            if capture {
                let plan = runner.plan.as_ref().unwrap_or(&self.decoder.plan);
                for tap in self.decoder.stage_taps(plan) {
                    let stage = out.stages.entry(tap.name.clone()).or_default();
                    stage.channels = tap.channels as usize;
                    stage.values.extend(read_tap(&self.ctx, &tap, done as u32, runner.frames as u32)?);
                }
            }
            done += runner.frames;
        }
        Ok(out)
    }
}

fn runner(ctx: &GpuContext, decoder: &CodecDecoder, env: &Env, frames: usize) -> Result<Runner> {
    let ms = decoder.options().max_sessions;
    let codes = ctx.storage_zeroed("decoder.codes", (ms * frames * BOOKS * 4) as u64)?;
    let sessions =
        ctx.storage_zeroed("decoder.sessions", (ms * std::mem::size_of::<SessionDesc>()) as u64)?;
    let plan = if frames > 1 { Some(decoder.new_plan(ctx, frames)?) } else { None };
    let dispatches = match &plan {
        Some(p) => decoder.build_plan(p, env, &codes, &sessions)?,
        None => decoder.build_frame(env, &codes, &sessions)?,
    };
    let bytes = (ms * frames * decoder.samples_per_frame() * 4) as u64;
    let readback = Readback::new(ctx, "decoder.pcm.readback", bytes);
    ctx.take_error()?;
    Ok(Runner { frames, plan, codes, sessions, dispatches, readback })
}

fn validate(decoder: &CodecDecoder, frames_per_step: usize, entries: &[Entry]) -> Result<()> {
    let o = decoder.options();
    if entries.is_empty() || entries.len() > o.max_sessions {
        return Err(EngineError::invalid(
            "frames",
            format!("a step takes 1..={} sessions, got {}", o.max_sessions, entries.len()),
        ));
    }
    let mut seen = vec![false; o.max_sessions];
    for e in entries {
        let slot = e.slot as usize;
        if slot >= o.max_sessions || std::mem::replace(&mut seen[slot], true) {
            return Err(EngineError::invalid("slot", format!("slot {slot} is out of range or used twice")));
        }
        if e.frame as usize + frames_per_step > o.max_frames {
            return Err(EngineError::invalid(
                "frame",
                format!("frame {} is past max_frames ({})", e.frame, o.max_frames),
            ));
        }
    }
    Ok(())
}

/// Uploads one step's counts, session descriptors and codes.
fn upload(ctx: &GpuContext, counts_buf: &wgpu::Buffer, runner: &Runner, entries: &[Entry]) -> RowCounts {
    let counts = RowCounts { talker_rows: 0, sessions: entries.len() as u32 };
    let descs: Vec<SessionDesc> = entries
        .iter()
        .map(|e| SessionDesc { slot: e.slot, gen_index: e.frame, ..Default::default() })
        .collect();
    let codes: Vec<u32> = entries.iter().flat_map(|e| e.codes.iter().flatten().map(|&c| c as u32)).collect();
    let q = &ctx.queue;
    q.write_buffer(counts_buf, 0, bytemuck::cast_slice(&counts.as_array()));
    q.write_buffer(&runner.sessions, 0, bytemuck::cast_slice(&descs));
    q.write_buffer(&runner.codes, 0, bytemuck::cast_slice(&codes));
    counts
}

/// Uploads the step's sessions and codes, replays the runner's dispatches in one pass and
/// reads back each session's samples.
fn run(
    ctx: &GpuContext,
    decoder: &CodecDecoder,
    counts_buf: &wgpu::Buffer,
    runner: &Runner,
    entries: &[Entry],
) -> Result<Vec<Vec<f32>>> {
    validate(decoder, runner.frames, entries)?;
    let counts = RowCounts { talker_rows: 0, sessions: entries.len() as u32 };
    let descs: Vec<SessionDesc> = entries
        .iter()
        .map(|e| SessionDesc { slot: e.slot, gen_index: e.frame, ..Default::default() })
        .collect();
    let codes: Vec<u32> = entries.iter().flat_map(|e| e.codes.iter().flatten().map(|&c| c as u32)).collect();
    let q = &ctx.queue;
    q.write_buffer(counts_buf, 0, bytemuck::cast_slice(&counts.as_array()));
    q.write_buffer(&runner.sessions, 0, bytemuck::cast_slice(&descs));
    q.write_buffer(&runner.codes, 0, bytemuck::cast_slice(&codes));
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("decoder.step"),
            timestamp_writes: None,
        });
        record_all(&runner.dispatches, &mut pass, &counts);
    }
    let samples = runner.frames * decoder.samples_per_frame();
    let bytes = (entries.len() * samples * 4) as u64;
    runner.readback.copy_from(&mut encoder, runner.pcm(decoder), bytes);
    ctx.queue.submit(Some(encoder.finish()));
    let raw = runner.readback.read(ctx, bytes)?;
    let pcm: Vec<f32> = bytemuck::pod_collect_to_vec(&raw);
    Ok(pcm.chunks_exact(samples).map(<[f32]>::to_vec).collect())
}

fn profile(
    ctx: &GpuContext,
    decoder: &CodecDecoder,
    counts_buf: &wgpu::Buffer,
    runner: &Runner,
    entries: &[Entry],
) -> Result<Vec<(String, f64)>> {
    if !ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        return Err(EngineError::Gpu(format!("{} has no timestamp queries", ctx.info.name)));
    }
    validate(decoder, runner.frames, entries)?;
    let counts = upload(ctx, counts_buf, runner, entries);
    let n = runner.dispatches.len() as u32;
    let queries = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some("decoder.profile"),
        ty: wgpu::QueryType::Timestamp,
        count: 2 * n,
    });
    let bytes = 2 * n as u64 * 8;
    let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("decoder.profile.resolve"),
        size: bytes,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = Readback::new(ctx, "decoder.profile.readback", bytes);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    for (i, d) in runner.dispatches.iter().enumerate() {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&d.label),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &queries,
                beginning_of_pass_write_index: Some(2 * i as u32),
                end_of_pass_write_index: Some(2 * i as u32 + 1),
            }),
        });
        d.record(&mut pass, &counts);
    }
    encoder.resolve_query_set(&queries, 0..2 * n, &resolve, 0);
    readback.copy_from(&mut encoder, &resolve, bytes);
    ctx.queue.submit(Some(encoder.finish()));
    let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&readback.read(ctx, bytes)?);
    let us_per_tick = ctx.queue.get_timestamp_period() as f64 / 1e3;
    Ok(runner
        .dispatches
        .iter()
        .zip(ticks.chunks_exact(2))
        .map(|(d, t)| (d.label.clone(), t[1].saturating_sub(t[0]) as f64 * us_per_tick))
        .collect())
}

/// Session 0's rows of one stage after a step of `frames` frames starting at `first_frame`.
fn read_tap(ctx: &GpuContext, tap: &StageTap, first_frame: u32, frames: u32) -> Result<Vec<f32>> {
    let all: Vec<f32> = read_buffer(ctx, tap.view.buffer)?;
    let (stride, channels) = (tap.view.stride as usize, tap.channels as usize);
    let rows = frames * tap.rows_per_frame;
    let mut out = Vec::with_capacity(rows as usize * channels);
    for t in 0..rows {
        let row = match tap.view.layout {
            SeqLayout::Dense { .. } => t,
            // Session 0 decodes in slot 0.
            SeqLayout::Ring { len, rows_per_frame } => (first_frame * rows_per_frame + t) % len,
        } as usize;
        out.extend_from_slice(&all[row * stride..row * stride + channels]);
    }
    Ok(out)
}
