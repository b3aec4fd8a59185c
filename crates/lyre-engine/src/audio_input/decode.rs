//! Reference audio for voice cloning: a WAV, FLAC, MP3 or Ogg file decoded to mono f32 and
//! resampled to the 24 kHz that the speaker and speech encoders need.

use crate::error::{EngineError, Result};

/// The sample rate both encoders run at.
pub const ENCODER_SAMPLE_RATE: u32 = 24_000;
/// Shorter clips carry too little of a voice to clone.
pub const MIN_REFERENCE_SECONDS: f32 = 0.5;
/// Longer clips are refused: the reference becomes part of every prompt that uses it.
pub const MAX_REFERENCE_SECONDS: f32 = 60.0;

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

fn reference(message: impl Into<String>) -> EngineError {
    EngineError::ReferenceAudio(message.into())
}

/// Resamples mono audio to `rate` with a band-limited sinc resampler (`rubato`): 256 taps,
/// Blackman-Harris window, cut-off at 95 % of the lower Nyquist frequency. The filter delay is
/// removed, so the output has `round(len · rate / input_rate)` samples aligned with the input.
/// Audio already at `rate` is returned unchanged.
pub fn resample(audio: &DecodedAudio, rate: u32) -> Result<Vec<f32>> {
    use rubato::{
        Resampler, SincFixedIn, SincInterpolationParameters, SincInterpolationType, WindowFunction,
    };

    if audio.sample_rate == 0 || rate == 0 {
        return Err(reference(format!("cannot resample from {} Hz to {rate} Hz", audio.sample_rate)));
    }
    if audio.sample_rate == rate {
        return Ok(audio.samples.clone());
    }
    let input = &audio.samples;
    let ratio = f64::from(rate) / f64::from(audio.sample_rate);
    let expected = (input.len() as f64 * ratio).round() as usize;
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let params = SincInterpolationParameters {
        sinc_len: 256,
        f_cutoff: 0.95,
        interpolation: SincInterpolationType::Cubic,
        oversampling_factor: 256,
        window: WindowFunction::BlackmanHarris2,
    };
    let failed = |e: &dyn std::fmt::Display| reference(format!("resampling failed: {e}"));
    let mut resampler =
        SincFixedIn::<f32>::new(ratio, 1.0, params, RESAMPLE_CHUNK, 1).map_err(|e| failed(&e))?;
    let delay = resampler.output_delay();
    let mut out = Vec::with_capacity(expected + delay + 2 * RESAMPLE_CHUNK);
    let mut chunks = input.chunks_exact(RESAMPLE_CHUNK);
    for chunk in chunks.by_ref() {
        out.extend_from_slice(&resampler.process(&[chunk], None).map_err(|e| failed(&e))?[0]);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        out.extend_from_slice(&resampler.process_partial(Some(&[rest]), None).map_err(|e| failed(&e))?[0]);
    }
    // Flush the filter's tail until the delayed output covers the whole input.
    while out.len() < delay + expected {
        let tail = resampler.process_partial::<&[f32]>(None, None).map_err(|e| failed(&e))?;
        if tail[0].is_empty() {
            break;
        }
        out.extend_from_slice(&tail[0]);
    }
    out.drain(..delay.min(out.len()));
    out.truncate(expected);
    Ok(out)
}

/// Input frames per resampler call.
const RESAMPLE_CHUNK: usize = 4096;

/// `decode` + `resample` to 24 kHz + the length limits: what every caller wants.
pub fn load_reference(bytes: &[u8]) -> Result<Vec<f32>> {
    let audio = decode(bytes)?;
    let wav = resample(&audio, ENCODER_SAMPLE_RATE)?;
    check_length(wav.len())?;
    Ok(wav)
}

/// Refuses clips outside [`MIN_REFERENCE_SECONDS`, `MAX_REFERENCE_SECONDS`].
pub fn check_length(samples_24k: usize) -> Result<()> {
    let seconds = samples_24k as f32 / ENCODER_SAMPLE_RATE as f32;
    if seconds < MIN_REFERENCE_SECONDS {
        return Err(EngineError::ReferenceAudio(format!(
            "the clip is {seconds:.2} s long; at least {MIN_REFERENCE_SECONDS} s is needed"
        )));
    }
    if seconds > MAX_REFERENCE_SECONDS {
        return Err(EngineError::ReferenceAudio(format!(
            "the clip is {seconds:.1} s long; at most {MAX_REFERENCE_SECONDS} s is accepted"
        )));
    }
    Ok(())
}
