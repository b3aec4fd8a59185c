//! Logging and metrics set-up. Logs: `RUST_LOG`-style filters, human-readable lines (colour
//! only on a terminal) or one JSON object per line; metrics: [`metrics`].

pub mod metrics;

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `json` selects one JSON object per line (for log shippers),
/// each with the fields of the spans it was logged in (e.g. a request's `request_id`).
pub fn init(json: bool, default_filter: &str) {
    let filter = EnvFilter::try_from_env("LYRE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if json {
        builder.json().with_current_span(false).with_span_list(true).try_init()
    } else {
        // Colour codes only where a person reads them: files and log collectors get plain text.
        builder.with_ansi(std::io::stderr().is_terminal()).try_init()
    };
}
