//! Audio encoding: the engine's mono f32 samples (24 kHz, 1920 per 80 ms codec frame) turned into
//! the bytes a client receives, as a whole clip or as a live stream.
//!
//! Every format goes through one [`FrameEncoder`]: [`encode_clip`] pushes the clip in
//! [`FRAME_SAMPLES`] chunks through the same encoder a live stream uses and finishes it, so the
//! two paths cannot disagree. Only WAV and FLAC differ, and only in their headers: a stream cannot
//! know its length up front, so it sends "unknown" there, and a whole clip patches in the real
//! sizes (and FLAC's MD5) afterwards ([`FrameEncoder::patch_clip_header`]).
//!
//! What a client asks for beyond the format — another sample rate, a `speed` — is an
//! [`OutputSpec`]; its [`AudioOutput`] chains the time-stretch ([`speed`]), the resampler
//! ([`resample`]) and the format's encoder, each keeping its state from frame to frame.
//!
//! Samples become 16-bit integers by one rule everywhere, [`f32_to_i16`]: clamp to [-1, 1],
//! multiply by 32767, round to nearest (ties away from zero); NaN becomes 0. Opus, MP3 and FLAC
//! are fed those same integers.

mod file;
mod flac;
mod g711;
#[cfg(feature = "mp3")]
mod mp3;
mod opus;
mod output;
mod pcm;
pub mod resample;
pub mod speed;
mod wav;

#[cfg(test)]
mod test_util;

use std::fmt;
use std::str::FromStr;

pub use self::file::FileWriter;
pub use self::flac::FlacStream;
pub use self::g711::{G711Law, G711Stream};
#[cfg(feature = "mp3")]
pub use self::mp3::Mp3Stream;
pub use self::opus::OggOpusStream;
pub use self::output::{AudioOutput, OutputSpec, SUPPORTED_RATES};
pub use self::pcm::PcmStream;
pub use self::wav::{WavEncoding, WavStream};

/// The engine's output sample rate, in Hz.
pub const SAMPLE_RATE: u32 = 24_000;

/// Samples in one 80 ms codec frame at [`SAMPLE_RATE`]: one [`FrameEncoder::push`] per frame.
pub const FRAME_SAMPLES: usize = 1920;

/// The rate of G.711 telephony audio (`mulaw`, `alaw`), in Hz.
pub const G711_RATE: u32 = 8_000;

/// Samples in one 80 ms codec frame at `rate` Hz (640 at 8 kHz, 3528 at 44.1 kHz).
pub fn frame_samples(rate: u32) -> usize {
    rate as usize * 2 / 25
}

/// A response audio format, named as in requests (`wav`, `pcm`, `opus`, `mp3`, `flac`, `mulaw`,
/// `alaw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AudioFormat {
    /// RIFF WAVE, 16-bit PCM, mono.
    #[default]
    Wav,
    /// Raw signed 16-bit little-endian PCM, mono, no header (OpenAI's `pcm`).
    Pcm,
    /// Opus in an Ogg container (RFC 7845), mono, 20 ms packets.
    Opus,
    /// MPEG Layer III, mono, constant bit rate.
    Mp3,
    /// FLAC, 16-bit, mono.
    Flac,
    /// Raw G.711 μ-law bytes, 8 kHz, mono, no header (telephony).
    Mulaw,
    /// Raw G.711 A-law bytes, 8 kHz, mono, no header (telephony).
    Alaw,
}

impl AudioFormat {
    /// Every format, in the order error messages list them.
    pub const ALL: [AudioFormat; 7] = [
        AudioFormat::Wav,
        AudioFormat::Pcm,
        AudioFormat::Opus,
        AudioFormat::Mp3,
        AudioFormat::Flac,
        AudioFormat::Mulaw,
        AudioFormat::Alaw,
    ];

    /// The name used in requests, e.g. `"wav"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AudioFormat::Wav => "wav",
            AudioFormat::Pcm => "pcm",
            AudioFormat::Opus => "opus",
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Flac => "flac",
            AudioFormat::Mulaw => "mulaw",
            AudioFormat::Alaw => "alaw",
        }
    }

    /// The HTTP `Content-Type` of a response in this format.
    ///
    /// `pcm` is `audio/pcm`, as OpenAI serves it: raw s16le, mono, at the stream's sample rate
    /// (24 kHz unless `sample_rate` says otherwise). Opus is `audio/ogg` because it is sent in an
    /// Ogg container. μ-law is `audio/basic` (RFC 2046: 8 kHz μ-law), A-law its usual sibling.
    pub fn content_type(self) -> &'static str {
        match self {
            AudioFormat::Wav => "audio/wav",
            AudioFormat::Pcm => "audio/pcm",
            AudioFormat::Opus => "audio/ogg",
            AudioFormat::Mp3 => "audio/mpeg",
            AudioFormat::Flac => "audio/flac",
            AudioFormat::Mulaw => "audio/basic",
            AudioFormat::Alaw => "audio/x-alaw-basic",
        }
    }

    /// Whether this build can encode the format: MP3 needs the `mp3` cargo feature (LAME, LGPL).
    pub fn is_built(self) -> bool {
        self != AudioFormat::Mp3 || cfg!(feature = "mp3")
    }

    /// The formats this build can encode, as error messages list them (`wav, pcm, opus, ...`).
    pub fn built_names() -> String {
        let names: Vec<&str> = AudioFormat::ALL.iter().filter(|f| f.is_built()).map(|f| f.as_str()).collect();
        names.join(", ")
    }

    /// The usual file extension, without the dot (`"opus"` for Ogg Opus, as opus-tools use;
    /// `"ul"` and `"al"` for raw G.711, as SoX names them).
    pub fn file_extension(self) -> &'static str {
        match self {
            AudioFormat::Mulaw => "ul",
            AudioFormat::Alaw => "al",
            other => other.as_str(),
        }
    }

    /// The G.711 law of a raw telephony format.
    pub fn g711_law(self) -> Option<G711Law> {
        match self {
            AudioFormat::Mulaw => Some(G711Law::Mulaw),
            AudioFormat::Alaw => Some(G711Law::Alaw),
            _ => None,
        }
    }
}

impl fmt::Display for AudioFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AudioFormat {
    type Err = AudioError;

    /// Parses a format name, ignoring ASCII case; `pcm16` (the WebSocket's name) is `pcm`; a
    /// format this build lacks is an error too.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("pcm16") {
            return Ok(AudioFormat::Pcm);
        }
        let format = AudioFormat::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| AudioError::UnknownFormat { name: s.to_owned() })?;
        if !format.is_built() {
            return Err(AudioError::NotBuilt { format });
        }
        Ok(format)
    }
}

impl serde::Serialize for AudioFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for AudioFormat {
    /// Deserializes from a string by the same rule as [`FromStr`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Everything that can go wrong while encoding audio.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// A format name that is not one of [`AudioFormat::ALL`].
    #[error("unknown audio format `{name}`: expected one of {}", AudioFormat::built_names())]
    UnknownFormat {
        /// The name as given.
        name: String,
    },
    /// A format left out of this build (`mp3` without the `mp3` cargo feature).
    #[error(
        "{format} is not available: this server was built without the `{format}` feature; use one of {}",
        AudioFormat::built_names()
    )]
    NotBuilt {
        /// The format asked for.
        format: AudioFormat,
    },
    /// The format cannot encode audio at this sample rate.
    #[error("{format} cannot encode {rate} Hz audio: supported rates are {supported}")]
    UnsupportedSampleRate {
        /// The format asked for.
        format: AudioFormat,
        /// The rate asked for, in Hz.
        rate: u32,
        /// The supported rates, for the message.
        supported: &'static str,
    },
    /// A `speed` outside [`speed::MIN_SPEED`, `speed::MAX_SPEED`].
    #[error("speed {speed} is outside 0.25 to 4.0")]
    InvalidSpeed {
        /// The speed asked for.
        speed: f64,
    },
    /// A WAV sample encoding that is not `pcm16`, `mulaw` or `alaw`, or one given for another
    /// format.
    #[error("{message}")]
    InvalidEncoding {
        /// What is wrong.
        message: String,
    },
    /// The resampler could not be built for this rate.
    #[error("cannot resample to {rate} Hz: {message}")]
    Resampler {
        /// The output rate asked for.
        rate: u32,
        /// Why not.
        message: String,
    },
    /// The time-stretcher failed.
    #[error("time-stretch error: {message}")]
    Stretch {
        /// The library's message.
        message: String,
    },
    /// The clip is longer than the container can describe (WAV sizes are 32-bit).
    #[error("{format} clip too long: {samples} samples do not fit the container")]
    TooLong {
        /// The format asked for.
        format: AudioFormat,
        /// How many samples were given.
        samples: u64,
    },
    /// `push` or `finish` after `finish`.
    #[error("{format} encoder already finished")]
    Finished {
        /// The encoder's format.
        format: AudioFormat,
    },
    /// The underlying codec library reported an error.
    #[error("{format} encoder error: {message}")]
    Codec {
        /// The encoder's format.
        format: AudioFormat,
        /// The library's message.
        message: String,
    },
}

impl AudioError {
    /// The request field an error is about (`sample_rate`, `speed`, `encoding`), if any.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            AudioError::UnsupportedSampleRate { .. } | AudioError::Resampler { .. } => Some("sample_rate"),
            AudioError::InvalidSpeed { .. } => Some("speed"),
            AudioError::InvalidEncoding { .. } => Some("encoding"),
            _ => None,
        }
    }

    /// Wraps a codec library's error.
    pub(crate) fn codec(format: AudioFormat, err: impl fmt::Display) -> Self {
        AudioError::Codec { format, message: err.to_string() }
    }
}

/// Converts one sample to 16 bits: clamp to [-1, 1], × 32767, round to nearest with ties away
/// from zero. NaN becomes 0, so -1.0 → -32767 and -32768 is never produced.
pub fn f32_to_i16(x: f32) -> i16 {
    if x.is_nan() {
        return 0;
    }
    // In range after the clamp, so the cast is exact.
    (x.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

/// Converts samples by [`f32_to_i16`].
pub fn to_i16(samples: &[f32]) -> Vec<i16> {
    samples.iter().map(|&x| f32_to_i16(x)).collect()
}

/// Appends samples as s16le bytes, converted by [`f32_to_i16`].
pub(crate) fn extend_s16le(out: &mut Vec<u8>, samples: &[f32]) {
    out.reserve(samples.len() * 2);
    for &x in samples {
        out.extend_from_slice(&f32_to_i16(x).to_le_bytes());
    }
}

/// An encoder fed one chunk of samples at a time (one 80 ms frame on a live stream).
///
/// Each call returns the bytes that are ready to send; they may be empty while the codec buffers.
/// Concatenated, the outputs of every `push` and the one `finish` form a complete stream.
pub trait FrameEncoder: Send {
    /// Encodes `frame` (mono samples in [-1, 1], any length) and returns the bytes now ready.
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError>;

    /// Flushes buffered audio and ends the stream; later calls fail with
    /// [`AudioError::Finished`].
    fn finish(&mut self) -> Result<Vec<u8>, AudioError>;

    /// After `finish`, rewrites the header at the start of `bytes` (this encoder's whole output)
    /// with what only the end knows: WAV's sizes, FLAC's totals and MD5. Other formats have
    /// nothing to patch.
    fn patch_clip_header(&self, bytes: &mut [u8]) -> Result<(), AudioError> {
        let _ = bytes;
        Ok(())
    }
}

/// A streaming encoder for `format` at `sample_rate` Hz (16-bit WAV; G.711 only at 8 kHz).
pub fn stream_encoder(format: AudioFormat, sample_rate: u32) -> Result<Box<dyn FrameEncoder>, AudioError> {
    Ok(match format {
        AudioFormat::Wav => Box::new(WavStream::new(sample_rate, WavEncoding::Pcm16)?),
        AudioFormat::Pcm => Box::new(PcmStream::new(sample_rate)?),
        AudioFormat::Opus => Box::new(OggOpusStream::new(sample_rate)?),
        #[cfg(feature = "mp3")]
        AudioFormat::Mp3 => Box::new(Mp3Stream::new(sample_rate)?),
        #[cfg(not(feature = "mp3"))]
        AudioFormat::Mp3 => return Err(AudioError::NotBuilt { format }),
        AudioFormat::Flac => Box::new(FlacStream::new(sample_rate)?),
        AudioFormat::Mulaw | AudioFormat::Alaw => {
            if sample_rate != G711_RATE {
                return Err(AudioError::UnsupportedSampleRate {
                    format,
                    rate: sample_rate,
                    supported: "8000 Hz",
                });
            }
            Box::new(G711Stream::new(format.g711_law().expect("a G.711 format")))
        }
    })
}

/// Encodes a whole clip of `sample_rate` Hz audio: the streaming encoder fed [`FRAME_SAMPLES`]
/// at a time, then finished; WAV and FLAC then get their real sizes (and FLAC its MD5).
pub fn encode_clip(format: AudioFormat, samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, AudioError> {
    encode_with(stream_encoder(format, sample_rate)?.as_mut(), samples)
}

/// Pushes `samples` frame by frame through `encoder`, finishes it, and patches the header.
pub(crate) fn encode_with(encoder: &mut dyn FrameEncoder, samples: &[f32]) -> Result<Vec<u8>, AudioError> {
    let mut out = Vec::new();
    for frame in samples.chunks(FRAME_SAMPLES) {
        out.extend(encoder.push(frame)?);
    }
    out.extend(encoder.finish()?);
    encoder.patch_clip_header(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
