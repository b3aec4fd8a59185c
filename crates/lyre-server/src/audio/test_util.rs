//! Helpers shared by the audio tests.

use super::{FrameEncoder, FRAME_SAMPLES, SAMPLE_RATE};

/// A 0.5-amplitude sine sweep from 100 Hz to 4 kHz over `len` samples at 24 kHz.
pub fn sweep(len: usize) -> Vec<f32> {
    let (f0, f1) = (100.0f64, 4000.0f64);
    let duration = len.max(1) as f64 / f64::from(SAMPLE_RATE);
    (0..len)
        .map(|i| {
            let t = i as f64 / f64::from(SAMPLE_RATE);
            // Linear chirp: phase = 2π (f0 t + (f1 - f0) t² / 2T).
            let phase = 2.0 * std::f64::consts::PI * (f0 * t + (f1 - f0) * t * t / (2.0 * duration));
            (0.5 * phase.sin()) as f32
        })
        .collect()
}

/// Pushes `samples` in [`FRAME_SAMPLES`] chunks, finishes, and concatenates every output.
pub fn streamed(encoder: &mut dyn FrameEncoder, samples: &[f32]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in samples.chunks(FRAME_SAMPLES) {
        out.extend(encoder.push(frame).unwrap());
    }
    out.extend(encoder.finish().unwrap());
    out
}

/// Signal-to-noise ratio of `decoded` against `reference`, in dB, over their common length.
pub fn snr_db(reference: &[f32], decoded: &[f32]) -> f64 {
    let (mut signal, mut noise) = (0.0f64, 0.0f64);
    for (&r, &d) in reference.iter().zip(decoded) {
        signal += f64::from(r) * f64::from(r);
        noise += f64::from(r - d) * f64::from(r - d);
    }
    10.0 * (signal / noise.max(1e-20)).log10()
}

/// Root mean square of `samples`.
#[cfg_attr(not(feature = "mp3"), allow(dead_code))]
pub fn rms(samples: &[f32]) -> f64 {
    let sum: f64 = samples.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    (sum / samples.len().max(1) as f64).sqrt()
}

/// A path in the temporary directory unique to this process and `name`.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("lyre-audio-{}-{name}", std::process::id()))
}
