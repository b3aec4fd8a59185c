//! Output sample rates: the engine's 24 kHz audio converted to 8, 16, 22.05, 44.1 or 48 kHz as
//! it streams, by `rubato`'s synchronous FFT resampler (a windowed-sinc anti-aliasing filter
//! applied by overlap-add, with the exact rational ratio of the two rates).
//!
//! The resampler works on fixed blocks of [`BLOCK_IN`] input samples (20 ms), which divide one
//! 80 ms frame, so each frame pushed gives exactly the frame's duration at the new rate (640
//! samples at 8 kHz). Input is buffered across pushes, so the output depends only on the samples,
//! never on how they were split: frame by frame equals the whole clip, sample for sample.
//!
//! The filter delays the audio by half a block ([`Resampler::delay`], 10 ms): the first output
//! samples are the filter's ramp-in, and [`Resampler::finish`] returns the last 10 ms that the
//! delay held back, so nothing is lost.

use rubato::{FftFixedInOut, Resampler as _};

use super::{AudioError, SAMPLE_RATE};

/// Input samples (at 24 kHz) per resampler block: 20 ms. It must divide a 1920-sample frame and
/// be a multiple of 24000/gcd(24000, rate) for every supported rate (3, 160, 80, 1): 480 is.
pub const BLOCK_IN: usize = 480;

/// Converts mono audio from [`SAMPLE_RATE`] to another rate, block by block.
pub struct Resampler {
    inner: FftFixedInOut<f32>,
    rate: u32,
    block_out: usize,
    /// Input not yet a whole block.
    pending: Vec<f32>,
    /// Input samples pushed in total, and output samples returned in total.
    samples_in: u64,
    samples_out: u64,
    scratch: Vec<f32>,
}

impl std::fmt::Debug for Resampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resampler").field("rate", &self.rate).field("pending", &self.pending.len()).finish()
    }
}

impl Resampler {
    /// A resampler from 24 kHz to `rate` Hz.
    pub fn new(rate: u32) -> Result<Self, AudioError> {
        let bad_rate = |message: String| AudioError::Resampler { rate, message };
        let inner = FftFixedInOut::<f32>::new(SAMPLE_RATE as usize, rate as usize, BLOCK_IN, 1)
            .map_err(|e| bad_rate(e.to_string()))?;
        if inner.input_frames_next() != BLOCK_IN {
            return Err(bad_rate(format!(
                "{BLOCK_IN} samples at {SAMPLE_RATE} Hz are no whole number at {rate} Hz"
            )));
        }
        let block_out = inner.output_frames_next();
        Ok(Resampler {
            inner,
            rate,
            block_out,
            pending: Vec::with_capacity(BLOCK_IN),
            samples_in: 0,
            samples_out: 0,
            scratch: vec![0.0; block_out],
        })
    }

    /// The output rate, in Hz.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// How far the output lags the input, in output samples (half a block: 10 ms; rounded down
    /// at 22.05 kHz, where it is 220.5).
    pub fn delay(&self) -> usize {
        self.block_out / 2
    }

    /// Resamples `samples`; returns the output for every whole block now buffered.
    pub fn push(&mut self, samples: &[f32]) -> Result<Vec<f32>, AudioError> {
        self.samples_in += samples.len() as u64;
        let mut out = Vec::with_capacity((self.pending.len() + samples.len()) / BLOCK_IN * self.block_out);
        let mut rest = samples;
        while !rest.is_empty() {
            let take = (BLOCK_IN - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == BLOCK_IN {
                self.process_pending(&mut out)?;
            }
        }
        self.samples_out += out.len() as u64;
        Ok(out)
    }

    /// The rest of the audio: the partial block (zero-padded) and the delayed tail, cut so the
    /// whole output is the input's duration plus [`Resampler::delay`]. The resampler is then
    /// empty and may take a new stream.
    pub fn finish(&mut self) -> Result<Vec<f32>, AudioError> {
        let total = self.expected_len(self.samples_in) + self.delay() as u64;
        let mut out = Vec::new();
        while self.samples_out + (out.len() as u64) < total {
            self.pending.resize(BLOCK_IN, 0.0);
            self.process_pending(&mut out)?;
        }
        out.truncate((total - self.samples_out) as usize);
        self.inner.reset();
        self.samples_in = 0;
        self.samples_out = 0;
        Ok(out)
    }

    /// Output samples for `samples_in` input samples, rounded up.
    fn expected_len(&self, samples_in: u64) -> u64 {
        (samples_in * u64::from(self.rate)).div_ceil(u64::from(SAMPLE_RATE))
    }

    fn process_pending(&mut self, out: &mut Vec<f32>) -> Result<(), AudioError> {
        let (_, written) = self
            .inner
            .process_into_buffer(&[&self.pending], &mut [&mut self.scratch], None)
            .map_err(|e| AudioError::Resampler { rate: self.rate, message: e.to_string() })?;
        out.extend_from_slice(&self.scratch[..written]);
        self.pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::sweep;
    use super::super::FRAME_SAMPLES;
    use super::*;

    const RATES: [u32; 6] = [8_000, 16_000, 22_050, 24_000, 44_100, 48_000];

    fn sine(freq: f64, rate: u32, len: usize, delay: f64) -> Vec<f32> {
        (0..len)
            .map(|i| {
                let t = (i as f64 - delay) / f64::from(rate);
                if t < 0.0 {
                    0.0
                } else {
                    (0.5 * (2.0 * std::f64::consts::PI * freq * t).sin()) as f32
                }
            })
            .collect()
    }

    #[test]
    fn a_frame_gives_its_duration_at_every_rate() {
        for rate in RATES {
            let mut r = Resampler::new(rate).unwrap();
            let want = rate as usize * 80 / 1000;
            for _ in 0..3 {
                assert_eq!(r.push(&[0.25; FRAME_SAMPLES]).unwrap().len(), want, "{rate}");
            }
            assert_eq!(r.delay(), want / 8, "{rate}: half a 20 ms block");
            assert_eq!(r.finish().unwrap().len(), want / 8, "{rate}");
        }
    }

    #[test]
    fn any_split_gives_the_same_samples() {
        let input = sweep(5 * FRAME_SAMPLES + 77);
        for rate in [8_000, 22_050, 44_100] {
            let mut whole = Resampler::new(rate).unwrap();
            let mut a = whole.push(&input).unwrap();
            a.extend(whole.finish().unwrap());
            let mut pieces = Resampler::new(rate).unwrap();
            let mut b = Vec::new();
            for chunk in input.chunks(333) {
                b.extend(pieces.push(chunk).unwrap());
            }
            b.extend(pieces.finish().unwrap());
            assert_eq!(a, b, "{rate}");
            let want = (input.len() * rate as usize).div_ceil(24_000) + whole.delay();
            assert_eq!(a.len(), want, "{rate}");
        }
    }

    #[test]
    fn a_tone_comes_out_at_the_new_rate_delayed_by_the_stated_delay() {
        for rate in RATES {
            let mut r = Resampler::new(rate).unwrap();
            let input = sine(440.0, SAMPLE_RATE, 12 * FRAME_SAMPLES, 0.0);
            let mut out = r.push(&input).unwrap();
            out.extend(r.finish().unwrap());
            // Exactly half a block: 220.5 samples at 22.05 kHz, where `delay` rounds down.
            let delay = rate as f64 * 0.01;
            assert_eq!(r.delay(), delay as usize);
            let want = sine(440.0, rate, out.len(), delay);
            // Past the filter's ramp-in and before the ramp-out, the tone is reproduced closely.
            let skip = rate as usize / 25;
            let (got, want) = (&out[skip..out.len() - skip], &want[skip..out.len() - skip]);
            let err = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(err < 2e-3, "{rate}: max error {err}");
        }
    }

    #[test]
    fn downsampling_removes_what_the_new_rate_cannot_carry() {
        // 6 kHz is above 8 kHz's Nyquist frequency: it must not fold back down to 2 kHz.
        let mut r = Resampler::new(8_000).unwrap();
        let out = r.push(&sine(6_000.0, SAMPLE_RATE, 12 * FRAME_SAMPLES, 0.0)).unwrap();
        let rms = super::super::test_util::rms(&out[800..]);
        assert!(rms < 0.005, "aliased energy {rms}");
    }

    #[test]
    fn rates_without_a_whole_block_are_refused() {
        assert!(matches!(Resampler::new(11_111), Err(AudioError::Resampler { rate: 11_111, .. })));
        assert!(Resampler::new(0).is_err());
    }
}
