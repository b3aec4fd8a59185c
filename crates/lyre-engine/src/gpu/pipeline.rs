//! Compiled compute pipelines, cached by kernel name and override constants, and bind groups.

use std::sync::Arc;

use super::{GpuContext, ShaderChecks};

/// One `.wgsl` file with its entry point `main`.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub wgsl: &'static str,
}

impl GpuContext {
    /// The pipeline for `kernel` with the given override constants, compiled once.
    pub fn pipeline(&self, kernel: KernelSource, constants: &[(&str, f64)]) -> Arc<wgpu::ComputePipeline> {
        self.pipeline_with(kernel, "", constants)
    }

    /// The pipeline for `prelude` (declarations the kernel expects, e.g. a type alias) followed
    /// by `kernel`, with the given override constants, compiled once.
    pub fn pipeline_with(
        &self,
        kernel: KernelSource,
        prelude: &str,
        constants: &[(&str, f64)],
    ) -> Arc<wgpu::ComputePipeline> {
        let key = format!("{}{prelude:?}{:?}", kernel.name, constants);
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return p.clone();
        }
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(kernel.name),
            source: wgpu::ShaderSource::Wgsl(match prelude {
                "" => kernel.wgsl.into(),
                _ => format!("{prelude}{}", kernel.wgsl).into(),
            }),
        };
        let module = match self.shader_checks {
            ShaderChecks::On => self.device.create_shader_module(desc),
            // SAFETY: the kernels are this crate's own WGSL. Every loop is bounded by its
            // parameters, every index is computed in range (each kernel has a CPU-reference
            // test), and no integer division has a zero divisor.
            #[allow(unsafe_code)]
            ShaderChecks::Off => unsafe {
                self.device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            },
        };
        let constants: Vec<(&str, f64)> = constants.to_vec();
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.name),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        self.name_pipeline(&pipeline, &key);
        let pipeline = Arc::new(pipeline);
        cache.insert(key, pipeline.clone());
        pipeline
    }

    /// A bind group for group 0 of `pipeline`, binding `buffers` to bindings 0, 1, 2, ...
    pub fn bind_group(
        &self,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let numbered: Vec<(u32, &wgpu::Buffer)> =
            buffers.iter().enumerate().map(|(i, &b)| (i as u32, b)).collect();
        self.bind_group_at(label, pipeline, &numbered)
    }

    /// A bind group for group 0 of `pipeline` with each buffer at the binding it names (for a
    /// kernel that shares its declarations with others but uses only some of the bindings).
    pub fn bind_group_at(
        &self,
        label: &str,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[(u32, &wgpu::Buffer)],
    ) -> wgpu::BindGroup {
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
            .collect();
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &layout,
            entries: &entries,
        });
        self.name_bind_group(&group, buffers);
        group
    }
}
