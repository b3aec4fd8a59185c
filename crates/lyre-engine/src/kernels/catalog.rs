//! Every kernel the engine compiles, with each prelude it is compiled with: what the shader
//! tests validate and translate for every backend wgpu offers. The cooperative-matrix kernels are
//! listed apart: they use a feature only Vulkan offers here, and another kernel runs wherever it
//! is missing.

use crate::gpu::KernelSource;
use crate::kernels::attention::KvFormat;

/// A kernel's source and one prelude it is compiled with (`""` for none).
#[derive(Debug, Clone, Copy)]
pub struct CompiledKernel {
    pub kernel: KernelSource,
    pub prelude: &'static str,
}

/// A kernel that needs a Vulkan-only feature, and what runs where the adapter lacks it.
#[derive(Debug, Clone, Copy)]
pub struct VulkanOnly {
    pub kernel: KernelSource,
    /// The feature it needs.
    pub feature: &'static str,
    /// The kernel that runs in its place elsewhere (Metal, DX12, Vulkan without the feature).
    pub fallback: KernelSource,
}

/// Every kernel with a prelude-free source or one per KV-cache format, cooperative ones too.
pub fn all() -> Vec<CompiledKernel> {
    let plain = super::matmul::SOURCES
        .into_iter()
        .chain(super::attention::SOURCES)
        .chain(super::conv::SOURCES)
        .chain(super::norm::SOURCES)
        .chain(super::elementwise::SOURCES)
        .chain(super::gather::SOURCES)
        .chain(super::sample::SOURCES)
        .chain(super::layer::SOURCES)
        .map(|kernel| CompiledKernel { kernel, prelude: "" });
    let cached =
        super::attention::CACHE_SOURCES.into_iter().chain(super::layer::CACHE_SOURCES).flat_map(|kernel| {
            [KvFormat::F32, KvFormat::F16].map(|format| CompiledKernel { kernel, prelude: format.prelude() })
        });
    plain.chain(cached).collect()
}

/// The kernels that run only where Vulkan offers cooperative matrices (16 × 16 × 16 blocks of
/// f16 operands with f32 sums, subgroups of 32): the GEMM tiles of the matmuls and the codec's
/// convs. Everywhere else the same GEMMs run on the register tile.
pub fn vulkan_only() -> Vec<VulkanOnly> {
    let feature = "cooperative matrices (VK_KHR_cooperative_matrix)";
    [super::matmul::COOP_AND_FALLBACK]
        .into_iter()
        .chain(super::conv::COOP_AND_FALLBACK)
        .map(|(kernel, fallback)| VulkanOnly { kernel, feature, fallback })
        .collect()
}
