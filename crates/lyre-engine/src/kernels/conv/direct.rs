//! The direct conv kernel (`conv1d.wgsl`): R rows of one column per thread, the reduction over
//! input channels split into K slices of one workgroup, for ticks of few rows (the GEMM of
//! `conv1d_gemm.wgsl` takes layers with many).

use super::conv1d::{Conv1d, Params};
use crate::error::Result;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::select::CONV_WORKGROUP as WORKGROUP;
use crate::kernels::seq_view::{check_groups, sequence_dispatch};
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f32.wgsl"),
        include_str!("conv1d.wgsl")
    ),
};

/// Rows per thread (`R` in the WGSL).
const ROWS_PER_THREAD: u32 = 4;
/// Most K slices per workgroup in ticks of several sessions, whose grids are larger than one
/// session's (which takes up to `tuning.conv_max_split`): on an H200, 16 slices took 0.35 ms off
/// batch 1's codec but added ~0.3 ms at batch 32 and ~2.8 ms at batch 256.
const SHARED_MAX_K_SPLIT: u32 = 8;
/// Threads a single session's layer should spread over before its reduction is split further.
const TARGET_THREADS: u32 = 128 * 1024;
/// Fewest input-channel groups per K slice and tap.
const MIN_SLICE: u32 = 8;

/// How the direct kernel covers a site: columns per workgroup, rows per session (or per group
/// of whole sessions), and the grid.
pub(super) struct Tiling {
    out_threads: u32,
    y_rows: u32,
    grid: Grid,
}

/// K slices per workgroup: split the reduction while one session's grid (grid y and z taken
/// for a single session) stays under [`TARGET_THREADS`] and each slice keeps at least
/// [`MIN_SLICE`] channel groups per tap, up to `max` slices.
fn k_split(grid: &Grid, cin4: u32, max: u32) -> u32 {
    let fixed = |e: Extent| match e {
        Extent::Fixed(n) | Extent::Persistent(n) => n,
        Extent::Rows { .. } | Extent::RowsTimes { .. } => 1,
    };
    let threads = fixed(grid.x) * fixed(grid.z) * WORKGROUP;
    let mut ks = 1;
    while ks * 2 <= max && threads * ks * 2 <= TARGET_THREADS && cin4 >= MIN_SLICE * ks * 2 {
        ks *= 2;
    }
    ks
}

/// K slices for a tick of one session (at most `max`) and for ticks of several.
pub(super) fn k_splits(tiling: &Tiling, cin4: u32, max: u32) -> (u32, u32) {
    (k_split(&tiling.grid, cin4, max), k_split(&tiling.grid, cin4, max.min(SHARED_MAX_K_SPLIT)))
}

impl Conv1d<'_> {
    /// The direct kernel's columns per workgroup, rows per session (or group) and grid.
    pub(super) fn direct_tiling(&self) -> Result<Tiling> {
        let out_threads = self.conv.shape.cols().next_power_of_two().min(WORKGROUP);
        let rows_per_group = WORKGROUP / out_threads * ROWS_PER_THREAD;
        let (y_rows, grid) = self.grid(out_threads, rows_per_group)?;
        Ok(Tiling { out_threads, y_rows, grid })
    }

    /// The direct kernel: R rows of one column per thread, K in `k_split` slices.
    pub(super) fn build_direct(
        &self,
        env: &Env,
        mut params: Params,
        buffers: &[&wgpu::Buffer],
        tiling: &Tiling,
        k_split: u32,
    ) -> Dispatch {
        params.y_rows = tiling.y_rows;
        params.out_threads = tiling.out_threads;
        let constants = [("KS", k_split as f64)];
        sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &constants),
            self.label,
            &params,
            self.sessions,
            buffers,
            tiling.grid,
        )
    }

    /// Row tiling: a workgroup covers `out_threads` columns (grid x) and `rows_per_group`
    /// input rows, either of one session (`y_rows` = rows per session) or, when a session has
    /// fewer rows that divide it, of several whole sessions (`y_rows` = rows per group).
    pub(super) fn grid(&self, out_threads: u32, rows_per_group: u32) -> Result<(u32, Grid)> {
        let x = Extent::Fixed(check_groups(self.label, self.conv.shape.cols().div_ceil(out_threads))?);
        let t = self.rows_in.max(1);
        if t < rows_per_group && rows_per_group.is_multiple_of(t) {
            let y = Extent::Rows { count: RowCount::Sessions, per_group: rows_per_group / t };
            return Ok((rows_per_group, Grid { x, y, z: Extent::Fixed(1) }));
        }
        let z = check_groups(self.label, t.div_ceil(rows_per_group))?;
        Ok((t, Grid { x, y: Extent::rows(RowCount::Sessions), z: Extent::Fixed(z) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(x: u32, z: u32) -> Grid {
        Grid { x: Extent::Fixed(x), y: Extent::rows(RowCount::Sessions), z: Extent::Fixed(z) }
    }

    const MAX_K_SPLIT: u32 = 16;

    #[test]
    fn k_split_doubles_until_the_cap_the_grid_or_the_channels_stop_it() {
        // 0.6B's decoder.0 at one frame: 24 column groups, 256 channel groups per tap.
        assert_eq!(k_split(&grid(24, 1), 256, MAX_K_SPLIT), 16);
        assert_eq!(k_split(&grid(24, 1), 256, SHARED_MAX_K_SPLIT), 8);
        // Block 3's k7 conv at one frame: 2 × 480 groups already fill the target at 2 slices.
        assert_eq!(k_split(&grid(2, 480), 24, MAX_K_SPLIT), 2);
        // Each slice keeps at least MIN_SLICE channel groups per tap.
        assert_eq!(k_split(&grid(1, 1), 20, MAX_K_SPLIT), 2);
        assert_eq!(k_split(&grid(1, 1), 7, MAX_K_SPLIT), 1);
    }
}
