//! The engine against the reference tensors in `../shared/fixtures` (made with the official
//! `qwen-tts` package): talker, code predictor, prompts, greedy end-to-end codes, batching,
//! and checkpoint validation errors. Runs on lavapipe in CI; fails without an adapter.

mod support;

mod batch;
mod code_predictor;
mod e2e;
mod loading;
mod pipeline;
mod prompt;
mod talker;
