//! Every GPU buffer a tick touches and the dispatch list that advances all participating
//! sessions by one frame: text projection, input assembly, talker, first-codebook sampling,
//! fifteen code-predictor steps (each sampling one more codebook), then the codec decoder.
//! Built once; a tick uploads its row and session descriptors, replays the list in one compute
//! pass and reads back the `[sessions][16]` codes and `[sessions][1920]` samples together.

use super::cp_plan::{code_predictor_steps, cp_row_descs, CpBuffers};
use crate::codec::CodecDecoder;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, Readback, RowCount};
use crate::kernels::attention::KvFormat;
use crate::kernels::gather::{CombineInput, CopyRows, EmbedText, Source};
use crate::kernels::layer::{persistent_groups, sync_bytes, workgroup_bytes, GridSync};
use crate::kernels::matmul::{Activation, Input, Matmul, Output};
use crate::kernels::norm::{RmsNorm, WeightFormat};
use crate::kernels::sample::{Sample, TalkerProcessors};
use crate::kernels::select::KernelChoice;
use crate::kernels::{Env, Rows};
use crate::model::code_predictor::CodePredictorWeights;
use crate::model::rope::RopeTables;
use crate::model::talker::TalkerWeights;
use crate::model::transformer::{KvBuffers, StackBuffers, StackRun};

/// Sizes (and the talker's KV-cache format) the plan is built for.
#[derive(Debug, Clone, Copy)]
pub struct PlanLimits {
    /// Talker rows per tick (prompt rows of new sessions + one per continuing session).
    pub max_rows: usize,
    /// Sessions alive at once; also the number of KV-cache slots.
    pub max_sessions: usize,
    /// Positions per KV-cache slot (prompt + frames).
    pub max_positions: usize,
    /// How the talker's KV cache stores its values (the code predictor's, 16 positions per
    /// session, is f32).
    pub kv_cache: KvFormat,
}

/// Special ids the talker's sampler needs.
#[derive(Debug, Clone, Copy)]
pub struct CodecIds {
    pub eos: u32,
    pub min_new_tokens: u32,
}

pub struct TickPlan {
    pub limits: PlanLimits,
    /// Which kernel of each family the plan's dispatches run.
    pub kernels: KernelChoice,
    pub counts: wgpu::Buffer,
    pub row_desc: wgpu::Buffer,
    pub sessions: wgpu::Buffer,
    /// The sessions as the codec decoder sees them: `gen_index` is the decoder's frame index,
    /// which runs ahead of the sampler's by the reference frames of an ICL session.
    pub decoder_sessions: wgpu::Buffer,
    pub extra: wgpu::Buffer,
    pub codes: wgpu::Buffer,
    pub history: wgpu::Buffer,
    pub history_words: usize,
    pub acc: wgpu::Buffer,
    pub talker: StackBuffers,
    /// Final-normed hidden state of each session's last row, `[session][H]`.
    pub normed: wgpu::Buffer,
    pub logits: wgpu::Buffer,
    /// Code-predictor logits of every step, `[step][session][vocab]`.
    pub cp_logits: wgpu::Buffer,
    pub talker_kv: KvBuffers,
    pub dispatches: Vec<Dispatch>,
    pub stages: Stages,
    /// One staging buffer for the tick's results: codes at 0, PCM at `pcm_offset`.
    /// Two, so one tick's results can be read while the next tick runs.
    pub readbacks: [Readback; 2],
    /// Where the grid barriers' counters (arrivals, waits that gave up) sit in a readback.
    pub grid_sync_offset: u64,
    pub pcm_offset: u64,
    /// The persistent layers' barrier counters.
    pub grid_sync: wgpu::Buffer,
    // Kept alive for the bind groups.
    _keep: Vec<wgpu::Buffer>,
    _cp: StackBuffers,
    _cp_kv: KvBuffers,
    _ropes: (RopeTables, RopeTables),
    pub dummy: wgpu::Buffer,
    pub scratch: wgpu::Buffer,
    /// Split-K partial sums of the GEMM matmuls ([`Env::partials`]).
    pub partials: wgpu::Buffer,
}

/// Where each stage of the tick ends in [`TickPlan::dispatches`].
#[derive(Debug, Clone, Copy)]
pub struct Stages {
    /// Text projection and input assembly: `dispatches[..input]`.
    pub input: usize,
    /// The talker stack: `dispatches[input..talker]`.
    pub talker: usize,
    /// Last rows, final norm, codec head, first-codebook sample: `dispatches[talker..first_code]`.
    pub first_code: usize,
    /// The code predictor: `dispatches[first_code..code_predictor]`; the decoder follows.
    pub code_predictor: usize,
}

/// Size in bytes of one row descriptor (`slot, pos, text, codec`).
pub const ROW_DESC_BYTES: usize = 16;
/// Positions the code predictor uses per frame (2-token prefill + 14 steps).
const CP_POSITIONS: usize = 16;

impl TickPlan {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &GpuContext,
        kernels: KernelChoice,
        talker: &TalkerWeights,
        cp: &CodePredictorWeights,
        decoder: &CodecDecoder,
        ids: CodecIds,
        limits: PlanLimits,
        grid_fault: bool,
    ) -> Result<Self> {
        let (rows, ms) = (limits.max_rows, limits.max_sessions);
        let ts = &talker.shape;
        let h = ts.hidden;
        let z = |label: &str, bytes: usize| ctx.storage_zeroed(label, bytes as u64);
        let counts = z("counts", 16)?;
        let dummy = z("dummy", 16)?;
        let scratch = z("scratch", 16)?;
        let partials = ctx.storage_zeroed("gemm.partials", kernels.partials_bytes())?;
        let row_desc = z("row_desc", rows * ROW_DESC_BYTES)?;
        let sessions = z("sessions", ms * std::mem::size_of::<crate::sampling::SessionDesc>())?;
        let decoder_sessions =
            z("decoder_sessions", ms * std::mem::size_of::<crate::sampling::SessionDesc>())?;
        let extra = z("extra", rows * h * 4)?;
        let text_emb = z("text_emb", rows * talker.text_hidden * 4)?;
        let text_h = z("text_h", rows * talker.text_hidden * 4)?;
        let tp = z("text_proj", rows * h * 4)?;
        let last = z("last_hidden", ms * h * 4)?;
        let normed = z("normed", ms * h * 4)?;
        let logits = z("logits", ms * talker.codec_vocab * 4)?;
        let codes = z("codes", ms * 16 * 4)?;
        let history_words = talker.codec_vocab.div_ceil(32);
        let history = z("history", ms * history_words * 4)?;
        let acc = z("frame_acc", ms * h * 4)?;
        let cps = &cp.shape;
        let cp_in = match cp.projection {
            Some(_) => Some(z("cp_in", 2 * ms * cp.talker_hidden * 4)?),
            None => None,
        };
        let cp_bufs = StackBuffers::new(ctx, "cp", cps, 2 * ms)?;
        let groups = cp.heads.len();
        let cp_logits = z("cp_logits", groups * ms * cp.vocab * 4)?;
        let talker_bufs = StackBuffers::new(ctx, "talker", ts, rows)?;
        let talker_kv = KvBuffers::new(ctx, "talker.kv", ts, ms, limits.max_positions, limits.kv_cache)?;
        let cp_kv = KvBuffers::new(ctx, "cp.kv", cps, ms, CP_POSITIONS, KvFormat::F32)?;
        let t_rope = RopeTables::new(
            ctx,
            "talker.rope",
            limits.max_positions,
            ts.heads.head_dim as usize,
            ts.rope_theta,
        )?;
        let c_rope =
            RopeTables::new(ctx, "cp.rope", CP_POSITIONS, cps.heads.head_dim as usize, cps.rope_theta)?;
        let cp_rows = cp_row_descs(ctx, ms, groups)?;
        let grid_counter = ctx.storage_zeroed("grid_sync", sync_bytes(&[ts.heads, cps.heads]))?;
        let layer_bytes = |s: &crate::model::transformer::StackShape| {
            workgroup_bytes(s.heads, s.hidden as u32, s.inter as u32)
        };
        let groups = persistent_groups(ctx, &kernels, layer_bytes(ts).max(layer_bytes(cps)));
        // Fault injection: two workgroups waited for, one launched.
        let (groups, held_back) = if grid_fault { (2, 1) } else { (groups, 0) };
        let grid =
            Some(GridSync { groups, counter: &grid_counter, held_back, split: kernels.attention_split() });

        let env = Env {
            ctx,
            kernels: &kernels,
            counts: &counts,
            dummy: &dummy,
            scratch: &scratch,
            partials: &partials,
        };
        let mut d: Vec<Dispatch> = Vec::new();
        let th = talker.text_hidden as u32;
        let (hu, tr) = (h as u32, RowCount::Talker);
        // 1. Text channel: embedding gather, then the SiLU MLP.
        d.push(
            EmbedText {
                label: "text.embed",
                chunks: &talker.text_embedding.chunks,
                rows_per_chunk: talker.text_embedding.rows_per_chunk,
                vocab: talker.text_vocab as u32,
                dim: th,
                row_desc: &row_desc,
                out: &text_emb,
                rows: tr,
            }
            .build(&env)?,
        );
        d.push(
            linear("text.fc1", &talker.text_fc1, th, th, &text_emb, &text_h, tr, Activation::Silu)
                .build(&env)?,
        );
        d.push(linear("text.fc2", &talker.text_fc2, th, hu, &text_h, &tp, tr, Activation::None).build(&env)?);
        // 2. Input rows = text part + codec part.
        d.push(
            CombineInput {
                label: "talker.input",
                dim: hu,
                codec_vocab: talker.codec_vocab as u32,
                row_desc: &row_desc,
                text: &tp,
                codec_embedding: &talker.codec_embedding,
                acc: &acc,
                extra: &extra,
                out: &talker_bufs.x,
                rows: tr,
            }
            .build(&env),
        );
        let input_end = d.len();
        // 3. The talker stack over every row.
        d.extend(
            StackRun {
                label: "talker",
                shape: ts,
                layers: &talker.layers,
                bufs: &talker_bufs,
                kv: &talker_kv,
                rope: &t_rope,
                row_desc: &row_desc,
                rows: tr,
                grid,
            }
            .build(&env)?,
        );
        let talker_end = d.len();
        // 4. Each session's last row → final norm → codec head → first code.
        let sr = RowCount::Sessions;
        d.push(
            CopyRows {
                label: "talker.last_rows",
                dim: hu,
                sessions: &sessions,
                src: &talker_bufs.x,
                src_stride: hu,
                source: Source::LastRow,
                dst: Rows::dense(&last, hu),
                rows: sr,
            }
            .build(&env),
        );
        d.push(
            norm("talker.norm", &talker.norm, hu, ts.eps, Rows::dense(&last, hu), &normed, sr).build(&env),
        );
        d.push(
            Matmul {
                label: "talker.codec_head",
                weight: &talker.codec_head,
                bias: None,
                k: hu,
                n: talker.codec_vocab as u32,
                x: Rows::dense(&normed, hu),
                input: Input::Plain,
                y: Rows::dense(&logits, talker.codec_vocab as u32),
                rows: sr,
                output: Output::Overwrite,
                activation: Activation::None,
            }
            .build(&env)?,
        );
        let v = talker.codec_vocab as u32;
        d.push(
            Sample {
                label: "talker.sample",
                vocab: v,
                logits: Rows::dense(&logits, v),
                code_col: 0,
                talker: Some(TalkerProcessors {
                    eos: ids.eos,
                    suppress_start: v - 1024,
                    min_new_tokens: ids.min_new_tokens,
                    history_words: history_words as u32,
                }),
                sessions: &sessions,
                codes: &codes,
                history: &history,
            }
            .build(&env)?,
        );
        let first_code_end = d.len();
        // 5. The code predictor.
        d.extend(code_predictor_steps(
            &env,
            talker,
            cp,
            CpBuffers {
                sessions: &sessions,
                codes: &codes,
                acc: &acc,
                normed: &normed,
                cp_in: cp_in.as_ref(),
                bufs: &cp_bufs,
                kv: &cp_kv,
                rope: &c_rope,
                row_descs: &cp_rows,
                cp_logits: &cp_logits,
                max_sessions: ms,
                history: &history,
                grid,
            },
        )?);

        let code_predictor_end = d.len();
        // 6. The codec decoder: one frame of audio per session.
        d.extend(decoder.build_frame(&env, &codes, &decoder_sessions)?);

        let grid_sync_offset = (ms * 16 * 4) as u64;
        let pcm_offset = (grid_sync_offset + 16).next_multiple_of(256);
        let readback_bytes = pcm_offset + (ms * decoder.samples_per_frame() * 4) as u64;
        let readbacks = [
            Readback::new(ctx, "tick.readback.0", readback_bytes),
            Readback::new(ctx, "tick.readback.1", readback_bytes),
        ];
        let mut keep = vec![text_emb, text_h, tp, last];
        keep.extend(cp_in);
        keep.extend(cp_rows);
        Ok(TickPlan {
            limits,
            kernels,
            counts,
            row_desc,
            sessions,
            decoder_sessions,
            extra,
            codes,
            history,
            history_words,
            acc,
            talker: talker_bufs,
            normed,
            logits,
            cp_logits,
            talker_kv,
            dispatches: d,
            stages: Stages {
                input: input_end,
                talker: talker_end,
                first_code: first_code_end,
                code_predictor: code_predictor_end,
            },
            readbacks,
            grid_sync_offset,
            pcm_offset,
            grid_sync: grid_counter,
            _keep: keep,
            _cp: cp_bufs,
            _cp_kv: cp_kv,
            _ropes: (t_rope, c_rope),
            dummy,
            scratch,
            partials,
        })
    }

    /// From now on every tick runs the layers as separate dispatches. Returns how many
    /// persistent dispatches there were.
    pub fn leave_persistent(&mut self) -> usize {
        self.dispatches.iter_mut().map(|d| d.leave_persistent()).filter(|&was| was).count()
    }

    pub fn env<'a>(&'a self, ctx: &'a GpuContext) -> Env<'a> {
        Env {
            ctx,
            kernels: &self.kernels,
            counts: &self.counts,
            dummy: &self.dummy,
            scratch: &self.scratch,
            partials: &self.partials,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn linear<'a>(
    label: &'a str,
    wb: &'a (wgpu::Buffer, wgpu::Buffer),
    k: u32,
    n: u32,
    x: &'a wgpu::Buffer,
    y: &'a wgpu::Buffer,
    rows: RowCount,
    activation: Activation,
) -> Matmul<'a> {
    Matmul {
        label,
        weight: &wb.0,
        bias: Some(&wb.1),
        k,
        n,
        x: Rows::dense(x, k),
        input: Input::Plain,
        y: Rows::dense(y, n),
        rows,
        output: Output::Overwrite,
        activation,
    }
}

fn norm<'a>(
    label: &'a str,
    weight: &'a wgpu::Buffer,
    dim: u32,
    eps: f32,
    x: Rows<'a>,
    y: &'a wgpu::Buffer,
    rows: RowCount,
) -> RmsNorm<'a> {
    RmsNorm { label, weight, format: WeightFormat::Bf16, dim, eps, x, y: Rows::dense(y, dim), rows }
}
