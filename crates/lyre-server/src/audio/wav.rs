//! RIFF WAVE, mono: 16-bit PCM (a 44-byte header, then s16le samples), or G.711 μ-law / A-law
//! (8 bits a sample; a 58-byte header with the `fact` chunk non-PCM formats carry).
//!
//! A stream cannot know its length, so its header says 0xFFFFFFFF for the RIFF, `fact` and data
//! sizes (what players treat as "read to the end"); a whole clip then gets the real sizes
//! ([`FrameEncoder::patch_clip_header`]). A 16-bit clip's bytes equal what `hound` writes (a test
//! checks).

use super::{extend_s16le, AudioError, AudioFormat, FrameEncoder, G711Law};

/// Bytes before the first sample of a 16-bit PCM file.
pub const HEADER_LEN: usize = 44;

/// Bytes before the first sample of a G.711 file: `fmt ` has the 2-byte extension size, and a
/// `fact` chunk holds the sample count.
pub const G711_HEADER_LEN: usize = 58;

/// The size written in a streamed header, where the length is unknown.
const UNKNOWN_SIZE: u32 = u32::MAX;

/// How a WAV file stores its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum WavEncoding {
    /// 16-bit signed PCM (`WAVE_FORMAT_PCM`).
    #[default]
    Pcm16,
    /// 8-bit G.711 (`WAVE_FORMAT_MULAW` = 7, `WAVE_FORMAT_ALAW` = 6).
    G711(G711Law),
}

impl WavEncoding {
    /// The name used in requests (`pcm16`, `mulaw`, `alaw`).
    pub fn as_str(self) -> &'static str {
        match self {
            WavEncoding::Pcm16 => "pcm16",
            WavEncoding::G711(G711Law::Mulaw) => "mulaw",
            WavEncoding::G711(G711Law::Alaw) => "alaw",
        }
    }

    /// Parses a request's `encoding`, ignoring ASCII case.
    pub fn parse(name: &str) -> Result<Self, AudioError> {
        [WavEncoding::Pcm16, WavEncoding::G711(G711Law::Mulaw), WavEncoding::G711(G711Law::Alaw)]
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| AudioError::InvalidEncoding {
                message: format!("`{name}` is not a WAV encoding: expected pcm16, mulaw or alaw"),
            })
    }

    fn header_len(self) -> usize {
        match self {
            WavEncoding::Pcm16 => HEADER_LEN,
            WavEncoding::G711(_) => G711_HEADER_LEN,
        }
    }

    fn bytes_per_sample(self) -> u32 {
        match self {
            WavEncoding::Pcm16 => 2,
            WavEncoding::G711(_) => 1,
        }
    }
}

/// Streams a WAV file: the header with the first push, then the samples.
#[derive(Debug)]
pub struct WavStream {
    sample_rate: u32,
    encoding: WavEncoding,
    header_sent: bool,
    finished: bool,
}

impl WavStream {
    /// A WAV stream at `sample_rate` Hz (any rate above 0 Hz).
    pub fn new(sample_rate: u32, encoding: WavEncoding) -> Result<Self, AudioError> {
        if sample_rate == 0 || sample_rate > u32::MAX / 2 {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Wav,
                rate: sample_rate,
                supported: "1 Hz to 2^31 Hz",
            });
        }
        Ok(WavStream { sample_rate, encoding, header_sent: false, finished: false })
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Wav });
        }
        Ok(())
    }

    fn take_header(&mut self, out: &mut Vec<u8>) {
        if !self.header_sent {
            out.extend_from_slice(&header(self.sample_rate, self.encoding, UNKNOWN_SIZE));
            self.header_sent = true;
        }
    }
}

impl FrameEncoder for WavStream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        let mut out = Vec::with_capacity(self.encoding.header_len() + frame.len() * 2);
        self.take_header(&mut out);
        match self.encoding {
            WavEncoding::Pcm16 => extend_s16le(&mut out, frame),
            WavEncoding::G711(law) => law.extend(&mut out, frame),
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        let mut out = Vec::new();
        self.take_header(&mut out);
        Ok(out)
    }

    /// Replaces the streamed header's unknown sizes with the real ones of the file in `bytes`.
    fn patch_clip_header(&self, bytes: &mut [u8]) -> Result<(), AudioError> {
        let data_len = bytes.len().saturating_sub(self.encoding.header_len()) as u64;
        patch_sizes(bytes, self.encoding, data_len)
    }
}

/// Writes the sizes of a 16-bit PCM file with `data_len` bytes of samples into its header (the
/// first [`HEADER_LEN`] bytes of `bytes`), for a file written frame by frame.
pub(super) fn patch_header_sizes(bytes: &mut [u8], data_len: u64) -> Result<(), AudioError> {
    patch_sizes(bytes, WavEncoding::Pcm16, data_len)
}

/// Writes the sizes of a file in `encoding` with `data_len` bytes of samples into its header.
fn patch_sizes(bytes: &mut [u8], encoding: WavEncoding, data_len: u64) -> Result<(), AudioError> {
    let header_len = encoding.header_len();
    if bytes.len() < header_len {
        return Err(AudioError::codec(AudioFormat::Wav, "no header to patch"));
    }
    let samples = data_len / u64::from(encoding.bytes_per_sample());
    let too_long = || AudioError::TooLong { format: AudioFormat::Wav, samples };
    let data_size = u32::try_from(data_len).map_err(|_| too_long())?;
    let riff_size = data_size.checked_add(header_len as u32 - 8).ok_or_else(too_long)?;
    bytes[4..8].copy_from_slice(&riff_size.to_le_bytes());
    bytes[header_len - 4..header_len].copy_from_slice(&data_size.to_le_bytes());
    if let WavEncoding::G711(_) = encoding {
        // The `fact` chunk's sample count: one byte per sample.
        bytes[46..50].copy_from_slice(&data_size.to_le_bytes());
    }
    Ok(())
}

/// The header: RIFF, the `fmt ` chunk (mono), for G.711 the `fact` chunk, the `data` chunk header;
/// every size is `size` (unknown in a stream, patched in a clip).
fn header(sample_rate: u32, encoding: WavEncoding, size: u32) -> Vec<u8> {
    let bytes_per_sample = encoding.bytes_per_sample();
    let mut h = Vec::with_capacity(encoding.header_len());
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    let (tag, fmt_size): (u16, u32) = match encoding {
        WavEncoding::Pcm16 => (1, 16), // WAVE_FORMAT_PCM
        WavEncoding::G711(G711Law::Alaw) => (6, 18),
        WavEncoding::G711(G711Law::Mulaw) => (7, 18),
    };
    h.extend_from_slice(&fmt_size.to_le_bytes());
    h.extend_from_slice(&tag.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // channels
    h.extend_from_slice(&sample_rate.to_le_bytes());
    h.extend_from_slice(&(sample_rate * bytes_per_sample).to_le_bytes()); // bytes per second
    h.extend_from_slice(&(bytes_per_sample as u16).to_le_bytes()); // block align
    h.extend_from_slice(&(bytes_per_sample as u16 * 8).to_le_bytes()); // bits per sample
    if fmt_size == 18 {
        h.extend_from_slice(&0u16.to_le_bytes()); // no format-specific extension
        h.extend_from_slice(b"fact");
        h.extend_from_slice(&4u32.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes()); // samples
    }
    h.extend_from_slice(b"data");
    h.extend_from_slice(&size.to_le_bytes());
    h
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
        let mut stream = WavStream::new(SAMPLE_RATE, WavEncoding::Pcm16).unwrap();
        let first = stream.push(&samples[..FRAME_SAMPLES]).unwrap();
        assert_eq!(first.len(), HEADER_LEN + 2 * FRAME_SAMPLES);
        assert_eq!(first[4..8], [0xFF; 4]);
        assert_eq!(first[40..44], [0xFF; 4]);
        assert_eq!(stream.push(&samples[FRAME_SAMPLES..]).unwrap().len(), 2 * FRAME_SAMPLES);
        assert!(stream.finish().unwrap().is_empty());
    }

    #[test]
    fn finishing_an_empty_stream_still_sends_the_header() {
        let bytes = streamed(&mut WavStream::new(SAMPLE_RATE, WavEncoding::Pcm16).unwrap(), &[]);
        assert_eq!(bytes.len(), HEADER_LEN);
        assert_eq!(&bytes[..4], b"RIFF");
    }

    #[test]
    fn patching_a_headerless_buffer_is_an_error() {
        let stream = WavStream::new(SAMPLE_RATE, WavEncoding::Pcm16).unwrap();
        assert!(stream.patch_clip_header(&mut [0u8; 10]).is_err());
    }

    #[test]
    fn g711_clip_decodes_with_symphonia_to_the_companded_samples() {
        use symphonia::core::codecs::audio::AudioDecoderOptions;
        use symphonia::core::formats::probe::Hint;
        use symphonia::core::formats::FormatOptions;
        use symphonia::core::io::MediaSourceStream;
        use symphonia::core::meta::MetadataOptions;

        let samples = sweep(3 * 640 + 11);
        for law in [G711Law::Mulaw, G711Law::Alaw] {
            let mut stream = WavStream::new(8_000, WavEncoding::G711(law)).unwrap();
            let mut bytes = super::super::test_util::streamed(&mut stream, &samples);
            stream.patch_clip_header(&mut bytes).unwrap();
            assert_eq!(bytes.len(), G711_HEADER_LEN + samples.len());
            let source = MediaSourceStream::new(Box::new(Cursor::new(bytes)), Default::default());
            let mut format = symphonia::default::get_probe()
                .probe(&Hint::new(), source, FormatOptions::default(), MetadataOptions::default())
                .unwrap();
            let track = format.default_track(symphonia::core::formats::TrackType::Audio).unwrap();
            let params = track.codec_params.as_ref().unwrap().audio().unwrap().clone();
            assert_eq!(params.sample_rate, Some(8_000));
            let mut decoder = symphonia::default::get_codecs()
                .make_audio_decoder(&params, &AudioDecoderOptions::default())
                .unwrap();
            let (mut decoded, mut planes): (Vec<i16>, Vec<Vec<i16>>) = (Vec::new(), Vec::new());
            while let Ok(Some(packet)) = format.next_packet() {
                decoder.decode(&packet).unwrap().copy_to_vecs_planar::<i16>(&mut planes);
                decoded.extend(&planes[0]);
            }
            let want: Vec<i16> = samples.iter().map(|&x| law.decode(law.encode(x))).collect();
            assert_eq!(decoded, want, "{law:?}");
        }
    }
}
