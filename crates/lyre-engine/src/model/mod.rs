//! The two transformers of the main checkpoint, resident on the GPU: the talker (first
//! codebook) and the code predictor (codebooks 1..15), built from one generic Qwen3 stack.

pub mod code_predictor;
pub mod rope;
pub mod talker;
pub mod transformer;
pub mod upload;
