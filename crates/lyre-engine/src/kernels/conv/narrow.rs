//! The narrow conv kernel (`conv1d_narrow.wgsl`): layers of at most [`MAX_COLS`] virtual
//! columns, such as the decoder's last conv to one audio channel, at every tick size. Several
//! threads share each row's reduction, where the direct kernel's thread per column would walk
//! it alone.

use super::conv1d::{Conv1d, Params};
use crate::error::Result;
use crate::gpu::{Dispatch, KernelSource};
use crate::kernels::seq_view::sequence_dispatch;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_narrow",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f32.wgsl"),
        include_str!("conv1d_narrow.wgsl")
    ),
};

/// The most virtual columns a layer may have to take this kernel (`MAX_COLS` in the WGSL).
pub const MAX_COLS: u32 = 4;
/// Rows per workgroup (`ROWS` in the WGSL).
const ROWS_PER_GROUP: u32 = 32;

impl Conv1d<'_> {
    /// The narrow kernel, for a layer of at most [`MAX_COLS`] virtual columns.
    pub(super) fn build_narrow(
        &self,
        env: &Env,
        mut params: Params,
        buffers: &[&wgpu::Buffer],
    ) -> Result<Dispatch> {
        let (y_rows, grid) = self.grid(MAX_COLS, ROWS_PER_GROUP)?;
        params.y_rows = y_rows;
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        Ok(sequence_dispatch(env, pipeline, self.label, &params, self.sessions, buffers, grid))
    }
}
