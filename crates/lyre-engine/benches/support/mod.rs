//! What the microbenchmarks share: the engine tuning and list-valued settings from the
//! environment, and the timing loop.

use std::str::FromStr;
use std::time::Instant;

use lyre_engine::EngineTuning;

/// The default tuning with the `LYRE_ENGINE_TUNING_*` variables applied (the names of the
/// server's `[engine.tuning]` overrides, e.g. `LYRE_ENGINE_TUNING_ADAPTER=H100`).
#[allow(dead_code)] // not every bench builds kernels
pub fn tuning() -> Result<EngineTuning, lyre_engine::EngineError> {
    EngineTuning::default().with_env(std::env::vars())
}

/// A comma-separated list from the environment variable `name`, or from `default`.
pub fn env_list<T: FromStr>(name: &str, default: &str) -> Vec<T> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// Seconds of the fastest of five calls of `run`, after one warm-up call.
pub fn best_of_five(mut run: impl FnMut()) -> f64 {
    run();
    (0..5)
        .map(|_| {
            let t0 = Instant::now();
            run();
            t0.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}
