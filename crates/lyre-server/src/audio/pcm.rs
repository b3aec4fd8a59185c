//! Raw PCM: signed 16-bit little-endian, mono, no header (OpenAI's `pcm` response format).

use super::{extend_s16le, AudioError, AudioFormat, FrameEncoder};

/// Streams raw s16le samples: each push returns exactly `2 × frame.len()` bytes.
#[derive(Debug, Default)]
pub struct PcmStream {
    finished: bool,
}

impl PcmStream {
    /// A PCM stream; the rate is not stored in raw PCM, but 0 Hz is still an error.
    pub fn new(sample_rate: u32) -> Result<Self, AudioError> {
        if sample_rate == 0 {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Pcm,
                rate: sample_rate,
                supported: "any rate above 0 Hz",
            });
        }
        Ok(PcmStream { finished: false })
    }

    /// The s16le bytes of `frame`, converted by [`super::f32_to_i16`].
    pub fn encode(frame: &[f32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(frame.len() * 2);
        extend_s16le(&mut out, frame);
        out
    }
}

impl FrameEncoder for PcmStream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Pcm });
        }
        Ok(Self::encode(frame))
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Pcm });
        }
        self.finished = true;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode_clip, SAMPLE_RATE};
    use super::*;

    #[test]
    fn bytes_are_exact_s16le() {
        let samples = [0.0, 1.0, -1.0, 0.5, -0.25, 3.0, f32::NAN];
        let want: Vec<u8> =
            [0i16, 32767, -32767, 16384, -8192, 32767, 0].iter().flat_map(|s| s.to_le_bytes()).collect();
        assert_eq!(PcmStream::new(SAMPLE_RATE).unwrap().push(&samples).unwrap(), want);
        assert_eq!(encode_clip(AudioFormat::Pcm, &samples, SAMPLE_RATE).unwrap(), want);
    }

    #[test]
    fn one_frame_is_3840_bytes() {
        let mut stream = PcmStream::new(SAMPLE_RATE).unwrap();
        assert_eq!(stream.push(&[0.1; super::super::FRAME_SAMPLES]).unwrap().len(), 3840);
        assert!(stream.finish().unwrap().is_empty());
    }
}
