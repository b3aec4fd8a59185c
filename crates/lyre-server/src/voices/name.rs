//! Voice names: identifiers that are safe as file names, `^[a-z0-9][a-z0-9_-]{0,63}$`.

use crate::errors::Failure;

/// Longest accepted name.
pub const MAX_NAME_LEN: usize = 64;

/// Accepts `^[a-z0-9][a-z0-9_-]{0,63}$` (never a path); a 400 naming `field` otherwise.
pub fn validate_name(name: &str, field: &str) -> Result<(), Failure> {
    let bad = |why: &str| {
        Failure::new(
            400,
            "invalid_voice_name",
            format!(
                "`{}` {why}; a voice name is 1-64 of a-z, 0-9, `_` and `-`, starting with a letter or digit",
                name.escape_debug()
            ),
        )
        .with_field(field)
    };
    if name.is_empty() {
        return Err(bad("is empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(bad("is too long"));
    }
    let first_ok = name.as_bytes()[0].is_ascii_lowercase() || name.as_bytes()[0].is_ascii_digit();
    let rest_ok =
        name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !first_ok || !rest_ok {
        return Err(bad("has characters that are not allowed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_pass_and_paths_do_not() {
        for ok in ["a", "alice", "voice-2", "0_x", &"a".repeat(64)] {
            assert!(validate_name(ok, "name").is_ok(), "{ok}");
        }
        for bad in
            ["", "../x", "a/b", ".hidden", "-x", "_x", "Alice", "a b", "é", "a.json", &"a".repeat(65), "x\0"]
        {
            let f = validate_name(bad, "name").unwrap_err();
            assert_eq!(
                (f.status, f.code, f.field.as_deref()),
                (400, "invalid_voice_name", Some("name")),
                "{bad}"
            );
        }
    }
}
