//! SwiGLU (`silu(gate) * up`) over sequence views whose rows hold `[gate | up]`.

use bytemuck::{Pod, Zeroable};

use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::{check_groups, sequence_dispatch, GpuView, SeqView};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "glu",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("glu.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    x: GpuView,
    y: GpuView,
    inter: u32,
    _pad: [u32; 3],
}

pub struct Glu<'a> {
    pub label: &'a str,
    pub inter: u32,
    /// Rows of `2 * inter`: gate then up.
    pub x: SeqView<'a>,
    pub y: SeqView<'a>,
    /// Rows per session this step.
    pub rows: u32,
    pub sessions: &'a wgpu::Buffer,
}

impl Glu<'_> {
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        self.x.check(self.label, self.rows, 0)?;
        self.y.check(self.label, self.rows, 0)?;
        let params = Params { x: self.x.gpu(), y: self.y.gpu(), inter: self.inter, _pad: [0; 3] };
        let grid = Grid {
            x: Extent::Fixed(self.inter.div_ceil(64)),
            y: Extent::rows(RowCount::Sessions),
            z: Extent::Fixed(check_groups(self.label, self.rows)?),
        };
        Ok(sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &[]),
            self.label,
            &params,
            self.sessions,
            &[self.x.buffer, self.y.buffer],
            grid,
        ))
    }
}
