//! `lyre check-config FILE`: parse and validate, print the effective configuration.

use std::path::PathBuf;

use clap::Args;

use crate::config::ServerConfig;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The TOML file to check (LYRE_* variables are applied on top, as `serve` would).
    pub file: PathBuf,
}

pub fn run(args: CheckConfigArgs) -> anyhow::Result<()> {
    let cfg = ServerConfig::load(Some(&args.file), std::env::vars())?;
    println!("{}: ok", args.file.display());
    println!("{}", toml::to_string_pretty(&redacted(cfg))?);
    Ok(())
}

/// The configuration with its secrets hidden, so the printout can be pasted into a ticket or a
/// CI log: API keys show their length only, a database URL loses its password.
fn redacted(mut cfg: ServerConfig) -> ServerConfig {
    let hide = |key: &mut String| *key = format!("<{} characters>", key.chars().count());
    cfg.auth.api_keys.iter_mut().for_each(hide);
    cfg.auth.tenants.iter_mut().flat_map(|t| t.keys.iter_mut()).for_each(hide);
    cfg.voices.database = without_password(&cfg.voices.database);
    cfg
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; other strings unchanged.
fn without_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else { return url.to_string() };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else { return url.to_string() };
    match rest[..at].find(':') {
        Some(colon) => format!("{}{}:***{}", &url[..scheme_end], &rest[..colon], &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_passwords_are_hidden() {
        assert_eq!(
            without_password("postgres://lyre:s3cr@t@db:5432/voices"),
            "postgres://lyre:***@db:5432/voices"
        );
        assert_eq!(without_password("postgres://lyre@db/voices"), "postgres://lyre@db/voices");
        assert_eq!(without_password("sqlite://voices/voices.db"), "sqlite://voices/voices.db");
        assert_eq!(without_password(""), "");
    }

    #[test]
    fn keys_are_hidden() {
        let mut cfg = ServerConfig::default();
        cfg.auth.api_keys = vec!["solo-key-1234".into()];
        cfg.auth.tenants =
            vec![crate::config::TenantSection { name: "acme".into(), keys: vec!["acme-key-0001".into()] }];
        cfg.voices.database = "postgres://lyre:hunter2@db/voices".into();
        let printed = toml::to_string_pretty(&redacted(cfg)).unwrap();
        for secret in ["solo-key-1234", "acme-key-0001", "hunter2"] {
            assert!(!printed.contains(secret), "{secret} printed:\n{printed}");
        }
        assert!(printed.contains("<13 characters>") && printed.contains("acme"), "{printed}");
    }
}
