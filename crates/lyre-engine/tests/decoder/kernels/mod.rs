//! Each codec kernel against a plain CPU loop on odd shapes, with its input in a ring (history
//! from "earlier steps", wrapping around) where the kernel reads history.

mod conv;
mod conv_gemm;
mod conv_narrow;
mod conv_snake;
mod conv_unit;
mod elementwise;
mod norm;

use lyre_engine::gpu::{run_now, Dispatch, RowCounts};
use lyre_engine::kernels::seq_view::{SeqLayout, SeqView};
use lyre_engine::sampling::SessionDesc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "../../common/gpu.rs"]
mod gpu;
pub use gpu::Gpu;

impl Gpu {
    pub fn run(&self, sessions: usize, dispatches: &[Dispatch]) {
        let counts = RowCounts { talker_rows: 0, sessions: sessions as u32 };
        run_now(&self.ctx, &self.counts, &counts, dispatches).expect("GPU run");
    }

    /// Session descriptors `(slot, frame)`.
    pub fn sessions(&self, sessions: &[(u32, u32)]) -> wgpu::Buffer {
        let descs: Vec<SessionDesc> = sessions
            .iter()
            .map(|&(slot, frame)| SessionDesc { slot, gen_index: frame, ..Default::default() })
            .collect();
        self.buf(&descs)
    }
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn randn(rng: &mut StdRng, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| (rng.random::<f32>() * 2.0 - 1.0) * scale).collect()
}

/// Each session's whole signal so far, `[abs row][channel]` from absolute row 0; rows before
/// 0 read as zero (the causal padding).
pub struct Signal {
    pub channels: usize,
    pub rows: Vec<Vec<f32>>,
}

impl Signal {
    pub fn random(rng: &mut StdRng, n_rows: usize, channels: usize, scale: f32) -> Self {
        Signal { channels, rows: (0..n_rows).map(|_| randn(rng, channels, scale)).collect() }
    }

    pub fn at(&self, row: i64, c: usize) -> f32 {
        if row < 0 {
            0.0
        } else {
            self.rows[row as usize][c]
        }
    }
}

/// A ring buffer `[slot][len][stride]` holding, for each `(slot, frame)`, the rows
/// `frame * rows_per_frame - history .. (frame + 1) * rows_per_frame` of its signal; every
/// other element is garbage (1e4) so that reading past the history shows.
pub struct RingFill {
    pub buffer: wgpu::Buffer,
    pub len: u32,
    pub stride: u32,
    pub rows_per_frame: u32,
}

impl RingFill {
    pub fn new(
        gpu: &Gpu,
        slots: usize,
        len: u32,
        rows_per_frame: u32,
        history: u32,
        sessions: &[(u32, u32)],
        signals: &[Signal],
    ) -> Self {
        let channels = signals[0].channels;
        let stride = channels.next_multiple_of(4) as u32;
        let mut data = vec![1e4f32; slots * (len * stride) as usize];
        for (&(slot, frame), sig) in sessions.iter().zip(signals) {
            let first = (frame * rows_per_frame) as i64 - history as i64;
            let last = ((frame + 1) * rows_per_frame) as i64;
            for abs in first..last {
                let row = abs.rem_euclid(len as i64) as usize;
                let base = (slot as usize * len as usize + row) * stride as usize;
                for c in 0..stride as usize {
                    data[base + c] = if c < channels { sig.at(abs, c) } else { 0.0 };
                }
            }
        }
        RingFill { buffer: gpu.buf(&data), len, stride, rows_per_frame }
    }

    pub fn view(&self) -> SeqView<'_> {
        SeqView {
            buffer: &self.buffer,
            stride: self.stride,
            layout: SeqLayout::Ring { len: self.len, rows_per_frame: self.rows_per_frame },
        }
    }

    /// The `rows` rows each of `sessions` wrote this step (at its frame's place in its slot),
    /// their first `channels` values, in the order of the sessions.
    pub fn step_rows(&self, gpu: &Gpu, sessions: &[(u32, u32)], rows: usize, channels: usize) -> Vec<f32> {
        let all: Vec<f32> = gpu.read(&self.buffer);
        let mut out = Vec::with_capacity(sessions.len() * rows * channels);
        for &(slot, frame) in sessions {
            for t in 0..rows {
                let row = (frame as usize * rows + t) % self.len as usize;
                let base = (slot as usize * self.len as usize + row) * self.stride as usize;
                out.extend_from_slice(&all[base..base + channels]);
            }
        }
        out
    }
}

/// Asserts max|Δ| ≤ `tol` × max(1, max|want|).
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let d = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    let scale = want.iter().map(|a| a.abs()).fold(1.0, f32::max);
    println!("{what}: max|Δ| = {d:.3e} (scale {scale:.3})");
    assert!(got.iter().all(|x| x.is_finite()), "{what}: non-finite output");
    assert!(d <= tol * scale, "{what}: max|Δ| {d:e} > {tol:e} × {scale}");
}

/// Reads session rows `[s][rows][stride]` back as `[s][rows][channels]`.
pub fn dense_rows(all: &[f32], sessions: usize, rows: usize, stride: usize, channels: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(sessions * rows * channels);
    for r in 0..sessions * rows {
        out.extend_from_slice(&all[r * stride..r * stride + channels]);
    }
    out
}
