//! Rotating a decoder slot's cached keys back by the RoPE period when its positions wrap
//! (`rope_shift.wgsl`).

use bytemuck::{Pod, Zeroable};

use super::heads::Heads;
use crate::gpu::{Dispatch, Extent, Grid, KernelSource, RowCount};
use crate::kernels::seq_view::sequence_dispatch;
use crate::kernels::Env;

pub const SOURCE: KernelSource = KernelSource {
    name: "rope_shift",
    wgsl: concat!(include_str!("../shared/seq_view.wgsl"), include_str!("rope_shift.wgsl")),
};

#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
struct Params {
    n_kv_heads: u32,
    len: u32,
    head_dim: u32,
    table: u32,
    period: u32,
    dump_slot: u32,
    commit: u32,
    _pad: u32,
}

/// One layer's rotation for every session of a step whose frame starts a new period.
pub struct RopeShift<'a> {
    pub label: &'a str,
    pub heads: Heads,
    /// Rows of the slot's K ring.
    pub len: u32,
    /// Frames from `table` on wrap by `period`.
    pub table: u32,
    pub period: u32,
    /// Sessions in this slot are skipped.
    pub dump_slot: u32,
    /// The last layer's dispatch records the new period count in `applied`.
    pub commit: bool,
    /// `[half]` cos then `[half]` sin of the rotation by `period` positions.
    pub shift: &'a wgpu::Buffer,
    /// The layer's K ring, `[slot][kv_head][len][head_dim]` f32.
    pub keys: &'a wgpu::Buffer,
    /// `[slot]` u32: periods the slot's keys have been moved back.
    pub applied: &'a wgpu::Buffer,
    pub sessions: &'a wgpu::Buffer,
}

impl RopeShift<'_> {
    pub fn build(&self, env: &Env) -> Dispatch {
        let params = Params {
            n_kv_heads: self.heads.n_kv_heads,
            len: self.len,
            head_dim: self.heads.head_dim,
            table: self.table,
            period: self.period.max(1),
            dump_slot: self.dump_slot,
            commit: self.commit as u32,
            _pad: 0,
        };
        let grid = Grid::new(Extent::rows(RowCount::Sessions), Extent::Fixed(1));
        sequence_dispatch(
            env,
            env.ctx.pipeline(SOURCE, &[]),
            self.label,
            &params,
            self.sessions,
            &[self.shift, self.keys, self.applied],
            grid,
        )
    }
}

/// `cos` and `sin` of `period * inv_freq[i]` for each of the `head_dim / 2` frequencies, with
/// the inverse frequencies in f32 as the RoPE tables compute them.
pub fn shift_table(period: u32, head_dim: usize, theta: f64) -> Vec<f32> {
    let half = head_dim / 2;
    let angles: Vec<f64> = (0..half)
        .map(|i| {
            let inv = 1.0f32 / (theta as f32).powf((2 * i) as f32 / head_dim as f32);
            period as f64 * inv as f64
        })
        .collect();
    angles.iter().map(|a| a.cos() as f32).chain(angles.iter().map(|a| a.sin() as f32)).collect()
}
