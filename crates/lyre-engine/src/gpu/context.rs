//! Adapter selection and the wgpu device shared by every model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::{EngineError, Result};
use crate::tuning::EngineTuning;

/// How to pick the adapter.
#[derive(Debug, Clone)]
pub struct GpuOptions {
    /// Backends to consider. Defaults to Vulkan, Metal and DX12 (never GL).
    pub backends: wgpu::Backends,
    /// Choose the first adapter whose name contains this (case-insensitive).
    pub adapter_name: Option<String>,
    /// Which runtime checks wgpu compiles into our kernels (see [`ShaderChecks`]).
    pub shader_checks: ShaderChecks,
    /// Use the adapter's cooperative matrices for the GEMM tiles where it has them.
    pub coop: bool,
}

/// The runtime checks wgpu adds to every shader it compiles: index clamping on arrays, guards on
/// integer division, and a counter in every loop that breaks out of an infinite one. They protect
/// against untrusted shaders; ours are fixed and tested, and the checks cost instructions in every
/// inner loop (with them, 14.2 ms against 7.55 ms per frame at batch 1 on the H200). Storage-
/// buffer accesses stay bounds-checked where the driver does it in hardware (Vulkan
/// `robustBufferAccess2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderChecks {
    /// wgpu's defaults: every check on.
    On,
    /// No checks added to the generated code.
    Off,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions::from_tuning(&EngineTuning::default())
    }
}

impl GpuOptions {
    /// The device-wide keys of a tuning: `adapter`, `shader_checks` and `coop`.
    pub fn from_tuning(tuning: &EngineTuning) -> Self {
        GpuOptions {
            backends: wgpu::Backends::PRIMARY,
            adapter_name: Some(tuning.adapter.trim().to_string()).filter(|s| !s.is_empty()),
            shader_checks: if tuning.shader_checks { ShaderChecks::On } else { ShaderChecks::Off },
            coop: tuning.coop,
        }
    }
}

/// The device, its queue, and what the adapter offers.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    pub(super) pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    pub(super) shader_checks: ShaderChecks,
    /// What each resource is, once a tool asks ([`GpuContext::keep_resource_names`]).
    pub(super) names: Mutex<Option<super::names::ResourceNames>>,
    /// The first validation or out-of-memory error wgpu reported since the last check.
    errors: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.info.name).finish()
    }
}

fn rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

impl GpuContext {
    pub fn new(opts: &GpuOptions) -> Result<Self> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: opts.backends,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let mut adapters = pollster::block_on(instance.enumerate_adapters(opts.backends));
        let found: Vec<String> =
            adapters.iter().map(|a| format!("{} ({:?})", a.get_info().name, a.get_info().backend)).collect();
        if let Some(want) = &opts.adapter_name {
            let want = want.to_lowercase();
            adapters.retain(|a| a.get_info().name.to_lowercase().contains(&want));
        }
        adapters.sort_by_key(|a| rank(a.get_info().device_type));
        let adapter = adapters.into_iter().next().ok_or_else(|| {
            EngineError::NoAdapter(format!(
                "backends {:?}, name filter {:?}, adapters seen: [{}]; on Linux install a Vulkan \
                 driver (e.g. `apt-get install mesa-vulkan-drivers libvulkan1`)",
                opts.backends,
                opts.adapter_name,
                found.join(", ")
            ))
        })?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let wanted = wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        let mut features = adapter.features() & wanted;
        let coop_off = super::coop::unusable(&adapter, opts.coop);
        let mut experimental = wgpu::ExperimentalFeatures::disabled();
        if coop_off.is_none() {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
            // SAFETY: the one experimental feature asked for is cooperative matrices, used only by
            // coop_tile.wgsl in the shapes the adapter reports, and tested against the CPU on it.
            #[allow(unsafe_code)]
            {
                experimental = unsafe { wgpu::ExperimentalFeatures::enabled() };
            }
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("lyre"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: experimental,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| EngineError::Gpu(format!("request_device on {}: {e}", info.name)))?;
        let errors = Arc::new(Mutex::new(None::<String>));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e| {
            tracing::error!(error = %e, "wgpu error");
            let mut slot = sink.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| e.to_string());
        }));
        tracing::info!(adapter = %info.name, backend = ?info.backend, kind = ?info.device_type, "GPU ready");
        if let Some(why) = coop_off {
            tracing::debug!(why, "GEMM tiles without cooperative matrices");
        }
        Ok(GpuContext {
            device,
            queue,
            info,
            limits,
            features,
            pipelines: Mutex::new(HashMap::new()),
            shader_checks: opts.shader_checks,
            names: Mutex::new(None),
            errors,
        })
    }

    /// True when the adapter is a software rasteriser (lavapipe, WARP, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// Returns (and clears) the first wgpu error reported since the last call.
    pub fn take_error(&self) -> Result<()> {
        let mut slot = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        match slot.take() {
            Some(e) => Err(EngineError::Gpu(e)),
            None => Ok(()),
        }
    }

    /// Blocks until all submitted work is done.
    pub fn wait(&self) -> Result<()> {
        self.wait_for(None)
    }

    /// Blocks until `submission` (all submitted work when `None`) is done.
    pub fn wait_for(&self, submission: Option<wgpu::SubmissionIndex>) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: submission, timeout: None })
            .map_err(|e| EngineError::Gpu(format!("poll: {e}")))?;
        self.take_error()
    }

    /// The subgroup size when the adapter has subgroups of one fixed size (4..=128).
    pub fn fixed_subgroup_size(&self) -> Option<u32> {
        let (lo, hi) = (self.info.subgroup_min_size, self.info.subgroup_max_size);
        (self.features.contains(wgpu::Features::SUBGROUP) && lo == hi && (4..=128).contains(&lo))
            .then_some(lo)
    }

    /// True when the GEMM tiles may run on cooperative matrices (f16 operands, f32 sums).
    pub fn has_coop_f16(&self) -> bool {
        self.features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    }

    /// True when timestamps can be written inside a compute pass (per-part GPU timing).
    pub fn has_timestamps_in_passes(&self) -> bool {
        self.features
            .contains(wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    }

    /// What the adapter offers, for logs and benchmark reports.
    pub fn summary(&self) -> AdapterSummary {
        AdapterSummary {
            name: self.info.name.clone(),
            backend: format!("{:?}", self.info.backend),
            device_type: format!("{:?}", self.info.device_type),
            driver: format!("{} {}", self.info.driver, self.info.driver_info).trim().to_string(),
            subgroup_size: [self.info.subgroup_min_size, self.info.subgroup_max_size],
            shader_f16: self.features.contains(wgpu::Features::SHADER_F16),
            subgroups: self.features.contains(wgpu::Features::SUBGROUP),
            timestamps_in_passes: self.has_timestamps_in_passes(),
            max_storage_binding: self.limits.max_storage_buffer_binding_size,
            max_workgroup_storage: self.limits.max_compute_workgroup_storage_size,
            coop_matrix_f16: self.has_coop_f16(),
            shader_checks: self.shader_checks == ShaderChecks::On,
        }
    }

    /// Largest storage binding, which caps every single buffer a kernel sees.
    pub fn max_binding(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }
}

/// What an adapter offers (see [`GpuContext::summary`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdapterSummary {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub subgroup_size: [u32; 2],
    pub shader_f16: bool,
    pub subgroups: bool,
    pub timestamps_in_passes: bool,
    pub max_storage_binding: u64,
    pub max_workgroup_storage: u32,
    /// Whether the GEMM tiles run on cooperative matrices (tensor cores).
    pub coop_matrix_f16: bool,
    /// Whether wgpu's runtime checks are compiled into the kernels.
    pub shader_checks: bool,
}
