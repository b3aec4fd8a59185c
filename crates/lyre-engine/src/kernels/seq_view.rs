//! Sequence views: how the codec-decoder kernels find row `t` of session `s` in a buffer, either
//! in the step's own dense rows or in a per-slot ring that carries history between steps.
//!
//! `seq_view.wgsl` is the WGSL side (the `View` struct, the `counts` and `sessions` bindings and
//! `row_offset`); every codec kernel's source is that prelude followed by its own file
//! (`concat!(include_str!("../shared/seq_view.wgsl"), include_str!("<kernel>.wgsl"))`).

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use super::Env;
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, Grid};

/// Where a session's rows live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqLayout {
    /// `[session][rows][stride]`: only this step's rows (no history).
    Dense { rows: u32 },
    /// `[slot][len][stride]`: absolute row `frame * rows_per_frame + t` of a session lives at
    /// row `(frame * rows_per_frame + t) mod len` of its slot, so rows before this step's first
    /// (negative `t`) are the history that earlier steps wrote.
    Ring { len: u32, rows_per_frame: u32 },
}

/// A buffer of f32 rows of `stride` elements, laid out as `layout` says.
#[derive(Debug, Clone, Copy)]
pub struct SeqView<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub stride: u32,
    pub layout: SeqLayout,
}

/// The WGSL `View` struct.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
pub(crate) struct GpuView {
    kind: u32,
    stride: u32,
    len: u32,
    spf: u32,
}

impl<'a> SeqView<'a> {
    pub fn dense(buffer: &'a wgpu::Buffer, stride: u32, rows: u32) -> Self {
        SeqView { buffer, stride, layout: SeqLayout::Dense { rows } }
    }

    pub(crate) fn gpu(&self) -> GpuView {
        match self.layout {
            SeqLayout::Dense { rows } => GpuView { kind: 0, stride: self.stride, len: rows, spf: 0 },
            SeqLayout::Ring { len, rows_per_frame } => {
                GpuView { kind: 1, stride: self.stride, len, spf: rows_per_frame }
            }
        }
    }

    /// Checks that `rows` new rows plus `history` rows before them fit the view.
    pub(crate) fn check(&self, label: &str, rows: u32, history: u32) -> Result<()> {
        let ok = match self.layout {
            SeqLayout::Dense { rows: r } => history == 0 && rows <= r,
            SeqLayout::Ring { len, .. } => rows + history <= len,
        };
        if ok {
            Ok(())
        } else {
            Err(EngineError::Gpu(format!(
                "`{label}`: a view of {:?} cannot hold {rows} rows with {history} rows of history",
                self.layout
            )))
        }
    }
}

/// A dispatch of `pipeline` (a sequence kernel) binding `params` at 0, `counts` at 1, `sessions`
/// at 2 and `buffers` from 3 on.
pub(crate) fn sequence_dispatch<P: Pod>(
    env: &Env,
    pipeline: Arc<wgpu::ComputePipeline>,
    label: &str,
    params: &P,
    sessions: &wgpu::Buffer,
    buffers: &[&wgpu::Buffer],
    grid: Grid,
) -> Dispatch {
    let uniform = env.ctx.uniform(label, params);
    let mut all: Vec<&wgpu::Buffer> = vec![&uniform, env.counts, sessions];
    all.extend_from_slice(buffers);
    let bind_group = env.ctx.bind_group(label, &pipeline, &all);
    Dispatch { alternatives: Vec::new(), label: label.to_string(), pipeline, bind_group, grid }
}

/// Workgroups every adapter allows in one grid dimension.
pub(crate) const MAX_GROUPS: u32 = 65535;

/// Rejects grid dimensions beyond what every adapter allows ([`MAX_GROUPS`]).
pub(crate) fn check_groups(label: &str, groups: u32) -> Result<u32> {
    if groups > MAX_GROUPS {
        return Err(EngineError::Capacity(format!(
            "`{label}` needs {groups} workgroups in one grid dimension (at most {MAX_GROUPS}); \
             decode fewer frames per step"
        )));
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    /// The WGSL side steps through the sessions buffer by the size of `SessionDesc`.
    #[test]
    fn the_session_stride_is_the_size_of_a_session_descriptor() {
        let words = std::mem::size_of::<crate::sampling::SessionDesc>() / 4;
        let wgsl = include_str!("shared/seq_view.wgsl");
        assert!(
            wgsl.contains(&format!("const SESSION_WORDS: u32 = {words}u;")),
            "SessionDesc has {words} words"
        );
    }
}
