//! Compiled compute pipelines, cached by kernel name and override constants, and bind groups.

use std::sync::Arc;

use super::GpuContext;

/// One `.wgsl` file with its entry point `main`.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub wgsl: &'static str,
}

impl GpuContext {
    /// The pipeline for `kernel` with the given override constants, compiled once.
    pub fn pipeline(&self, kernel: KernelSource, constants: &[(&str, f64)]) -> Arc<wgpu::ComputePipeline> {
        let key = format!("{}{:?}", kernel.name, constants);
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return p.clone();
        }
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kernel.name),
            source: wgpu::ShaderSource::Wgsl(kernel.wgsl.into()),
        });
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
        let layout = pipeline.get_bind_group_layout(0);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout: &layout,
            entries: &entries,
        })
    }
}
