//! The narrow conv kernel (`conv1d_narrow.wgsl`): layers of at most
//! [`NARROW_MAX_COLS`] virtual columns, such as the decoder's last conv to one audio channel, at
//! every tick size. Several threads share each row's reduction, where the direct kernel's
//! thread per column would walk it alone.

use super::conv1d::Conv1d;
use crate::error::{EngineError, Result};
use crate::gpu::{Dispatch, KernelSource};
use crate::kernels::select::NARROW_MAX_COLS;
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

/// Rows per workgroup (`ROWS` in the WGSL).
const ROWS_PER_GROUP: u32 = 32;

impl Conv1d<'_> {
    /// The narrow kernel, whatever the tuning (for tests and tools); an error for a layer of
    /// more than [`NARROW_MAX_COLS`] virtual columns.
    pub fn build_narrow(&self, env: &Env) -> Result<Dispatch> {
        let cols = self.conv.shape.cols();
        if cols > NARROW_MAX_COLS {
            return Err(EngineError::Gpu(format!(
                "`{}`: {cols} columns for the narrow conv kernel (at most {NARROW_MAX_COLS})",
                self.label
            )));
        }
        let (mut params, buffers) = self.prepare(env)?;
        let (y_rows, grid) = self.grid(NARROW_MAX_COLS, ROWS_PER_GROUP)?;
        params.y_rows = y_rows;
        let pipeline = env.ctx.pipeline(SOURCE, &[]);
        Ok(sequence_dispatch(env, pipeline, self.label, &params, self.sessions, &buffers, grid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WGSL's column bound is the one the selection applies.
    #[test]
    fn the_kernel_takes_as_many_columns_as_the_selection_sends_it() {
        let wgsl = include_str!("conv1d_narrow.wgsl");
        assert!(wgsl.contains(&format!("const MAX_COLS: u32 = {NARROW_MAX_COLS}u;")), "MAX_COLS");
    }
}
