//! q/k RMSNorm + RoPE, the KV-cache write and attention in one dispatch, for decode steps (one
//! row per session): [`QkNormRope`](super::QkNormRope) followed by
//! [`Attention`](super::Attention) with the same results, one dispatch and one chain
//! of memory round trips fewer per layer. Subgroup GPUs only.

use bytemuck::{Pod, Zeroable};

use super::heads::{Heads, KvCache};
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::select::RopeKernel;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "attention_rope_sg",
    wgsl: concat!(
        include_str!("../shared/descriptors.wgsl"),
        include_str!("../shared/qk_norm_weights.wgsl"),
        include_str!("../shared/attention_merge_sg.wgsl"),
        include_str!("../shared/attention_rope_head_sg.wgsl"),
        include_str!("attention_rope_sg.wgsl")
    ),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    max_pos: u32,
    qkv_stride: u32,
    out_stride: u32,
    has_norm: u32,
    eps: f32,
    scale: f32,
    _pad: [u32; 3],
}

/// Everything one fused site needs. Every row of the dispatch must be the only row of its
/// session (another row of the same session would read the cache this dispatch writes).
pub struct AttentionRope<'a> {
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
    /// Fused q|k|v rows.
    pub qkv: &'a wgpu::Buffer,
    pub cache: KvCache<'a>,
    /// Attention output rows (`q_width` wide).
    pub out: &'a wgpu::Buffer,
    pub rows: RowCount,
}

impl AttentionRope<'_> {
    /// The fused dispatch where the adapter runs it
    /// ([`KernelChoice::fused_attention`](crate::kernels::select::KernelChoice::fused_attention)),
    /// else `None` (the caller records the two kernels).
    pub fn build(&self, env: &Env) -> Option<Dispatch> {
        let size = env.kernels.fused_attention(self.heads.head_dim)?;
        self.build_subgroup(env, size).ok()
    }

    /// The fused dispatch for subgroups of `size` (tests run it on any adapter with a fixed
    /// subgroup size).
    pub fn build_subgroup(&self, env: &Env, size: u32) -> Result<Dispatch> {
        let h = self.heads;
        if !RopeKernel::fits(size, h.head_dim) {
            return Err(EngineError::Gpu(format!(
                "`{}`: head_dim {} needs an even number (at most 8) of dims per lane of {size}",
                self.label, h.head_dim
            )));
        }
        let params = Params {
            n_heads: h.n_heads,
            n_kv_heads: h.n_kv_heads,
            head_dim: h.head_dim,
            max_pos: self.cache.max_pos,
            qkv_stride: h.qkv_width(),
            out_stride: h.q_width(),
            has_norm: self.norms.is_some() as u32,
            eps: self.eps,
            scale: (h.head_dim as f64).powf(-0.5) as f32,
            _pad: [0; 3],
        };
        let dims = h.head_dim / size;
        let pipeline = env.ctx.pipeline_with(
            SOURCE,
            self.cache.format.prelude(),
            &[("SG", size as f64), ("DPL", dims as f64)],
        );
        let (q_norm, k_norm) = self.norms.unwrap_or((env.dummy, env.dummy));
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group = env.ctx.bind_group(
            self.label,
            &pipeline,
            &[
                &uniform,
                self.row_desc,
                self.qkv,
                q_norm,
                k_norm,
                self.rope_cos,
                self.rope_sin,
                self.cache.k,
                self.cache.v,
                self.out,
            ],
        );
        Ok(Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(h.n_heads), Extent::rows(self.rows)),
        })
    }
}
