//! MP3 through LAME (`mp3lame-encoder`, which builds its bundled LAME 3.100): mono, constant
//! 64 kbit/s, at the input rate (MPEG-2 Layer III at 24 kHz, 576 samples per MP3 frame).
//!
//! No Xing/LAME info tag is written: it would have to be patched into the first frame after the
//! end, which a stream cannot do, and leaving it out keeps clip and stream bytes identical. So
//! decoders keep LAME's delay (~1105 samples of silence in front) and the zero padding at the end
//! (under one MP3 frame); constant bit rate lets players compute the duration from the size.

use std::num::NonZeroU32;

use mp3lame_encoder::{max_required_buffer_size, Bitrate, FlushGap, Mode, MonoPcm, Quality};

use super::{to_i16, AudioError, AudioFormat, FrameEncoder};

/// The constant bit rate: plenty for 24 kHz mono speech.
const BITRATE: Bitrate = Bitrate::Kbps64;

/// The rates LAME encodes without resampling.
const RATES: [u32; 9] = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000];

const SUPPORTED: &str = "8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100 and 48000 Hz";

/// Bytes LAME may need for the final flush.
const FLUSH_BUFFER: usize = 7200;

/// Streams MP3: each push returns the MP3 frames LAME has completed (possibly none yet).
pub struct Mp3Stream {
    encoder: mp3lame_encoder::Encoder,
    finished: bool,
}

impl Mp3Stream {
    /// An MP3 stream of mono audio at `sample_rate` Hz, one of the MPEG rates (8 to 48 kHz).
    pub fn new(sample_rate: u32) -> Result<Self, AudioError> {
        if !RATES.contains(&sample_rate) {
            return Err(AudioError::UnsupportedSampleRate {
                format: AudioFormat::Mp3,
                rate: sample_rate,
                supported: SUPPORTED,
            });
        }
        let codec = |e: mp3lame_encoder::BuildError| AudioError::codec(AudioFormat::Mp3, e);
        let mut builder = mp3lame_encoder::Builder::new()
            .ok_or_else(|| AudioError::codec(AudioFormat::Mp3, "lame_init failed"))?;
        builder.set_num_channels(1).map_err(codec)?;
        builder.set_sample_rate(sample_rate).map_err(codec)?;
        builder.set_output_sample_rate(NonZeroU32::new(sample_rate)).map_err(codec)?;
        builder.set_mode(Mode::Mono).map_err(codec)?;
        builder.set_brate(BITRATE).map_err(codec)?;
        builder.set_quality(Quality::Good).map_err(codec)?;
        builder.set_to_write_vbr_tag(false).map_err(codec)?;
        let encoder = builder.build().map_err(codec)?;
        Ok(Mp3Stream { encoder, finished: false })
    }

    fn check_open(&self) -> Result<(), AudioError> {
        if self.finished {
            return Err(AudioError::Finished { format: AudioFormat::Mp3 });
        }
        Ok(())
    }
}

impl FrameEncoder for Mp3Stream {
    fn push(&mut self, frame: &[f32]) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        let samples = to_i16(frame);
        let mut out = Vec::with_capacity(max_required_buffer_size(samples.len()));
        self.encoder
            .encode_to_vec(MonoPcm(samples.as_slice()), &mut out)
            .map_err(|e| AudioError::codec(AudioFormat::Mp3, e))?;
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<u8>, AudioError> {
        self.check_open()?;
        self.finished = true;
        let mut out = Vec::with_capacity(FLUSH_BUFFER);
        self.encoder
            .flush_to_vec::<FlushGap>(&mut out)
            .map_err(|e| AudioError::codec(AudioFormat::Mp3, e))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{rms, sweep};
    use super::super::{encode_clip, FRAME_SAMPLES, SAMPLE_RATE};
    use super::*;
    use symphonia::core::codecs::audio::AudioDecoderOptions;
    use symphonia::core::formats::probe::Hint;
    use symphonia::core::formats::{FormatOptions, TrackType};
    use symphonia::core::io::MediaSourceStream;
    use symphonia::core::meta::MetadataOptions;

    /// Decodes MP3 bytes with symphonia: (sample rate, channels, samples).
    fn decode(bytes: Vec<u8>) -> (u32, usize, Vec<f32>) {
        let source = MediaSourceStream::new(Box::new(std::io::Cursor::new(bytes)), Default::default());
        let mut hint = Hint::new();
        hint.with_extension("mp3");
        let mut format = symphonia::default::get_probe()
            .probe(&hint, source, FormatOptions::default(), MetadataOptions::default())
            .unwrap();
        let track = format.default_track(TrackType::Audio).unwrap();
        let params = track.codec_params.as_ref().unwrap().audio().unwrap().clone();
        let mut decoder = symphonia::default::get_codecs()
            .make_audio_decoder(&params, &AudioDecoderOptions::default())
            .unwrap();
        let (mut rate, mut channels, mut samples) = (0, 0, Vec::new());
        while let Some(packet) = format.next_packet().unwrap() {
            let buffer = decoder.decode(&packet).unwrap();
            rate = buffer.spec().rate();
            channels = buffer.spec().channels().count();
            let mut chunk = vec![0f32; buffer.samples_interleaved()];
            buffer.copy_to_slice_interleaved(&mut chunk);
            samples.extend(chunk);
        }
        (rate, channels, samples)
    }

    #[test]
    fn decodes_to_about_the_input_length_and_level() {
        let samples = sweep(SAMPLE_RATE as usize);
        let (rate, channels, decoded) = decode(encode_clip(AudioFormat::Mp3, &samples, SAMPLE_RATE).unwrap());
        assert_eq!((rate, channels), (SAMPLE_RATE, 1));
        // LAME's delay in front, padding to whole 576-sample frames at the end.
        let extra = decoded.len() as i64 - samples.len() as i64;
        assert!((0..=1105 + 2 * 576).contains(&extra), "{} decoded for {}", decoded.len(), samples.len());
        let level_db = 20.0 * (rms(&decoded) / rms(&samples)).log10();
        assert!(level_db.abs() < 1.5, "level {level_db:.2} dB");
    }

    #[test]
    fn stream_emits_frames_as_they_complete() {
        let mut stream = Mp3Stream::new(SAMPLE_RATE).unwrap();
        let samples = sweep(10 * FRAME_SAMPLES);
        let outputs: Vec<usize> =
            samples.chunks(FRAME_SAMPLES).map(|f| stream.push(f).unwrap().len()).collect();
        assert!(outputs[2..].iter().all(|&n| n > 0), "{outputs:?}");
        // 64 kbit/s: 640 bytes per 80 ms on average.
        let total: usize = outputs.iter().sum::<usize>() + stream.finish().unwrap().len();
        assert!((5_500..7_500).contains(&total), "{total} bytes for 0.8 s");
    }

    #[test]
    fn unsupported_rate_is_an_error() {
        let err = Mp3Stream::new(96_000).err().unwrap();
        assert!(matches!(err, AudioError::UnsupportedSampleRate { rate: 96_000, .. }), "{err}");
    }
}
