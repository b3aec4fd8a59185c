//! RIFF WAVE, 16-bit PCM, mono: a 44-byte header, then s16le samples.
//!
//! A stream cannot know its length, so its header says 0xFFFFFFFF for both the RIFF and the data
//! size (what players treat as "read to the end"); [`super::encode_clip`] then writes the real
//! sizes with [`patch_clip_sizes`]. The clip's bytes equal what `hound` writes (a test checks).

use super::{extend_s16le, AudioError, AudioFormat, FrameEncoder};

/// Bytes before the first sample.
pub const HEADER_LEN: usize = 44;

/// The size written in a streamed header, where the length is unknown.
const UNKNOWN_SIZE: u32 = u32::MAX;

/// Streams a WAV file: the header with the first push, then s16le samples.
#[derive(Debug)]
pub struct WavStream {
    sample_rate: u32,
    header_sent: bool,
    finished: bool,
}

impl WavStream {
    /// A WAV stream at `sample_rate` Hz (any rate above 0 Hz).
    pub fn new(sample_rate: u32) -> Result<Self, AudioError> {
        if sample_rate == 0 || sample_rate > u32::MAX / 2 {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Wav,
                rate: sample_rate,
                supported: "1 Hz to 2^31 Hz",
            });
        }
        Ok(WavStream { sample_rate, header_sent: false, finished: false })
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Wav });
        }
        Ok(())
    }

    fn take_header(&mut self, out: &mut Vec<u8>) {
        if !self.header_sent {
            out.extend_from_slice(&header(self.sample_rate, UNKNOWN_SIZE, UNKNOWN_SIZE));
            self.header_sent = true;
        }
    }
}

impl FrameEncoder for WavStream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        let mut out = Vec::with_capacity(HEADER_LEN + frame.len() * 2);
        self.take_header(&mut out);
        extend_s16le(&mut out, frame);
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        let mut out = Vec::new();
        self.take_header(&mut out);
        Ok(out)
    }
}

/// The 44-byte header: RIFF, a 16-byte PCM `fmt ` chunk (mono, 16 bits), the `data` chunk header.
fn header(sample_rate: u32, riff_size: u32, data_size: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&riff_size.to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    h.extend_from_slice(&1u16.to_le_bytes()); // WAVE_FORMAT_PCM
    h.extend_from_slice(&1u16.to_le_bytes()); // channels
    h.extend_from_slice(&sample_rate.to_le_bytes());
    h.extend_from_slice(&(sample_rate * 2).to_le_bytes()); // bytes per second
    h.extend_from_slice(&2u16.to_le_bytes()); // block align
    h.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data_size.to_le_bytes());
    h
}

/// Replaces a streamed header's unknown sizes with the real ones of the complete file in `bytes`.
pub(super) fn patch_clip_sizes(bytes: &mut [u8]) -> Result<(), AudioError> {
    let data_len = bytes.len().saturating_sub(HEADER_LEN) as u64;
    patch_header_sizes(bytes, data_len)
}

/// Writes the sizes of a file with `data_len` bytes of samples into its header (the first
/// [`HEADER_LEN`] bytes of `bytes`).
pub(super) fn patch_header_sizes(bytes: &mut [u8], data_len: u64) -> Result<(), AudioError> {
    let too_long = || AudioError::TooLong { format: AudioFormat::Wav, samples: data_len / 2 };
    let data_size = u32::try_from(data_len).map_err(|_| too_long())?;
    let riff_size = data_size.checked_add(36).ok_or_else(too_long)?;
    if bytes.len() < HEADER_LEN {
        return Err(AudioError::codec(AudioFormat::Wav, "no header to patch"));
    }
    bytes[4..8].copy_from_slice(&riff_size.to_le_bytes());
    bytes[40..44].copy_from_slice(&data_size.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{streamed, sweep};
    use super::super::{encode_clip, to_i16, FRAME_SAMPLES, SAMPLE_RATE};
    use super::*;
    use std::io::Cursor;

    fn hound_bytes(samples: &[i16], sample_rate: u32) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut cursor = Cursor::new(Vec::new());
        let mut writer = hound::WavWriter::new(&mut cursor, spec).unwrap();
        for &s in samples {
            writer.write_sample(s).unwrap();
        }
        writer.finalize().unwrap();
        cursor.into_inner()
    }

    #[test]
    fn clip_decodes_with_hound_to_the_same_samples() {
        let samples = sweep(SAMPLE_RATE as usize);
        let bytes = encode_clip(AudioFormat::Wav, &samples, SAMPLE_RATE).unwrap();
        let reader = hound::WavReader::new(Cursor::new(&bytes)).unwrap();
        let spec = reader.spec();
        assert_eq!((spec.channels, spec.sample_rate, spec.bits_per_sample), (1, SAMPLE_RATE, 16));
        let decoded: Vec<i16> = reader.into_samples().collect::<Result<_, _>>().unwrap();
        assert_eq!(decoded, to_i16(&samples));
    }

    #[test]
    fn clip_bytes_equal_what_hound_writes() {
        for (len, rate) in [(0, SAMPLE_RATE), (1, SAMPLE_RATE), (3 * FRAME_SAMPLES + 7, 16_000)] {
            let samples = sweep(len);
            let ours = encode_clip(AudioFormat::Wav, &samples, rate).unwrap();
            assert_eq!(ours, hound_bytes(&to_i16(&samples), rate), "{len} samples at {rate} Hz");
        }
    }

    #[test]
    fn stream_header_has_unknown_sizes_and_frames_follow() {
        let samples = sweep(2 * FRAME_SAMPLES);
        let mut stream = WavStream::new(SAMPLE_RATE).unwrap();
        let first = stream.push(&samples[..FRAME_SAMPLES]).unwrap();
        assert_eq!(first.len(), HEADER_LEN + 2 * FRAME_SAMPLES);
        assert_eq!(first[4..8], [0xFF; 4]);
        assert_eq!(first[40..44], [0xFF; 4]);
        assert_eq!(stream.push(&samples[FRAME_SAMPLES..]).unwrap().len(), 2 * FRAME_SAMPLES);
        assert!(stream.finish().unwrap().is_empty());
    }

    #[test]
    fn finishing_an_empty_stream_still_sends_the_header() {
        let bytes = streamed(&mut WavStream::new(SAMPLE_RATE).unwrap(), &[]);
        assert_eq!(bytes.len(), HEADER_LEN);
        assert_eq!(&bytes[..4], b"RIFF");
    }

    #[test]
    fn patching_a_headerless_buffer_is_an_error() {
        assert!(patch_clip_sizes(&mut [0u8; 10]).is_err());
    }
}
