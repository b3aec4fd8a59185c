//! Per-head q/k RMSNorm + rotary embedding, and the KV-cache write.

use bytemuck::{Pod, Zeroable};

use super::heads::{Heads, KvCache, RowLayout};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::select::RopeKernel;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "qk_norm_rope",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("../shared/qk_norm_weights.wgsl"),
        include_str!("qk_norm_rope_common.wgsl"),
        include_str!("qk_norm_rope.wgsl")
    ),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "qk_norm_rope_sg",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("../shared/qk_norm_weights.wgsl"),
        include_str!("qk_norm_rope_common.wgsl"),
        include_str!("qk_norm_rope_sg.wgsl")
    ),
};

/// Threads per workgroup of the subgroup kernel (one subgroup per head).
const SG_THREADS: u32 = 256;

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    qkv_stride: u32,
    q_stride: u32,
    has_norm: u32,
    eps: f32,
    wrap: u32,
    rows_per_group: u32,
    _pad: [u32; 2],
}

pub struct QkNormRope<'a> {
    pub label: &'a str,
    pub heads: Heads,
    /// `(q_norm, k_norm)` bf16 weights of `head_dim`; absent for plain attention.
    pub norms: Option<(&'a wgpu::Buffer, &'a wgpu::Buffer)>,
    pub eps: f32,
    /// `[max_pos][head_dim / 2]` f32 tables.
    pub rope_cos: &'a wgpu::Buffer,
    pub rope_sin: &'a wgpu::Buffer,
    /// Row descriptors (`slot`, `pos`, ...).
    pub row_desc: &'a wgpu::Buffer,
    pub qkv: &'a wgpu::Buffer,
    pub q_out: &'a wgpu::Buffer,
    pub cache: KvCache<'a>,
    pub rows: RowCount,
}

impl QkNormRope<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        self.build_with(env, RowLayout::default())
    }

    /// [`QkNormRope::build`] with a non-default row layout.
    pub fn build_with(&self, env: &Env, layout: RowLayout) -> Dispatch {
        self.build_kernel(env, layout, env.kernels.rope(self.heads.head_dim))
    }

    /// [`QkNormRope::build_with`] with the kernel chosen by the caller (tests run both).
    pub fn build_kernel(&self, env: &Env, layout: RowLayout, kernel: RopeKernel) -> Dispatch {
        let h = self.heads;
        let params = Params {
            n_heads: h.n_heads,
            n_kv_heads: h.n_kv_heads,
            head_dim: h.head_dim,
            max_pos: self.cache.max_pos,
            qkv_stride: h.qkv_width(),
            q_stride: h.q_width(),
            has_norm: self.norms.is_some() as u32,
            eps: self.eps,
            wrap: layout.wrap as u32,
            rows_per_group: layout.rows_per_group.max(1),
            _pad: [0; 2],
        };
        let (qn, kn) = self.norms.unwrap_or((env.dummy, env.dummy));
        let heads = h.n_heads + 2 * h.n_kv_heads;
        let (pipeline, groups_x) = match kernel {
            RopeKernel::Subgroup { size } => (
                env.ctx.pipeline_with(
                    SOURCE_SUBGROUP,
                    self.cache.format.prelude(),
                    &[("SG", size as f64), ("DPL", (h.head_dim / size) as f64)],
                ),
                heads.div_ceil(SG_THREADS / size),
            ),
            RopeKernel::PerHead => (env.ctx.pipeline_with(SOURCE, self.cache.format.prelude(), &[]), heads),
        };
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[
                &uniform,
                self.row_desc,
                self.qkv,
                qn,
                kn,
                self.rope_cos,
                self.rope_sin,
                self.q_out,
                self.cache.k,
                self.cache.v,
            ],
        );
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid { x: Extent::Fixed(groups_x), y: Extent::rows(self.rows), z: layout.grid_z() },
        }
    }
}
