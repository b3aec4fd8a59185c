//! In-context voice cloning from a 45 s, 48 kHz FLAC reference, end to end against the official
//! `generate_voice_clone` (greedy) in `tests/data/official`: our decode, soxr resampling and both
//! encoders give the official reference codes and x-vector, and the session the official codes.

use lyre_engine::audio_input;
use lyre_engine::prompt::{TextMode, VoiceReference, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::speaker_encoder::SpeakerEncoder;
use lyre_engine::speech_encoder::SpeechEncoder;
use lyre_engine::{EngineOptions, SessionRequest, TextInput};

use crate::official::{clip_bytes, code_agreement, codes, f32s, ids, manifest};
use crate::support::*;
use crate::texts::{assert_codes, run};

#[test]
fn icl_with_a_45_second_48_khz_reference_gives_the_official_greedy_codes() {
    let case = &manifest()["greedy_icl"]["icl_48k_45s"];
    let clip = case["clip"].as_str().unwrap();
    let wav = audio_input::load_reference(&clip_bytes(&format!("clips/{clip}"))).unwrap();
    assert_eq!(wav.len(), 45 * 24_000);

    let opts = EngineOptions {
        max_positions: 1024,
        max_rows_per_tick: 1024,
        segment_tokens: 512,
        ..options(1, false)
    };
    let mut engine = engine_from("tiny-base", opts);
    let model = engine.model();
    let reference = SpeechEncoder::load(model).unwrap().encode(&wav).unwrap();
    let (equal, first) = code_agreement(&reference, &codes(&format!("{clip}.codes")));
    assert_eq!((equal, first), (1.0, None), "reference codes of the 45 s clip");
    let x_vector = SpeakerEncoder::load(model).unwrap().embed(&wav).unwrap();
    let want = f32s(&format!("{clip}.xvec"));
    assert_matches("x-vector", &x_vector, &want, 0.999_999, 1e-5);

    let text = manifest()["texts"][case["text"].as_str().unwrap()]["text"].as_str().unwrap();
    let ref_text = case["ref_text"].as_str().unwrap();
    let tok = &model.tokenizer;
    assert_eq!(tok.assistant_text_ids(text).unwrap(), ids(&case["input_ids"]), "prompt ids");
    assert_eq!(tok.ref_text_ids(ref_text).unwrap(), ids(&case["ref_ids"]), "reference transcript ids");

    let mut sampling = SamplingParams::from_generation_config(&model.generation, 0).greedy();
    sampling.repetition_penalty = case["repetition_penalty"].as_f64().unwrap() as f32;
    let req = SessionRequest {
        text: TextInput::Whole(text.to_string()),
        voice: VoiceSpec::Icl {
            x_vector,
            reference: VoiceReference { text: ref_text.to_string(), codes: reference },
        },
        language: case["language"].as_str().unwrap().to_string(),
        instruct: None,
        mode: TextMode::Streaming,
        sampling,
        max_frames: case["max_new_tokens"].as_u64().unwrap() as u32 - 1,
        max_frames_per_segment: None,
    };
    let (got, _) = run(&mut engine, req, &[]);
    assert_codes("ICL, 45 s 48 kHz reference", case, &got, &codes("icl_48k_45s.codes"), 1e-4);
}
