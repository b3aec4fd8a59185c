//! Per-head q/k RMSNorm + rotary embedding, and the KV-cache write.

use bytemuck::{Pod, Zeroable};

use super::matmul::MatmulKernel;
use super::Env;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};

pub const SOURCE: KernelSource = KernelSource {
    name: "qk_norm_rope",
    wgsl: concat!(
        include_str!("descriptors.wgsl"),
        include_str!("qk_norm_weights.wgsl"),
        include_str!("qk_norm_rope_common.wgsl"),
        include_str!("qk_norm_rope.wgsl")
    ),
};
pub const SOURCE_SUBGROUP: KernelSource = KernelSource {
    name: "qk_norm_rope_sg",
    wgsl: concat!(
        include_str!("descriptors.wgsl"),
        include_str!("qk_norm_weights.wgsl"),
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

/// How rows map onto the grid and the KV cache, for callers other than the talker (the codec
/// decoder). The default is the talker's: one row per grid y, position p at cache row p.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    /// Store position p at cache row `p % max_pos`: the cache is a ring of the last `max_pos`
    /// positions (RoPE still uses p). Only correct when no row looks back further than that.
    pub wrap: bool,
    /// Consecutive rows per grid-y index, spread over grid z (rows = count × this).
    pub rows_per_group: u32,
}

impl Default for RowLayout {
    fn default() -> Self {
        RowLayout { wrap: false, rows_per_group: 1 }
    }
}

impl RowLayout {
    pub(crate) fn grid_z(&self) -> crate::gpu::Extent {
        crate::gpu::Extent::Fixed(self.rows_per_group.max(1))
    }
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

/// One layer's KV cache: `[slot][kv_head][max_pos][head_dim]` values for K and for V.
#[derive(Clone, Copy)]
pub struct KvCache<'a> {
    pub k: &'a wgpu::Buffer,
    pub v: &'a wgpu::Buffer,
    pub max_pos: u32,
    pub format: KvFormat,
}

/// How a KV cache stores its values. The kernels that read or write a cache are compiled for its
/// format (the WGSL element type `kv_t`); they compute in f32 either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KvFormat {
    #[default]
    F32,
    /// IEEE half precision: half the memory and half the attention's cache reads, values rounded
    /// to 11 significant bits (the official model keeps its cache in bf16, 8 bits). Needs an
    /// adapter with shader-f16.
    F16,
}

impl KvFormat {
    pub fn bytes(self) -> usize {
        match self {
            KvFormat::F32 => 4,
            KvFormat::F16 => 2,
        }
    }

    /// The declarations the cache kernels' WGSL starts with.
    pub fn prelude(self) -> &'static str {
        match self {
            KvFormat::F32 => "alias kv_t = f32;\n",
            KvFormat::F16 => "enable f16;\nalias kv_t = f16;\n",
        }
    }
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
        self.build_kernel(env, layout, RopeKernel::for_adapter(env, self.heads.head_dim))
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

/// Which kernel normalises and rotates the heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeKernel {
    /// A workgroup of 64 threads per head (CPU adapters, odd head sizes).
    PerHead,
    /// A subgroup per head (GPUs): no barriers.
    Subgroup { size: u32 },
}

impl RopeKernel {
    /// The subgroup kernel where the matmuls take theirs (so `LYRE_MATMUL` switches both) and
    /// `head_dim` splits into an even number of at most 8 dims per lane.
    pub fn for_adapter(env: &Env, head_dim: u32) -> Self {
        match MatmulKernel::for_adapter(env.ctx) {
            MatmulKernel::Subgroup { size } if Self::fits(size, head_dim) => RopeKernel::Subgroup { size },
            _ => RopeKernel::PerHead,
        }
    }

    pub fn fits(subgroup_size: u32, head_dim: u32) -> bool {
        head_dim % (2 * subgroup_size) == 0 && head_dim / subgroup_size <= 8
    }
}
