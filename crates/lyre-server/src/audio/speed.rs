//! `speed`: faster or slower speech at the same pitch, by WSOLA time-stretching (the `wsola`
//! crate: overlapping 30 ms Hann windows laid down at a new spacing, each placed where its
//! waveform best continues the previous one), applied to the 24 kHz audio as it streams.
//!
//! A step of the stretcher waits until every input sample it may read has arrived, so streamed
//! output is the same, sample for sample, however the input was split. Speed 1.0 is never
//! stretched: the caller leaves this stage out, and the audio is bit-identical to no `speed`.

use std::num::{NonZeroU16, NonZeroU32};

use wsola::TimeStretch;

use super::{AudioError, SAMPLE_RATE};

/// The slowest speed accepted (four times as long).
pub const MIN_SPEED: f32 = 0.25;
/// The fastest speed accepted (a quarter of the time).
pub const MAX_SPEED: f32 = 4.0;

/// Changes the tempo of mono 24 kHz audio by a fixed factor, keeping its pitch.
pub struct Stretcher {
    inner: TimeStretch,
    speed: f32,
    /// One pull's worth of output (a whole number of the stretcher's hops).
    scratch: Vec<f32>,
}

impl std::fmt::Debug for Stretcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stretcher").field("speed", &self.speed).finish()
    }
}

impl Stretcher {
    /// A stretcher playing `speed` times as fast (in [`MIN_SPEED`, `MAX_SPEED`]).
    pub fn new(speed: f32) -> Result<Self, AudioError> {
        if !(MIN_SPEED..=MAX_SPEED).contains(&speed) {
            return Err(AudioError::InvalidSpeed { speed: f64::from(speed) });
        }
        let rate = NonZeroU32::new(SAMPLE_RATE).expect("the engine rate is not zero");
        let mut inner = TimeStretch::new(rate, NonZeroU16::MIN)
            .map_err(|e| AudioError::Stretch { message: e.to_string() })?;
        inner.set_tempo(speed);
        let scratch = vec![0.0; inner.min_output_buff_size() * 8];
        Ok(Stretcher { inner, speed, scratch })
    }

    /// The tempo factor.
    pub fn speed(&self) -> f32 {
        self.speed
    }

    /// Stretches `samples`; returns what is ready (about `samples.len() / speed`, in steps of
    /// the stretcher's 15 ms hop).
    pub fn push(&mut self, samples: &[f32]) -> Vec<f32> {
        self.inner.push(samples);
        self.pull()
    }

    /// The rest of the stretched audio; the stretcher is then empty and may take a new stream.
    pub fn finish(&mut self) -> Vec<f32> {
        self.inner.set_draining();
        let out = self.pull();
        self.inner.reset();
        out
    }

    fn pull(&mut self) -> Vec<f32> {
        let mut out = Vec::new();
        // `pull` fails with NotEnoughInput when nothing is ready: that simply ends the loop.
        while let Ok(written) = self.inner.pull(&mut self.scratch) {
            out.extend_from_slice(&self.scratch[..written]);
            if written < self.scratch.len() {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::sweep;
    use super::super::FRAME_SAMPLES;
    use super::*;

    fn stretched(speed: f32, input: &[f32], chunk: usize) -> Vec<f32> {
        let mut s = Stretcher::new(speed).unwrap();
        let mut out = Vec::new();
        for c in input.chunks(chunk) {
            out.extend(s.push(c));
        }
        out.extend(s.finish());
        out
    }

    /// The dominant frequency of `x` at 24 kHz, from its zero crossings.
    fn frequency(x: &[f32]) -> f64 {
        let crossings = x.windows(2).filter(|w| w[0] < 0.0 && w[1] >= 0.0).count();
        crossings as f64 * f64::from(SAMPLE_RATE) / x.len() as f64
    }

    #[test]
    fn duration_scales_by_one_over_speed() {
        let input = sweep(50 * FRAME_SAMPLES);
        for speed in [0.25, 0.5, 0.8, 1.5, 2.0, 4.0] {
            let out = stretched(speed, &input, FRAME_SAMPLES);
            let ratio = out.len() as f64 / input.len() as f64;
            let want = 1.0 / f64::from(speed);
            assert!((ratio - want).abs() <= 0.02, "speed {speed}: {ratio} of the length");
        }
    }

    #[test]
    fn pitch_is_kept() {
        let tone: Vec<f32> = (0..40 * FRAME_SAMPLES)
            .map(|i| (0.5 * (2.0 * std::f64::consts::PI * 220.0 * i as f64 / 24_000.0).sin()) as f32)
            .collect();
        for speed in [0.5, 2.0] {
            let out = stretched(speed, &tone, FRAME_SAMPLES);
            let f = frequency(&out[2_000..out.len() - 2_000]);
            assert!((f - 220.0).abs() < 5.0, "speed {speed}: {f} Hz");
        }
    }

    #[test]
    fn any_split_gives_the_same_samples() {
        let input = sweep(20 * FRAME_SAMPLES + 50);
        for speed in [0.5, 2.0] {
            assert_eq!(stretched(speed, &input, FRAME_SAMPLES), stretched(speed, &input, 777), "{speed}");
        }
    }

    #[test]
    fn out_of_range_speeds_are_refused() {
        for speed in [0.0, 0.2, 4.5, f32::NAN, -1.0] {
            assert!(matches!(Stretcher::new(speed), Err(AudioError::InvalidSpeed { .. })), "{speed}");
        }
    }
}
