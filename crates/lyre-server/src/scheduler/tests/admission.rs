//! Admission: who gets a slot, who waits, who is refused at once.

use super::*;
use crate::errors::tests::metrics_recorded_during;
use crate::errors::Failure;
use metrics_util::debugging::DebugValue;

fn refusal(h: &Harness, request: SessionRequest) -> Failure {
    h.scheduler.submit(request, tracing::Span::none()).expect_err("refused")
}

#[test]
fn sessions_beyond_the_slots_wait_and_start_in_arrival_order() {
    let mut h = harness(2, 2);
    let mut handles: Vec<_> = ["a", "b", "c", "d"].iter().map(|l| h.submit(whole(l, 2))).collect();
    h.turn();
    assert_eq!(h.counts(), (4, 2));
    assert_eq!(h.shared.queued(), 2);
    assert_eq!(seen(&mut handles[0]), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(seen(&mut handles[1]), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(seen(&mut handles[2]), []);
    h.turn();
    let done = Seen::Done { frames: 2, reason: FinishReason::MaxFrames };
    assert_eq!(seen(&mut handles[0]), [Seen::Frame(1), done]);
    assert_eq!(h.counts(), (2, 0));
    h.turn();
    assert_eq!(h.counts(), (2, 2));
    assert_eq!(seen(&mut handles[2]), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(seen(&mut handles[3]), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(h.engine().started, ["a", "b", "c", "d"]);
    h.turn();
    assert_eq!(h.counts(), (0, 0));
}

#[test]
fn a_full_house_is_refused_with_busy_at_once() {
    let mut h = harness(1, 1);
    let _a = h.submit(whole("a", 5));
    let _b = h.submit(whole("b", 5));
    let f = refusal(&h, whole("c", 5));
    assert_eq!((f.code, f.status(), f.retry_after_s()), (ErrorCode::Busy, 429, Some(1)));
    assert_eq!(h.counts().0, 2, "the refused session holds no place");
    h.turn();
    assert_eq!(h.engine().started, ["a"]);
}

#[test]
fn nothing_is_admitted_while_loading_or_draining() {
    let h = harness(1, 1);
    h.shared.ready.store(false, Ordering::SeqCst);
    assert_eq!(refusal(&h, whole("a", 1)).code, ErrorCode::NotReady);
    h.shared.ready.store(true, Ordering::SeqCst);
    h.shared.draining.store(true, Ordering::SeqCst);
    let f = refusal(&h, whole("a", 1));
    assert_eq!((f.code, f.status()), (ErrorCode::Draining, 503));
    assert_eq!(h.scheduler.refusal().map(|f| f.code), Some(ErrorCode::Draining));
    assert_eq!(h.counts(), (0, 0));
}

/// The worker's command channel is bounded: a start that cannot be handed over is a 429, more
/// text a 503 `overloaded`; neither leaves anything behind.
#[test]
fn a_full_command_channel_refuses_starts_and_text() {
    let mut h = harness_with(4, 4, 1, 64);
    let mut a = h.submit(streamed(10));
    let f = refusal(&h, whole("b", 1));
    assert_eq!(f.code, ErrorCode::Busy);
    assert_eq!(a.append_text("hello".into()).unwrap_err().code, ErrorCode::Overloaded);
    assert_eq!(h.counts().0, 1);
    h.turn();
    a.append_text("hello".into()).unwrap();
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(h.engine().session("streamed").words, ["hello"]);
}

#[test]
fn a_stopped_worker_refuses_with_worker_stopped() {
    let h = harness(1, 1);
    let Harness { scheduler, worker, .. } = h;
    drop(worker);
    let f = scheduler.submit(whole("a", 1), tracing::Span::none()).unwrap_err();
    assert_eq!((f.code, f.status()), (ErrorCode::WorkerStopped, 503));
    assert_eq!(scheduler.shared.active.load(Ordering::SeqCst), 0);
}

/// `lyre_queue_wait_seconds` as recorded on this thread while `f` runs, in recording order.
fn queue_waits_during(f: impl FnOnce()) -> Vec<f64> {
    let mut waits = Vec::new();
    for (key, value) in metrics_recorded_during(f) {
        if let (DebugValue::Histogram(v), "lyre_queue_wait_seconds") = (value, key.name()) {
            waits.extend(v.into_iter().map(|x| x.into_inner()));
        }
    }
    waits
}

/// A request that arrives while the worker is busy (here: asleep between turns) with a slot
/// free does not count as queued for a slot; the client's `queued_ms` still tells the whole
/// wait. One that waits for a slot counts the turns it waited.
#[test]
fn the_queue_wait_metric_counts_the_wait_for_a_slot_only() {
    let mut h = harness(1, 2);
    let busy = std::time::Duration::from_millis(150);
    let mut a = h.submit(whole("a", 2));
    let waits = queue_waits_during(|| {
        std::thread::sleep(busy);
        h.turn();
    });
    assert_eq!(waits.len(), 1);
    assert!(waits[0] < 0.075, "a free slot was taken at once, yet {:.3} s were recorded", waits[0]);
    let Some(Some(SessionEvent::Started { queued_ms })) = a.recv().now_or_never() else {
        panic!("a did not start")
    };
    assert!(queued_ms >= 150.0, "the client is told of the whole wait: {queued_ms} ms");

    let mut b = h.submit(whole("b", 1));
    let waits = queue_waits_during(|| {
        h.turn(); // a's second and last frame; b waits for its slot
        std::thread::sleep(busy);
        h.turn(); // b starts
    });
    assert_eq!(seen(&mut b)[0], Seen::Started);
    assert_eq!(waits.len(), 1);
    assert!(waits[0] >= 0.15, "b waited a turn for a's slot, yet {:.3} s were recorded", waits[0]);
}
