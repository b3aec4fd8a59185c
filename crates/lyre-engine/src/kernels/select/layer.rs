//! Attention, q/k-norm + RoPE and the persistent decoder layer: which kernels run them.

use super::{KernelChoice, MatmulKernel};

/// Head dims per lane the subgroup attention kernel can hold (its `MAX_DPL`).
const SG_MAX_DIMS_PER_LANE: u32 = 8;

/// Which kernel computes attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKernel {
    /// One thread per key in chunks of 64 (CPU adapters).
    PerThread,
    /// One subgroup per key, lanes over the head dims (GPUs).
    Subgroup { size: u32 },
}

impl AttentionKernel {
    pub fn fits(subgroup_size: u32, head_dim: u32) -> bool {
        head_dim.is_multiple_of(subgroup_size) && head_dim / subgroup_size <= SG_MAX_DIMS_PER_LANE
    }
}

impl std::fmt::Display for AttentionKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttentionKernel::PerThread => "per-thread",
            AttentionKernel::Subgroup { .. } => "subgroup",
        })
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
    /// Whether `head_dim` splits into an even number of at most 8 dims per lane.
    pub fn fits(subgroup_size: u32, head_dim: u32) -> bool {
        head_dim.is_multiple_of(2 * subgroup_size) && head_dim / subgroup_size <= 8
    }
}

impl std::fmt::Display for RopeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RopeKernel::PerHead => "per-head",
            RopeKernel::Subgroup { .. } => "subgroup",
        })
    }
}

/// How the persistent layer splits a head's keys over workgroups at long contexts
/// (decode_layer_attention.wgsl): into `n / chunk_keys` parts for n keys, at most `max_chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionSplit {
    /// `None`: the grid's workgroups per head (128 / 16 = 8 on the H200's default grid).
    pub max_chunks: Option<u32>,
    pub chunk_keys: u32,
}

impl Default for AttentionSplit {
    /// Heads split from 128 keys, parts of at least 64: a shorter part's walk (8 steps of 8
    /// keys) costs about what the merge adds.
    fn default() -> Self {
        AttentionSplit { max_chunks: None, chunk_keys: 64 }
    }
}

/// `asked` workgroups (rounded down to a power of two; 0 turns persistent layers off), else 128
/// on GPUs (the H200 has 132 SMs: one workgroup each) and none on CPU adapters. Never more than
/// one on a CPU adapter: with two, lavapipe's barriers gave up in about a third of the runs (its
/// two workgroups did not always run at once), and the results of those runs were wrong. None
/// without subgroups of one fixed size.
pub fn grid_size(cpu: bool, fixed_subgroups: bool, asked: Option<u32>) -> u32 {
    if !fixed_subgroups {
        return 0;
    }
    let n = asked.unwrap_or(if cpu { 0 } else { 128 });
    let n = if n == 0 || n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
    if cpu {
        n.min(1)
    } else {
        n
    }
}

impl KernelChoice {
    /// The subgroup attention kernel where the matmuls take the subgroup kernels (so
    /// `tuning.matmul` switches both) and `head_dim` splits evenly over at most 8 dims per lane.
    pub fn attention(&self, head_dim: u32) -> AttentionKernel {
        match self.matmul_family() {
            MatmulKernel::Subgroup { size } if AttentionKernel::fits(size, head_dim) => {
                AttentionKernel::Subgroup { size }
            }
            _ => AttentionKernel::PerThread,
        }
    }

    /// The subgroup q/k-norm + RoPE kernel where the matmuls take the subgroup kernels and
    /// `head_dim` splits into an even number of at most 8 dims per lane.
    pub fn rope(&self, head_dim: u32) -> RopeKernel {
        match self.matmul_family() {
            MatmulKernel::Subgroup { size } if RopeKernel::fits(size, head_dim) => {
                RopeKernel::Subgroup { size }
            }
            _ => RopeKernel::PerHead,
        }
    }

    /// The subgroup size of the fused q/k-norm + RoPE + attention kernel of decode steps, where
    /// it runs: with the subgroup RoPE kernel, unless `tuning.fused_attention` is off.
    pub fn fused_attention(&self, head_dim: u32) -> Option<u32> {
        match self.rope(head_dim) {
            RopeKernel::Subgroup { size } if self.tuning.fused_attention => Some(size),
            _ => None,
        }
    }

    /// Workgroups of the persistent layers' grid before the adapter is checked to hold it at
    /// once ([`grid_size`] with `tuning.persistent` and `tuning.persistent_groups`).
    pub fn persistent_grid(&self) -> u32 {
        let asked = match self.tuning.persistent {
            crate::tuning::Switch::Auto => None,
            crate::tuning::Switch::On => Some(self.tuning.persistent_groups),
            crate::tuning::Switch::Off => Some(0),
        };
        grid_size(self.adapter.cpu, self.adapter.subgroup_size.is_some(), asked)
    }

    /// The persistent layer's split of a head's keys: the default with `tuning.attention_chunks`
    /// (when not 0) and `tuning.attention_chunk_keys`.
    pub fn attention_split(&self) -> AttentionSplit {
        let d = AttentionSplit::default();
        AttentionSplit {
            max_chunks: (self.tuning.attention_chunks > 0)
                .then_some(self.tuning.attention_chunks)
                .or(d.max_chunks),
            chunk_keys: self.tuning.attention_chunk_keys.max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::grid_size;

    #[test]
    fn grid_size_defaults_rounds_and_caps() {
        assert_eq!(grid_size(false, true, None), 128);
        assert_eq!(grid_size(true, true, None), 0);
        assert_eq!(grid_size(false, true, Some(100)), 64);
        assert_eq!(grid_size(false, true, Some(0)), 0);
        assert_eq!(grid_size(true, true, Some(4)), 1);
        assert_eq!(grid_size(false, false, Some(4)), 0);
    }
}
