//! G.711 telephony audio: μ-law (North America, Japan) and A-law (elsewhere), one byte per
//! sample, by ITU-T G.711 (the `audio-codec-algorithms` crate's companding). Phone lines carry it
//! at 8 kHz; the samples are first converted to 16 bits by [`super::f32_to_i16`].

use audio_codec_algorithms::{decode_alaw, decode_ulaw, encode_alaw, encode_ulaw};

use super::{f32_to_i16, AudioError, AudioFormat, FrameEncoder};

/// The companding law.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum G711Law {
    /// μ-law (PCMU).
    Mulaw,
    /// A-law (PCMA).
    Alaw,
}

impl G711Law {
    /// The raw format of this law.
    pub fn format(self) -> AudioFormat {
        match self {
            G711Law::Mulaw => AudioFormat::Mulaw,
            G711Law::Alaw => AudioFormat::Alaw,
        }
    }

    /// One sample in [-1, 1] as a G.711 byte.
    pub fn encode(self, x: f32) -> u8 {
        let linear = f32_to_i16(x);
        match self {
            G711Law::Mulaw => encode_ulaw(linear),
            G711Law::Alaw => encode_alaw(linear),
        }
    }

    /// A G.711 byte as a 16-bit sample.
    pub fn decode(self, byte: u8) -> i16 {
        match self {
            G711Law::Mulaw => decode_ulaw(byte),
            G711Law::Alaw => decode_alaw(byte),
        }
    }

    /// Appends the G.711 bytes of `samples` to `out`.
    pub(crate) fn extend(self, out: &mut Vec<u8>, samples: &[f32]) {
        out.extend(samples.iter().map(|&x| self.encode(x)));
    }
}

/// Streams raw G.711 bytes: each push returns exactly one byte per sample.
#[derive(Debug)]
pub struct G711Stream {
    law: G711Law,
    finished: bool,
}

impl G711Stream {
    /// A raw G.711 stream. The bytes carry no rate; telephony expects 8 kHz.
    pub fn new(law: G711Law) -> Self {
        G711Stream { law, finished: false }
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: self.law.format() });
        }
        Ok(())
    }
}

impl FrameEncoder for G711Stream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        let mut out = Vec::with_capacity(frame.len());
        self.law.extend(&mut out, frame);
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_code_words() {
        // Silence and full scale in both laws (ITU-T G.711 tables: μ-law 0xFF/0x80, A-law 0xD5/0xAA).
        assert_eq!(G711Law::Mulaw.encode(0.0), 0xFF);
        assert_eq!(G711Law::Mulaw.encode(1.0), 0x80);
        assert_eq!(G711Law::Mulaw.encode(-1.0), 0x00);
        assert_eq!(G711Law::Alaw.encode(0.0), 0xD5);
        assert_eq!(G711Law::Alaw.encode(1.0), 0xAA);
        assert_eq!(G711Law::Alaw.encode(-1.0), 0x2A);
    }

    #[test]
    fn round_trip_error_is_within_the_segment_step() {
        for law in [G711Law::Mulaw, G711Law::Alaw] {
            for i in -100..=100 {
                let x = i as f32 / 100.0 * 0.99;
                let back = f32::from(law.decode(law.encode(x))) / 32767.0;
                // The largest quantisation step of either law is 1/32 of full scale (±1/64 error).
                assert!((back - x).abs() <= 1.0 / 60.0, "{law:?} {x} -> {back}");
            }
        }
    }

    #[test]
    fn one_byte_per_sample() {
        let mut stream = G711Stream::new(G711Law::Alaw);
        assert_eq!(stream.push(&[0.1; 640]).unwrap().len(), 640);
        assert!(stream.finish().unwrap().is_empty());
        assert!(stream.push(&[0.0]).is_err());
    }
}
