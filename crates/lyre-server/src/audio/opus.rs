//! Ogg Opus (RFC 7845): mono, 20 ms packets, an OpusHead and an OpusTags page first.
//!
//! The encoder is `opus-pure`, a Rust port of libopus checked against the C library (no C
//! toolchain or cmake needed); the tests decode its streams with libopus's own `opusdec`.
//!
//! Granule positions count 48 kHz samples and include the pre-skip (the encoder's lookahead, 312
//! at 48 kHz, 156 samples at 24 kHz): after packet k the granule is (k + 1) × 960. At the end the
//! input is padded with one lookahead of silence, so the last real sample is encoded, plus zeros
//! up to a whole packet; the last page's granule is `pre_skip + input samples × 48000 / rate`, so
//! a decoder trims the padding and returns exactly the input's length.

use std::borrow::Cow;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

use super::{f32_to_i16, AudioError, AudioFormat, FrameEncoder};

/// The bit rate asked of the encoder, in bits per second (VBR). Speech at 24 kHz sounds clean here.
pub const BITRATE: i32 = 32_000;

/// Ogg stream serial number: fixed, so the same audio always gives the same bytes.
const SERIAL: u32 = 0x4C59_5245; // "LYRE"

/// Granule positions are always counted at 48 kHz.
const GRANULE_RATE: u32 = 48_000;

/// One packet's duration at 48 kHz (20 ms).
const GRANULE_PER_PACKET: u64 = 960;

/// The largest single-frame Opus packet, in bytes.
const MAX_PACKET: usize = 1275;

/// The vendor string of the OpusTags header.
const VENDOR: &str = concat!("Lyre ", env!("CARGO_PKG_VERSION"), " (opus-pure)");

const SUPPORTED: &str = "8000, 12000, 16000, 24000 and 48000 Hz";

/// Streams Ogg Opus. The first output carries the OpusHead and OpusTags pages; then each push
/// returns one page holding every 20 ms packet its samples completed (four per 80 ms frame at
/// 24 kHz), and [`FrameEncoder::finish`] returns the last packet(s) on a page marked end of stream.
pub struct OggOpusStream {
    encoder: opus_pure::OpusEncoder,
    writer: PacketWriter<'static, Vec<u8>>,
    sample_rate: u32,
    /// Encoder lookahead at the input rate.
    lookahead: usize,
    /// Samples not yet in a packet.
    pending: Vec<i16>,
    samples_in: u64,
    packets_out: u64,
    headers_sent: bool,
    finished: bool,
}

impl OggOpusStream {
    /// An Ogg Opus stream of mono audio at `sample_rate` Hz (8, 12, 16, 24 or 48 kHz).
    pub fn new(sample_rate: u32) -> Result<Self, AudioError> {
        if ![8_000, 12_000, 16_000, 24_000, 48_000].contains(&sample_rate) {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Opus,
                rate: sample_rate,
                supported: SUPPORTED,
            });
        }
        let mut encoder = opus_pure::OpusEncoder::new(sample_rate as i32, 1, opus_pure::Application::Audio)
            .map_err(|e| AudioError::codec(AudioFormat::Opus, e))?;
        encoder.bitrate_bps = BITRATE;
        // The input is 16-bit (f32_to_i16), as libopus's opus_encode assumes.
        encoder.lsb_depth = 16;
        let lookahead = encoder.lookahead();
        Ok(OggOpusStream {
            encoder,
            writer: PacketWriter::new(Vec::new()),
            sample_rate,
            lookahead,
            pending: Vec::new(),
            samples_in: 0,
            packets_out: 0,
            headers_sent: false,
            finished: false,
        })
    }

    /// The pre-skip written in OpusHead, in 48 kHz samples (312 at any rate, as libopus).
    pub fn pre_skip(&self) -> u16 {
        // At most 48 kHz × a few ms: fits.
        (self.lookahead as u64 * self.granule_scale()) as u16
    }

    /// 48 kHz samples per input sample.
    fn granule_scale(&self) -> u64 {
        u64::from(GRANULE_RATE / self.sample_rate)
    }

    /// Input samples per 20 ms packet.
    fn packet_len(&self) -> usize {
        self.sample_rate as usize / 50
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Opus });
        }
        Ok(())
    }

    fn write(&mut self, packet: Vec<u8>, end: PacketWriteEndInfo, granule: u64) -> Result<(), AudioError> {
        self.writer
            .write_packet(Cow::Owned(packet), SERIAL, end, granule)
            .map_err(|e| AudioError::codec(AudioFormat::Opus, e))
    }

    /// Writes OpusHead and OpusTags, each on its own page, the first time it is called.
    fn send_headers(&mut self) -> Result<(), AudioError> {
        if self.headers_sent {
            return Ok(());
        }
        self.headers_sent = true;
        let head = opus_head(self.pre_skip(), self.sample_rate);
        self.write(head, PacketWriteEndInfo::EndPage, 0)?;
        self.write(opus_tags(), PacketWriteEndInfo::EndPage, 0)
    }

    /// Encodes every whole packet in `pending` and writes them, ending the page (or, with
    /// `end_stream`, the stream) on the last.
    fn flush_packets(&mut self, end_stream: bool) -> Result<(), AudioError> {
        let packet_len = self.packet_len();
        let count = self.pending.len() / packet_len;
        for i in 0..count {
            let packet = self.encode_packet(i * packet_len..(i + 1) * packet_len)?;
            let end = match (i + 1 == count, end_stream) {
                (false, _) => PacketWriteEndInfo::NormalPacket,
                (true, false) => PacketWriteEndInfo::EndPage,
                (true, true) => PacketWriteEndInfo::EndStream,
            };
            let granule = if end == PacketWriteEndInfo::EndStream {
                // Less than what the packets decode to: the decoder trims the padding.
                u64::from(self.pre_skip()) + self.samples_in * self.granule_scale()
            } else {
                self.packets_out * GRANULE_PER_PACKET
            };
            self.write(packet, end, granule)?;
        }
        self.pending.drain(..count * packet_len);
        Ok(())
    }

    /// Encodes `pending[range]` (one packet's samples) and counts the packet.
    fn encode_packet(&mut self, range: std::ops::Range<usize>) -> Result<Vec<u8>, AudioError> {
        let mut packet = vec![0u8; MAX_PACKET];
        let len = self
            .encoder
            .encode_s16(&self.pending[range.clone()], range.len(), &mut packet)
            .map_err(|e| AudioError::codec(AudioFormat::Opus, e))?;
        packet.truncate(len);
        self.packets_out += 1;
        Ok(packet)
    }

    fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(self.writer.inner_mut())
    }
}

impl FrameEncoder for OggOpusStream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.send_headers()?;
        self.pending.extend(frame.iter().map(|&x| f32_to_i16(x)));
        self.samples_in += frame.len() as u64;
        self.flush_packets(false)?;
        Ok(self.take_output())
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        self.send_headers()?;
        // One lookahead of silence pushes the last real samples out of the encoder; then zeros
        // up to a whole packet. There is always at least one packet to end the stream on.
        let padded = (self.pending.len() + self.lookahead).div_ceil(self.packet_len()) * self.packet_len();
        self.pending.resize(padded, 0);
        self.flush_packets(true)?;
        Ok(self.take_output())
    }
}

/// The identification header (RFC 7845 §5.1): version 1, mono, mapping family 0, no gain.
fn opus_head(pre_skip: u16, input_rate: u32) -> Vec<u8> {
    let mut head = Vec::with_capacity(19);
    head.extend_from_slice(b"OpusHead");
    head.push(1); // version
    head.push(1); // channels
    head.extend_from_slice(&pre_skip.to_le_bytes());
    head.extend_from_slice(&input_rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes()); // output gain
    head.push(0); // channel mapping family
    head
}

/// The comment header (RFC 7845 §5.2): [`VENDOR`], no comments.
fn opus_tags() -> Vec<u8> {
    let vendor = VENDOR.as_bytes();
    let mut tags = Vec::with_capacity(16 + vendor.len());
    tags.extend_from_slice(b"OpusTags");
    tags.extend_from_slice(&(vendor.len() as u32).to_le_bytes());
    tags.extend_from_slice(vendor);
    tags.extend_from_slice(&0u32.to_le_bytes()); // user comments
    tags
}

#[cfg(test)]
#[path = "opus_tests.rs"]
mod tests;
