//! Which kernel runs: the one place that turns the adapter and the [`EngineTuning`] into the
//! choice of matmul, attention, RoPE, sampler, conv and persistent-layer kernels for a shape and
//! a tick's row count. The launchers ask a [`KernelChoice`]; `docs/kernels.md` tabulates its
//! answers (a test holds the table to them).

mod conv;
mod layer;
mod matmul;

pub use conv::{ConvKernel, GemmPolicy, CONV_WORKGROUP};
pub use layer::{grid_size, AttentionKernel, AttentionSplit, RopeKernel};
pub use matmul::{few_rows_columns, MatmulKernel, MatmulPlan, FEW_ROWS_THREADS, MAX_SPLIT};

use crate::gpu::GpuContext;
use crate::tuning::{EngineTuning, SamplerChoice};

/// What the choice depends on in an adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adapter {
    /// A software rasteriser (lavapipe, WARP, SwiftShader).
    pub cpu: bool,
    /// The subgroup size where subgroups have one fixed size (4..=128).
    pub subgroup_size: Option<u32>,
    /// Cooperative matrices usable for the GEMM tiles (f16 operands, f32 sums).
    pub coop_f16: bool,
    pub max_invocations_per_workgroup: u32,
}

impl Adapter {
    pub fn of(ctx: &GpuContext) -> Self {
        Adapter {
            cpu: ctx.is_cpu(),
            subgroup_size: ctx.fixed_subgroup_size(),
            coop_f16: ctx.has_coop_f16(),
            max_invocations_per_workgroup: ctx.limits.max_compute_invocations_per_workgroup,
        }
    }
}

/// The kernel choices of one engine: an adapter and a tuning.
#[derive(Debug, Clone)]
pub struct KernelChoice {
    pub(super) adapter: Adapter,
    pub(super) tuning: EngineTuning,
}

/// Which kernel samples. Both choose the same codes, bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKernel {
    /// Shared-memory tree reductions and 32-step threshold searches (any adapter).
    Portable,
    /// Subgroup reductions, a radix select for top-k, 15 cuts per top-p round (~12 barriers
    /// per call instead of ~400).
    Subgroup { size: u32 },
}

impl SampleKernel {
    /// Subgroup sizes the subgroup kernel handles.
    pub fn supports(size: u32) -> bool {
        size.is_power_of_two() && (4..=128).contains(&size)
    }
}

impl KernelChoice {
    /// The choices on `ctx`'s adapter.
    pub fn new(ctx: &GpuContext, tuning: &EngineTuning) -> Self {
        Self::for_adapter(Adapter::of(ctx), tuning)
    }

    pub fn for_adapter(adapter: Adapter, tuning: &EngineTuning) -> Self {
        KernelChoice { adapter, tuning: tuning.clone() }
    }

    pub fn adapter(&self) -> &Adapter {
        &self.adapter
    }

    pub fn tuning(&self) -> &EngineTuning {
        &self.tuning
    }

    /// The subgroup sampler whenever the adapter has subgroups of one fixed power-of-two size
    /// (lavapipe too: it is faster there as well, and the parity tests then run it), else the
    /// portable one; `tuning.sampler` can force the portable kernel.
    pub fn sampler(&self) -> SampleKernel {
        match (self.tuning.sampler, self.adapter.subgroup_size) {
            (SamplerChoice::Portable, _) | (_, None) => SampleKernel::Portable,
            (_, Some(size)) if SampleKernel::supports(size) => SampleKernel::Subgroup { size },
            _ => SampleKernel::Portable,
        }
    }
}
