//! Voice cloning inputs: reference-audio decoding and resampling (`audio_input`), the Base
//! models' ECAPA-TDNN speaker encoder against the official references in
//! `../shared/fixtures/tiny-base/refs`, and real clips (3–60 s, 8–48 kHz, WAV, FLAC, MP3, Ogg)
//! against the official loader and encoders (`tests/data/official`). CPU only.

mod audio;
mod official_clips;
mod speaker;
mod support;

#[path = "../common/official.rs"]
mod official;
