//! The codec decoder's convolutions: causal conv1d, transposed conv1d and linear layers as one
//! kernel over sequence views ([`Conv1d`]: direct, or an implicit GEMM for ticks with many
//! rows), and depthwise convs.

mod conv1d;
mod conv1d_gemm;
mod depthwise_conv;
mod direct;

pub use conv1d::{
    pack_conv, pack_conv_transpose, pack_linear, packed_to_f16, Activation, Conv1d, ConvShape, PackedConv,
    Residual,
};
pub use depthwise_conv::DepthwiseConv;

use crate::error::Result;
use crate::gpu::{Alternative, Dispatch, KernelSource, RowCount};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::Env;

/// The kernels of this family.
pub(super) const SOURCES: [KernelSource; 4] =
    [direct::SOURCE, conv1d_gemm::SOURCE, conv1d_gemm::SOURCE_COOP, depthwise_conv::SOURCE];

/// The GEMM on cooperative matrices, and the register-tile GEMM that runs where they are missing.
pub(super) const COOP_AND_FALLBACK: (KernelSource, KernelSource) =
    (conv1d_gemm::SOURCE_COOP, conv1d_gemm::SOURCE);

impl Conv1d<'_> {
    /// The dispatch of this site: the direct kernel, at a narrower K split as its alternative
    /// for ticks of several sessions, and the GEMM kernel for ticks with many rows where
    /// [`KernelChoice::conv_gemm_policy`](crate::kernels::select::KernelChoice::conv_gemm_policy)
    /// allows it (unless the GEMM already takes over from two sessions).
    pub fn build(&self, env: &Env) -> Result<Dispatch> {
        let (params, buffers) = self.prepare(env)?;
        let tiling = self.direct_tiling()?;
        let (single, shared) =
            direct::k_splits(&tiling, self.conv.shape.cin4(), env.kernels.conv_max_k_split());
        let tile = env.kernels.conv_tile();
        let gemm =
            match env.kernels.conv_gemm_policy().min_sessions(self.rows_in, self.conv.shape.cols(), tile) {
                Some(min_sessions) => Some(Alternative {
                    rows: RowCount::Sessions,
                    min_rows: min_sessions,
                    dispatches: vec![conv1d_gemm::dispatch(self, env, params, buffers, tile)?],
                }),
                None => None,
            };
        let mut d = self.build_direct(env, params, &buffers, &tiling, single);
        if shared != single && gemm.as_ref().is_none_or(|g| g.min_rows > 2) {
            let dispatches = vec![self.build_direct(env, params, &buffers, &tiling, shared)];
            d.add_alternative(Alternative { rows: RowCount::Sessions, min_rows: 2, dispatches });
        }
        if let Some(alt) = gemm {
            d.add_alternative(alt);
        }
        Ok(d)
    }

    /// The GEMM kernel with the given tile, whatever the row count (for tests and tools).
    pub fn build_gemm(&self, env: &Env, tile: GemmTile) -> Result<Dispatch> {
        let (params, buffers) = self.prepare(env)?;
        conv1d_gemm::dispatch(self, env, params, buffers, tile)
    }
}
