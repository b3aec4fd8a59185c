//! SwiGLU: `silu(gate) * up` over rows laid out as `[gate | up]`.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::{groups, Env};

pub const SOURCE: KernelSource = KernelSource { name: "swiglu", wgsl: include_str!("swiglu.wgsl") };

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    inter: u32,
    rows_index: u32,
    _pad0: u32,
    _pad1: u32,
}

pub struct SwiGlu<'a> {
    pub label: &'a str,
    pub inter: u32,
    pub gate_up: &'a wgpu::Buffer,
    pub out: &'a wgpu::Buffer,
    pub rows: RowCount,
}

impl SwiGlu<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let params = Params { inter: self.inter, rows_index: self.rows.index(), _pad0: 0, _pad1: 0 };
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        let uniform = env.ctx.uniform(self.label, &params);
        let bind_group =
            env.ctx.bind_group(self.label, &pipeline, &[&uniform, env.counts, self.gate_up, self.out]);
        Dispatch {
            alternatives: Vec::new(),
            label: self.label.to_string(),
            pipeline,
            bind_group,
            grid: Grid::new(Extent::Fixed(groups(self.inter, 64)), Extent::rows(self.rows)),
        }
    }
}
