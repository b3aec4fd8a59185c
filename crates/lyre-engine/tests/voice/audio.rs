//! `audio_input`: decoding WAV / FLAC / MP3 / Ogg Vorbis, mixing to mono, resampling to 24 kHz,
//! and clear `ReferenceAudio` errors for everything else.

use std::f64::consts::PI;

use lyre_engine::audio_input::{self, DecodedAudio, ENCODER_SAMPLE_RATE};
use lyre_engine::EngineError;

use crate::support::data;

fn tone(freq: f64, rate: u32, seconds: f64, amplitude: f64) -> Vec<f32> {
    let n = (seconds * f64::from(rate)).round() as usize;
    (0..n).map(|i| (amplitude * (2.0 * PI * freq * i as f64 / f64::from(rate)).sin()) as f32).collect()
}

#[derive(Clone, Copy, Debug)]
enum WavFormat {
    Int16,
    Int24,
    Float32,
}

/// A WAV file of `channels` (each a slice of samples) in `format`, written by `hound`.
fn wav_bytes(channels: &[&[f32]], rate: u32, format: WavFormat) -> Vec<u8> {
    let (bits, sample_format) = match format {
        WavFormat::Int16 => (16, hound::SampleFormat::Int),
        WavFormat::Int24 => (24, hound::SampleFormat::Int),
        WavFormat::Float32 => (32, hound::SampleFormat::Float),
    };
    let spec = hound::WavSpec {
        channels: channels.len() as u16,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format,
    };
    let mut cursor = std::io::Cursor::new(Vec::new());
    {
        let mut w = hound::WavWriter::new(&mut cursor, spec).unwrap();
        for i in 0..channels[0].len() {
            for ch in channels {
                let x = ch[i];
                match format {
                    WavFormat::Int16 => w.write_sample((x * 32767.0).round() as i16).unwrap(),
                    WavFormat::Int24 => w.write_sample((x * 8_388_607.0).round() as i32).unwrap(),
                    WavFormat::Float32 => w.write_sample(x).unwrap(),
                }
            }
        }
        w.finalize().unwrap();
    }
    cursor.into_inner()
}

/// Frequency from zero crossings over the middle of the clip (edges skipped).
fn zero_crossing_freq(x: &[f32], rate: u32) -> f64 {
    let skip = x.len() / 10;
    let mid = &x[skip..x.len() - skip];
    let crossings = mid.windows(2).filter(|w| (w[0] < 0.0) != (w[1] < 0.0)).count();
    crossings as f64 / 2.0 / (mid.len() as f64 / f64::from(rate))
}

/// Amplitude of the DFT component at `freq` (middle of the clip), in signal units.
fn dft_amplitude(x: &[f32], rate: u32, freq: f64) -> f64 {
    let skip = x.len() / 10;
    let mid = &x[skip..x.len() - skip];
    let (mut re, mut im) = (0f64, 0f64);
    for (i, &v) in mid.iter().enumerate() {
        let phase = 2.0 * PI * freq * i as f64 / f64::from(rate);
        re += f64::from(v) * phase.cos();
        im -= f64::from(v) * phase.sin();
    }
    2.0 * (re * re + im * im).sqrt() / mid.len() as f64
}

fn rms(x: &[f32]) -> f64 {
    (x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// A 24 kHz clip `out` holds a pure tone of `freq` at `amplitude`, `seconds` long.
fn assert_tone(out: &[f32], freq: f64, amplitude: f64, seconds: f64, what: &str) {
    let expected_len = seconds * f64::from(ENCODER_SAMPLE_RATE);
    assert!(
        (out.len() as f64 - expected_len).abs() <= 2.0,
        "{what}: {} samples, expected {expected_len}",
        out.len()
    );
    let f = zero_crossing_freq(out, ENCODER_SAMPLE_RATE);
    assert!((f - freq).abs() / freq < 0.01, "{what}: zero-crossing frequency {f:.1} Hz, expected {freq}");
    let a = dft_amplitude(out, ENCODER_SAMPLE_RATE, freq);
    assert!((a - amplitude).abs() / amplitude < 0.03, "{what}: tone amplitude {a:.4}, expected {amplitude}");
    // Nearly all energy is in the tone: the residual after removing it is small.
    let level = rms(&out[out.len() / 10..out.len() * 9 / 10]);
    let tone_rms = a / 2f64.sqrt();
    assert!((level - tone_rms).abs() / tone_rms < 0.02, "{what}: rms {level:.4} vs tone {tone_rms:.4}");
}

#[test]
fn wav_tones_decode_and_resample_to_24k() {
    for rate in [16_000, 44_100, 48_000] {
        for format in [WavFormat::Int16, WavFormat::Int24, WavFormat::Float32] {
            let what = format!("{rate} Hz {format:?}");
            let input = tone(440.0, rate, 1.0, 0.5);
            let bytes = wav_bytes(&[&input], rate, format);
            let decoded = audio_input::decode(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(decoded.sample_rate, rate, "{what}");
            assert_eq!(decoded.samples.len(), input.len(), "{what}");
            let tol = match format {
                WavFormat::Int16 => 1.0 / 32767.0,
                WavFormat::Int24 => 1e-6,
                WavFormat::Float32 => 0.0,
            };
            let err = decoded.samples.iter().zip(&input).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(err <= tol, "{what}: decoded samples differ by {err}");
            let out = audio_input::resample(&decoded, ENCODER_SAMPLE_RATE).unwrap();
            assert_tone(&out, 440.0, 0.5, 1.0, &what);
        }
    }
}

#[test]
fn high_tone_survives_downsampling_and_aliases_are_removed() {
    // 5 kHz stays (below 12 kHz Nyquist); 14 kHz at 48 kHz would alias to 10 kHz and must go.
    let rate = 48_000;
    let keep = tone(5_000.0, rate, 1.0, 0.4);
    let alias = tone(14_000.0, rate, 1.0, 0.4);
    let mixed: Vec<f32> = keep.iter().zip(&alias).map(|(a, b)| a + b).collect();
    let out = audio_input::resample(&DecodedAudio { samples: mixed, sample_rate: rate }, ENCODER_SAMPLE_RATE)
        .unwrap();
    let kept = dft_amplitude(&out, ENCODER_SAMPLE_RATE, 5_000.0);
    let aliased = dft_amplitude(&out, ENCODER_SAMPLE_RATE, 10_000.0);
    assert!((kept - 0.4).abs() < 0.02, "5 kHz amplitude {kept}");
    assert!(aliased < 0.004, "14 kHz aliased to 10 kHz with amplitude {aliased}");
}

#[test]
fn stereo_is_averaged_to_mono() {
    let rate = 24_000;
    let left = tone(300.0, rate, 0.6, 0.8);
    let right: Vec<f32> = left.iter().map(|x| -0.5 * x).collect();
    let decoded = audio_input::decode(&wav_bytes(&[&left, &right], rate, WavFormat::Float32)).unwrap();
    assert_eq!(decoded.samples.len(), left.len());
    for (got, l) in decoded.samples.iter().zip(&left) {
        assert!((got - 0.25 * l).abs() < 1e-6, "{got} vs {}", 0.25 * l);
    }
}

#[test]
fn matching_rate_passes_through_unchanged() {
    let input = tone(440.0, ENCODER_SAMPLE_RATE, 0.7, 0.3);
    let audio = DecodedAudio { samples: input.clone(), sample_rate: ENCODER_SAMPLE_RATE };
    assert_eq!(audio_input::resample(&audio, ENCODER_SAMPLE_RATE).unwrap(), input);
}

#[test]
fn upsampling_from_8k_keeps_the_tone() {
    let audio = DecodedAudio { samples: tone(700.0, 8_000, 1.0, 0.5), sample_rate: 8_000 };
    assert_tone(&audio_input::resample(&audio, ENCODER_SAMPLE_RATE).unwrap(), 700.0, 0.5, 1.0, "8 kHz");
}

#[test]
fn sox_made_files_decode_to_the_expected_tone() {
    // Made by scripts/make-audio-test-data.sh: tones at -6 dBFS (amplitude 0.501).
    let amplitude = 10f64.powf(-6.0 / 20.0);
    // (file, rate, tone, amplitude, seconds, extra seconds allowed after the end)
    let cases = [
        ("tone-440hz-16000-s16.wav", 16_000, 440.0, amplitude, 0.6, 0.0),
        ("tone-880hz-44100-f32.wav", 44_100, 880.0, amplitude, 0.2, 0.0),
        ("tone-440hz-44100-stereo.flac", 44_100, 440.0, amplitude, 1.0, 0.0),
        // LAME lowers the level to 0.4761 (sox's own libmad decode of this file says the same),
        // and MP3 frames pad the stream (encoder delay, the last frame): allow 0.1 s more.
        ("tone-1000hz-48000.mp3", 48_000, 1000.0, 0.4761, 1.0, 0.1),
        ("tone-660hz-22050.ogg", 22_050, 660.0, amplitude, 1.0, 0.0),
    ];
    for (name, rate, freq, amplitude, seconds, slack) in cases {
        let decoded = audio_input::decode(&data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(decoded.sample_rate, rate, "{name}");
        let got_seconds = decoded.samples.len() as f64 / f64::from(rate);
        assert!((seconds - 1e-3..=seconds + slack + 1e-3).contains(&got_seconds), "{name}: {got_seconds} s");
        let out = audio_input::resample(&decoded, ENCODER_SAMPLE_RATE).unwrap();
        assert_tone(&out, freq, amplitude, got_seconds, name);
        // The whole path, with the length limits (the 0.2 s float WAV is below the minimum).
        match audio_input::load_reference(&data(name)) {
            Ok(wav) => assert_eq!(wav.len(), out.len(), "{name}"),
            Err(EngineError::ReferenceAudio(msg)) if seconds < 0.5 => {
                assert!(msg.contains("at least"), "{msg}")
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}

fn assert_reference_error(bytes: &[u8], what: &str) -> String {
    match audio_input::decode(bytes) {
        Err(EngineError::ReferenceAudio(msg)) => msg,
        Err(other) => panic!("{what}: wrong error kind: {other}"),
        Ok(a) => panic!("{what}: decoded {} samples at {} Hz", a.samples.len(), a.sample_rate),
    }
}

#[test]
fn bad_uploads_are_reference_audio_errors() {
    let msg = assert_reference_error(b"", "empty");
    assert!(msg.contains("empty"), "{msg}");

    let text = b"Hello, this is not audio at all. It is a text file with a few lines.\n".repeat(40);
    let msg = assert_reference_error(&text, "text");
    assert!(msg.contains("not a supported audio file"), "{msg}");
    let msg = assert_load_error(&text, "text through load_reference");
    assert!(msg.contains("not a supported audio file"), "{msg}");

    // Deterministic pseudo-random bytes.
    let mut state = 0x1234_5678u32;
    let noise: Vec<u8> = (0..20_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect();
    assert_reference_error(&noise, "random bytes");

    // A WAV header that promises data it does not have, and one with no samples at all.
    let wav = wav_bytes(&[&tone(440.0, 16_000, 0.5, 0.5)], 16_000, WavFormat::Int16);
    assert_reference_error(&wav[..30], "truncated header");
    let empty = wav_bytes(&[&[]], 16_000, WavFormat::Int16);
    let msg = assert_reference_error(&empty, "no samples");
    assert!(msg.contains("no audio"), "{msg}");

    // Damaged compressed data: the MP3/FLAC with their payload overwritten by noise.
    for name in ["tone-440hz-44100-stereo.flac", "tone-1000hz-48000.mp3", "tone-660hz-22050.ogg"] {
        let mut bytes = data(name);
        let start = bytes.len() / 8;
        for (b, n) in bytes[start..].iter_mut().zip(noise.iter().cycle()) {
            *b = *n;
        }
        // Either an error or (for formats that resynchronise) some audio; never a panic.
        match audio_input::decode(&bytes) {
            Ok(_) | Err(EngineError::ReferenceAudio(_)) => {}
            Err(other) => panic!("{name}: wrong error kind: {other}"),
        }
        // Cut short in the middle: still no panic.
        let _ = audio_input::decode(&data(name)[..data(name).len() / 2]);
    }
}

fn assert_load_error(bytes: &[u8], what: &str) -> String {
    match audio_input::load_reference(bytes) {
        Err(EngineError::ReferenceAudio(msg)) => msg,
        Err(other) => panic!("{what}: wrong error kind: {other}"),
        Ok(wav) => panic!("{what}: accepted {} samples", wav.len()),
    }
}

#[test]
fn length_limits() {
    for seconds in [0.1, 0.3] {
        let short = wav_bytes(&[&tone(440.0, 16_000, seconds, 0.5)], 16_000, WavFormat::Int16);
        let msg = assert_load_error(&short, "short clip");
        assert!(msg.contains("at least 0.5 s"), "{seconds} s: {msg}");
    }
    // 61 s at 8 kHz: refused while decoding, before it is resampled.
    let long = wav_bytes(&[&tone(440.0, 8_000, 61.0, 0.5)], 8_000, WavFormat::Int16);
    let msg = assert_load_error(&long, "61 s clip");
    assert!(msg.contains("60 s"), "{msg}");
    // Just over the limit after resampling, and just inside it.
    assert!(audio_input::check_length(60 * ENCODER_SAMPLE_RATE as usize).is_ok());
    assert!(audio_input::check_length(ENCODER_SAMPLE_RATE as usize / 2).is_ok());
    match audio_input::check_length(60 * ENCODER_SAMPLE_RATE as usize + 2_400) {
        Err(EngineError::ReferenceAudio(msg)) => assert!(msg.contains("at most 60 s"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(audio_input::check_length(ENCODER_SAMPLE_RATE as usize / 2 - 1).is_err());
    assert!(audio_input::check_length(0).is_err());
}

#[test]
fn resample_rejects_a_zero_rate() {
    let audio = DecodedAudio { samples: vec![0.0; 100], sample_rate: 0 };
    assert!(matches!(
        audio_input::resample(&audio, ENCODER_SAMPLE_RATE),
        Err(EngineError::ReferenceAudio(_))
    ));
}
