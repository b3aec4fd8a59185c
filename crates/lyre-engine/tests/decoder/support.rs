use std::sync::Arc;

use lyre_engine::checkpoint::config::{read_json, SpeechTokenizerConfig};
use lyre_engine::checkpoint::weights::WeightFile;
use lyre_engine::codec::{DecoderOptions, StandaloneDecoder};
use lyre_engine::gpu::GpuContext;
use lyre_engine::EngineTuning;

#[path = "../common/fixtures.rs"]
mod fixtures;
pub use fixtures::*;

pub const FIXTURES: [&str; 2] = ["tiny-custom-voice", "tiny-base"];

/// The fixture's speech-tokenizer config and weights.
pub fn speech_tokenizer(name: &str) -> (SpeechTokenizerConfig, WeightFile) {
    let dir = fixture(name).join("speech_tokenizer");
    let cfg: SpeechTokenizerConfig = read_json(&dir.join("config.json")).expect("config");
    let weights = WeightFile::open(&dir.join("model.safetensors")).expect("weights");
    (cfg, weights)
}

pub fn decoder(ctx: &Arc<GpuContext>, name: &str, options: DecoderOptions) -> StandaloneDecoder {
    decoder_tuned(ctx, name, options, &tuning())
}

pub fn decoder_tuned(
    ctx: &Arc<GpuContext>,
    name: &str,
    options: DecoderOptions,
    tuning: &EngineTuning,
) -> StandaloneDecoder {
    let (cfg, weights) = speech_tokenizer(name);
    StandaloneDecoder::with_options(ctx.clone(), &cfg, &weights, options, tuning).expect("decoder")
}

pub fn options(max_sessions: usize, max_frames: usize, frames_per_step: usize) -> DecoderOptions {
    DecoderOptions { max_sessions, max_frames, max_frames_per_step: frames_per_step }
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "length mismatch");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Asserts max|Δ| ≤ `tol` and finite values; prints and returns max|Δ|.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) -> f32 {
    let d = max_abs_diff(got, want);
    let scale = want.iter().map(|a| a.abs()).fold(0.0, f32::max);
    println!("{what}: max|Δ| = {d:.3e} (scale {scale:.3}, tol {tol:.0e})");
    assert!(got.iter().all(|x| x.is_finite()), "{what}: non-finite output");
    assert!(d <= tol, "{what}: max|Δ| = {d:e} > {tol:e}");
    d
}

/// `[channel][time]` (PyTorch's `(1, C, T)`) → `[time][channel]`.
pub fn time_major(channel_major: &[f32], channels: usize) -> Vec<f32> {
    let t = channel_major.len() / channels;
    (0..t * channels).map(|i| channel_major[(i % channels) * t + i / channels]).collect()
}
