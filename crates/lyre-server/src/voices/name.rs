//! Voice names: identifiers that are safe as file names, `^[A-Za-z0-9_-]{1,64}$`.

use crate::errors::{ErrorCode, Failure};

/// Longest accepted name.
pub const MAX_NAME_LEN: usize = 64;

/// Accepts `^[A-Za-z0-9_-]{1,64}$` (never a path: no `/`, `\`, `.` or NUL); a 400 naming
/// `field` otherwise.
pub fn validate_name(name: &str, field: &str) -> Result<(), Failure> {
    let bad = |why: &str| {
        Failure::new(
            ErrorCode::InvalidVoiceName,
            format!("`{}` {why}; a voice name is 1-64 of A-Z, a-z, 0-9, `_` and `-`", name.escape_debug()),
        )
        .with_field(field)
    };
    if name.is_empty() {
        return Err(bad("is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(bad("is too long"));
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(bad("has characters that are not allowed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_pass_and_paths_do_not() {
        for ok in ["a", "alice", "Alice", "voice-2", "0_x", "-x", "_x", &"a".repeat(64)] {
            assert!(validate_name(ok, "name").is_ok(), "{ok}");
        }
        for bad in [
            "",
            "..",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "a b",
            "é",
            "a.json",
            "%2e%2e",
            &"a".repeat(65),
            "x\0",
        ] {
            let f = validate_name(bad, "name").unwrap_err();
            assert_eq!(
                (f.status(), f.code.as_str(), f.field.as_deref()),
                (400, "invalid_voice_name", Some("name")),
                "{bad}"
            );
        }
    }
}
