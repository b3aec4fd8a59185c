//! Prompt ticks with the real engine behind the worker (the tiny fixture on whatever adapter
//! wgpu finds; CI's is lavapipe): the new session's prompt tick holds it alone, and both
//! sessions get exactly the frames they get without prompt ticks.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use lyre_engine::checkpoint::ModelDir;
use lyre_engine::gpu::{GpuContext, GpuOptions};
use lyre_engine::prompt::{TextMode, VoiceSpec};
use lyre_engine::sampling::SamplingParams;
use lyre_engine::{Engine, EngineOptions, SessionRequest, TextInput};

use crate::scheduler::first_audio::FirstAudio;
use crate::scheduler::handle::{Scheduler, SessionHandle};
use crate::scheduler::worker::Worker;
use crate::scheduler::{SessionEvent, Shared};

fn fixture() -> PathBuf {
    let shared = std::env::var_os("LYRE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("fixtures/tiny-custom-voice")
}

fn request(model: &ModelDir, text: &str, max_frames: u32) -> SessionRequest {
    let speaker = model.config.talker_config.spk_id.keys().next().cloned().expect("a speaker");
    SessionRequest {
        text: TextInput::Whole(text.into()),
        voice: VoiceSpec::Speaker(speaker),
        language: "auto".into(),
        instruct: None,
        mode: TextMode::NonStreaming,
        sampling: SamplingParams::from_generation_config(&model.generation, 7),
        max_frames,
        max_frames_per_segment: None,
    }
}

/// Each session's frames (codes), and for every turn after the second session arrived, which
/// of the two got a frame in it.
type Run = (Vec<Vec<[u16; 16]>>, Vec<(bool, bool)>);

fn run(fast_first_audio: bool) -> Run {
    let model = Arc::new(ModelDir::open(fixture()).expect("the tiny fixture"));
    let gpu = Arc::new(GpuContext::new(&GpuOptions::default()).expect("a GPU adapter (lavapipe in CI)"));
    let opts =
        EngineOptions { max_sessions: 2, max_positions: 256, max_rows_per_tick: 128, ..Default::default() };
    let engine = Engine::new(gpu, model.clone(), opts).expect("the engine");
    let mut shared = Shared::new(2, 2);
    shared.event_buffer = 256;
    shared.ready.store(true, Ordering::SeqCst);
    let shared = Arc::new(shared);
    let (tx, rx) = std::sync::mpsc::sync_channel(16);
    let scheduler = Scheduler::new(tx, shared.clone());
    let mut worker = Worker::new(engine, rx, shared);
    // The CPU adapter's ticks are slower than real time: let each frame count as 10 s of audio so
    // the streams have the lead a prompt tick needs.
    worker.first_audio = FirstAudio::with_frame_audio(fast_first_audio, Duration::from_secs(10));
    let submit = |req| scheduler.submit(req, tracing::Span::none()).expect("admitted");

    let mut a = submit(request(&model, "The first voice speaks for a while.", 14));
    let mut got = vec![Vec::new(), Vec::new()];
    for _ in 0..3 {
        assert!(worker.turn());
        frames(&mut a, &mut got[0]);
    }
    assert_eq!(got[0].len(), 3, "the first session's frames before the second arrives");
    let mut b = submit(request(&model, "A second one joins.", 6));
    let mut turns = Vec::new();
    for _ in 0..40 {
        assert!(worker.turn());
        let (fa, fb) = (frames(&mut a, &mut got[0]), frames(&mut b, &mut got[1]));
        turns.push((fa, fb));
        if got[0].len() == 14 && got[1].len() == 6 {
            break;
        }
    }
    assert_eq!((got[0].len(), got[1].len()), (14, 6), "both sessions ran to their frame limits");
    (got, turns)
}

/// Takes the frames a handle has waiting; true if there was one.
fn frames(handle: &mut SessionHandle, into: &mut Vec<[u16; 16]>) -> bool {
    let before = into.len();
    while let Some(Some(ev)) = handle.recv().now_or_never() {
        if let SessionEvent::Frame(f) = ev {
            into.push(f.codes);
        }
    }
    into.len() > before
}

#[test]
fn a_prompt_tick_on_the_real_engine_holds_the_new_session_alone_and_changes_no_frame() {
    let (with, turns_with) = run(true);
    let (without, turns_without) = run(false);
    assert_eq!(with, without, "prompt ticks changed the frames");
    // The second session's first frame comes from its prompt tick, while the first, still
    // speaking, has none in that turn; without prompt ticks they share every tick.
    let b_first = turns_with.iter().position(|t| t.1).expect("the second session's first frame");
    assert_eq!(turns_with[b_first], (false, true), "turns with prompt ticks: {turns_with:?}");
    let b_first = turns_without.iter().position(|t| t.1).expect("the second session's first frame");
    assert_eq!(turns_without[b_first], (true, true), "turns without: {turns_without:?}");
}
