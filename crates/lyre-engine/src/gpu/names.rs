//! Names of the resources behind recorded dispatches, kept once a tool switches them on
//! ([`GpuContext::keep_resource_names`]): every dispatch of a list can then be described by its
//! label, kernel and constants, grid and bound buffers (uniform parameters by value), so that
//! two builds of the engine can be shown to record the same work.

use std::collections::HashMap;

use super::{Dispatch, GpuContext, RowCounts};

/// What was created while names were kept.
#[derive(Default)]
pub(super) struct ResourceNames {
    buffers: HashMap<wgpu::Buffer, String>,
    bind_groups: HashMap<wgpu::BindGroup, Vec<(u32, wgpu::Buffer)>>,
    pipelines: HashMap<wgpu::ComputePipeline, String>,
}

/// FNV-1a of a buffer's initial contents: tells two uploads of different data apart.
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

impl GpuContext {
    /// From now on, remember what each buffer, bind group and pipeline is, for
    /// [`GpuContext::describe_dispatches`] (tools; resources made before are described as
    /// unnamed). The names hold the resources alive.
    pub fn keep_resource_names(&self) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        names.get_or_insert_with(ResourceNames::default);
    }

    fn with_names(&self, f: impl FnOnce(&mut ResourceNames)) {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = names.as_mut() {
            f(n);
        }
    }

    /// A storage buffer made with `contents` (`None`: zeroed) or a uniform holding them.
    pub(super) fn name_buffer(
        &self,
        buffer: &wgpu::Buffer,
        label: &str,
        contents: Option<&[u8]>,
        uniform: bool,
    ) {
        self.with_names(|n| {
            let text = match (contents, uniform) {
                (Some(c), true) => {
                    let words: Vec<String> =
                        c.chunks(4).map(|w| format!("{:08x}", u32::from_le_bytes(pad4(w)))).collect();
                    format!("{label}{{{}}}", words.join(" "))
                }
                (Some(c), false) => format!("{label}[{}#{:016x}]", buffer.size(), fingerprint(c)),
                (None, _) => format!("{label}[{}]", buffer.size()),
            };
            n.buffers.insert(buffer.clone(), text);
        });
    }

    pub(super) fn name_bind_group(&self, group: &wgpu::BindGroup, buffers: &[(u32, &wgpu::Buffer)]) {
        self.with_names(|n| {
            let bound = buffers.iter().map(|&(i, b)| (i, b.clone())).collect();
            n.bind_groups.insert(group.clone(), bound);
        });
    }

    pub(super) fn name_pipeline(&self, pipeline: &wgpu::ComputePipeline, key: &str) {
        self.with_names(|n| {
            n.pipelines.insert(pipeline.clone(), key.to_string());
        });
    }

    /// One line per dispatch that `dispatches` record for `counts`: label, kernel with its
    /// constants, grid, and each binding's buffer.
    pub fn describe_dispatches(&self, dispatches: &[Dispatch], counts: &RowCounts) -> Vec<String> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let empty = ResourceNames::default();
        let n = names.as_ref().unwrap_or(&empty);
        let mut lines = Vec::new();
        for d in dispatches {
            d.for_each_selected(counts, &mut |d| {
                let pipeline = n.pipelines.get(&*d.pipeline).map_or("?", String::as_str);
                let bound: Vec<String> = n
                    .bind_groups
                    .get(&d.bind_group)
                    .map(|b| {
                        b.iter()
                            .map(|(i, buf)| format!("{i}={}", n.buffers.get(buf).map_or("?", String::as_str)))
                            .collect()
                    })
                    .unwrap_or_default();
                let grid = d.grid.resolve(counts);
                lines.push(format!("{} | {pipeline} | {grid:?} | {}", d.label, bound.join(" ")));
            });
        }
        lines
    }
}

fn pad4(w: &[u8]) -> [u8; 4] {
    let mut out = [0u8; 4];
    out[..w.len()].copy_from_slice(w);
    out
}
