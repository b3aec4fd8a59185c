//! The Lyre server and command line: HTTP and WebSocket front ends over one batched GPU
//! worker thread, plus the `synth` and benchmark tools.

pub mod audio;
pub mod cli;
pub mod config;
pub mod demo;
pub mod errors;
pub mod http;
pub mod model_source;
pub mod protocol;
pub mod scheduler;
pub mod shutdown;
pub mod telemetry;
pub mod tenants;
pub mod voices;
