//! The attention geometry and the KV cache, as the attention kernels and the persistent layer
//! bind them.

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
            KvFormat::F32 => include_str!("kv_f32.wgsl"),
            KvFormat::F16 => include_str!("kv_f16.wgsl"),
        }
    }
}
