//! Decoding an uploaded clip to mono f32 samples at its own rate.
//!
//! The official loader reads files with libsndfile (`soundfile`/`librosa.load`) as float32 and
//! averages the channels in float32. For WAV and FLAC the samples here are the same bits: integer
//! PCM scaled by 2^-(bits-1) (unsigned 8-bit offset by 128), float kept, f64 rounded to f32, and
//! the channels summed in order and divided by their count in f32. MP3 and Ogg Vorbis are decoded
//! by symphonia's own decoders rather than libmpg123 and libvorbis: the same length (the encoder
//! delay and padding of a LAME/Xing header are trimmed, as libmpg123's gapless mode does) and
//! samples within 1e-6 of the official ones (`docs/voice-cloning.md` has the figures).

use super::{reference, MAX_REFERENCE_SECONDS};
use crate::error::Result;

/// Decoded audio, mono, at its own rate.
#[derive(Debug, Clone)]
pub struct DecodedAudio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

/// Decodes any supported container (the format is sniffed from the bytes) and mixes to mono.
///
/// WAV (integer PCM of 8–32 bits, float), FLAC, MP3 and Ogg Vorbis, through `symphonia`.
/// Multi-channel audio is mixed down by averaging the channels.
pub fn decode(bytes: &[u8]) -> Result<DecodedAudio> {
    use symphonia::core::codecs::audio::AudioDecoderOptions;
    use symphonia::core::errors::Error as SymphoniaError;
    use symphonia::core::formats::probe::Hint;
    use symphonia::core::formats::{FormatOptions, TrackType};
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::meta::MetadataOptions;

    if bytes.is_empty() {
        return Err(reference("the upload is empty"));
    }
    let source = MediaSourceStream::new(Box::new(std::io::Cursor::new(bytes.to_vec())), Default::default());
    let mut format = symphonia::default::get_probe()
        .probe(&Hint::new(), source, FormatOptions::default(), MetadataOptions::default())
        .map_err(|e| reference(format!("not a supported audio file ({SUPPORTED}): {e}")))?;
    let track =
        format.default_track(TrackType::Audio).ok_or_else(|| reference("the file has no audio track"))?;
    let track_id = track.id;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| reference("the file has no audio track"))?
        .clone();
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| reference(format!("unsupported audio codec ({SUPPORTED}): {e}")))?;

    let mut samples: Vec<f32> = Vec::new();
    let mut rate = params.sample_rate.unwrap_or(0);
    let mut planes: Vec<Vec<f32>> = Vec::new();
    let mut bad_packets = 0usize;
    loop {
        let packet = match format.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) => break,
            // A stream cut short: keep what came before, as players do.
            Err(SymphoniaError::IoError(e))
                if e.kind() == std::io::ErrorKind::UnexpectedEof && !samples.is_empty() =>
            {
                break
            }
            Err(e) => return Err(reference(format!("the file is corrupt: {e}"))),
        };
        if packet.track_id != track_id {
            continue;
        }
        let buffer = match decoder.decode(&packet) {
            Ok(buffer) => buffer,
            // One damaged packet is skipped (symphonia's advice); many mean a broken file.
            Err(SymphoniaError::DecodeError(_)) if bad_packets < MAX_BAD_PACKETS => {
                bad_packets += 1;
                continue;
            }
            Err(e) => return Err(reference(format!("the file is corrupt: {e}"))),
        };
        let buffer_rate = buffer.spec().rate();
        if !samples.is_empty() && buffer_rate != rate {
            // Chained streams (Ogg) may switch rates; one clip must have one.
            return Err(reference(format!("the sample rate changes mid-stream ({rate} → {buffer_rate} Hz)")));
        }
        rate = buffer_rate;
        buffer.copy_to_vecs_planar::<f32>(&mut planes);
        let channels = planes.len().max(1) as f32;
        let frames = planes.iter().map(Vec::len).min().unwrap_or(0);
        samples.extend((0..frames).map(|i| planes.iter().map(|p| p[i]).sum::<f32>() / channels));
        let limit = (MAX_REFERENCE_SECONDS as f64 + 1.0) * f64::from(rate.max(1));
        if samples.len() as f64 > limit {
            return Err(reference(format!("the clip is longer than {MAX_REFERENCE_SECONDS} s")));
        }
    }
    if samples.is_empty() {
        return Err(reference("the file contains no audio samples"));
    }
    if rate == 0 {
        return Err(reference("the file does not state its sample rate"));
    }
    if let Some(i) = samples.iter().position(|x| !x.is_finite()) {
        return Err(reference(format!("sample {i} is not a finite number")));
    }
    Ok(DecodedAudio { samples, sample_rate: rate })
}

const SUPPORTED: &str = "WAV, FLAC, MP3 or Ogg Vorbis";
/// Damaged packets skipped before a file counts as corrupt.
const MAX_BAD_PACKETS: usize = 8;
