//! Pipelined ticks (the next tick submitted before the current one is read) give exactly
//! the frames of unpipelined ticks, also when sessions join, end or are cancelled while a
//! speculative tick is in flight.

use std::collections::BTreeMap;

use lyre_engine::{Engine, FinishReason, SessionId, SessionRequest, StepOutput, TickScope};

use crate::support::*;

const CASES: [&str; 3] =
    ["e2e_cv_nonstream_english_vivian", "e2e_cv_stream_auto_ryan", "e2e_cv_instruct_english_serena_direct"];

#[derive(Debug, Default, PartialEq)]
struct Got {
    codes: Vec<[u16; 16]>,
    pcm: Vec<f32>,
    finished: Option<FinishReason>,
}

fn collect(got: &mut BTreeMap<SessionId, Got>, engine: &mut Engine) {
    let outputs = engine.step().unwrap();
    record(got, outputs);
}

fn record(got: &mut BTreeMap<SessionId, Got>, outputs: Vec<StepOutput>) {
    for o in outputs {
        let g = got.entry(o.id).or_default();
        assert!(g.finished.is_none(), "session {} has output after it finished", o.id);
        if let Some(f) = o.frame {
            assert_eq!(f.index as usize, g.codes.len(), "frames arrive in order");
            g.codes.push(f.codes);
            g.pcm.extend(f.pcm);
        }
        g.finished = o.finished;
    }
}

/// Starts the cases one tick apart (the last with a 4-frame limit) and runs all to the end.
fn staggered(pipelined: bool) -> Vec<Got> {
    staggered_on(engine_with("tiny-custom-voice", 3, false), pipelined)
}

fn staggered_on(mut engine: Engine, pipelined: bool) -> Vec<Got> {
    engine.set_pipelining(pipelined);
    let mut got = BTreeMap::new();
    let mut ids = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let mut req = case_request("tiny-custom-voice", case, &engine).unwrap();
        if i == 2 {
            req.max_frames = 4;
        }
        ids.push(engine.start(req).unwrap());
        collect(&mut got, &mut engine);
    }
    while engine.has_work() {
        collect(&mut got, &mut engine);
    }
    assert_eq!(engine.live_sessions(), 0);
    ids.iter().map(|id| got.remove(id).unwrap_or_default()).collect()
}

#[test]
fn pipelined_ticks_equal_unpipelined_ticks() {
    let plain = staggered(false);
    let piped = staggered(true);
    for (i, (a, b)) in plain.iter().zip(&piped).enumerate() {
        assert!(!a.codes.is_empty(), "{}: frames", CASES[i]);
        assert!(a.finished.is_some(), "{}: finished", CASES[i]);
        assert_eq!(a, b, "{}: pipelined output differs", CASES[i]);
    }
    assert_eq!(piped[2].codes.len(), 4);
    assert_eq!(piped[2].finished, Some(FinishReason::MaxFrames), "the frame limit holds");
}

/// Unpipelined, every tick goes onto an idle GPU, so each is submitted in parts, the first
/// after `first_submit_dispatches` dispatches, each next four times as long: the frames are
/// those of one submission wherever the cuts fall (after dispatch 1, 5, 21, 85...; inside the
/// talker; or nowhere).
#[test]
fn ticks_submitted_in_parts_equal_one_submission() {
    let run = |first: u32| {
        let mut opts = options(3, false);
        opts.tuning.first_submit_dispatches = first;
        staggered_on(engine_from("tiny-custom-voice", opts), false)
    };
    let whole = run(0);
    assert!(whole.iter().all(|g| !g.codes.is_empty() && g.finished.is_some()));
    for first in [1, 40] {
        assert_eq!(run(first), whole, "cut after {first} dispatches");
    }
}

fn request(engine: &Engine) -> SessionRequest {
    case_request("tiny-custom-voice", CASES[1], engine).unwrap()
}

/// A session cancelled while its next tick is in flight yields nothing more, and the session
/// that takes its slot at once gets exactly the frames it gets alone.
#[test]
fn cancelled_with_a_tick_in_flight() {
    let mut alone = engine_with("tiny-custom-voice", 1, false);
    alone.set_pipelining(false);
    let id = alone.start(request(&alone)).unwrap();
    let mut want = BTreeMap::new();
    while alone.has_work() {
        collect(&mut want, &mut alone);
    }
    let want = want.remove(&id).unwrap();

    let mut engine = engine_with("tiny-custom-voice", 1, false);
    engine.set_pipelining(true);
    let mut got = BTreeMap::new();
    let first = engine.start(request(&engine)).unwrap();
    collect(&mut got, &mut engine);
    collect(&mut got, &mut engine);
    assert_eq!(got[&first].codes.len(), 2);
    assert!(engine.has_work(), "a speculative tick is in flight");
    assert!(engine.cancel(first));
    let second = engine.start(request(&engine)).expect("the cancelled session's slot is free");
    while engine.has_work() {
        collect(&mut got, &mut engine);
    }
    assert_eq!(got[&first].codes.len(), 2, "nothing arrives after the cancel");
    assert_eq!(got[&second], want, "the slot's next session is unaffected");
}

/// Runs the first two cases, the second starting three steps after the first; with
/// `prompt_tick` its prompt gets a tick of its own, and the sessions with a frame from that tick
/// come back beside the second session's id.
fn joined(prompt_tick: bool) -> (Vec<Got>, Option<(Vec<SessionId>, SessionId)>) {
    let mut engine = engine_with("tiny-custom-voice", 2, false);
    engine.set_pipelining(true);
    let mut got = BTreeMap::new();
    let first = engine.start(case_request("tiny-custom-voice", CASES[0], &engine).unwrap()).unwrap();
    for _ in 0..3 {
        collect(&mut got, &mut engine);
    }
    let second = engine.start(case_request("tiny-custom-voice", CASES[1], &engine).unwrap()).unwrap();
    assert_eq!(engine.prompts_waiting(), 1, "the new session's prompt waits");
    let mut after_prompt_tick = None;
    if prompt_tick {
        record(&mut got, engine.step_scoped(TickScope::Prompts).unwrap());
        assert_eq!(engine.prompts_waiting(), 0, "the prompt went into the tick");
        // The step after reads the prompt tick: only the new session has a frame from it.
        let outputs = engine.step().unwrap();
        after_prompt_tick = Some((outputs.iter().map(|o| o.id).collect(), second));
        record(&mut got, outputs);
    }
    while engine.has_work() {
        collect(&mut got, &mut engine);
    }
    (vec![got.remove(&first).unwrap_or_default(), got.remove(&second).unwrap_or_default()], after_prompt_tick)
}

/// A tick of the new session's prompt alone gives both sessions the frames they get when the
/// prompt joins the others' tick.
#[test]
fn a_prompt_tick_changes_no_frame() {
    let (shared, _) = joined(false);
    let (apart, after) = joined(true);
    let (from_prompt_tick, second) = after.expect("a prompt tick ran");
    assert_eq!(from_prompt_tick, [second], "the prompt tick held only the new session");
    for (i, (a, b)) in shared.iter().zip(&apart).enumerate() {
        assert!(a.codes.len() > 3, "{}: frames", CASES[i]);
        assert!(a.finished.is_some(), "{}: finished", CASES[i]);
        assert_eq!(a, b, "{}: a prompt tick changed the output", CASES[i]);
    }
}
