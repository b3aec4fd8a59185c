use std::sync::OnceLock;
use std::time::Instant;

use lyre_engine::checkpoint::ModelDir;
use lyre_engine::speech_encoder::{SpeechEncoder, MAX_ENCODE_SAMPLES};
use lyre_engine::EngineError;

use crate::support::{fixture, Refs};

fn encoder() -> &'static SpeechEncoder {
    static ENC: OnceLock<SpeechEncoder> = OnceLock::new();
    ENC.get_or_init(|| {
        let model = ModelDir::open(fixture("tiny-base")).expect("fixture loads");
        SpeechEncoder::load(&model).expect("speech encoder loads")
    })
}

fn first_difference(got: &[[u16; 16]], want: &[[u16; 16]]) -> Option<(usize, usize, u16, u16)> {
    for (f, (g, w)) in got.iter().zip(want).enumerate() {
        for q in 0..16 {
            if g[q] != w[q] {
                return Some((f, q, g[q], w[q]));
            }
        }
    }
    None
}

#[test]
fn codes_equal_the_official_encoder() {
    let refs = Refs::open("tiny-base", "speech_encoder");
    let wav = refs.f32("wav");
    assert_eq!(wav.len(), 25_000);
    let want = refs.frames("codes");
    assert_eq!(want.len(), 14);
    let got = encoder().encode(&wav).expect("encodes");
    assert_eq!(got.len(), want.len(), "frames");
    assert_eq!(first_difference(&got, &want), None, "(frame, quantizer, ours, official)");
    assert_eq!(encoder().quantizer_layers(), 32);
}

/// The ICL end-to-end cases keep `ref_code` but not their reference audio; the oracle
/// (`make_tiny.py`) used one clip for them, the speaker encoder and the speech encoder, which
/// the speaker-encoder refs also store. Their `ref_code` is what we compute from it.
#[test]
fn icl_reference_codes_equal_ours() {
    let wav = Refs::open("tiny-base", "speaker_encoder").f32("wav");
    assert_eq!(wav, Refs::open("tiny-base", "speech_encoder").f32("wav"), "one reference clip");
    let ours = encoder().encode(&wav).unwrap();
    for case in ["e2e_base_icl_stream_english", "e2e_base_icl_nonstream_auto"] {
        let e2e = Refs::open("tiny-base", case);
        assert_eq!(e2e.shape("ref_code"), vec![14, 16], "{case}");
        let want = e2e.frames("ref_code");
        assert_eq!(first_difference(&ours, &want), None, "{case}: (frame, quantizer, ours, official)");
    }
}

#[test]
fn frame_count_is_ceil_of_len_over_1920_down_to_one_sample() {
    let enc = encoder();
    let tone = |n: usize| (0..n).map(|i| (i as f32 * 0.05).sin() * 0.3).collect::<Vec<f32>>();
    for (len, frames) in [(1, 1), (7, 1), (1919, 1), (1920, 1), (1921, 2), (3840, 2), (25_000, 14)] {
        assert_eq!(enc.encode(&tone(len)).unwrap().len(), frames, "{len} samples");
    }
    // Causal end to end: frame f sees samples < 1920·(f + 1) only, so a whole-frame prefix
    // encodes to a prefix of the codes.
    let long = enc.encode(&tone(25_000)).unwrap();
    let short = enc.encode(&tone(1920 * 6)).unwrap();
    assert_eq!(short[..], long[..6]);
}

#[test]
fn unusable_input_is_a_reference_audio_error() {
    let enc = encoder();
    let is_ref = |r: Result<Vec<[u16; 16]>, EngineError>| matches!(r, Err(EngineError::ReferenceAudio(_)));
    assert!(is_ref(enc.encode(&[])));
    assert!(is_ref(enc.encode(&[0.0, f32::NAN, 0.0])));
    assert!(is_ref(enc.encode(&[f32::INFINITY])));
    assert!(is_ref(enc.encode(&vec![0.0; MAX_ENCODE_SAMPLES + 1])));
    // Silence and full-scale input are fine.
    assert_eq!(enc.encode(&[0.0; 4000]).unwrap().len(), 3);
    assert_eq!(enc.encode(&[1.0; 4000]).unwrap().len(), 3);
}

#[test]
fn ten_seconds_on_the_tiny_encoder() {
    let wav: Vec<f32> = (0..240_000).map(|i| (i as f32 * 0.013).sin() * 0.2).collect();
    let enc = encoder();
    enc.encode(&wav).unwrap();
    let start = Instant::now();
    let codes = enc.encode(&wav).unwrap();
    let took = start.elapsed();
    assert_eq!(codes.len(), 125);
    eprintln!("tiny speech encoder: 10 s clip in {took:?}");
}
