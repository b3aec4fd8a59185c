//! Tests of the format names, the i16 rule and the clip/stream agreement of every format.

use super::test_util::{streamed, sweep};
use super::*;

#[test]
fn format_names_round_trip_and_ignore_case() {
    for f in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
        assert_eq!(f.as_str().parse::<AudioFormat>().unwrap(), f);
        assert_eq!(f.as_str().to_uppercase().parse::<AudioFormat>().unwrap(), f);
        assert_eq!(f.to_string(), f.as_str());
    }
    assert_eq!(AudioFormat::default(), AudioFormat::Wav);
}

#[test]
fn unknown_format_error_lists_the_valid_names() {
    let err = "aac".parse::<AudioFormat>().unwrap_err();
    let names = if cfg!(feature = "mp3") {
        "wav, pcm, opus, mp3, flac, mulaw, alaw"
    } else {
        "wav, pcm, opus, flac, mulaw, alaw"
    };
    assert_eq!(err.to_string(), format!("unknown audio format `aac`: expected one of {names}"));
}

#[cfg(feature = "mp3")]
#[test]
fn the_default_build_has_every_format() {
    assert!(AudioFormat::ALL.iter().all(|f| f.is_built()));
}

/// Without the `mp3` feature (no LAME, no LGPL code) `mp3` is a clear error, never a panic.
#[cfg(not(feature = "mp3"))]
#[test]
fn a_build_without_mp3_names_the_feature() {
    let err = "mp3".parse::<AudioFormat>().unwrap_err();
    assert!(matches!(err, AudioError::NotBuilt { format: AudioFormat::Mp3 }), "{err}");
    assert!(err.to_string().contains("`mp3` feature"), "{err}");
    assert!(err.to_string().ends_with("use one of wav, pcm, opus, flac, mulaw, alaw"), "{err}");
    assert!(stream_encoder(AudioFormat::Mp3, SAMPLE_RATE).is_err());
}

#[cfg(feature = "mp3")]
#[test]
fn serde_uses_the_same_names() {
    let f: AudioFormat = serde_json::from_str("\"MP3\"").unwrap();
    assert_eq!(f, AudioFormat::Mp3);
    assert_eq!(serde_json::to_string(&AudioFormat::Opus).unwrap(), "\"opus\"");
    let err = serde_json::from_str::<AudioFormat>("\"ogg\"").unwrap_err();
    assert!(err.to_string().contains("expected one of wav, pcm, opus, mp3, flac, mulaw, alaw"), "{err}");
    assert_eq!(serde_json::from_str::<AudioFormat>("\"pcm16\"").unwrap(), AudioFormat::Pcm);
}

#[test]
fn content_types_and_extensions() {
    let got: Vec<_> = AudioFormat::ALL.iter().map(|f| (f.content_type(), f.file_extension())).collect();
    assert_eq!(
        got,
        [
            ("audio/wav", "wav"),
            ("audio/pcm", "pcm"),
            ("audio/ogg", "opus"),
            ("audio/mpeg", "mp3"),
            ("audio/flac", "flac"),
            ("audio/basic", "ul"),
            ("audio/x-alaw-basic", "al")
        ]
    );
}

#[test]
fn f32_to_i16_clamps_and_rounds() {
    let cases = [
        (0.0, 0),
        (1.0, 32767),
        (-1.0, -32767),
        (2.5, 32767),
        (-7.0, -32767),
        (f32::INFINITY, 32767),
        (f32::NEG_INFINITY, -32767),
        (f32::NAN, 0),
        (0.5 / 32767.0, 1),
        (-0.5 / 32767.0, -1),
        (0.49 / 32767.0, 0),
        (1000.6 / 32767.0, 1001),
    ];
    for (x, want) in cases {
        assert_eq!(f32_to_i16(x), want, "{x}");
    }
}

#[test]
fn clip_equals_stream_for_every_format() {
    let samples = sweep(5 * FRAME_SAMPLES + 100);
    for format in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
        let rate = OutputSpec::plain(format).sample_rate;
        let clip = encode_clip(format, &samples, rate).unwrap();
        let stream = streamed(stream_encoder(format, rate).unwrap().as_mut(), &samples);
        let header = match format {
            AudioFormat::Wav => 44,
            AudioFormat::Flac => 42,
            _ => 0,
        };
        assert_eq!(clip.len(), stream.len(), "{format}");
        assert_eq!(clip[header..], stream[header..], "{format}");
    }
}

#[test]
fn push_after_finish_is_an_error() {
    for format in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
        let mut encoder = stream_encoder(format, OutputSpec::plain(format).sample_rate).unwrap();
        encoder.push(&[]).unwrap();
        encoder.push(&[0.0; FRAME_SAMPLES]).unwrap();
        encoder.finish().unwrap();
        assert!(matches!(encoder.push(&[0.0; 10]), Err(AudioError::Finished { .. })), "{format}");
        assert!(matches!(encoder.finish(), Err(AudioError::Finished { .. })), "{format}");
    }
}

#[test]
fn empty_clips_encode() {
    for format in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
        let bytes = encode_clip(format, &[], OutputSpec::plain(format).sample_rate).unwrap();
        let headerless = matches!(format, AudioFormat::Pcm | AudioFormat::Mulaw | AudioFormat::Alaw);
        assert_eq!(bytes.is_empty(), headerless, "{format}");
    }
}

#[test]
fn zero_sample_rate_is_rejected_everywhere() {
    for format in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
        let err = encode_clip(format, &[0.0], 0).unwrap_err();
        assert!(matches!(err, AudioError::UnsupportedSampleRate { rate: 0, .. }), "{format}: {err}");
    }
}
