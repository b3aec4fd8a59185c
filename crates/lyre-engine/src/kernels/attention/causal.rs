//! Causal (optionally sliding-window) attention of each row against its KV-cache slot.

use bytemuck::{Pod, Zeroable};

use super::heads::{Heads, KvCache, RowLayout};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::select::AttentionKernel;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "attention",
    wgsl: concat!(include_str!("../shared/descriptors.wgsl"), include_str!("attention.wgsl")),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "attention_sg",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("../shared/attention_merge_sg.wgsl"),
        include_str!("attention_sg.wgsl")
    ),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    window: u32,
    q_stride: u32,
    out_stride: u32,
    scale: f32,
    wrap: u32,
    rows_per_group: u32,
    _pad: [u32; 2],
}

pub struct Attention<'a> {
    pub label: &'a str,
    pub heads: Heads,
    /// 0 for full causal attention.
    pub window: u32,
    pub row_desc: &'a wgpu::Buffer,
    pub q: &'a wgpu::Buffer,
    pub cache: KvCache<'a>,
    pub out: &'a wgpu::Buffer,
    pub rows: RowCount,
}

impl Attention<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        self.build_with(env, RowLayout::default())
    }

    /// [`Attention::build`] with a non-default row layout (a ring-buffer cache, several rows
    /// per grid y).
    pub fn build_with(&self, env: &Env, layout: RowLayout) -> Dispatch {
        self.build_kernel(env, layout, env.kernels.attention(self.heads.head_dim))
    }

    /// [`Attention::build_with`] with the kernel chosen by the caller (tests run both).
    pub fn build_kernel(&self, env: &Env, layout: RowLayout, kernel: AttentionKernel) -> Dispatch {
        let h = self.heads;
        let params = Params {
            n_heads: h.n_heads,
            n_kv_heads: h.n_kv_heads,
            head_dim: h.head_dim,
            max_pos: self.cache.max_pos,
            window: self.window,
            q_stride: h.q_width(),
            out_stride: h.q_width(),
            scale: (h.head_dim as f64).powf(-0.5) as f32,
            wrap: layout.wrap as u32,
            rows_per_group: layout.rows_per_group.max(1),
            _pad: [0; 2],
        };
        let prelude = self.cache.format.prelude();
        let pipeline = match kernel {
            AttentionKernel::Subgroup { size } => {
                env.ctx.pipeline_with(SOURCE_SUBGROUP, prelude, &[("SG", size as f64)])
            }
            AttentionKernel::PerThread => env.ctx.pipeline_with(SOURCE, prelude, &[]),
        };
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[&uniform, self.row_desc, self.q, self.cache.k, self.cache.v, self.out],
        );
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid { x: Extent::Fixed(h.n_heads), y: Extent::rows(self.rows), z: layout.grid_z() },
        }
    }
}
