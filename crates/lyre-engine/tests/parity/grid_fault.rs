//! A persistent layer whose grid barrier gives up (its workgroups did not all run at once, as
//! on a GPU too small for the grid) must not pass off wrong audio: the tick's session ends with
//! `FinishReason::GpuFault`, and from then on the engine runs the layers as separate dispatches,
//! so the next session matches the reference. The fault is injected by launching one
//! workgroup fewer than the barriers wait for (`EngineOptions::inject_grid_fault`).

use lyre_engine::{EngineOptions, FinishReason};

use crate::e2e::check_case_on;
use crate::support::*;

const CASE: &str = "e2e_cv_nonstream_english_vivian";

#[test]
fn a_grid_fault_ends_its_session_and_later_sessions_match_the_reference() {
    let opts = EngineOptions { inject_grid_fault: true, ..options(2, true) };
    let mut engine = engine_from("tiny-custom-voice", opts);
    let req = case_request("tiny-custom-voice", CASE, &engine).unwrap();
    let id = engine.start(req).unwrap();
    let outs = engine.step().unwrap();
    let out = outs.iter().find(|o| o.id == id).expect("the session stepped");
    assert_eq!(out.finished, Some(FinishReason::GpuFault), "the lost barrier is reported");
    assert!(out.frame.is_none(), "no frame from a faulty tick");
    assert_eq!(engine.live_sessions(), 0, "the session ended and freed its slot");
    assert!(check_case_on(&mut engine, "tiny-custom-voice", CASE), "{CASE} ran");
}
