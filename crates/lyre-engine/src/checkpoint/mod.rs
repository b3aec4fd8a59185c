//! Reading a checkpoint directory in the Hugging Face layout.

pub mod config;
pub mod expected;
mod model_dir;
mod split_rule;
pub mod tokenizer;
pub mod weights;

pub use model_dir::ModelDir;
