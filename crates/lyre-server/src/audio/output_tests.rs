//! Tests of the output stages together: validation, frame sizes, clip = stream, G.711 at 8 kHz
//! against an exact band-limited reference, and `speed`.

use super::super::test_util::{snr_db, streamed, sweep};
use super::super::{encode_clip, G711Law, FRAME_SAMPLES};
use super::*;

fn spec(format: &str, rate: Option<u32>, speed: Option<f64>) -> OutputSpec {
    OutputSpec::new(format.parse().unwrap(), None, rate, speed).unwrap()
}

/// A linear chirp from `f0` to `f1` Hz over `len` samples at 24 kHz, sampled at `rate` Hz and
/// delayed by `delay` samples: the exact band-limited version of the same signal at any rate.
fn chirp(f0: f64, f1: f64, len_24k: usize, rate: u32, delay: usize) -> Vec<f32> {
    let duration = len_24k as f64 / 24_000.0;
    let n = len_24k * rate as usize / 24_000;
    (0..n)
        .map(|i| {
            let t = (i as f64 - delay as f64) / f64::from(rate);
            if !(0.0..duration).contains(&t) {
                return 0.0;
            }
            let phase = 2.0 * std::f64::consts::PI * (f0 * t + (f1 - f0) * t * t / (2.0 * duration));
            (0.5 * phase.sin()) as f32
        })
        .collect()
}

#[test]
fn the_default_output_is_the_format_encoder_itself() {
    let samples = sweep(4 * FRAME_SAMPLES + 10);
    // G.711's encoder takes 8 kHz samples; its output resamples, so it is tested below.
    for format in AudioFormat::ALL.into_iter().filter(|f| f.g711_law().is_none() && f.is_built()) {
        let plain = OutputSpec::plain(format);
        let want = encode_clip(format, &samples, plain.sample_rate).unwrap();
        assert_eq!(plain.encode_clip(&samples).unwrap(), want, "{format}");
        // `speed: 1.0` and the default rate change nothing, byte for byte.
        let explicit = OutputSpec::new(format, None, Some(plain.sample_rate), Some(1.0)).unwrap();
        assert_eq!(explicit, plain, "{format}");
    }
}

#[test]
fn raw_frames_have_the_stated_size_at_every_rate() {
    for rate in SUPPORTED_RATES {
        let s = spec("pcm", Some(rate), None);
        let mut out = s.stream().unwrap();
        let bytes = s.bytes_per_frame().unwrap();
        assert_eq!(bytes, 2 * rate as usize * 80 / 1000);
        for _ in 0..3 {
            assert_eq!(out.push(&[0.1; FRAME_SAMPLES]).unwrap().len(), bytes, "{rate}");
        }
    }
    assert_eq!(spec("pcm16", Some(16_000), None).bytes_per_frame(), Some(2560));
    for law in ["mulaw", "alaw"] {
        let s = spec(law, None, None);
        assert_eq!((s.sample_rate, s.bytes_per_frame()), (8_000, Some(640)));
        let mut out = s.stream().unwrap();
        assert_eq!(out.push(&[0.1; FRAME_SAMPLES]).unwrap().len(), 640);
        // The resampler's 10 ms delay comes out at the end.
        assert_eq!(out.finish().unwrap().len(), 80);
    }
    assert_eq!(spec("opus", None, None).bytes_per_frame(), None);
    assert_eq!(spec("pcm", None, Some(2.0)).bytes_per_frame(), None);
}

#[test]
fn frame_by_frame_equals_the_whole_clip_for_every_rate_and_format() {
    let samples = sweep(6 * FRAME_SAMPLES + 333);
    let mp3 = if cfg!(feature = "mp3") { "mp3" } else { "flac" };
    for format in ["pcm", "wav", "flac", mp3, "mulaw", "alaw"] {
        let rates: &[u32] = if format.ends_with("law") { &[8_000] } else { &SUPPORTED_RATES };
        for &rate in rates {
            for speed in [None, Some(1.5)] {
                let s = spec(format, Some(rate), speed);
                let clip = s.encode_clip(&samples).unwrap();
                let stream = streamed(&mut s.stream().unwrap(), &samples);
                let header = match format {
                    "wav" => 44,
                    "flac" => 42,
                    _ => 0,
                };
                assert_eq!(clip.len(), stream.len(), "{format} {rate} {speed:?}");
                assert_eq!(clip[header..], stream[header..], "{format} {rate} {speed:?}");
            }
        }
    }
}

#[test]
fn mulaw_at_8khz_is_the_24khz_audio_band_limited_and_companded() {
    // A chirp inside telephony's band: its exact 8 kHz version is known in closed form.
    let len = 25 * FRAME_SAMPLES;
    let input = chirp(200.0, 3_000.0, len, 24_000, 0);
    for (name, law) in [("mulaw", G711Law::Mulaw), ("alaw", G711Law::Alaw)] {
        let s = spec(name, None, None);
        let bytes = streamed(&mut s.stream().unwrap(), &input);
        assert_eq!(bytes.len(), 25 * 640 + 80);
        let decoded: Vec<f32> = bytes.iter().map(|&b| f32::from(law.decode(b)) / 32767.0).collect();
        let want = chirp(200.0, 3_000.0, len, 8_000, 80);
        // Past the first and last 20 ms (the filter's ramps), G.711's ~38 dB SNR is what is left.
        let (got, want) = (&decoded[160..want.len() - 160], &want[160..want.len() - 160]);
        let snr = snr_db(want, got);
        assert!(snr > 30.0, "{name}: {snr:.1} dB");
    }
}

#[test]
fn speed_two_halves_the_duration_and_one_changes_nothing() {
    let samples = sweep(100 * FRAME_SAMPLES);
    let normal = spec("pcm", None, None).encode_clip(&samples).unwrap();
    assert_eq!(spec("pcm", None, Some(1.0)).encode_clip(&samples).unwrap(), normal);
    let fast = spec("pcm", None, Some(2.0)).encode_clip(&samples).unwrap();
    let ratio = fast.len() as f64 / normal.len() as f64;
    assert!((ratio - 0.5).abs() <= 0.02, "{ratio}");
    let slow = spec("pcm", Some(16_000), Some(0.5)).encode_clip(&samples).unwrap();
    let ratio = slow.len() as f64 / (normal.len() as f64 * 2.0 / 3.0);
    assert!((ratio - 2.0).abs() <= 0.04, "{ratio}");
}

#[test]
fn bad_output_fields_name_their_field() {
    type Case<'a> = (&'a str, Option<&'a str>, Option<u32>, Option<f64>, &'a str);
    let cases: [Case; 9] = [
        ("pcm", None, Some(11_025), None, "sample_rate"),
        ("mulaw", None, Some(16_000), None, "sample_rate"),
        ("opus", None, Some(48_000), None, "sample_rate"),
        ("wav", Some("mulaw"), Some(24_000), None, "sample_rate"),
        ("pcm", None, None, Some(0.2), "speed"),
        ("pcm", None, None, Some(4.01), "speed"),
        // Just under the bound, though it rounds onto it as an f32.
        ("pcm", None, None, Some(0.249_999_999_9), "speed"),
        ("wav", Some("adpcm"), None, None, "encoding"),
        ("flac", Some("mulaw"), None, None, "encoding"),
    ];
    for (format, encoding, rate, speed, field) in cases {
        let err = OutputSpec::new(format.parse().unwrap(), encoding, rate, speed).unwrap_err();
        assert_eq!(err.field(), Some(field), "{format} {encoding:?} {rate:?} {speed:?}: {err}");
    }
    let g711_wav = OutputSpec::new(AudioFormat::Wav, Some("alaw"), None, None).unwrap();
    assert_eq!((g711_wav.sample_rate, g711_wav.wav_encoding), (8_000, WavEncoding::G711(G711Law::Alaw)));
}
