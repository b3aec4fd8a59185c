//! A codec residual unit (dilated conv → SnakeBeta → 1 × 1 conv, added to the stream) as one
//! GEMM dispatch (`conv1d_unit.wgsl`) in ticks where the dilated conv's GEMM runs unsplit and
//! its tile holds every channel: the dilated conv's output stays in the workgroup instead of
//! going to memory and back, and the 1 × 1 conv's dispatch goes away. Elsewhere the two convs
//! run as their own sites.

use super::conv1d::{Conv1d, FusedSnake, Residual, BOUND};
use super::conv1d_gemm::{f16_weights, gemm_grid};
use crate::error::{EngineError, Result};
use crate::gpu::{Alternative, Dispatch, KernelSource, RowCount};
use crate::kernels::gemm_tile::GemmTile;
use crate::kernels::seq_view::sequence_dispatch;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "conv1d_unit",
    wgsl: concat!(
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f32.wgsl"),
        include_str!("conv1d_gemm_stage_f32.wgsl"),
        include_str!("../shared/gemm_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("conv1d_gemm_common.wgsl"),
        include_str!("conv1d_unit.wgsl")
    ),
};

/// The same kernel on cooperative matrices, over both convs' f16 weights.
pub const SOURCE_COOP: KernelSource = KernelSource {
    name: "conv1d_unit_coop",
    wgsl: concat!(
        include_str!("../shared/coop_tile.wgsl"),
        include_str!("../shared/tile_loads.wgsl"),
        include_str!("../shared/seq_view.wgsl"),
        include_str!("../shared/snake_beta.wgsl"),
        include_str!("conv1d_common.wgsl"),
        include_str!("conv1d_weights_f16.wgsl"),
        include_str!("conv1d_gemm_common.wgsl"),
        include_str!("conv1d_unit.wgsl")
    ),
};

/// Storage buffers the fused kernel binds: the session counts and list, the nine of a conv site
/// and four of the dilated conv's own.
const STORAGE_BINDINGS: u32 = 15;

/// One residual unit of a vocoder block.
pub struct ResidualUnit<'a> {
    /// Names the fused dispatch.
    pub label: &'a str,
    /// The dilated conv, its SnakeBeta fused as the activation ([`FusedSnake::Output`]).
    pub dilated: Conv1d<'a>,
    /// The 1 × 1 conv over the dilated conv's output, its result added to the stream.
    pub pointwise: Conv1d<'a>,
}

impl ResidualUnit<'_> {
    /// The unit's dispatches: the two convs' own, and where
    /// [`KernelChoice::conv_unit_fused_from`](crate::kernels::select::KernelChoice::conv_unit_fused_from)
    /// names a session count and the unit fits the kernel, the fused dispatch from that many
    /// sessions on in their place.
    pub fn build(&self, env: &Env) -> Result<Vec<Dispatch>> {
        let apart = vec![self.dilated.build(env)?, self.pointwise.build(env)?];
        let s = self.dilated.conv.shape;
        let fused = env.kernels.conv_unit_fused_from(
            self.dilated.rows_in,
            s.cols(),
            self.dilated.gemm_chunks(env.kernels.conv_tile()),
            env.partials.size(),
        );
        let Some((from, tile)) = fused.filter(|&(_, tile)| self.fits(env, tile).is_ok()) else {
            return Ok(apart);
        };
        let mut unit = Dispatch::only_from(RowCount::Sessions, from, self.build_fused(env, tile)?);
        unit.add_alternative(Alternative { rows: RowCount::Sessions, min_rows: 0, dispatches: apart });
        Ok(vec![unit])
    }

    /// The fused dispatch with `tile`, whatever the row count (for tests and tools), or why the
    /// unit does not fit it.
    pub fn build_fused(&self, env: &Env, tile: GemmTile) -> Result<Dispatch> {
        self.fits(env, tile)?;
        let (first, first_buffers) = self.dilated.prepare(env)?;
        let (second, second_buffers) = self.pointwise.prepare(env)?;
        let mut params = first.with_output_of(&second);
        params.y_rows = tile.rows();
        let (source, w1, w2) = if tile.coop {
            (SOURCE_COOP, f16_weights(&self.dilated, env)?, f16_weights(&self.pointwise, env)?)
        } else {
            (SOURCE, first_buffers[0], second_buffers[0])
        };
        // Bindings 3–11 as a conv site binds them: the dilated conv's weights and input, the
        // 1 × 1 conv's bias, scale and outputs; then 12–15.
        let mut bound: Vec<&wgpu::Buffer> = second_buffers.to_vec();
        bound[0] = w1;
        bound[3] = first_buffers[3];
        bound.extend([w2, first_buffers[1], first_buffers[6], first_buffers[7]]);
        debug_assert_eq!(bound.len(), BOUND + 4);
        // One column tile: `fits` checked that the tile holds every channel.
        let grid = gemm_grid(&self.dilated, tile, 1)?;
        let pipeline = env.ctx.pipeline(source, &tile.constants());
        Ok(sequence_dispatch(env, pipeline, self.label, &params, self.dilated.sessions, &bound, grid))
    }

    /// Whether the fused kernel computes this unit with `tile`: what it leaves out of either
    /// conv's epilogue is absent, the 1 × 1 conv maps the dilated conv's channels to as many,
    /// the tile holds them all, and the adapter has the storage bindings.
    fn fits(&self, env: &Env, tile: GemmTile) -> Result<()> {
        let (d, p) = (&self.dilated, &self.pointwise);
        let (ds, ps) = (d.conv.shape, p.conv.shape);
        let why = if !matches!(d.snake, FusedSnake::Output(_)) {
            Some("the dilated conv's activation is not a fused SnakeBeta".to_string())
        } else if d.scale.is_some() || !matches!(d.residual, Residual::None) || d.conv.bias.is_none() {
            Some("the dilated conv needs a bias and no scale or residual".to_string())
        } else if ds.up != 1 || ps.up != 1 || ps.taps != 1 {
            Some("the second conv is not 1 × 1 after a plain conv".to_string())
        } else if ps.cin != ds.cout || ps.cout != ds.cout || p.rows_in != d.rows_in {
            Some(format!("the 1 × 1 conv maps {} channels to {}, after {}", ps.cin, ps.cout, ds.cout))
        } else if ds.cols() > tile.cols() {
            Some(format!("{} channels do not fit a tile of {} columns", ds.cols(), tile.cols()))
        } else if env.ctx.limits.max_storage_buffers_per_shader_stage < STORAGE_BINDINGS {
            Some(format!("the adapter has fewer than {STORAGE_BINDINGS} storage bindings"))
        } else {
            None
        };
        match why {
            Some(why) => Err(EngineError::Gpu(format!("residual unit `{}`: {why}", self.label))),
            None => Ok(()),
        }
    }
}
