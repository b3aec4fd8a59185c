use crate::support::*;

/// `lyre bench` on the tiny fixture with per-dispatch timing: every batch asked for is reported,
/// each figure is positive, the time to first audio is the median of five, and the
/// first tick's dispatches are listed apart from the timed ticks'.
#[test]
fn bench_reports_every_batch_with_the_first_ticks_dispatches() {
    let json = temp("bench.json");
    let model = fixture("tiny-custom-voice");
    let o = lyre(&[
        "bench",
        "--model-dir",
        model.to_str().unwrap(),
        "--batch",
        "1,3",
        "--frames",
        "2",
        "--prompt-tokens",
        "12",
        "--warmup-ms",
        "0",
        "--profile-dispatches",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["batch"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 3]);
    for r in runs {
        let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {r}"));
        for k in ["ms_per_frame", "ttfa_ms", "prefill_ms", "start_ms", "first_launch_ms", "first_wait_ms"] {
            assert!(f(k) >= 0.0 && f(k).is_finite(), "{k} = {}", f(k));
        }
        assert!(f("ms_per_frame") > 0.0 && f("ttfa_ms") > 0.0);
        // The median of five first ticks, each holding its start and its wait.
        let mut runs: Vec<f64> =
            r["ttfa_runs_ms"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(runs.len(), 5, "{r}");
        runs.sort_by(f64::total_cmp);
        assert_eq!(f("ttfa_ms"), runs[2]);
        for part in ["start_ms", "first_launch_ms", "first_wait_ms"] {
            assert!(f(part) <= f("ttfa_ms"), "{part} above the TTFA: {r}");
        }
        // Launching a tick is CPU work (rows, uploads, encoding): never free.
        assert!(f("first_launch_ms") > 0.0, "{r}");
        // Each list: (kind, ms, dispatches), the costliest first.
        for list in ["dispatch_kinds", "prefill_kinds"] {
            let kinds = r[list].as_array().unwrap_or_else(|| panic!("{list} missing in {r}"));
            assert!(!kinds.is_empty(), "{list} is empty");
            let ms: Vec<f64> = kinds.iter().map(|k| k[1].as_f64().unwrap()).collect();
            assert!(ms.windows(2).all(|w| w[0] >= w[1]), "{list} not sorted: {ms:?}");
        }
        // The first tick takes the prompts through the talker; the timed ticks one row each.
        let prompt = r["prefill_kinds"].as_array().unwrap();
        assert!(prompt.iter().any(|k| k[0].as_str().unwrap().starts_with("talker")), "{prompt:?}");
    }
}
