//! When things go wrong: a client that stops reading, a tick that fails, an engine that
//! refuses a session or cannot trust its results. Each failure reaches its session's stream;
//! the worker counts none of them in `lyre_errors_total` (the handler that tells the client
//! does) except a slow client, which is told only if it reads again.

use super::*;
use crate::errors::tests::errors_counted_during;

/// The channel holds 4 events: `Started` and three frames; the fourth frame finds it full.
#[test]
fn a_full_client_channel_cancels_that_session_alone() {
    let mut h = harness_with(2, 0, 64, 4);
    let mut slow = h.submit(whole("slow", 50));
    let mut reader = h.submit(whole("reader", 6));
    let mut read = Vec::new();
    let counted = errors_counted_during(|| {
        for _ in 0..6 {
            h.turn();
            read.extend(seen(&mut reader));
        }
    });
    assert_eq!(counted.into_iter().collect::<Vec<_>>(), [("slow_consumer".to_string(), 1)]);
    assert_eq!(h.engine().cancelled.len(), 1, "the slow session's slot was freed");
    assert_eq!(read.len(), 1 + 6 + 1, "the other session ran to its end: {read:?}");
    assert_eq!(read.last(), Some(&Seen::Done { frames: 6, reason: FinishReason::MaxFrames }));
    assert_eq!(
        seen(&mut slow),
        [Seen::Started, Seen::Frame(0), Seen::Frame(1), Seen::Frame(2), Seen::Error(ErrorCode::SlowConsumer)]
    );
    assert_eq!(h.counts(), (0, 0));
}

#[test]
fn a_failed_tick_fails_the_live_sessions_and_the_worker_carries_on() {
    let mut h = harness(2, 1);
    let mut a = h.submit(whole("a", 2));
    let mut b = h.submit(whole("b", 2));
    let mut c = h.submit(whole("c", 2));
    h.engine().failing_steps = 1;
    let counted = errors_counted_during(|| h.turn());
    assert!(counted.is_empty(), "the handlers count what they pass on: {counted:?}");
    for handle in [&mut a, &mut b] {
        assert_eq!(seen(handle), [Seen::Started, Seen::Error(ErrorCode::GpuError)]);
    }
    assert_eq!(h.engine().sessions.len(), 0);
    assert_eq!(h.counts(), (1, 0));
    h.turn();
    h.turn();
    assert_eq!(
        seen(&mut c),
        [
            Seen::Started,
            Seen::Frame(0),
            Seen::Frame(1),
            Seen::Done { frames: 2, reason: FinishReason::MaxFrames }
        ]
    );
    assert!(h.shared.ready.load(Ordering::SeqCst));
}

/// Three failed ticks in a row take the server out of rotation (`/readyz` 503).
#[test]
fn three_failed_ticks_in_a_row_turn_the_server_unready() {
    let mut h = harness(1, 0);
    h.engine().failing_steps = 3;
    for expect_ready in [true, true, false] {
        let mut s = h.submit(whole("a", 5));
        h.turn();
        assert_eq!(seen(&mut s), [Seen::Started, Seen::Error(ErrorCode::GpuError)]);
        assert_eq!(h.shared.ready.load(Ordering::SeqCst), expect_ready);
    }
}

#[test]
fn a_start_the_engine_refuses_fails_that_session_alone() {
    let mut h = harness(2, 1);
    let mut refused = h.submit(whole("refuse", 2));
    let mut fine = h.submit(whole("fine", 1));
    h.turn();
    assert_eq!(seen(&mut refused), [Seen::Error(ErrorCode::Capacity)]);
    assert_eq!(
        seen(&mut fine),
        [Seen::Started, Seen::Frame(0), Seen::Done { frames: 1, reason: FinishReason::MaxFrames }]
    );
    assert_eq!(h.counts(), (0, 0));
}

#[test]
fn untrusted_results_and_empty_text_end_with_errors() {
    let mut h = harness(2, 0);
    let mut fault = h.submit(whole("fault", 5));
    let mut empty = h.submit(streamed(5));
    empty.end_text().unwrap();
    h.turn();
    assert_eq!(seen(&mut fault), [Seen::Started, Seen::Error(ErrorCode::GpuError)]);
    let mut events = Vec::new();
    while let Some(Some(ev)) = empty.recv().now_or_never() {
        events.push(ev);
    }
    let Some(SessionEvent::Error(f)) = events.last() else { panic!("{events:?}") };
    assert_eq!((f.code, f.field.as_deref()), (ErrorCode::InvalidRequest, Some("text")));
    assert_eq!(h.counts(), (0, 0));
}
