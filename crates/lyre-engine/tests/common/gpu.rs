//! The GPU handle of the kernel tests (`tests/kernels`, `tests/decoder/kernels`), included by path
//! into each test crate: one shared device and the per-test buffers an [`Env`] needs.

use std::sync::{Arc, OnceLock};

use bytemuck::Pod;
use lyre_engine::gpu::{read_buffer, GpuContext, GpuOptions};
use lyre_engine::kernels::Env;

pub struct Gpu {
    pub ctx: Arc<GpuContext>,
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
            Arc::new(GpuContext::new(&GpuOptions::from_env()).expect("a wgpu adapter (CI uses lavapipe)"))
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
        Gpu { ctx, counts, dummy, scratch, partials }
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
