//! The engine against the reference tensors in `../shared/fixtures` (made with the official
//! `qwen-tts` package): talker, code predictor, prompts, greedy end-to-end codes, batching, the fallback from a lost grid barrier,
//! and checkpoint validation errors; and real inputs against the official package
//! (`tests/data/official`): texts in many scripts, a 45 s 48 kHz voice-cloning reference. Runs on lavapipe in CI; fails without an adapter.

mod support;

mod batch;
mod code_predictor;
mod e2e;
mod forced;
mod grid_fault;
mod loading;
mod long_reference;
mod pipeline;
mod prompt;
mod segments;
mod talker;
mod texts;

#[path = "../common/official.rs"]
mod official;
