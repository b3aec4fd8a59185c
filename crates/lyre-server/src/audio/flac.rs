//! FLAC through `flacenc` (pure Rust): 16-bit, mono, fixed blocks of one 80 ms frame (1920
//! samples at 24 kHz, 640 at 8 kHz), so a stream can send each block as soon as it is full.
//!
//! A stream's STREAMINFO says "unknown" where the end is not yet known: total samples 0, MD5 all
//! zero, frame sizes 0 (all allowed by the FLAC format). A whole clip then rewrites it with the
//! real total, MD5 and frame sizes ([`FrameEncoder::patch_clip_header`]); the frames themselves
//! are the same bytes.

use flacenc::bitsink::MemSink;
use flacenc::component::{BitRepr, Stream, StreamInfo};
use flacenc::error::{Verified, Verify};
use flacenc::source::{Context, Fill, FrameBuf};

use super::{frame_samples, to_i16, AudioError, AudioFormat, FrameEncoder};

/// FLAC's smallest block size.
const MIN_BLOCK_SIZE: usize = 16;

/// Bytes of `fLaC` plus the STREAMINFO metadata block, the header a clip rewrites.
pub const HEADER_LEN: usize = 4 + 4 + 34;

const BITS_PER_SAMPLE: usize = 16;

/// Streams FLAC: the header with the first output, then each block once it is full.
pub struct FlacStream {
    config: Verified<flacenc::config::Encoder>,
    info: StreamInfo,
    /// The block being encoded, and the running MD5 / sample count / frame number.
    block: (FrameBuf, Context),
    /// Samples per block (the last block of a stream may be shorter).
    block_size: usize,
    /// Samples not yet in a block.
    pending: Vec<i32>,
    frame_sizes: Option<(usize, usize)>,
    header_sent: bool,
    finished: bool,
}

impl FlacStream {
    /// A FLAC stream of mono 16-bit audio at `sample_rate` Hz (1 Hz to 655 350 Hz).
    pub fn new(sample_rate: u32) -> Result<Self, AudioError> {
        if !(1..=655_350).contains(&sample_rate) {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Flac,
                rate: sample_rate,
                supported: "1 Hz to 655350 Hz",
            });
        }
        let config = flacenc::config::Encoder::default().into_verified().map_err(|(_, e)| codec(e))?;
        let block_size = frame_samples(sample_rate).max(MIN_BLOCK_SIZE);
        let mut info = StreamInfo::new(sample_rate as usize, 1, BITS_PER_SAMPLE).map_err(codec)?;
        info.set_block_sizes(block_size, block_size).map_err(codec)?;
        info.set_frame_sizes(0, 0).map_err(codec)?;
        let block = (FrameBuf::with_size(1, block_size).map_err(codec)?, Context::new(BITS_PER_SAMPLE, 1));
        Ok(FlacStream {
            config,
            info,
            block,
            block_size,
            pending: Vec::with_capacity(block_size),
            frame_sizes: None,
            header_sent: false,
            finished: false,
        })
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Flac });
        }
        Ok(())
    }

    fn take_header(&mut self, out: &mut Vec<u8>) -> Result<(), AudioError> {
        if !self.header_sent {
            out.extend(header_bytes(&self.info)?);
            self.header_sent = true;
        }
        Ok(())
    }

    /// Encodes `pending[..len]` as the next frame and appends its bytes to `out`.
    fn encode_block(&mut self, len: usize, out: &mut Vec<u8>) -> Result<(), AudioError> {
        self.block.fill_interleaved(&self.pending[..len]).map_err(codec)?;
        self.pending.drain(..len);
        let (buffer, context) = &self.block;
        let number = context.current_frame_number().unwrap_or(0);
        let frame =
            flacenc::encode_fixed_size_frame(&self.config, buffer, number, &self.info).map_err(codec)?;
        let mut sink = MemSink::<u8>::with_capacity(frame.count_bits());
        frame.write(&mut sink).map_err(codec)?;
        let bytes = sink.into_inner();
        let (min, max) = self.frame_sizes.unwrap_or((usize::MAX, 0));
        self.frame_sizes = Some((min.min(bytes.len()), max.max(bytes.len())));
        out.extend(bytes);
        Ok(())
    }
}

impl FrameEncoder for FlacStream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        let mut out = Vec::new();
        self.take_header(&mut out)?;
        self.pending.extend(to_i16(frame).into_iter().map(i32::from));
        while self.pending.len() >= self.block_size {
            self.encode_block(self.block_size, &mut out)?;
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        let mut out = Vec::new();
        self.take_header(&mut out)?;
        if !self.pending.is_empty() {
            self.encode_block(self.pending.len(), &mut out)?;
        }
        Ok(out)
    }

    /// Rewrites the STREAMINFO at the start of `bytes`, this finished stream's whole output, with
    /// the total sample count, the MD5 of the samples and the smallest and largest frame sizes.
    fn patch_clip_header(&self, bytes: &mut [u8]) -> Result<(), AudioError> {
        if !self.finished || bytes.len() < HEADER_LEN {
            return Err(codec("only a finished stream's whole output can be patched"));
        }
        let (_, context) = &self.block;
        let mut info = self.info.clone();
        info.set_total_samples(context.total_samples());
        info.set_md5_digest(&context.md5_digest());
        let (min, max) = self.frame_sizes.unwrap_or((0, 0));
        info.set_frame_sizes(min, max).map_err(codec)?;
        let header = header_bytes(&info)?;
        bytes[..HEADER_LEN].copy_from_slice(&header);
        Ok(())
    }
}

/// `fLaC` and the STREAMINFO block (marked last: there is no other metadata).
fn header_bytes(info: &StreamInfo) -> Result<Vec<u8>, AudioError> {
    let stream = Stream::with_stream_info(info.clone());
    let mut sink = MemSink::<u8>::with_capacity(HEADER_LEN * 8);
    stream.write(&mut sink).map_err(codec)?;
    Ok(sink.into_inner())
}

fn codec(err: impl std::fmt::Display) -> AudioError {
    AudioError::codec(AudioFormat::Flac, err)
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{streamed, sweep};
    use super::super::{encode_clip, FRAME_SAMPLES, SAMPLE_RATE};
    use super::*;

    const BLOCK_SIZE: usize = FRAME_SAMPLES;
    use md5::{Digest, Md5};

    /// Decodes FLAC bytes with claxon: (STREAMINFO, samples).
    fn decode(bytes: &[u8]) -> (claxon::metadata::StreamInfo, Vec<i16>) {
        let mut reader = claxon::FlacReader::new(bytes).unwrap();
        let info = reader.streaminfo();
        let samples = reader.samples().map(|s| i16::try_from(s.unwrap()).unwrap()).collect();
        (info, samples)
    }

    fn md5_of(samples: &[i16]) -> [u8; 16] {
        let mut md5 = Md5::new();
        for s in samples {
            md5.update(s.to_le_bytes());
        }
        md5.finalize().into()
    }

    #[test]
    fn clip_decodes_bit_exactly_with_a_complete_streaminfo() {
        for len in [SAMPLE_RATE as usize, 3 * BLOCK_SIZE + 5, 10] {
            let samples = sweep(len);
            let (info, decoded) = decode(&encode_clip(AudioFormat::Flac, &samples, SAMPLE_RATE).unwrap());
            let want = to_i16(&samples);
            assert_eq!(decoded, want, "{len} samples");
            assert_eq!((info.sample_rate, info.channels, info.bits_per_sample), (SAMPLE_RATE, 1, 16));
            assert_eq!(info.samples, Some(len as u64));
            assert_eq!(info.md5sum, md5_of(&want));
            assert_eq!((info.min_block_size, info.max_block_size), (1920, 1920));
            assert!(info.min_frame_size.is_some() && info.max_frame_size >= info.min_frame_size);
        }
    }

    #[test]
    fn stream_decodes_bit_exactly_with_an_open_ended_streaminfo() {
        let samples = sweep(4 * BLOCK_SIZE + 300);
        let (info, decoded) = decode(&streamed(&mut FlacStream::new(SAMPLE_RATE).unwrap(), &samples));
        assert_eq!(decoded, to_i16(&samples));
        assert_eq!(info.samples, None);
        assert_eq!(info.md5sum, [0; 16]);
    }

    #[test]
    fn each_full_block_is_sent_as_soon_as_it_fills() {
        let samples = sweep(2 * BLOCK_SIZE);
        let mut stream = FlacStream::new(SAMPLE_RATE).unwrap();
        let first = stream.push(&samples[..1000]).unwrap();
        assert_eq!(first.len(), HEADER_LEN, "header only: the block is not full");
        assert!(!stream.push(&samples[1000..BLOCK_SIZE]).unwrap().is_empty());
        assert!(!stream.push(&samples[BLOCK_SIZE..]).unwrap().is_empty());
        assert!(stream.finish().unwrap().is_empty(), "nothing left over");
    }

    #[test]
    fn blocks_are_one_frame_at_every_rate() {
        for rate in [8_000, 16_000, 44_100] {
            let samples = sweep(3 * 1920);
            let (info, decoded) = decode(&encode_clip(AudioFormat::Flac, &samples, rate).unwrap());
            assert_eq!(decoded, to_i16(&samples));
            let block = rate as usize * 80 / 1000;
            assert_eq!(
                (info.sample_rate, info.min_block_size, info.max_block_size),
                (rate, block as u16, block as u16)
            );
        }
    }

    #[test]
    fn patching_an_unfinished_stream_is_an_error() {
        let stream = FlacStream::new(SAMPLE_RATE).unwrap();
        assert!(stream.patch_clip_header(&mut [0u8; 64]).is_err());
    }
}
