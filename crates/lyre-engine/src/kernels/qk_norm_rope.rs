//! Per-head q/k RMSNorm + rotary embedding, and the KV-cache write.

use bytemuck::{Pod, Zeroable};

use super::Env;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource =
    KernelSource { name: "qk_norm_rope", wgsl: include_str!("qk_norm_rope.wgsl") };

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
}

/// Attention geometry shared by the rope and attention kernels.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
}

impl Heads {
    pub fn q_width(&self) -> u32 {
        self.n_heads * self.head_dim
    }
    pub fn kv_width(&self) -> u32 {
        self.n_kv_heads * self.head_dim
    }
    pub fn qkv_width(&self) -> u32 {
        self.q_width() + 2 * self.kv_width()
    }
}

/// One layer's KV cache: `[slot][kv_head][max_pos][head_dim]` f32 for K and for V.
#[derive(Clone, Copy)]
pub struct KvCache<'a> {
    pub k: &'a wgpu::Buffer,
    pub v: &'a wgpu::Buffer,
    pub max_pos: u32,
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
        };
        let (qn, kn) = self.norms.unwrap_or((env.dummy, env.dummy));
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
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
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(h.n_heads + 2 * h.n_kv_heads), Extent::rows(self.rows)),
        }
    }
}
