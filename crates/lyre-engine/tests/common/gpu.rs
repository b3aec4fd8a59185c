//! The GPU handle of the kernel tests (`tests/kernels`, `tests/decoder/kernels`), included by path
//! into each test crate: one shared device and the per-test buffers an [`Env`] needs.

use std::sync::{Arc, OnceLock};

use bytemuck::Pod;
use lyre_engine::gpu::{read_buffer, GpuContext, GpuOptions};
use lyre_engine::kernels::select::KernelChoice;
use lyre_engine::kernels::Env;

/// The engine tuning of the tests: the defaults with the environment's `LYRE_ENGINE_TUNING_*`
/// variables applied, as the server applies them (CI's second pass forces the GPU kernels on
/// lavapipe this way).
pub fn tuning() -> lyre_engine::EngineTuning {
    lyre_engine::EngineTuning::default()
        .with_env(std::env::vars())
        .expect("valid LYRE_ENGINE_TUNING_* variables")
}

pub struct Gpu {
    pub ctx: Arc<GpuContext>,
    /// The kernel choices of the tests' tuning on this adapter.
    pub kernels: KernelChoice,
    pub counts: wgpu::Buffer,
    pub dummy: wgpu::Buffer,
    pub scratch: wgpu::Buffer,
    pub partials: wgpu::Buffer,
}

/// One device per test process, shared by every test (each with its own buffers): devices are
/// slow to create, and some drivers stop listing adapters after a few dozen in one process.
fn shared_context() -> Arc<GpuContext> {
    static CONTEXT: OnceLock<Arc<GpuContext>> = OnceLock::new();
    CONTEXT
        .get_or_init(|| {
            let options = GpuOptions::from_tuning(&tuning());
            Arc::new(GpuContext::new(&options).expect("a wgpu adapter (CI uses lavapipe)"))
        })
        .clone()
}

impl Gpu {
    pub fn new() -> Self {
        let ctx = shared_context();
        let counts = ctx.storage_zeroed("counts", 16).unwrap();
        let dummy = ctx.storage_zeroed("dummy", 16).unwrap();
        let scratch = ctx.storage_zeroed("scratch", 16).unwrap();
        let partials = ctx.storage_zeroed("partials", 8 << 20).unwrap();
        let kernels = KernelChoice::new(&ctx, &tuning());
        Gpu { ctx, kernels, counts, dummy, scratch, partials }
    }

    /// Whether the adapter runs the GEMM tiles on cooperative matrices (lavapipe does not).
    /// `LYRE_REQUIRE_COOP=1` (the H200 runs) turns their absence into a failure instead of a run
    /// without those kernels.
    pub fn coop_or_required(&self) -> bool {
        let coop = self.ctx.has_coop_f16();
        let asked = std::env::var("LYRE_REQUIRE_COOP").as_deref() == Ok("1");
        assert!(coop || !asked, "LYRE_REQUIRE_COOP=1 but the adapter offers no usable cooperative matrices");
        coop
    }

    pub fn env(&self) -> Env<'_> {
        Env {
            ctx: &self.ctx,
            kernels: &self.kernels,
            counts: &self.counts,
            dummy: &self.dummy,
            scratch: &self.scratch,
            partials: &self.partials,
        }
    }

    pub fn buf<T: Pod>(&self, data: &[T]) -> wgpu::Buffer {
        self.ctx.storage_from("test", data).unwrap()
    }

    pub fn read<T: Pod>(&self, b: &wgpu::Buffer) -> Vec<T> {
        read_buffer(&self.ctx, b).unwrap()
    }
}
