//! Every GPU buffer a tick touches and the dispatch list that advances all participating
//! sessions by one frame: the talker (text projection, input assembly, the stack, first-codebook
//! sampling), fifteen code-predictor steps (each sampling one more codebook), then the codec
//! decoder. Built once; a tick uploads its row and session descriptors, replays the list in one
//! compute pass and reads back the `[sessions][16]` codes and `[sessions][1920]` samples together.

use crate::codec::CodecDecoder;
use crate::error::Result;
use crate::gpu::{Dispatch, GpuContext, Readback};
use crate::kernels::attention::KvFormat;
use crate::kernels::layer::{persistent_groups, sync_bytes, workgroup_bytes, GridSync};
use crate::kernels::select::KernelChoice;
use crate::kernels::Env;
use crate::model::code_predictor::{CodePredictorBuffers, CodePredictorWeights};
use crate::model::talker::{CodecIds, TalkerBuffers, TalkerWeights};
use crate::model::transformer::StackShape;
use crate::model::TickIo;
use crate::sampling::SessionDesc;

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

/// The tick's own buffers: its descriptors, the per-session state both models share, and what
/// every launcher binds besides its own buffers ([`Env`]).
pub struct TickBuffers {
    /// The tick's row counts (`RowCounts::as_array`).
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
    /// The persistent layers' barrier counters.
    pub grid_sync: wgpu::Buffer,
    pub dummy: wgpu::Buffer,
    pub scratch: wgpu::Buffer,
    /// Split-K partial sums of the GEMM matmuls ([`Env::partials`]).
    pub partials: wgpu::Buffer,
}

/// Size in bytes of one row descriptor (`slot, pos, text, codec`).
pub const ROW_DESC_BYTES: usize = 16;

impl TickBuffers {
    fn new(
        ctx: &GpuContext,
        limits: &PlanLimits,
        talker: &TalkerWeights,
        grid_bytes: u64,
        partials: u64,
    ) -> Result<Self> {
        let (rows, ms, h) = (limits.max_rows, limits.max_sessions, talker.shape.hidden);
        let z = |label: &str, bytes: usize| ctx.storage_zeroed(label, bytes as u64);
        let history_words = talker.codec_vocab.div_ceil(32);
        Ok(TickBuffers {
            counts: z("counts", 16)?,
            row_desc: z("row_desc", rows * ROW_DESC_BYTES)?,
            sessions: z("sessions", ms * std::mem::size_of::<SessionDesc>())?,
            decoder_sessions: z("decoder_sessions", ms * std::mem::size_of::<SessionDesc>())?,
            extra: z("extra", rows * h * 4)?,
            codes: z("codes", ms * 16 * 4)?,
            history: z("history", ms * history_words * 4)?,
            history_words,
            acc: z("frame_acc", ms * h * 4)?,
            grid_sync: ctx.storage_zeroed("grid_sync", grid_bytes)?,
            dummy: z("dummy", 16)?,
            scratch: z("scratch", 16)?,
            partials: ctx.storage_zeroed("gemm.partials", partials)?,
        })
    }

    /// The models' view of these buffers.
    fn io<'a>(&'a self, grid: Option<GridSync<'a>>) -> TickIo<'a> {
        TickIo {
            row_desc: &self.row_desc,
            sessions: &self.sessions,
            extra: &self.extra,
            acc: &self.acc,
            codes: &self.codes,
            history: &self.history,
            history_words: self.history_words as u32,
            grid,
        }
    }
}

pub struct TickPlan {
    pub limits: PlanLimits,
    /// Which kernel of each family the plan's dispatches run.
    pub kernels: KernelChoice,
    pub bufs: TickBuffers,
    pub talker: TalkerBuffers,
    pub code_predictor: CodePredictorBuffers,
    pub dispatches: Vec<Dispatch>,
    pub stages: Stages,
    /// One staging buffer for the tick's results: codes at 0, PCM at `pcm_offset`.
    /// Two, so one tick's results can be read while the next tick runs.
    pub readbacks: [Readback; 2],
    /// Where the grid barriers' counters (arrivals, waits that gave up) sit in a readback.
    pub grid_sync_offset: u64,
    pub pcm_offset: u64,
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
        let (ts, cps) = (&talker.shape, &cp.shape);
        let grid_bytes = sync_bytes(&[ts.heads, cps.heads]);
        let b = TickBuffers::new(ctx, &limits, talker, grid_bytes, kernels.partials_bytes())?;
        let sizes = (limits.max_rows, limits.max_sessions);
        let talker_bufs = TalkerBuffers::new(ctx, talker, sizes, limits.max_positions, limits.kv_cache)?;
        let cp_bufs = CodePredictorBuffers::new(ctx, cp, limits.max_sessions)?;
        let groups = persistent_groups(ctx, &kernels, layer_bytes(ts).max(layer_bytes(cps)));
        // Fault injection: two workgroups waited for, one launched.
        let (groups, held_back) = if grid_fault { (2, 1) } else { (groups, 0) };
        let split = kernels.attention_split();
        let grid = GridSync { groups, counter: &b.grid_sync, held_back, split };
        let io = b.io(Some(grid));
        let env = Env {
            ctx,
            kernels: &kernels,
            counts: &b.counts,
            dummy: &b.dummy,
            scratch: &b.scratch,
            partials: &b.partials,
        };
        let steps = talker.record(&env, &talker_bufs, &io, ids)?;
        let mut d = steps.input;
        let input = d.len();
        d.extend(steps.stack);
        let talker_end = d.len();
        d.extend(steps.first_code);
        let first_code = d.len();
        d.extend(cp.record(&env, talker, &cp_bufs, &io, &talker_bufs.normed)?);
        let code_predictor = d.len();
        d.extend(decoder.build_frame(&env, &b.codes, &b.decoder_sessions)?);

        let ms = limits.max_sessions;
        let grid_sync_offset = (ms * 16 * 4) as u64;
        let pcm_offset = (grid_sync_offset + 16).next_multiple_of(256);
        let readback_bytes = pcm_offset + (ms * decoder.samples_per_frame() * 4) as u64;
        let readback = |label: &str| Readback::new(ctx, label, readback_bytes);
        Ok(TickPlan {
            limits,
            kernels,
            bufs: b,
            talker: talker_bufs,
            code_predictor: cp_bufs,
            dispatches: d,
            stages: Stages { input, talker: talker_end, first_code, code_predictor },
            readbacks: [readback("tick.readback.0"), readback("tick.readback.1")],
            grid_sync_offset,
            pcm_offset,
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
            counts: &self.bufs.counts,
            dummy: &self.bufs.dummy,
            scratch: &self.bufs.scratch,
            partials: &self.bufs.partials,
        }
    }
}

/// Workgroup memory of a stack's persistent layer.
fn layer_bytes(s: &StackShape) -> u32 {
    workgroup_bytes(s.heads, s.hidden as u32, s.inter as u32)
}
