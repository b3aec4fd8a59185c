//! Cooperative matrices (tensor cores): whether the GEMM tiles may run on them
//! (`kernels/shared/coop_tile.wgsl`). wgpu 30 offers them as an experimental feature; the tile needs
//! 16 × 16 × 16 blocks of f16 operands with f32 sums at subgroup scope, and subgroups of 32.

use wgpu::{CooperativeScalarType, Features};

/// Why the adapter's cooperative matrices are not used, or `None` when they are; `enabled`
/// false (`engine.tuning.coop = false`) turns them off.
pub(super) fn unusable(adapter: &wgpu::Adapter, enabled: bool) -> Option<&'static str> {
    if !enabled {
        return Some("engine.tuning.coop = false");
    }
    let needed = Features::EXPERIMENTAL_COOPERATIVE_MATRIX | Features::SHADER_F16 | Features::SUBGROUP;
    if !adapter.features().contains(needed) {
        return Some("the adapter lacks cooperative matrices, f16 or subgroups");
    }
    let info = adapter.get_info();
    if info.subgroup_min_size != 32 || info.subgroup_max_size != 32 {
        return Some("subgroups are not all 32 wide");
    }
    let f16_blocks = adapter.cooperative_matrix_properties().iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
            && p.ab_type == CooperativeScalarType::F16
            && p.cr_type == CooperativeScalarType::F32
    });
    if !f16_blocks {
        return Some("no 16x16x16 f16 x f16 + f32 configuration");
    }
    None
}
