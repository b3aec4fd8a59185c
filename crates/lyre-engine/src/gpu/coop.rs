//! Cooperative matrices (tensor cores): whether the GEMM tiles may run on them
//! (`kernels/shared/coop_tile.wgsl`). wgpu 30 offers them as an experimental feature; the tile needs
//! 16 × 16 × 16 blocks of f16 operands with f32 sums at subgroup scope, subgroups of 32, and
//! 48 KiB of workgroup memory.

use wgpu::{CooperativeScalarType, Features};

/// Workgroup memory a kernel on the cooperative tile may take: the tile's staging and sums (47
/// KiB at the widest) and 1 KiB of the kernel's own. wgpu does not check it against the adapter's
/// limit, so an adapter that offers less runs the register tiles.
pub const COOP_WORKGROUP_BYTES: u32 = 48 * 1024;

/// What decides whether the tiles may use an adapter's cooperative matrices.
#[derive(Debug, Clone, PartialEq)]
struct CoopFacts {
    features: Features,
    subgroup_sizes: (u32, u32),
    workgroup_storage: u32,
    f16_blocks: bool,
}

impl CoopFacts {
    fn of(adapter: &wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let f16_blocks = adapter.cooperative_matrix_properties().iter().any(|p| {
            (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                && p.ab_type == CooperativeScalarType::F16
                && p.cr_type == CooperativeScalarType::F32
        });
        CoopFacts {
            features: adapter.features(),
            subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
            workgroup_storage: adapter.limits().max_compute_workgroup_storage_size,
            f16_blocks,
        }
    }

    fn why_unusable(&self) -> Option<&'static str> {
        let needed = Features::EXPERIMENTAL_COOPERATIVE_MATRIX | Features::SHADER_F16 | Features::SUBGROUP;
        if !self.features.contains(needed) {
            return Some("the adapter lacks cooperative matrices, f16 or subgroups");
        }
        if self.subgroup_sizes != (32, 32) {
            return Some("subgroups are not all 32 wide");
        }
        if !self.f16_blocks {
            return Some("no 16x16x16 f16 x f16 + f32 configuration");
        }
        if self.workgroup_storage < COOP_WORKGROUP_BYTES {
            return Some("less than 48 KiB of workgroup memory");
        }
        None
    }
}

/// Why the adapter's cooperative matrices are not used, or `None` when they are; `enabled`
/// false (`engine.tuning.coop = false`) turns them off.
pub(super) fn unusable(adapter: &wgpu::Adapter, enabled: bool) -> Option<&'static str> {
    if !enabled {
        return Some("engine.tuning.coop = false");
    }
    CoopFacts::of(adapter).why_unusable()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H100 or H200 on NVIDIA's Vulkan driver, as wgpu reports it.
    fn nvidia() -> CoopFacts {
        CoopFacts {
            features: Features::EXPERIMENTAL_COOPERATIVE_MATRIX | Features::SHADER_F16 | Features::SUBGROUP,
            subgroup_sizes: (32, 32),
            workgroup_storage: 49152,
            f16_blocks: true,
        }
    }

    #[test]
    fn an_nvidia_adapter_runs_the_cooperative_tiles() {
        assert_eq!(nvidia().why_unusable(), None);
    }

    #[test]
    fn an_adapter_short_of_any_requirement_runs_the_register_tiles() {
        let short_memory = CoopFacts { workgroup_storage: 32768, ..nvidia() };
        assert_eq!(short_memory.why_unusable(), Some("less than 48 KiB of workgroup memory"));
        let wide_subgroups = CoopFacts { subgroup_sizes: (32, 64), ..nvidia() };
        assert_eq!(wide_subgroups.why_unusable(), Some("subgroups are not all 32 wide"));
        let other_blocks = CoopFacts { f16_blocks: false, ..nvidia() };
        assert!(other_blocks.why_unusable().is_some());
        let no_f16 = CoopFacts {
            features: Features::EXPERIMENTAL_COOPERATIVE_MATRIX | Features::SUBGROUP,
            ..nvidia()
        };
        assert!(no_f16.why_unusable().is_some());
    }
}
