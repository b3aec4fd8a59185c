//! A session's life after admission: text, cancel, drain and shutdown.

use super::*;

#[test]
fn cancel_while_queued_gives_the_place_back_without_touching_the_engine() {
    let mut h = harness(1, 2);
    let mut a = h.submit(whole("a", 3));
    let b = h.submit(whole("b", 3));
    h.turn();
    assert_eq!(h.counts(), (2, 1));
    drop(b);
    h.turn();
    assert_eq!(h.counts(), (1, 1));
    h.turn();
    assert_eq!(
        seen(&mut a),
        [
            Seen::Started,
            Seen::Frame(0),
            Seen::Frame(1),
            Seen::Frame(2),
            Seen::Done { frames: 3, reason: FinishReason::MaxFrames }
        ]
    );
    h.turn();
    assert_eq!(h.engine().started, ["a"], "the cancelled session never started");
    assert_eq!(h.counts(), (0, 0));
}

#[test]
fn cancel_while_live_frees_the_slot_for_the_next_in_line() {
    let mut h = harness(1, 1);
    let mut a = h.submit(whole("a", 100));
    let mut b = h.submit(whole("b", 100));
    h.turn();
    let a_id = h.engine().id_of("a");
    a.cancel();
    h.turn();
    assert_eq!(h.engine().cancelled, [a_id]);
    assert_eq!(h.engine().started, ["a", "b"], "b took the freed slot in the same turn");
    assert_eq!(h.counts(), (1, 1));
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Closed]);
    assert_eq!(seen(&mut b), [Seen::Started, Seen::Frame(0)]);
}

/// Text sent while a session waits for a slot is kept and given to the engine when it starts,
/// and so is its end (the engine holds each utterance to a limit in proportion to its text).
#[test]
fn streamed_text_waits_with_its_session() {
    let mut h = harness(1, 1);
    let a = h.submit(whole("a", 100));
    let mut b = h.submit(streamed(10_000));
    b.append_text("one two ".into()).unwrap();
    b.append_text("three".into()).unwrap();
    b.end_text().unwrap();
    h.turn();
    assert_eq!(seen(&mut b), []);
    drop(a);
    h.turn();
    let engine = h.engine();
    let session = engine.session("streamed");
    assert_eq!(session.words, ["one", "two", "three"]);
    assert!(session.text_ended);
}

/// A flush is reported after the frame that speaks its text, with the frames since the last
/// one; a flush with nothing new is reported at once, or right after the one before it.
#[test]
fn flushes_are_reported_in_order_after_their_frames() {
    let mut h = harness(1, 1);
    let mut a = h.submit(streamed(100));
    h.turn();
    a.end_utterance().unwrap();
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Flushed(0)], "nothing to speak yet");
    a.append_text("one two".into()).unwrap();
    a.end_utterance().unwrap();
    a.end_utterance().unwrap();
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Frame(0), Seen::Flushed(1), Seen::Flushed(0)]);
    h.turn();
    a.append_text("three".into()).unwrap();
    a.end_utterance().unwrap();
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Frame(1), Seen::Frame(2), Seen::Flushed(2)]);
}

/// Draining refuses new sessions but lets the admitted ones, live and queued, run to the end.
#[test]
fn drain_finishes_live_and_queued_sessions() {
    let mut h = harness(1, 1);
    let mut a = h.submit(whole("a", 2));
    let mut b = h.submit(whole("b", 2));
    h.turn();
    h.shared.draining.store(true, Ordering::SeqCst);
    assert!(h.scheduler.submit(whole("c", 2), tracing::Span::none()).is_err());
    for _ in 0..4 {
        h.turn();
    }
    let done = |frames| Seen::Done { frames, reason: FinishReason::MaxFrames };
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Frame(1), done(2)]);
    assert_eq!(seen(&mut b), [Seen::Started, Seen::Frame(0), Seen::Frame(1), done(2)]);
    assert_eq!(h.counts(), (0, 0), "drained");
}

/// What is still live when the drain runs out is told the server stopped, and the worker ends.
#[test]
fn shutdown_with_live_sessions_tells_them_and_stops_the_worker() {
    let mut h = harness(2, 1);
    let mut a = h.submit(whole("a", 100));
    let mut b = h.submit(whole("b", 100));
    h.turn();
    h.scheduler.shutdown();
    assert!(!h.worker.turn(), "the worker stops");
    for handle in [&mut a, &mut b] {
        assert_eq!(seen(handle), [Seen::Started, Seen::Frame(0), Seen::Error(ErrorCode::Shutdown)]);
    }
    assert_eq!(h.engine().sessions.len(), 0, "every engine slot was freed");
    assert_eq!(h.counts().0, 0);
}

/// A long streamed text reaches the engine a few kilobytes a turn, in order with the `end`
/// sent after it, while the session's frames keep coming every turn.
#[test]
fn long_streamed_text_reaches_the_engine_over_several_turns() {
    let mut h = harness(1, 0);
    let mut a = h.submit(streamed(10_000));
    let words: Vec<String> = (0..4000).map(|i| format!("w{i}")).collect();
    let text = words.join(" ");
    assert!(text.len() > 20_000);
    a.append_text(text).unwrap();
    a.end_text().unwrap();
    h.turn();
    let first = h.engine().session("streamed").words.len();
    assert!(first > 0 && first < words.len() / 4, "{first} words in the first turn");
    let mut turns = 1;
    while !h.engine().session("streamed").text_ended {
        h.turn();
        turns += 1;
        assert!(turns < 40, "the text never ended");
    }
    assert!(turns >= 10, "about 2 kB a turn: {turns} turns");
    assert_eq!(h.engine().session("streamed").words, words);
    let frames = seen(&mut a).iter().filter(|s| matches!(s, Seen::Frame(_))).count();
    assert_eq!(frames, turns, "a frame every turn while the text came in");
}

/// A session cancelled with text still waiting: the rest never reaches the engine.
#[test]
fn a_cancelled_sessions_waiting_text_is_dropped() {
    let mut h = harness(2, 0);
    let mut a = h.submit(streamed(10_000));
    a.append_text("word ".repeat(5000)).unwrap();
    h.turn();
    let id = h.engine().id_of("streamed");
    a.cancel();
    h.turn();
    assert_eq!(h.engine().cancelled, [id]);
    let b = h.submit(streamed(10));
    b.append_text("fresh start".into()).unwrap();
    h.turn();
    assert_eq!(h.engine().session("streamed").words, ["fresh", "start"]);
}
