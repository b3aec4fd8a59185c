//! What the microbenchmarks share: list-valued environment settings and the timing loop.

use std::str::FromStr;
use std::time::Instant;

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
