//! The Prometheus series Lyre exports, each described once here (its `# HELP` line), the
//! exporter with its histogram buckets, and the series computed at scrape time.
//!
//! A new series is recorded with the `metrics` macros where it happens and listed in [`SERIES`];
//! the end-to-end tests fail on any `lyre_` series without a `# HELP` line.

use std::sync::atomic::{AtomicU64, Ordering};

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

/// What kind of series a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every series: name, kind, help text.
pub const SERIES: &[(&str, Kind, &str)] = &[
    ("lyre_live_sessions", Kind::Gauge, "Sessions holding a GPU slot now."),
    ("lyre_queue_depth", Kind::Gauge, "Sessions admitted and waiting for a GPU slot."),
    (
        "lyre_max_sessions",
        Kind::Gauge,
        "GPU session slots of this replica (engine.max_sessions): utilisation is lyre_live_sessions / lyre_max_sessions.",
    ),
    ("lyre_open_connections", Kind::Gauge, "Open client connections (HTTP and WebSocket)."),
    (
        "lyre_launch_hold_seconds",
        Kind::Gauge,
        "How long after a step the next tick's submission waits, so sessions arriving meanwhile join it (engine.launch_slack_ms).",
    ),
    (
        "lyre_build_info",
        Kind::Gauge,
        "Always 1; the labels name the Lyre version, the GPU adapter and the served model.",
    ),
    ("lyre_sessions_total", Kind::Counter, "Sessions ended, by outcome (finished, cancelled, failed, slow_consumer)."),
    ("lyre_frames_total", Kind::Counter, "80 ms audio frames generated."),
    (
        "lyre_prompt_ticks_total",
        Kind::Counter,
        "Ticks that took only the prompts waiting, so new sessions' first audio came sooner (engine.fast_first_audio).",
    ),
    ("lyre_errors_total", Kind::Counter, "Errors sent to clients, by error code."),
    (
        "lyre_rejected_total",
        Kind::Counter,
        "Sessions or connections refused before any work, by code (busy, too_many_connections).",
    ),
    ("lyre_tick_seconds", Kind::Histogram, "Duration of one GPU tick (every live session advances one frame)."),
    ("lyre_batch_size", Kind::Histogram, "Sessions advanced together in one GPU tick."),
    ("lyre_ttfa_seconds", Kind::Histogram, "Time from a request reaching the scheduler (queue wait included) to its first audio frame."),
    ("lyre_queue_wait_seconds", Kind::Histogram, "Time a session waited for a GPU slot once the worker had taken it."),
    (
        "lyre_request_duration_seconds",
        Kind::Histogram,
        "Request duration until its last byte was sent (a WebSocket: until it closed), by route and status class.",
    ),
];

/// `lyre_audio_seconds_total` is a counter of fractional seconds, which the `metrics` counters
/// (integers) cannot hold: it is kept here in frames and rendered at scrape time.
const AUDIO_SERIES: &str = "lyre_audio_seconds_total";
const AUDIO_HELP: &str = "Seconds of audio generated (80 ms per frame).";
const FRAME_SECONDS: f64 = 0.08;

static AUDIO_FRAMES: AtomicU64 = AtomicU64::new(0);

/// Counts one generated frame (`lyre_frames_total` and `lyre_audio_seconds_total`).
pub fn count_frame() {
    metrics::counter!("lyre_frames_total").increment(1);
    AUDIO_FRAMES.fetch_add(1, Ordering::Relaxed);
}

/// Time-to-first-audio buckets: every 2.5 ms to 60 ms and every 5 ms to 100 ms, where the
/// targets and the tail of a loaded server lie (a percentile read from them is within a
/// millisecond or two), then coarser to 10 s.
fn ttfa_buckets() -> Vec<f64> {
    let fine = (1..=24).map(|i| f64::from(i) * 0.0025);
    let mid = (13..=20).map(|i| f64::from(i) * 0.005);
    fine.chain(mid).chain([0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0]).collect()
}

/// Installs the global recorder (latency histograms in seconds; batch sizes in sessions) and
/// describes every series. `None` when a recorder is already installed (e.g. in tests).
pub fn install() -> Result<Option<PrometheusHandle>, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&[0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0])?
        .set_buckets_for_metric(
            Matcher::Full("lyre_batch_size".into()),
            &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0],
        )?
        .set_buckets_for_metric(Matcher::Full("lyre_ttfa_seconds".into()), &ttfa_buckets())?
        .set_buckets_for_metric(
            Matcher::Full("lyre_request_duration_seconds".into()),
            &[0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0],
        )?
        .install_recorder()
        .ok();
    if handle.is_some() {
        describe();
    }
    Ok(handle)
}

fn describe() {
    for &(name, kind, help) in SERIES {
        match kind {
            Kind::Counter => metrics::describe_counter!(name, help),
            Kind::Gauge => metrics::describe_gauge!(name, help),
            Kind::Histogram => metrics::describe_histogram!(name, help),
        }
    }
}

/// The exposition text: the recorder's series, then those computed here.
pub fn render(handle: &PrometheusHandle) -> String {
    let mut text = handle.render();
    let seconds = AUDIO_FRAMES.load(Ordering::Relaxed) as f64 * FRAME_SECONDS;
    text.push_str(&format!(
        "# HELP {AUDIO_SERIES} {AUDIO_HELP}\n# TYPE {AUDIO_SERIES} counter\n{AUDIO_SERIES} {seconds}\n"
    ));
    text
}

/// Sets `lyre_build_info{version, adapter, model} 1`.
pub fn set_build_info(adapter: &str, model: &str) {
    metrics::gauge!(
        "lyre_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "adapter" => adapter.to_string(),
        "model" => model.to_string()
    )
    .set(1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_named_once_with_a_help_text() {
        let mut names: Vec<&str> = SERIES.iter().map(|s| s.0).collect();
        names.push(AUDIO_SERIES);
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a series is listed twice");
        for &(name, _, help) in SERIES {
            assert!(name.starts_with("lyre_") && help.ends_with('.'), "{name}: {help}");
        }
    }

    #[test]
    fn ttfa_buckets_rise_in_fine_steps_through_the_targets() {
        let b = ttfa_buckets();
        assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
        let step_below =
            |limit: f64| b.windows(2).filter(|w| w[1] <= limit).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        assert!(step_below(0.06) <= 0.0025 + 1e-9 && step_below(0.1) <= 0.005 + 1e-9);
        assert!(b.iter().any(|&x| (x - 0.04).abs() < 1e-9), "a bound at the 40-ms target");
        assert_eq!(b.last(), Some(&10.0));
    }

    /// Every series recorded anywhere in the server's source is listed in [`SERIES`].
    #[test]
    fn every_recorded_series_is_described() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut missing = Vec::new();
        for path in rust_files(&src) {
            let text = std::fs::read_to_string(&path).unwrap();
            for kind in ["counter!(\"", "gauge!(\"", "histogram!(\""] {
                for piece in text.split(kind).skip(1) {
                    let name = &piece[..piece.find('"').unwrap()];
                    if name.starts_with("lyre_") && !SERIES.iter().any(|s| s.0 == name) {
                        missing.push(format!("{name} ({})", path.display()));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "add these to telemetry::metrics::SERIES: {missing:?}");
    }

    fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(rust_files(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        out
    }
}
