//! The `lyre` binary from the outside: `lyre synth` against the fixtures' references, `lyre bench`
//! and the voice commands.

mod support;

mod bench;
mod synth;
mod voices;
