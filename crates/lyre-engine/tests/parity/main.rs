//! The engine against the reference tensors in `../shared/fixtures` (made with the official
//! `qwen-tts` package): talker, code predictor, prompts, greedy end-to-end codes, batching, the fallback from a lost grid barrier,
//! and checkpoint validation errors. Runs on lavapipe in CI; fails without an adapter.

mod support;

mod batch;
mod code_predictor;
mod e2e;
mod forced;
mod grid_fault;
mod loading;
mod pipeline;
mod prompt;
mod segments;
mod talker;
