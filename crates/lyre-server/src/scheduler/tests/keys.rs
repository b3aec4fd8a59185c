//! Per-key limits, taken the way every handler takes them: a slot of the API key first, then
//! the scheduler's admission; the key's slot is held as long as the session's handle.

use super::*;
use crate::errors::Failure;
use crate::http::KeyRegistry;

struct Session<Slot> {
    handle: SessionHandle,
    _slot: Slot,
}

fn open(
    h: &Harness,
    keys: &Arc<KeyRegistry>,
    key: &[u8],
    label: &str,
) -> Result<Session<impl Sized>, Failure> {
    let slot = keys.acquire(keys.identify(key))?;
    let handle = h.scheduler.submit(whole(label, 1), tracing::Span::none())?;
    Ok(Session { handle, _slot: slot })
}

#[test]
fn each_key_holds_at_most_its_sessions_and_gets_them_back_as_they_end() {
    let mut h = harness(1, 8);
    let keys = Arc::new(KeyRegistry::new(&["key-a".into(), "key-b".into()], 2));
    let mut a1 = open(&h, &keys, b"key-a", "a1").unwrap();
    let _a2 = open(&h, &keys, b"key-a", "a2").unwrap();
    let f = open(&h, &keys, b"key-a", "a3").err().expect("key-a is at its limit");
    assert_eq!((f.code, f.status(), f.retry_after_s()), (ErrorCode::KeyBusy, 429, Some(1)));
    assert_eq!(h.counts().0, 2, "the refused session never reached the scheduler");
    let _b1 = open(&h, &keys, b"key-b", "b1").expect("another key is not held back");
    h.turn();
    assert_eq!(seen(&mut a1.handle).last(), Some(&Seen::Done { frames: 1, reason: FinishReason::MaxFrames }));
    drop(a1);
    let _a3 = open(&h, &keys, b"key-a", "a3").expect("a finished session gives its key's slot back");
    assert_eq!(h.counts().0, 3);
}

/// A session the scheduler refuses (all places taken) does not keep its key's slot.
#[test]
fn a_busy_refusal_gives_the_key_slot_back() {
    let h = harness(1, 0);
    let keys = Arc::new(KeyRegistry::new(&["key-a".into(), "key-b".into()], 1));
    let _b = open(&h, &keys, b"key-b", "b").unwrap();
    let f = open(&h, &keys, b"key-a", "a").err().expect("no place left");
    assert_eq!(f.code, ErrorCode::Busy);
    assert_eq!(keys.acquire(keys.identify(b"key-a")).map(|_| ()), Ok(()), "key-a's slot is free");
}
