use std::collections::{BTreeMap, BTreeSet};

use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use super::*;

/// Every metric recorded on this thread while `f` runs, with its value.
pub(crate) fn metrics_recorded_during(f: impl FnOnce()) -> Vec<(metrics::Key, DebugValue)> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, f);
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| (key.key().clone(), value))
        .collect()
}

/// `lyre_errors_total` by code, as counted on this thread while `f` runs.
pub(crate) fn errors_counted_during(f: impl FnOnce()) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for (key, value) in metrics_recorded_during(f) {
        if let (DebugValue::Counter(n), "lyre_errors_total") = (value, key.name()) {
            let code = key.labels().find(|l| l.key() == "code").map(|l| l.value().to_string());
            *counts.entry(code.unwrap_or_default()).or_insert(0) += n;
        }
    }
    counts
}

const PROTOCOL_MD: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/protocol.md"));

/// `(status, code, retryable)` for every row of the error table in `docs/protocol.md`
/// (`| status | code | retry | when |`; a row may name several codes).
fn documented_codes(markdown: &str) -> BTreeSet<(u16, String, bool)> {
    let mut lines = markdown.lines().skip_while(|l| !l.starts_with("| status | code | retry |"));
    assert!(lines.next().is_some(), "docs/protocol.md has no `| status | code | retry | when |` table");
    let mut rows = BTreeSet::new();
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let status: u16 = cells[1].parse().unwrap_or_else(|_| panic!("bad status in `{line}`"));
        let retry = match cells[3] {
            "yes" => true,
            "" => false,
            other => panic!("the retry cell is `yes` or empty, not `{other}`: `{line}`"),
        };
        let codes: Vec<&str> = cells[2].split('`').skip(1).step_by(2).collect();
        assert!(!codes.is_empty(), "no code in `{line}`");
        for code in codes {
            assert!(rows.insert((status, code.to_string(), retry)), "`{code}` listed twice");
        }
    }
    rows
}

#[test]
fn the_protocol_docs_list_exactly_the_error_codes() {
    let documented = documented_codes(PROTOCOL_MD);
    let table: BTreeSet<(u16, String, bool)> =
        ErrorCode::ALL.iter().map(|c| (c.status(), c.as_str().to_string(), c.retryable())).collect();
    let missing: Vec<_> = table.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&table).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/protocol.md's error table and ErrorCode differ: not documented {missing:?}; documented \
         but not in ErrorCode (or with another status or retry) {stale:?}"
    );
}

#[test]
fn the_table_reader_sees_a_difference() {
    let docs =
        "| status | code | retry | when |\n|---|---|---|---|\n| 429 | `busy`, `key_busy` | yes | full |\n";
    let rows = documented_codes(docs);
    assert!(rows.contains(&(429, "key_busy".to_string(), true)));
    assert_eq!(rows.len(), 2);
}

#[test]
fn each_status_and_code_pair_is_one_variant() {
    let pairs: BTreeSet<(u16, &str)> = ErrorCode::ALL.iter().map(|c| (c.status(), c.as_str())).collect();
    assert_eq!(pairs.len(), ErrorCode::ALL.len());
}

/// Waiting cannot fix a client's mistake: only 429 and 5xx failures may ask for a retry.
#[test]
fn only_overload_and_server_failures_are_retryable() {
    for c in ErrorCode::ALL.iter().filter(|c| c.retryable()) {
        assert!(c.status() == 429 || c.status() >= 500, "{c} ({}) is marked retryable", c.status());
    }
}

#[test]
fn failures_take_status_and_retry_from_their_code() {
    let busy = Failure::new(ErrorCode::Busy, "full");
    assert_eq!((busy.status(), busy.retry_after_s()), (429, Some(RETRY_AFTER_S)));
    let bad = Failure::invalid("top_k", "must be positive");
    assert_eq!(
        (bad.status(), bad.code, bad.field.as_deref()),
        (400, ErrorCode::InvalidRequest, Some("top_k"))
    );
    assert_eq!(bad.retry_after_s(), None);
    assert_eq!(bad.to_string(), "invalid_request (top_k): must be positive");
    assert_eq!(serde_json::to_value(ErrorCode::KeyBusy).unwrap(), "key_busy");
}

#[test]
fn engine_errors_map_to_codes() {
    let f = Failure::from(&EngineError::Capacity("no slot".into()));
    assert_eq!((f.status(), f.code), (503, ErrorCode::Capacity));
    let f = Failure::from(&EngineError::UnknownSession(7));
    assert_eq!(f.status(), 404);
}

#[test]
fn a_cancel_and_a_slow_consumer_are_not_counted_where_the_client_is_told() {
    let counted = errors_counted_during(|| {
        ErrorCode::Cancelled.count();
        ErrorCode::SlowConsumer.count();
        ErrorCode::SessionLost.count();
        ErrorCode::SlowConsumer.count_where_seen();
    });
    let expected: BTreeMap<String, u64> =
        [("session_lost".to_string(), 1), ("slow_consumer".to_string(), 1)].into_iter().collect();
    assert_eq!(counted, expected);
}
