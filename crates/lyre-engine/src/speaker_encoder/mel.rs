//! The speaker encoder's log-mel front end, exactly as the official `mel_spectrogram`
//! (`qwen_tts/core/models/modeling_qwen3_tts.py`) calls it from `extract_speaker_embedding`:
//!
//! * reflect-pad the wave by `(n_fft - hop) / 2` on both sides, then a `center=False` STFT
//!   (n_fft 1024, hop 256, a periodic Hann window of 1024 as `torch.hann_window`);
//! * magnitude `sqrt(re² + im² + 1e-9)`;
//! * 128 Slaney-scale mel filters with Slaney area normalisation, as
//!   `librosa.filters.mel(sr=24000, n_fft=1024, n_mels=128, fmin=0, fmax=12000)`;
//! * `log(clamp(mel, 1e-5))`.
//!
//! The FFT and the filter products run in f64 (the filter weights are rounded to f32 first, as
//! librosa stores them), so the result is the exact value that the f32 reference approximates.

use std::sync::Arc;

use realfft::{RealFftPlanner, RealToComplex};

use crate::error::{EngineError, Result};

pub const SAMPLE_RATE: u32 = 24_000;
pub const N_FFT: usize = 1024;
pub const HOP: usize = 256;
pub const N_MELS: usize = 128;
pub const F_MIN: f64 = 0.0;
pub const F_MAX: f64 = 12_000.0;
const N_BINS: usize = N_FFT / 2 + 1;
const PAD: usize = (N_FFT - HOP) / 2;

/// A log-mel spectrogram: `frames` rows of `N_MELS` values (the reference's `(1, frames, 128)`).
#[derive(Debug, Clone)]
pub struct LogMel {
    pub frames: usize,
    pub data: Vec<f32>,
}

/// Window, filter bank and FFT plan, built once per encoder.
pub struct MelFrontEnd {
    window: Vec<f64>,
    /// `[N_MELS][N_BINS]`, row-major; stored as f32 values (librosa's dtype).
    filters: Vec<f64>,
    fft: Arc<dyn RealToComplex<f64>>,
}

impl std::fmt::Debug for MelFrontEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MelFrontEnd").field("n_fft", &N_FFT).field("n_mels", &N_MELS).finish()
    }
}

impl Default for MelFrontEnd {
    fn default() -> Self {
        Self::new()
    }
}

impl MelFrontEnd {
    pub fn new() -> Self {
        let window = (0..N_FFT)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos())
            .collect();
        let fft = RealFftPlanner::<f64>::new().plan_fft_forward(N_FFT);
        MelFrontEnd { window, filters: slaney_filters(), fft }
    }

    /// The number of frames a clip of `samples` samples yields (0 if it is too short).
    pub fn frames_for(samples: usize) -> usize {
        let padded = samples + 2 * PAD;
        if samples <= PAD || padded < N_FFT {
            return 0;
        }
        (padded - N_FFT) / HOP + 1
    }

    /// The log-mel spectrogram of 24 kHz mono audio.
    pub fn compute(&self, wav: &[f32]) -> Result<LogMel> {
        let frames = Self::frames_for(wav.len());
        if frames == 0 {
            return Err(EngineError::ReferenceAudio(format!(
                "the clip has {} samples; the speaker encoder needs more than {PAD}",
                wav.len()
            )));
        }
        let padded = reflect_pad(wav, PAD);
        let mut input = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut scratch = self.fft.make_scratch_vec();
        let mut magnitude = vec![0f64; N_BINS];
        let mut data = Vec::with_capacity(frames * N_MELS);
        for f in 0..frames {
            let start = f * HOP;
            for (dst, (&x, &w)) in input.iter_mut().zip(padded[start..start + N_FFT].iter().zip(&self.window))
            {
                *dst = f64::from(x) * w;
            }
            self.fft
                .process_with_scratch(&mut input, &mut spectrum, &mut scratch)
                .map_err(|e| EngineError::ReferenceAudio(format!("FFT failed: {e}")))?;
            for (m, c) in magnitude.iter_mut().zip(&spectrum) {
                *m = (c.re * c.re + c.im * c.im + 1e-9).sqrt();
            }
            for row in self.filters.chunks_exact(N_BINS) {
                let mel: f64 = row.iter().zip(&magnitude).map(|(w, m)| w * m).sum();
                data.push(mel.max(1e-5).ln() as f32);
            }
        }
        Ok(LogMel { frames, data })
    }
}

/// `torch.nn.functional.pad(mode="reflect")`: the edge sample is not repeated.
fn reflect_pad(x: &[f32], pad: usize) -> Vec<f32> {
    let n = x.len();
    let mut out = Vec::with_capacity(n + 2 * pad);
    out.extend((1..=pad).rev().map(|i| x[i]));
    out.extend_from_slice(x);
    out.extend((0..pad).map(|j| x[n - 2 - j]));
    out
}

/// librosa's Slaney mel scale (`htk=False`): linear below 1 kHz, logarithmic above.
fn hz_to_mel(f: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if f >= min_log_hz {
        min_log_mel + (f / min_log_hz).ln() / logstep
    } else {
        f / f_sp
    }
}

fn mel_to_hz(m: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if m >= min_log_mel {
        min_log_hz * (logstep * (m - min_log_mel)).exp()
    } else {
        f_sp * m
    }
}

/// `librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=False, norm="slaney")`, row-major
/// `[N_MELS][N_BINS]`, each weight rounded to f32 as librosa returns them.
fn slaney_filters() -> Vec<f64> {
    let sr = f64::from(SAMPLE_RATE);
    // np.fft.rfftfreq(n_fft, d=1/sr)
    let val = 1.0 / (N_FFT as f64 * (1.0 / sr));
    let fft_freqs: Vec<f64> = (0..N_BINS).map(|i| i as f64 * val).collect();
    // mel_frequencies(n_mels + 2): np.linspace over the mel range, the last point exact.
    let (min_mel, max_mel) = (hz_to_mel(F_MIN), hz_to_mel(F_MAX));
    let n_points = N_MELS + 2;
    let step = (max_mel - min_mel) / (n_points - 1) as f64;
    let mel_f: Vec<f64> = (0..n_points)
        .map(|i| if i == n_points - 1 { max_mel } else { min_mel + i as f64 * step })
        .map(mel_to_hz)
        .collect();
    let mut filters = Vec::with_capacity(N_MELS * N_BINS);
    for i in 0..N_MELS {
        let (lo_diff, hi_diff) = (mel_f[i + 1] - mel_f[i], mel_f[i + 2] - mel_f[i + 1]);
        let enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for &f in &fft_freqs {
            let lower = -(mel_f[i] - f) / lo_diff;
            let upper = (mel_f[i + 2] - f) / hi_diff;
            let w = f64::from(lower.min(upper).max(0.0) as f32);
            filters.push(f64::from((w * enorm) as f32));
        }
    }
    filters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_pad_matches_torch() {
        assert_eq!(reflect_pad(&[1.0, 2.0, 3.0, 4.0], 2), vec![3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]);
    }

    #[test]
    fn frame_count_matches_the_reference() {
        assert_eq!(MelFrontEnd::frames_for(25_000), 97);
        assert_eq!(MelFrontEnd::frames_for(240_000), 937);
        assert_eq!(MelFrontEnd::frames_for(PAD), 0);
    }

    #[test]
    fn filters_are_triangles_with_slaney_area() {
        let f = slaney_filters();
        for row in f.chunks_exact(N_BINS) {
            assert!(row.iter().all(|&w| w >= 0.0));
            assert!(row.iter().any(|&w| w > 0.0), "empty mel filter");
        }
        // The top filter ends at fmax = Nyquist: the last bin has weight 0.
        assert_eq!(f[N_MELS * N_BINS - 1], 0.0);
    }

    #[test]
    fn too_short_is_an_error() {
        assert!(matches!(MelFrontEnd::new().compute(&[0.0; 100]), Err(EngineError::ReferenceAudio(_))));
    }
}
