//! What a client asked to receive — format, sample rate, speed, WAV encoding — and the stream
//! that produces it from the engine's 24 kHz frames: time-stretch, then resample, then encode,
//! each stage keeping its state from one frame to the next.

use std::borrow::Cow;

use super::resample::Resampler;
use super::speed::Stretcher;
use super::{
    encode_with, frame_samples, stream_encoder, AudioError, AudioFormat, FrameEncoder, G711Stream,
    WavEncoding, WavStream, G711_RATE, SAMPLE_RATE,
};

/// The output rates a client may ask for (`sample_rate`), in Hz.
pub const SUPPORTED_RATES: [u32; 6] = [8_000, 16_000, 22_050, 24_000, 44_100, 48_000];

const SUPPORTED_RATES_TEXT: &str = "8000, 16000, 22050, 24000, 44100 or 48000";

/// A validated output request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputSpec {
    pub format: AudioFormat,
    /// The rate of the audio sent, in Hz.
    pub sample_rate: u32,
    /// The tempo factor; `None` is 1.0, which leaves the audio untouched.
    pub speed: Option<f32>,
    /// How a `wav` file stores its samples.
    pub wav_encoding: WavEncoding,
}

impl OutputSpec {
    /// The engine's own audio in `format`: 24 kHz, normal speed.
    pub fn plain(format: AudioFormat) -> Self {
        let sample_rate = if format.g711_law().is_some() { G711_RATE } else { SAMPLE_RATE };
        OutputSpec { format, sample_rate, speed: None, wav_encoding: WavEncoding::Pcm16 }
    }

    /// The tempo the client hears the audio at: `speed`, or 1.0 when none was asked for.
    pub fn playback_speed(&self) -> f32 {
        self.speed.unwrap_or(1.0)
    }

    /// Checks a request's output fields; each error names its field ([`AudioError::field`]).
    ///
    /// `sample_rate` applies to `pcm`, `wav`, `flac` and `mp3` (one of [`SUPPORTED_RATES`]);
    /// `mulaw` and `alaw` are 8 kHz, `opus` is encoded from 24 kHz (its decoders choose their own
    /// rate). `encoding` applies to `wav` only, and its G.711 encodings are 8 kHz.
    pub fn new(
        format: AudioFormat,
        encoding: Option<&str>,
        sample_rate: Option<u32>,
        speed: Option<f64>,
    ) -> Result<Self, AudioError> {
        let wav_encoding = match encoding {
            None => WavEncoding::Pcm16,
            Some(name) if format == AudioFormat::Wav => WavEncoding::parse(name)?,
            Some(_) => {
                return Err(AudioError::InvalidEncoding {
                    message: format!("`encoding` applies to the wav format only, not {format}"),
                })
            }
        };
        let fixed = match (format, wav_encoding) {
            (AudioFormat::Mulaw | AudioFormat::Alaw, _) | (_, WavEncoding::G711(_)) => Some(G711_RATE),
            (AudioFormat::Opus, _) => Some(SAMPLE_RATE),
            _ => None,
        };
        let sample_rate = match (fixed, sample_rate) {
            (Some(rate), None) => rate,
            (Some(rate), Some(asked)) if asked == rate => rate,
            (Some(rate), Some(asked)) => {
                return Err(AudioError::UnsupportedSampleRate {
                    format,
                    rate: asked,
                    supported: if rate == G711_RATE {
                        "8000 Hz (G.711 is telephony audio)"
                    } else {
                        "24000 Hz (Opus decoders choose their own output rate)"
                    },
                });
            }
            (None, None) => SAMPLE_RATE,
            (None, Some(asked)) if SUPPORTED_RATES.contains(&asked) => asked,
            (None, Some(asked)) => {
                return Err(AudioError::UnsupportedSampleRate {
                    format,
                    rate: asked,
                    supported: SUPPORTED_RATES_TEXT,
                })
            }
        };
        let speed = match speed {
            None => None,
            Some(1.0) => None,
            Some(s) => {
                // Checked on the exact value: a number just outside a bound would round onto it
                // as an f32.
                let (min, max) = (f64::from(super::speed::MIN_SPEED), f64::from(super::speed::MAX_SPEED));
                if !(min..=max).contains(&s) {
                    return Err(AudioError::InvalidSpeed { speed: s });
                }
                Some(s as f32)
            }
        };
        Ok(OutputSpec { format, sample_rate, speed, wav_encoding })
    }

    /// Samples per 80 ms frame at the output rate (before any `speed` change).
    pub fn samples_per_frame(&self) -> usize {
        frame_samples(self.sample_rate)
    }

    /// Bytes of audio each frame gives, where that is fixed: raw formats (`pcm`, `mulaw`,
    /// `alaw`) at normal speed. Compressed formats and stretched audio vary from frame to frame.
    pub fn bytes_per_frame(&self) -> Option<usize> {
        if self.speed.is_some() {
            return None;
        }
        match self.format {
            AudioFormat::Pcm => Some(2 * self.samples_per_frame()),
            AudioFormat::Mulaw | AudioFormat::Alaw => Some(self.samples_per_frame()),
            _ => None,
        }
    }

    /// A stream producing this output from 24 kHz frames.
    pub fn stream(&self) -> Result<AudioOutput, AudioError> {
        AudioOutput::new(self)
    }

    /// Encodes a whole 24 kHz clip: the same stream, fed frame by frame, with the header patched.
    pub fn encode_clip(&self, samples: &[f32]) -> Result<Vec<u8>, AudioError> {
        encode_with(&mut self.stream()?, samples)
    }
}

/// 24 kHz frames in, the client's bytes out: stretch (when `speed` is not 1.0), resample (when
/// the rate is not 24 kHz), encode.
pub struct AudioOutput {
    stretcher: Option<Stretcher>,
    resampler: Option<Resampler>,
    encoder: Box<dyn FrameEncoder>,
}

impl std::fmt::Debug for AudioOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioOutput")
            .field("stretcher", &self.stretcher)
            .field("resampler", &self.resampler)
            .finish_non_exhaustive()
    }
}

impl AudioOutput {
    pub fn new(spec: &OutputSpec) -> Result<Self, AudioError> {
        let encoder: Box<dyn FrameEncoder> = match (spec.format, spec.wav_encoding) {
            (AudioFormat::Wav, encoding) => Box::new(WavStream::new(spec.sample_rate, encoding)?),
            (AudioFormat::Mulaw | AudioFormat::Alaw, _) => {
                Box::new(G711Stream::new(spec.format.g711_law().expect("a G.711 format")))
            }
            (format, _) => stream_encoder(format, spec.sample_rate)?,
        };
        let resampler =
            if spec.sample_rate == SAMPLE_RATE { None } else { Some(Resampler::new(spec.sample_rate)?) };
        let stretcher = spec.speed.map(Stretcher::new).transpose()?;
        Ok(AudioOutput { stretcher, resampler, encoder })
    }

    /// The 24 kHz samples, stretched and resampled as asked (empty while the stages buffer).
    fn convert<'a>(&mut self, frame: &'a [f32]) -> Result<Cow<'a, [f32]>, AudioError> {
        let mut samples = Cow::Borrowed(frame);
        if let Some(s) = self.stretcher.as_mut() {
            samples = Cow::Owned(s.push(&samples));
        }
        if let Some(r) = self.resampler.as_mut() {
            samples = Cow::Owned(r.push(&samples)?);
        }
        Ok(samples)
    }

    /// What the stages still hold at the end of the audio, converted.
    fn drain(&mut self) -> Result<Vec<f32>, AudioError> {
        let mut tail = self.stretcher.as_mut().map(Stretcher::finish).unwrap_or_default();
        if let Some(r) = self.resampler.as_mut() {
            let mut out = r.push(&tail)?;
            out.extend(r.finish()?);
            tail = out;
        }
        Ok(tail)
    }
}

impl FrameEncoder for AudioOutput {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        let samples = self.convert(frame)?;
        self.encoder.push(&samples)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        let tail = self.drain()?;
        let mut out = if tail.is_empty() { Vec::new() } else { self.encoder.push(&tail)? };
        out.extend(self.encoder.finish()?);
        Ok(out)
    }

    fn patch_clip_header(&self, bytes: &mut [u8]) -> Result<(), AudioError> {
        self.encoder.patch_clip_header(bytes)
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
