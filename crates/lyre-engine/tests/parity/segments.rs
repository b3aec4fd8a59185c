//! Long texts: a session speaks its segments one after another in one slot, each from KV
//! position zero with the segment's seed, while the codec decoder carries on, so the codes are
//! each segment's codes alone and the audio is the whole clip decoded at once (seams, segments
//! ended by EOS with a tick already in flight, and decoder positions past the RoPE table).

use lyre_engine::codec::StandaloneDecoder;
use lyre_engine::segment::segment_seed;
use lyre_engine::{Engine, EngineOptions, FinishReason, SessionRequest, TextInput};

use crate::support::*;

/// A small cache, so that segments are a sentence or two long.
fn small(max_positions: usize) -> EngineOptions {
    EngineOptions { max_positions, ..options(2, false) }
}

#[derive(Debug, Default)]
struct Spoken {
    codes: Vec<[u16; 16]>,
    pcm: Vec<f32>,
    /// Each frame's segment.
    segments: Vec<u32>,
    finished: Option<FinishReason>,
    /// The frame counts at which a step reported a flush's text all spoken.
    flushed_at: Vec<usize>,
}

fn speak(engine: &mut Engine, req: SessionRequest) -> Spoken {
    let id = engine.start(req).expect("start");
    let mut got = Spoken::default();
    while got.finished.is_none() {
        for o in engine.step().expect("step") {
            assert_eq!(o.id, id);
            if let Some(f) = o.frame {
                assert_eq!(f.index as usize, got.codes.len(), "frame indices are contiguous");
                assert_eq!(f.pcm.len(), 1920, "every frame is 1920 samples");
                got.codes.push(f.codes);
                got.pcm.extend(f.pcm);
                got.segments.push(f.segment);
            }
            if o.finished.is_some() {
                got.finished = o.finished;
            }
        }
    }
    assert_eq!(engine.live_sessions(), 0);
    got
}

/// The clip decoded in one go by a decoder with room for all of it (no position wraps).
fn decode_whole(codes: &[[u16; 16]]) -> Vec<f32> {
    let model = lyre_engine::checkpoint::ModelDir::open(fixture("tiny-custom-voice")).unwrap();
    let mut decoder =
        StandaloneDecoder::new(gpu(), &model.speech_config, &model.speech_weights, 1, codes.len(), &tuning())
            .unwrap();
    decoder.decode_clip(codes).unwrap()
}

#[test]
fn each_segment_is_spoken_as_alone_with_its_seed() {
    let text = "The river ran cold that spring. Nobody in the village remembered a year like it, \
                not even the miller, who was old. Children stayed inside; the dogs slept by the fire. \
                Then, one morning, the ice broke! Everyone came out to watch it go. 春天来了。";
    let mut engine = engine_from("tiny-custom-voice", small(128));
    let mut req = case_request("tiny-custom-voice", "e2e_cv_nonstream_english_vivian", &engine).unwrap();
    req.text = TextInput::Whole(text.into());
    req.sampling =
        lyre_engine::sampling::SamplingParams::from_generation_config(&engine.model().generation, 7);
    req.max_frames = u32::MAX;
    req.max_frames_per_segment = Some(6);
    let segments = engine.segments(&req).unwrap();
    assert!(segments.len() >= 4, "{segments:?}");
    assert_eq!(segments.concat().replace(' ', ""), text.replace(' ', ""), "every character is spoken");

    let got = speak(&mut engine, req.clone());
    let mut want = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let mut alone = req.clone();
        alone.text = TextInput::Whole(segment.clone());
        alone.sampling.seed = segment_seed(7, i as u32);
        let spoken = speak(&mut engine, alone);
        assert!(!spoken.codes.is_empty(), "segment {i} speaks");
        assert_eq!(
            got.segments.iter().filter(|&&s| s == i as u32).count(),
            spoken.codes.len(),
            "segment {i}'s frames are marked with its index"
        );
        want.extend(spoken.codes);
    }
    assert_eq!(got.codes, want, "the codes are each segment's codes alone, in order");
    assert!(got.segments.windows(2).all(|w| w[0] <= w[1]));
    assert_matches(
        "long text vs its codes decoded whole",
        &got.pcm,
        &decode_whole(&got.codes),
        0.99999,
        1e-4,
    );
}

/// Twenty sentences, each its own segment, each ending with EOS after the official reference's
/// frames, with and without a tick in flight at every EOS; 160 frames take the decoder past its
/// RoPE table (144 positions for a 128-position cache), so its positions wrap once.
#[test]
fn seams_at_eos_and_wrapped_decoder_positions_keep_one_stream() {
    let case = "e2e_cv_nonstream_english_vivian";
    let reference = Refs::open("tiny-custom-voice", case).frames("codes");
    for pipelined in [true, false] {
        let mut engine = engine_from("tiny-custom-voice", small(128));
        engine.set_pipelining(pipelined);
        let mut req = case_request("tiny-custom-voice", case, &engine).unwrap();
        let sentence = match &req.text {
            TextInput::Whole(t) => t.clone(),
            _ => unreachable!(),
        };
        req.text = TextInput::Whole(vec![sentence.as_str(); 20].join(" "));
        req.max_frames = u32::MAX;
        assert_eq!(engine.segments(&req).unwrap(), vec![sentence.clone(); 20]);
        let got = speak(&mut engine, req);
        assert_eq!(got.finished, Some(FinishReason::Eos));
        assert_eq!(got.codes, reference.repeat(20), "pipelined {pipelined}: each segment is the reference");
        assert_eq!(got.segments.last(), Some(&19));
        let what = format!("pipelined {pipelined}: 20 segments vs their codes decoded whole");
        assert_matches(&what, &got.pcm, &decode_whole(&got.codes), 0.99999, 1e-4);
    }
}

/// A streamed session flushed after its first sentence (a voice agent's turn): the second
/// sentence is a new utterance in the same session, each equal to the official streaming
/// reference, and the audio is one stream.
#[test]
fn end_utterance_starts_the_next_utterance_in_the_same_stream() {
    let case = "e2e_cv_stream_auto_ryan";
    let reference = Refs::open("tiny-custom-voice", case).frames("codes");
    let mut engine = engine_from("tiny-custom-voice", small(128));
    let mut req = case_request("tiny-custom-voice", case, &engine).unwrap();
    let TextInput::Whole(sentence) = std::mem::replace(&mut req.text, TextInput::Streamed) else {
        unreachable!()
    };
    req.max_frames = u32::MAX;
    req.max_frames_per_segment = Some(reference.len() as u32);
    let id = engine.start(req).unwrap();
    let mut got = Spoken::default();
    let collect = |engine: &mut Engine, got: &mut Spoken| {
        for o in engine.step().unwrap() {
            if let Some(f) = o.frame {
                got.codes.push(f.codes);
                got.pcm.extend(f.pcm);
                got.segments.push(f.segment);
            }
            if o.flushed {
                got.flushed_at.push(got.codes.len());
            }
            got.finished = got.finished.take().or(o.finished);
        }
    };
    // The first sentence arrives in pieces while frames are made.
    let (a, b) = sentence.split_at(7);
    engine.append_text(id, a).unwrap();
    collect(&mut engine, &mut got);
    engine.append_text(id, b).unwrap();
    assert!(engine.end_utterance(id).unwrap(), "a flush with text to speak");
    for _ in 0..30 {
        collect(&mut engine, &mut got);
    }
    assert_eq!(got.codes, reference, "the first utterance is spoken whole; the session waits");
    assert_eq!(got.finished, None);
    assert_eq!(got.flushed_at, [reference.len()], "the flush's end is reported once, after its last frame");
    assert!(!engine.end_utterance(id).unwrap(), "nothing new to flush");
    engine.append_text(id, &sentence).unwrap();
    engine.end_text(id).unwrap();
    while got.finished.is_none() {
        collect(&mut engine, &mut got);
    }
    assert_eq!(got.codes, reference.repeat(2));
    assert_eq!(got.segments, [vec![0; reference.len()], vec![1; reference.len()]].concat());
    assert_matches(
        "flushed stream vs its codes decoded whole",
        &got.pcm,
        &decode_whole(&got.codes),
        0.99999,
        1e-4,
    );
}

/// Text streamed for much longer than one cache holds: the session rolls over to new utterances
/// at sentence ends (here from 8 tokens on, two sentences), and the stream ends when the text does.
#[test]
fn a_long_stream_rolls_over_at_sentence_ends() {
    let mut engine = engine_from("tiny-custom-voice", EngineOptions { segment_tokens: 16, ..small(96) });
    let mut req = case_request("tiny-custom-voice", "e2e_cv_stream_auto_ryan", &engine).unwrap();
    req.text = TextInput::Streamed;
    req.max_frames = u32::MAX;
    req.max_frames_per_segment = Some(16);
    req.sampling.ignore_eos = true;
    let id = engine.start(req).unwrap();
    let mut got = Spoken::default();
    let step = |engine: &mut Engine, got: &mut Spoken| {
        for o in engine.step().unwrap() {
            if let Some(f) = o.frame {
                got.segments.push(f.segment);
            }
            got.finished = o.finished;
        }
    };
    for name in "abcdefghijkl".chars() {
        engine.append_text(id, &format!("Sentence {name} is short. ")).unwrap();
        step(&mut engine, &mut got);
        assert_eq!(got.finished, None);
    }
    engine.end_text(id).unwrap();
    while got.finished.is_none() {
        step(&mut engine, &mut got);
    }
    assert_eq!(got.finished, Some(FinishReason::MaxFrames), "the last utterance ran to its limit (no EOS)");
    let utterances = *got.segments.last().unwrap() + 1;
    assert_eq!(utterances, 6, "two sentences per utterance");
    assert_eq!(got.segments.len(), 6 * 16);
}

/// A model that never says EOS still ends each segment, at 5 s + 1 s per text token of that
/// segment, and goes on with the next.
#[test]
fn each_segment_is_held_to_its_own_runaway_limit() {
    let mut engine = engine_from("tiny-custom-voice", small(256));
    let mut req = case_request("tiny-custom-voice", "e2e_cv_nonstream_english_vivian", &engine).unwrap();
    let segments = ["Hi.", "Yes, of course."];
    req.text = TextInput::Segments(segments.iter().map(|s| s.to_string()).collect());
    req.max_frames = u32::MAX;
    req.sampling.ignore_eos = true;
    let got = speak(&mut engine, req);
    assert_eq!(got.finished, Some(FinishReason::MaxFrames));
    for (i, text) in segments.iter().enumerate() {
        let tokens = engine.model().tokenizer.assistant_text_ids(text).unwrap().len() - 8;
        let limit = lyre_engine::policy::default_max_frames(tokens, &engine.model().generation);
        let frames = got.segments.iter().filter(|&&s| s == i as u32).count();
        assert_eq!(frames as u32, limit, "segment {i} ({tokens} tokens)");
    }
}
