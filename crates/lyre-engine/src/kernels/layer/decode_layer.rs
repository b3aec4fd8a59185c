//! One decoder layer for a tick of one row in one dispatch (decode_layer.wgsl): the five
//! dispatches of a layer at one row (qkv, attention, o, gate_up, down) as phases of one
//! persistent grid that meet at grid-wide barriers. A barrier costs 2.3–3.3 µs on the H200 where
//! a dependent dispatch costs ~5 µs, and batch 1 is a chain of ~600 such steps.

use bytemuck::{Pod, Zeroable};

use super::grid_residency::grid_is_resident;
use crate::gpu::{Dispatch, Extent, GpuContext, Grid, KernelSource, RowCount};
use crate::kernels::attention::{Heads, KvCache};
use crate::kernels::select::{AttentionSplit, KernelChoice, RopeKernel};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "decode_layer",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("../shared/bf16.wgsl"),
        include_str!("../shared/qk_norm_weights.wgsl"),
        include_str!("../shared/attention_merge_sg.wgsl"),
        include_str!("../shared/attention_rope_head_sg.wgsl"),
        include_str!("decode_layer_dot.wgsl"),
        include_str!("decode_layer_attention.wgsl"),
        include_str!("decode_layer.wgsl")
    ),
};

/// Storage bindings of the kernel.
const STORAGE_BINDINGS: u32 = 19;
/// Workgroup memory besides the input vector: attention_merge_sg.wgsl's arrays, the sums and
/// decode_layer_attention.wgsl's part states.
const FIXED_WORKGROUP_BYTES: u32 = 2048 * 4 + 3 * 64 * 4 + 16 + 2 * MAX_PARTS * 4;
/// Head parts one workgroup merges (decode_layer_attention.wgsl's `MAX_PARTS`).
const MAX_PARTS: u32 = 512;
/// Most parts one head's keys are split into.
pub const MAX_CHUNKS: u32 = 16;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    has_norm: u32,
    eps: f32,
    scale: f32,
    hidden: u32,
    inter: u32,
    groups: u32,
    max_chunks: u32,
    chunk_keys: u32,
}

/// The workgroups of the persistent kernels and the barrier counter they share. Every
/// persistent dispatch of a plan uses the same `groups`, so the counter stays a multiple of it
/// between dispatches.
#[derive(Clone, Copy)]
pub struct GridSync<'a> {
    pub groups: u32,
    /// [`sync_bytes`] zeroed bytes: arrivals, barrier waits that gave up, then the split
    /// attention's scratch.
    pub counter: &'a wgpu::Buffer,
    pub split: AttentionSplit,
    /// Workgroups of the grid not launched: 0, except in fault-injection tests, where 1 makes
    /// every barrier give up (as on a GPU that cannot hold the whole grid).
    pub held_back: u32,
}

/// Most parts per head of `split` for a grid of `groups` over `n_heads` heads.
fn max_chunks(split: AttentionSplit, groups: u32, n_heads: u32) -> u32 {
    let limit = MAX_CHUNKS.min(MAX_PARTS / n_heads.max(1)).max(1);
    split.max_chunks.unwrap_or(groups / n_heads.max(1)).clamp(1, limit)
}

/// Bytes of the [`GridSync`] counter buffer for stacks with these heads: the counters and the
/// split attention's scratch (each part's output and softmax state).
pub fn sync_bytes(heads: &[Heads]) -> u64 {
    let scratch = heads.iter().map(|h| h.n_heads * MAX_CHUNKS * (h.head_dim + 2)).max().unwrap_or(0);
    16 + 4 * scratch as u64
}

/// The longest input vector of the layer's phases (hidden, q width, inter): the length of the
/// kernel's workgroup copy of it.
pub fn widest_input(heads: Heads, hidden: u32, inter: u32) -> u32 {
    hidden.max(heads.q_width()).max(inter)
}

/// Workgroup memory of the layer kernel for these sizes: its input vector and
/// attention_merge_sg.wgsl's arrays and the sums.
pub fn workgroup_bytes(heads: Heads, hidden: u32, inter: u32) -> u32 {
    widest_input(heads, hidden, inter) * 4 + FIXED_WORKGROUP_BYTES
}

/// Workgroups for the persistent kernels on this adapter
/// ([`KernelChoice::persistent_grid`]), or 0 when a grid of that size, each workgroup holding
/// `workgroup_bytes` of workgroup memory (the largest layer's [`workgroup_bytes`]), does not run
/// all at once here (one dispatch checks).
pub fn persistent_groups(ctx: &GpuContext, kernels: &KernelChoice, workgroup_bytes: u32) -> u32 {
    let groups = kernels.persistent_grid();
    if groups <= 1 {
        return groups;
    }
    match grid_is_resident(ctx, groups, workgroup_bytes) {
        Ok(true) => groups,
        resident => {
            tracing::warn!(groups, ?resident, "persistent layers off: the grid is not resident at once");
            0
        }
    }
}

/// One layer's weights, as the kernel binds them (and the layer's separate dispatches read
/// them): q|k|v and gate|up stacked so that each is one matmul.
pub struct LayerWeights {
    pub input_norm: wgpu::Buffer,
    pub qkv: wgpu::Buffer,
    pub q_norm: wgpu::Buffer,
    pub k_norm: wgpu::Buffer,
    pub o: wgpu::Buffer,
    pub post_norm: wgpu::Buffer,
    pub gate_up: wgpu::Buffer,
    pub down: wgpu::Buffer,
}

/// One layer of a stack at one row.
pub struct DecodeLayer<'a> {
    pub label: &'a str,
    pub heads: Heads,
    pub hidden: u32,
    pub inter: u32,
    pub eps: f32,
    pub weights: &'a LayerWeights,
    /// The residual stream, in and out.
    pub x: &'a wgpu::Buffer,
    /// The residual stream after attention (one row): the phases write each activation once
    /// per dispatch (decode_layer.wgsl says why).
    pub x_mid: &'a wgpu::Buffer,
    /// Scratch of the phases: q|k|v, the attention output and the gated MLP activation.
    pub qkv: &'a wgpu::Buffer,
    pub attn: &'a wgpu::Buffer,
    pub act: &'a wgpu::Buffer,
    pub cache: KvCache<'a>,
    pub rope_cos: &'a wgpu::Buffer,
    pub rope_sin: &'a wgpu::Buffer,
    /// Row 0 gives the cache slot and position.
    pub row_desc: &'a wgpu::Buffer,
    /// The dispatch runs when this count is at least 1 (callers record it only for one row).
    pub rows: RowCount,
    pub sync: GridSync<'a>,
}

impl DecodeLayer<'_> {
    /// The dispatch, or `None` where the adapter or the shapes do not allow it: no subgroups of
    /// one size, a head size attend_head cannot split, hidden not a multiple of 8 or the q width
    /// and inter not multiples of 16, too little workgroup memory or too few storage bindings.
    pub fn build(&self, env: &Env) -> Option<Dispatch> {
        let ctx = env.ctx;
        let size = ctx.fixed_subgroup_size()?;
        let h = self.heads;
        let fits = self.sync.groups > 0
            && RopeKernel::fits(size, h.head_dim)
            && self.hidden.is_multiple_of(8)
            // C and E split their rows in halves of whole 16-byte loads.
            && h.q_width().is_multiple_of(16)
            && self.inter.is_multiple_of(16)
            && workgroup_bytes(h, self.hidden, self.inter) <= ctx.limits.max_compute_workgroup_storage_size
            && ctx.limits.max_storage_buffers_per_shader_stage >= STORAGE_BINDINGS;
        if !fits {
            return None;
        }
        Some(self.build_with(env, size))
    }

    fn build_with(&self, env: &Env, size: u32) -> Dispatch {
        let h = self.heads;
        let params = Params {
            n_heads: h.n_heads,
            n_kv_heads: h.n_kv_heads,
            head_dim: h.head_dim,
            max_pos: self.cache.max_pos,
            has_norm: 1,
            eps: self.eps,
            scale: (h.head_dim as f64).powf(-0.5) as f32,
            hidden: self.hidden,
            inter: self.inter,
            groups: self.sync.groups,
            max_chunks: max_chunks(self.sync.split, self.sync.groups, h.n_heads),
            chunk_keys: self.sync.split.chunk_keys.max(1),
        };
        let widest = widest_input(h, self.hidden, self.inter);
        let pipeline = env.ctx.pipeline_with(
            SOURCE,
            self.cache.format.prelude(),
            &[("SG", size as f64), ("DPL", (h.head_dim / size) as f64), ("VEC4S", (widest / 4) as f64)],
        );
        let uniform = env.ctx.uniform(self.label, &params);
        let w = self.weights;
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[
                &uniform,
                self.row_desc,
                self.qkv,
                &w.q_norm,
                &w.k_norm,
                self.rope_cos,
                self.rope_sin,
                self.cache.k,
                self.cache.v,
                self.attn,
                self.x,
                self.act,
                self.sync.counter,
                &w.input_norm,
                &w.qkv,
                &w.o,
                &w.post_norm,
                &w.gate_up,
                &w.down,
                self.x_mid,
            ],
        );
        Dispatch {
            label: self.label.to_string(),
            pipeline,
            bind_group,
            // One grid when the count is at least one, none when it is zero.
            grid: Grid::new(
                Extent::Persistent(self.sync.groups.saturating_sub(self.sync.held_back)),
                Extent::Rows { count: self.rows, per_group: u32::MAX },
            ),
            alternatives: Vec::new(),
        }
    }
}
