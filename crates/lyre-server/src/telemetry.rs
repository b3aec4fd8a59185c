//! Logging set-up: `RUST_LOG`-style filters, human-readable or JSON lines.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `json` selects one JSON object per line (for log shippers).
pub fn init(json: bool, default_filter: &str) {
    let filter = EnvFilter::try_from_env("LYRE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
}
