//! Teacher forcing (`Engine::force_codes`): a session fed the official codes reproduces the
//! official logits and hidden states frame by frame, whatever its own sampler would choose —
//! what the real-size fidelity check (scripts/fidelity/) relies on.

use lyre_engine::FinishReason;

use crate::e2e::run_alone_forced;
use crate::support::*;

const CASE: &str = "e2e_cv_nonstream_english_vivian";

#[test]
fn a_sampling_session_forced_onto_the_official_codes_gives_the_official_logits() {
    let mut engine = engine("tiny-custom-voice", 2);
    let mut req = case_request("tiny-custom-voice", CASE, &engine).unwrap();
    let r = Refs::open("tiny-custom-voice", CASE);
    let want = frames(&r.i64("codes"));
    // Hot sampling that would wander off the greedy path at once, and no EOS.
    req.sampling.talker.do_sample = true;
    req.sampling.code_predictor.do_sample = true;
    req.sampling.talker.temperature = 5.0;
    req.sampling.code_predictor.temperature = 5.0;
    req.sampling.seed = 99;
    req.sampling.ignore_eos = true;
    req.max_frames = want.len() as u32;
    let run = run_alone_forced(&mut engine, req, want.clone());
    assert_eq!(run.codes, want, "every frame takes the forced codes");
    assert_eq!(run.reason, FinishReason::MaxFrames);
    let talker: Vec<f32> = run.talker.iter().flatten().copied().collect();
    let want_talker = r.f32("talker_logits");
    assert_matches("forced talker logits", &talker, &want_talker[..talker.len()], 0.99999, 1e-4);
    let cp: Vec<f32> = run.code_predictor.iter().flatten().copied().collect();
    assert_matches("forced code-predictor logits", &cp, &r.f32("cp_logits")[..cp.len()], 0.99999, 1e-4);
    // The hidden state behind each frame's logits is the codec head's input: as many as frames,
    // one talker-sized vector each, not all equal.
    assert_eq!(run.hidden.len(), want.len());
    let h = engine.model().config.talker_config.hidden_size;
    assert!(run.hidden.iter().all(|v| v.len() == h && v.iter().all(|x| x.is_finite())));
    assert_ne!(run.hidden[0], run.hidden[1]);
}

#[test]
fn forcing_only_the_first_frames_leaves_the_rest_to_the_sampler() {
    let mut engine = engine("tiny-custom-voice", 2);
    let greedy = case_request("tiny-custom-voice", CASE, &engine).unwrap();
    let alone = crate::e2e::run_alone(&mut engine, greedy.clone());
    // Force two frames that differ from the greedy ones: the session follows them, then goes
    // on greedily from there, so its later frames change too.
    let mut forced = alone.codes[..2].to_vec();
    forced[0][0] = (forced[0][0] + 1) % 2048;
    forced[1][3] = (forced[1][3] + 7) % 2048;
    let mut req = greedy;
    req.sampling.ignore_eos = true;
    req.max_frames = alone.codes.len() as u32;
    let run = run_alone_forced(&mut engine, req, forced.clone());
    assert_eq!(&run.codes[..2], &forced[..]);
    assert_ne!(run.codes[2..], alone.codes[2..], "later frames follow from the forced ones");
}
