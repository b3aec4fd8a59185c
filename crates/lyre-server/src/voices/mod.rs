//! Cloned voices as a resource: a voice is an x-vector and, when the upload had a transcript,
//! the reference text and codec frames for in-context (ICL) cloning. Voices are computed once
//! from uploaded audio (which is not kept) and stored as small JSON files under `voices.dir`,
//! so they survive restarts and are usable by name in every endpoint.

mod clone;
mod name;
mod store;

pub use clone::{ClonedVoice, Encoders};
pub use name::validate_name;
pub use store::{ModelStamp, StoreError, StoredVoice, VoiceStore};
