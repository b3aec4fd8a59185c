//! The held launch: while a tick is on the GPU, the worker takes commands until just before
//! the GPU finishes, so a session that arrives meanwhile is in the very next step.

use std::time::{Duration, Instant};

use super::*;
use crate::scheduler::launch_pacer::LaunchPacer;

const MS: Duration = Duration::from_millis(1);

/// A harness whose engine leaves a tick in flight and reports waiting `gpu_wait` for each;
/// after one step the worker holds the next launch for (`gpu_wait` - 2 ms) / 2.
fn pipelined(gpu_wait: Duration) -> Harness {
    let mut h = harness(4, 4);
    h.worker.pacer = LaunchPacer::new(2 * MS);
    let mut e = h.engine();
    e.pipelined = true;
    e.gpu_wait = gpu_wait;
    drop(e);
    h
}

#[test]
fn a_session_that_arrives_during_the_hold_joins_the_next_step() {
    let mut h = pipelined(202 * MS);
    let mut a = h.submit(whole("a", 10));
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(h.worker.pacer.hold(), 100 * MS);

    let scheduler = h.scheduler.clone();
    let late = std::thread::spawn(move || {
        std::thread::sleep(20 * MS);
        scheduler.submit(whole("b", 10), tracing::Span::none()).expect("admitted")
    });
    // The hold runs from the pacer's own instant (the first step's end), not from when this
    // thread gets to the next line: on a loaded machine that can be several milliseconds later.
    let launch_at = h.worker.pacer.launch_at().expect("a launch is held");
    h.turn();
    let turn_ended = Instant::now();
    let mut b = late.join().unwrap();
    assert_eq!(seen(&mut b), [Seen::Started, Seen::Frame(0)], "b arrived 20 ms into a 100 ms hold");
    assert_eq!(seen(&mut a), [Seen::Frame(1)]);
    assert!(
        turn_ended + 5 * MS >= launch_at,
        "the launch came {:?} before the hold's end",
        launch_at.saturating_duration_since(turn_ended)
    );
}

#[test]
fn without_slack_the_worker_never_holds() {
    let mut h = harness(4, 4);
    h.engine().pipelined = true;
    h.engine().gpu_wait = 202 * MS;
    let mut a = h.submit(whole("a", 10));
    h.turn();
    assert_eq!(h.worker.pacer.launch_at(), None);
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Frame(1)]);
    assert_eq!(h.worker.pacer.hold(), Duration::ZERO);
}

#[test]
fn a_shutdown_during_the_hold_stops_the_worker_at_once() {
    let mut h = pipelined(402 * MS);
    let mut a = h.submit(whole("a", 10));
    h.turn();
    assert_eq!(h.worker.pacer.hold(), 200 * MS);
    let scheduler = h.scheduler.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(20 * MS);
        scheduler.shutdown();
    });
    let started = Instant::now();
    assert!(!h.worker.turn(), "the worker went on after a shutdown");
    stopper.join().unwrap();
    assert!(started.elapsed() < 150 * MS, "the shutdown waited for the hold: {:?}", started.elapsed());
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0), Seen::Error(ErrorCode::Shutdown)]);
}

#[test]
fn a_cancel_during_the_hold_keeps_the_session_out_of_the_step() {
    let mut h = pipelined(202 * MS);
    let mut a = h.submit(whole("a", 10));
    let mut b = h.submit(whole("b", 10));
    h.turn();
    assert_eq!(seen(&mut a), [Seen::Started, Seen::Frame(0)]);
    assert_eq!(seen(&mut b), [Seen::Started, Seen::Frame(0)]);
    let a_id = h.engine().id_of("a");
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(20 * MS);
        a.cancel();
        a
    });
    h.turn();
    let mut a = canceller.join().unwrap();
    assert_eq!(h.engine().cancelled, [a_id]);
    assert_eq!(seen(&mut a), [Seen::Closed], "a cancelled session gets no frame");
    assert_eq!(seen(&mut b), [Seen::Frame(1)]);
}
