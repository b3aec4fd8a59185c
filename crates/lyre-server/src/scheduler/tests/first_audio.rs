//! Prompt ticks: a session that arrives while others are playing gets a tick of its own prompt
//! when they have audio to spare, so its first frame does not wait for a full tick.

use std::time::Duration;

use lyre_engine::TickScope;

use super::*;
use crate::scheduler::first_audio::FirstAudio;

/// A harness whose engine leaves a tick in flight, with prompt ticks on or off.
fn pipelined(fast_first_audio: bool) -> Harness {
    let mut h = harness(4, 4);
    h.worker.first_audio = FirstAudio::new(fast_first_audio);
    h.engine().pipelined = true;
    h
}

fn labels(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_new_session_gets_a_tick_of_its_own_while_the_others_have_audio_in_hand() {
    let mut h = pipelined(true);
    let mut a = h.submit(whole("a", 50));
    for _ in 0..4 {
        h.turn();
    }
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Frame(1), Seen::Frame(2), Seen::Frame(3)]);
    let mut b = h.submit(whole("b", 50));
    h.turn();
    assert_eq!(h.engine().steps.last(), Some(&(TickScope::Prompts, labels(&["b"]))));
    assert_eq!(seen(&mut b), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(seen(&mut a), [], "a waits one short tick");
    h.turn();
    assert_eq!(h.engine().steps.last(), Some(&(TickScope::All, labels(&["a", "b"]))));
    assert_eq!(seen(&mut a), [Seen::Frame(4)]);
    assert_eq!(seen(&mut b), [Seen::Frame(1)]);
}

#[test]
fn the_first_session_and_slow_ticks_get_no_prompt_tick() {
    let mut h = pipelined(true);
    let mut a = h.submit(whole("a", 50));
    h.turn();
    assert_eq!(h.engine().steps, [(TickScope::All, labels(&["a"]))], "nothing on the GPU yet");
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0)]);
    // Ticks of 40 ms: two of them are more than the 80 ms a stream with one frame holds.
    h.worker.first_audio.tick_took(Duration::from_millis(40), TickScope::All);
    let _b = h.submit(whole("b", 50));
    h.turn();
    assert_eq!(h.engine().steps.last(), Some(&(TickScope::All, labels(&["a", "b"]))));
}

/// A stream played four times as fast holds a quarter of the audio per frame: two frames (40
/// ms) are less than a prompt tick and a full one of 30 ms each, where at speed 1 (160 ms) they
/// are more.
#[test]
fn a_stream_played_faster_has_less_audio_in_hand() {
    for (speed, want) in [(1.0, TickScope::Prompts), (4.0, TickScope::All)] {
        let mut h = pipelined(true);
        let mut a =
            h.scheduler.submit_played_at(whole("a", 50), tracing::Span::none(), speed).expect("admitted");
        h.turn();
        h.turn();
        assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Frame(1)]);
        h.worker.first_audio.tick_took(Duration::from_millis(30), TickScope::All);
        let _b = h.submit(whole("b", 50));
        h.turn();
        assert_eq!(h.engine().steps.last().map(|s| s.0), Some(want), "speed {speed}");
    }
}

#[test]
fn with_fast_first_audio_off_every_tick_takes_everyone() {
    let mut h = pipelined(false);
    let _a = h.submit(whole("a", 50));
    for _ in 0..4 {
        h.turn();
    }
    let _b = h.submit(whole("b", 50));
    h.turn();
    let steps = &h.engine().steps;
    assert!(steps.iter().all(|(scope, _)| *scope == TickScope::All), "{steps:?}");
    assert_eq!(steps.last().unwrap().1, labels(&["a", "b"]));
}
