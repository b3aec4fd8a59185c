//! The Mimi speech encoder (voice-cloning reference codes) against the official outputs.

mod checkpoint_errors;
mod parity;
mod real_size;
mod support;
