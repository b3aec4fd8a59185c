//! One tick: pick the sessions that have input, upload their row and session descriptors,
//! replay the plan in one compute pass, read back the codes, and turn them into frames.

use super::reference::Prime;
use super::session::NextInput;
use super::tick_plan::ROW_DESC_BYTES;
use super::{Engine, FinishReason, Frame, FrameLogits, StepOutput, TickScope};
use crate::error::Result;
use crate::gpu::{part_ends, read_buffer, record_all, RowCounts};
use crate::kernels::gather::{EXTRA, FROM_ACC, NONE};
use crate::prompt::{CodecPart, PromptRow};
use crate::sampling::SessionDesc;

/// What the tick feeds the talker.
#[derive(Default)]
struct TickInput {
    rows: Vec<[u32; 4]>,
    extra: Vec<f32>,
    sessions: Vec<SessionDesc>,
    /// `sessions` with the decoder's frame index as `gen_index`.
    decoder_sessions: Vec<SessionDesc>,
    /// Decoder slots to prime with reference frames before this tick: (slot, frames).
    primes: Vec<(u32, Vec<[u16; 16]>)>,
    members: Vec<Member>,
}

/// A session's part in a tick.
#[derive(Debug, Clone, Copy)]
struct Member {
    id: u64,
    /// Talker rows fed.
    fed: u32,
    /// The tick feeds an utterance's prompt.
    prefill: bool,
    /// The session's first prompt: its decoder slot starts over.
    new_stream: bool,
    /// The utterance the tick belongs to (results of an utterance that has ended are moot).
    utterance: u32,
}

/// A submitted tick whose results have not been read yet.
pub(super) struct InFlight {
    /// In the order of the results.
    members: Vec<Member>,
    readback: usize,
    submission: wgpu::SubmissionIndex,
    profiled: bool,
    /// CPU time from choosing the sessions to the submission.
    launch_cpu: std::time::Duration,
}

/// One step. Pipelined, it submits the next tick before reading the one in flight, so the
/// CPU's encoding and submission overlap the GPU's work: sessions advance at submission, and
/// results of a speculative tick for a session that has since ended are dropped. The RNG is
/// keyed by (seed, frame, column), so the frames are the same either way. `scope` picks the
/// sessions of the tick this step launches.
pub(super) fn run(engine: &mut Engine, scope: TickScope) -> Result<Vec<StepOutput>> {
    let mut outputs = Vec::new();
    if !engine.pipelined() {
        if let Some(t) = engine.in_flight.take() {
            complete(engine, t, &mut outputs)?;
        }
        if let Some(t) = launch(engine, &mut outputs, scope, true)? {
            complete(engine, t, &mut outputs)?;
        }
        return Ok(outputs);
    }
    let current = match engine.in_flight.take() {
        Some(t) => t,
        None => match launch(engine, &mut outputs, scope, true)? {
            Some(t) => t,
            None => return Ok(outputs),
        },
    };
    engine.in_flight = launch(engine, &mut outputs, scope, false)?;
    complete(engine, current, &mut outputs)?;
    // When every session of the speculative tick has ended, nothing is left to wait for it.
    if let Some(t) =
        engine.in_flight.take_if(|t| t.members.iter().all(|m| !engine.sessions.contains_key(&m.id)))
    {
        complete(engine, t, &mut outputs)?;
    }
    Ok(outputs)
}

/// Gathers and submits a tick, advancing its sessions; `None` when no session has input.
/// `gpu_idle`: no tick of ours runs on the GPU, so it waits for this one's submission.
fn launch(
    engine: &mut Engine,
    outputs: &mut Vec<StepOutput>,
    scope: TickScope,
    gpu_idle: bool,
) -> Result<Option<InFlight>> {
    let started = std::time::Instant::now();
    let first = outputs.len();
    let input = gather(engine, outputs, scope)?;
    finish_sessions(engine, &outputs[first..]);
    if input.sessions.is_empty() {
        return Ok(None);
    }
    let readback = engine.next_readback;
    engine.next_readback ^= 1;
    let submission = submit(engine, &input, readback, gpu_idle)?;
    let launch_cpu = started.elapsed();
    for m in &input.members {
        let s = engine.sessions.get_mut(&m.id).expect("member of this tick");
        if m.prefill {
            s.prompt_rows = m.fed;
        }
        s.prefilled = true;
        s.decoder_started = true;
        s.pos += m.fed;
        s.gen_index += 1;
    }
    Ok(Some(InFlight {
        members: input.members,
        readback,
        submission,
        profiled: engine.profiling,
        launch_cpu,
    }))
}

/// Waits for a submitted tick and turns its codes into frames and finishes.
fn complete(engine: &mut Engine, t: InFlight, outputs: &mut Vec<StepOutput>) -> Result<()> {
    let (codes, pcm, give_ups) = read_results(engine, &t)?;
    if give_ups != engine.grid_give_ups {
        return fail_grid_tick(engine, &t, give_ups, outputs);
    }
    let spf = engine.decoder.samples_per_frame();
    let logits = if engine.opts.capture_logits { Some(read_logits(engine, t.members.len())?) } else { None };
    let eos = engine.model.config.talker_config.codec_eos_token_id;
    let first = outputs.len();
    for (i, m) in t.members.iter().enumerate() {
        // Ended (finished or cancelled) after this tick was submitted, or the utterance it
        // belongs to ended: its results are moot.
        let Some(s) = engine.sessions.get_mut(&m.id) else { continue };
        if s.utterance != m.utterance {
            continue;
        }
        let row = &codes[i * 16..i * 16 + 16];
        let mut out = StepOutput {
            id: m.id,
            frame: None,
            finished: None,
            logits: logits.as_ref().map(|l| l[i].clone()),
            flushed: false,
        };
        let mut utterance_end = None;
        if row[0] == eos {
            utterance_end = Some(FinishReason::Eos);
        } else {
            let mut c = [0u16; 16];
            for (dst, &src) in c.iter_mut().zip(row) {
                *dst = src as u16;
            }
            let samples = pcm[i * spf..(i + 1) * spf].to_vec();
            out.frame = Some(Frame { index: s.frames, segment: s.utterance, codes: c, pcm: samples });
            s.frames += 1;
            s.utterance_frames += 1;
            if s.frames >= s.max_frames {
                out.finished = Some(FinishReason::MaxFrames);
            } else if s.utterance_frames >= s.utterance_limit() {
                utterance_end = Some(FinishReason::MaxFrames);
            } else if s.pos as usize + 1 > engine.opts.max_positions {
                utterance_end = Some(FinishReason::ContextFull);
            }
        }
        if let Some(reason) = utterance_end {
            out.finished = match s.end_current(reason, &engine.model.tokenizer) {
                Ok(finished) => finished,
                Err(e) => {
                    tracing::error!(session = m.id, error = %e, "the next segment could not start");
                    Some(FinishReason::Cancelled)
                }
            };
            out.flushed = std::mem::take(&mut s.flush_done);
        }
        outputs.push(out);
    }
    finish_sessions(engine, &outputs[first..]);
    Ok(())
}

/// A tick in which a persistent layer's barrier gave up: some workgroups ran ahead of the
/// others, so its sessions' results (and the cache rows it wrote) are wrong. They end with
/// [`FinishReason::GpuFault`], and every later tick runs the layers as separate dispatches.
fn fail_grid_tick(
    engine: &mut Engine,
    t: &InFlight,
    give_ups: u32,
    outputs: &mut Vec<StepOutput>,
) -> Result<()> {
    let waits = give_ups.wrapping_sub(engine.grid_give_ups);
    engine.grid_give_ups = give_ups;
    let left = engine.plan.leave_persistent();
    tracing::error!(
        waits,
        sessions = t.members.len(),
        dispatches = left,
        "grid barrier gave up: the persistent layers' workgroups did not all run at once; their \
         sessions end with a GPU fault and the layers run as separate dispatches from now on"
    );
    let first = outputs.len();
    for m in &t.members {
        if engine.sessions.contains_key(&m.id) {
            outputs.push(StepOutput {
                id: m.id,
                frame: None,
                finished: Some(FinishReason::GpuFault),
                logits: None,
                flushed: false,
            });
        }
    }
    finish_sessions(engine, &outputs[first..]);
    Ok(())
}

/// Chooses this tick's sessions (those `scope` names, in id order, within the row budget) and
/// builds their rows.
fn gather(engine: &mut Engine, outputs: &mut Vec<StepOutput>, scope: TickScope) -> Result<TickInput> {
    let cfg = &engine.model.config;
    let max_rows = engine.plan.limits.max_rows;
    let mut t = TickInput::default();
    let forced = &engine.forced;
    for s in engine.sessions.values_mut() {
        // Nothing left to say and no text to come (streamed text that ended after the last
        // utterance, or never had a word).
        if let Some(reason) = s.idle_finish() {
            outputs.push(StepOutput {
                id: s.id,
                frame: None,
                finished: Some(reason),
                logits: None,
                flushed: false,
            });
            continue;
        }
        if !s.is_ready() || (scope == TickScope::Prompts && s.prefilled) {
            continue;
        }
        // Already at a frame or position limit through a tick still in flight.
        if s.at_limit(engine.opts.max_positions) {
            continue;
        }
        let need = if s.prefilled { 1 } else { s.prompt_len().unwrap_or(1) };
        if t.rows.len() + need > max_rows {
            continue;
        }
        let first_row = t.rows.len() as u32;
        let prefill = !s.prefilled;
        match s.next_input(cfg)? {
            NextInput::Wait => continue,
            NextInput::Step(text) => t.rows.push([s.slot, s.pos, text, FROM_ACC]),
            NextInput::Prompt(rows) => {
                let descs = row_descriptors(s.slot, s.pos, &rows, &mut t.extra);
                t.rows.extend(descs);
            }
        }
        let fed = t.rows.len() as u32 - first_row;
        let mut desc = SessionDesc::new(s.slot, t.rows.len() as u32 - 1, s.gen_index, &s.sampling);
        if let Some(codes) = forced.get(&s.id).and_then(|f| f.get(s.gen_index as usize)) {
            desc = desc.force(codes);
        }
        t.sessions.push(desc);
        t.decoder_sessions.push(SessionDesc { gen_index: s.decoder_frame(), ..desc });
        let new_stream = !s.decoder_started;
        if new_stream {
            if let Some(codes) = s.take_prime() {
                t.primes.push((s.slot, codes));
            }
        }
        t.members.push(Member { id: s.id, fed, prefill, new_stream, utterance: s.utterance });
    }
    Ok(t)
}

/// Uploads the tick's descriptors, replays the plan and copies `[sessions][16]` codes and
/// `[sessions][1920]` samples to readback `rb`. Onto an idle GPU the plan goes in parts, the
/// first submitted as soon as `first_submit_dispatches` are recorded, each next one four times
/// as long: recording and finishing a command buffer costs the CPU a few microseconds per
/// dispatch, milliseconds for a tick, which the GPU would otherwise wait out before its first
/// dispatch; growing parts keep the GPU busy while the CPU records the next.
fn submit(engine: &mut Engine, t: &TickInput, rb: usize, gpu_idle: bool) -> Result<wgpu::SubmissionIndex> {
    let (gpu, plan) = (&engine.gpu.clone(), &engine.plan);
    let counts = RowCounts { talker_rows: t.rows.len() as u32, sessions: t.sessions.len() as u32 };
    let q = &gpu.queue;
    q.write_buffer(&plan.bufs.counts, 0, bytemuck::cast_slice(&counts.as_array()));
    q.write_buffer(&plan.bufs.row_desc, 0, bytemuck::cast_slice(&t.rows));
    q.write_buffer(&plan.bufs.sessions, 0, bytemuck::cast_slice(&t.sessions));
    q.write_buffer(&plan.bufs.decoder_sessions, 0, bytemuck::cast_slice(&t.decoder_sessions));
    if !t.extra.is_empty() {
        q.write_buffer(&plan.bufs.extra, 0, bytemuck::cast_slice(&t.extra));
    }
    debug_assert_eq!(std::mem::size_of::<[u32; 4]>(), ROW_DESC_BYTES);
    let new_encoder =
        || gpu.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("tick") });
    let mut encoder = new_encoder();
    // Clears in the command buffer rather than queue writes of zeros: a queue write stages its
    // bytes in a buffer of its own, about 5 µs each, and a new session needs one per ring of
    // the decoder's state.
    let words = plan.bufs.history_words as u64;
    for (desc, m) in t.sessions.iter().zip(&t.members) {
        if m.prefill {
            // A new prompt: the sampler's history starts over, and the decoder takes this
            // slot's frames again; a new session's decoder state starts over too.
            encoder.clear_buffer(&plan.bufs.history, desc.slot as u64 * words * 4, Some(words * 4));
            engine.seams.clear_ended(&mut encoder, desc.slot);
        }
        if m.new_stream {
            engine.decoder.reset_slot(&mut encoder, desc.slot);
            engine.seams.reset(&mut encoder, desc.slot);
        }
    }
    let primes: Vec<Prime> = t.primes.iter().map(|(slot, codes)| Prime { slot: *slot, codes }).collect();
    engine.reference.record_primes(gpu, &mut encoder, &primes);
    let profiler = engine.active_profiler();
    let ends = match profiler {
        None if gpu_idle => {
            part_ends(&plan.dispatches, &counts, engine.opts.tuning.first_submit_dispatches as usize)
        }
        _ => Vec::new(),
    };
    let mut from = 0;
    for end in ends {
        record_all(&plan.dispatches[from..end], &mut tick_pass(&mut encoder), &counts);
        q.submit(Some(encoder.finish()));
        encoder = new_encoder();
        from = end;
    }
    {
        let mut pass = tick_pass(&mut encoder);
        match profiler {
            Some(p) => p.record(&plan.dispatches, &mut pass, &counts),
            None => record_all(&plan.dispatches[from..], &mut pass, &counts),
        }
        if engine.seams.needs_shift(t.decoder_sessions.iter().map(|d| d.gen_index)) {
            record_all(&engine.seams.shift, &mut pass, &counts);
        }
    }
    if let Some(p) = profiler {
        p.resolve(&mut encoder);
    }
    let m = t.sessions.len();
    let code_bytes = (m * 16 * 4) as u64;
    let pcm_bytes = (m * engine.decoder.samples_per_frame() * 4) as u64;
    plan.readbacks[rb].copy_from_at(&mut encoder, &plan.bufs.codes, 0, code_bytes);
    plan.readbacks[rb].copy_from_at(&mut encoder, &plan.bufs.grid_sync, plan.grid_sync_offset, 16);
    plan.readbacks[rb].copy_from_at(&mut encoder, engine.decoder.pcm(), plan.pcm_offset, pcm_bytes);
    Ok(q.submit(Some(encoder.finish())))
}

fn tick_pass(encoder: &mut wgpu::CommandEncoder) -> wgpu::ComputePass<'_> {
    encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("tick"), timestamp_writes: None })
}

/// Waits for a tick's submission and reads its codes and samples, the grid barrier waits that
/// gave up so far (and its GPU profile).
fn read_results(engine: &mut Engine, t: &InFlight) -> Result<(Vec<u32>, Vec<f32>, u32)> {
    let m = t.members.len();
    let code_bytes = m * 16 * 4;
    let pcm_bytes = (m * engine.decoder.samples_per_frame() * 4) as u64;
    let plan = &engine.plan;
    let waiting = std::time::Instant::now();
    let raw = plan.readbacks[t.readback].read_after(
        &engine.gpu,
        plan.pcm_offset + pcm_bytes,
        Some(t.submission.clone()),
    )?;
    let waited = waiting.elapsed();
    let codes = bytemuck::pod_collect_to_vec(&raw[..code_bytes]);
    let pcm = bytemuck::pod_collect_to_vec(&raw[plan.pcm_offset as usize..]);
    let at = plan.grid_sync_offset as usize + 4;
    let give_ups = u32::from_le_bytes(raw[at..at + 4].try_into().expect("four bytes"));
    engine.last_gpu_wait = waited;
    engine.last_launch_cpu = t.launch_cpu;
    engine.last_profile = match (&engine.profiler, t.profiled) {
        (Some(p), true) => Some(p.read(&engine.gpu)?),
        _ => None,
    };
    Ok((codes, pcm, give_ups))
}

fn read_logits(engine: &Engine, m: usize) -> Result<Vec<FrameLogits>> {
    let plan = &engine.plan;
    let v = engine.model.config.talker_config.vocab_size;
    let cv = engine.model.config.talker_config.code_predictor_config.vocab_size;
    let ms = plan.limits.max_sessions;
    let h = engine.model.config.talker_config.hidden_size;
    let talker: Vec<f32> = read_buffer(&engine.gpu, &plan.talker.logits)?;
    let normed: Vec<f32> = read_buffer(&engine.gpu, &plan.talker.normed)?;
    let cp: Vec<f32> = read_buffer(&engine.gpu, &plan.code_predictor.logits)?;
    let groups = cp.len() / (ms * cv);
    Ok((0..m)
        .map(|i| FrameLogits {
            talker: talker[i * v..(i + 1) * v].to_vec(),
            talker_hidden: normed[i * h..(i + 1) * h].to_vec(),
            code_predictor: (0..groups)
                .map(|g| cp[(g * ms + i) * cv..(g * ms + i + 1) * cv].to_vec())
                .collect(),
        })
        .collect())
}

fn finish_sessions(engine: &mut Engine, outputs: &[StepOutput]) {
    for o in outputs {
        if o.finished.is_some() {
            engine.cancel(o.id);
        }
    }
}

/// Descriptors of prompt rows at positions `pos0..` in `slot`; speaker vectors are appended to
/// `extra` and referenced by index.
pub(super) fn row_descriptors(
    slot: u32,
    pos0: u32,
    rows: &[PromptRow],
    extra: &mut Vec<f32>,
) -> Vec<[u32; 4]> {
    rows.iter()
        .enumerate()
        .map(|(k, r)| {
            let codec = match &r.codec {
                CodecPart::None => NONE,
                CodecPart::Id(id) => *id,
                CodecPart::Vector(v) => {
                    let index = (extra.len() / v.len().max(1)) as u32;
                    extra.extend_from_slice(v);
                    EXTRA | index
                }
            };
            [slot, pos0 + k as u32, r.text.unwrap_or(NONE), codec]
        })
        .collect()
}
