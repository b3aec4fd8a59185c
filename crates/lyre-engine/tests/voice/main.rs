//! Voice cloning inputs: reference-audio decoding and resampling (`audio_input`), and the Base
//! models' ECAPA-TDNN speaker encoder against the official references in
//! `../shared/fixtures/tiny-base/refs`. CPU only.

mod audio;
mod speaker;
mod support;
