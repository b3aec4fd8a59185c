//! The `lyre` binary from the outside: `lyre synth` against the fixtures' references.

mod support;

mod synth;
mod voices;
