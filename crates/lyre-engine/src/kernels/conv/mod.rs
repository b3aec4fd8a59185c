//! The codec decoder's convolutions: causal conv1d, transposed conv1d and linear layers as one
//! kernel over sequence views ([`Conv1d`]: direct, or an implicit GEMM for ticks with many
//! rows; a narrow kernel for layers of a few output columns), and depthwise convs.

mod conv1d;
mod conv1d_gemm;
mod depthwise_conv;
mod direct;
mod narrow;
mod residual_unit;
mod snake_weights;

pub use conv1d::{
    pack_conv, pack_conv_transpose, pack_linear, packed_to_f16, Activation, Conv1d, ConvShape, FusedSnake,
    PackedConv, Residual,
};
pub use depthwise_conv::DepthwiseConv;
pub use residual_unit::ResidualUnit;
pub use snake_weights::SnakeWeights;

use crate::error::Result;
use crate::gpu::{Alternative, Dispatch, KernelSource, RowCount};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::Env;

/// The kernels of this family.
pub(super) const SOURCES: [KernelSource; 8] = [
    direct::SOURCE,
    narrow::SOURCE,
    conv1d_gemm::SOURCE,
    conv1d_gemm::SOURCE_COOP,
    conv1d_gemm::SOURCE_REDUCE,
    residual_unit::SOURCE,
    residual_unit::SOURCE_COOP,
    depthwise_conv::SOURCE,
];

/// The GEMMs on cooperative matrices, each with the register-tile kernel that runs where they are
/// missing.
pub(super) const COOP_AND_FALLBACK: [(KernelSource, KernelSource); 2] =
    [(conv1d_gemm::SOURCE_COOP, conv1d_gemm::SOURCE), (residual_unit::SOURCE_COOP, residual_unit::SOURCE)];

impl Conv1d<'_> {
    /// The dispatch of this site: the narrow kernel for a layer of a few columns
    /// ([`KernelChoice::conv_narrow`](crate::kernels::select::KernelChoice::conv_narrow)); else
    /// the direct kernel, at a narrower K split as its alternative for ticks of several
    /// sessions, and the GEMM kernel for ticks with many rows where
    /// [`KernelChoice::conv_gemm_levels`](crate::kernels::select::KernelChoice::conv_gemm_levels)
    /// allows it (with K split where its grid is short; unless the GEMM already takes over from
    /// two sessions).
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        if env.kernels.conv_narrow(self.conv.shape.cols()) {
            return self.build_narrow(env);
        }
        let (params, buffers) = self.prepare(env)?;
        let tiling = self.direct_tiling()?;
        let (single, shared) =
            direct::k_splits(&tiling, self.conv.shape.cin4(), env.kernels.conv_max_k_split());
        let levels = env.kernels.conv_gemm_levels(
            self.rows_in,
            self.conv.shape.cols(),
            self.gemm_chunks(env.kernels.conv_tile()),
            env.partials.size(),
        );
        let mut d = self.build_direct(env, params, &buffers, &tiling, single);
        if shared != single && levels.first().is_none_or(|l| l.min_sessions > 2) {
            let dispatches = vec![self.build_direct(env, params, &buffers, &tiling, shared)];
            d.add_alternative(Alternative { rows: RowCount::Sessions, min_rows: 2, dispatches });
        }
        for level in levels {
            let dispatches = conv1d_gemm::dispatches(self, env, params, buffers, level.tile, level.split)?;
            d.add_alternative(Alternative {
                rows: RowCount::Sessions,
                min_rows: level.min_sessions,
                dispatches,
            });
        }
        Ok(d)
    }

    /// The GEMM kernel with the given tile and K split, whatever the row count (for tests and
    /// tools): one dispatch, or with `split` > 1 the GEMM and the reduction of its partial sums.
    pub fn build_gemm(&self, env: &Env, tile: GemmTile, split: u32) -> Result<Vec<Dispatch>> {
        let (params, buffers) = self.prepare(env)?;
        conv1d_gemm::dispatches(self, env, params, buffers, tile, split)
    }

    /// Chunks of K the GEMM with `tile` runs through: every tap's input channels in chunks of
    /// `tile.bk`.
    pub(super) fn gemm_chunks(&self, tile: GemmTile) -> u32 {
        let s = self.conv.shape;
        s.taps * s.cin4().div_ceil(tile.bk / 4)
    }
}
