//! The speech-tokenizer decoder on the GPU: each new kernel against a plain CPU loop, every stage
//! and the waveform against the fixtures' references, streaming against whole-clip decoding,
//! and batched sessions against each session alone. Fails when no wgpu adapter exists.

mod support;

mod kernels;
mod parity;
mod streaming;
