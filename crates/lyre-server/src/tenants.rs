//! Tenants: who owns a cloned voice. Every API key belongs to one tenant; a voice belongs to the
//! tenant whose key uploaded it. The voice database stores tenant names, never keys.
//!
//! * No keys configured: one tenant, [`DEFAULT_TENANT`].
//! * Each key of `auth.api_keys` is a tenant of its own, named `key-` and the first 16 hex
//!   digits of the key's SHA-256 (stable across restarts and replicas, and not the key).
//! * `[[auth.tenants]]` names a tenant and lists its keys.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The tenant of a server without API keys.
pub const DEFAULT_TENANT: &str = "default";

/// A tenant's name, `^[A-Za-z0-9_-]{1,64}$`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant(Arc<str>);

impl Tenant {
    /// A checked name; the error says what is wrong with it.
    pub fn new(name: &str) -> Result<Self, String> {
        if name.is_empty() || name.len() > 64 {
            return Err(format!("tenant name `{}` must have 1 to 64 characters", name.escape_debug()));
        }
        if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(format!(
                "tenant name `{}` may only use A-Z, a-z, 0-9, `_` and `-`",
                name.escape_debug()
            ));
        }
        Ok(Tenant(name.into()))
    }

    pub fn default_tenant() -> Self {
        Tenant(DEFAULT_TENANT.into())
    }

    /// The tenant of a key listed in `auth.api_keys`.
    pub fn of_solo_key(key: &str) -> Self {
        let digest = Sha256::digest(key.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Tenant(format!("key-{hex}").into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One `[[auth.tenants]]` entry of the configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantSection {
    pub name: String,
    pub keys: Vec<String>,
}

/// Every configured key with its tenant, in configuration order (`api_keys`, then each
/// `[[auth.tenants]]`'s keys). Errors name the mistake (a bad tenant name, a name or key given
/// twice) without showing any key.
pub fn keys_and_tenants(
    api_keys: &[String],
    named: &[TenantSection],
) -> Result<Vec<(String, Tenant)>, String> {
    let mut out: Vec<(String, Tenant)> =
        api_keys.iter().map(|k| (k.clone(), Tenant::of_solo_key(k))).collect();
    let mut names: Vec<&str> = Vec::new();
    for (i, t) in named.iter().enumerate() {
        let tenant = Tenant::new(&t.name).map_err(|e| format!("auth.tenants[{i}]: {e}"))?;
        if names.contains(&t.name.as_str()) {
            return Err(format!("auth.tenants[{i}]: tenant `{}` is listed twice", t.name));
        }
        if t.keys.is_empty() {
            return Err(format!("auth.tenants[{i}] (`{}`): give at least one key", t.name));
        }
        names.push(&t.name);
        out.extend(t.keys.iter().map(|k| (k.clone(), tenant.clone())));
    }
    for (i, (key, tenant)) in out.iter().enumerate() {
        if key.len() < 8 {
            return Err(format!("a key of tenant `{tenant}` has fewer than 8 characters"));
        }
        if out[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("a key of tenant `{tenant}` is configured twice"));
        }
    }
    Ok(out)
}

/// Every tenant the configuration names, sorted, each once ([`DEFAULT_TENANT`] without keys).
pub fn all(api_keys: &[String], named: &[TenantSection]) -> Result<Vec<Tenant>, String> {
    let mut tenants: Vec<Tenant> = keys_and_tenants(api_keys, named)?.into_iter().map(|(_, t)| t).collect();
    if tenants.is_empty() {
        tenants.push(Tenant::default_tenant());
    }
    tenants.sort();
    tenants.dedup();
    Ok(tenants)
}

/// The one tenant of a single-tenant configuration (no keys, one key, or one named tenant).
pub fn only(api_keys: &[String], named: &[TenantSection]) -> Result<Option<Tenant>, String> {
    let tenants = all(api_keys, named)?;
    Ok(if tenants.len() == 1 { tenants.into_iter().next() } else { None })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Auth = (Vec<String>, Vec<TenantSection>);

    fn auth(keys: &[&str], tenants: &[(&str, &[&str])]) -> Auth {
        let keys = keys.iter().map(|k| k.to_string()).collect();
        let named = tenants
            .iter()
            .map(|(n, ks)| TenantSection {
                name: n.to_string(),
                keys: ks.iter().map(|k| k.to_string()).collect(),
            })
            .collect();
        (keys, named)
    }

    fn keys_and_tenants(a: &Auth) -> Result<Vec<(String, Tenant)>, String> {
        super::keys_and_tenants(&a.0, &a.1)
    }

    fn all(a: &Auth) -> Result<Vec<Tenant>, String> {
        super::all(&a.0, &a.1)
    }

    fn only(a: &Auth) -> Result<Option<Tenant>, String> {
        super::only(&a.0, &a.1)
    }

    #[test]
    fn solo_keys_get_stable_names_that_are_not_the_key() {
        let t = Tenant::of_solo_key("solo-key-1234");
        // SHA-256("solo-key-1234") starts 645339ae 2a821c63 (sha256sum).
        assert_eq!(t.as_str(), "key-645339ae2a821c63");
        assert!(Tenant::new(t.as_str()).is_ok(), "a derived name is a valid tenant name");
        assert_ne!(Tenant::of_solo_key("solo-key-1235"), t);
    }

    #[test]
    fn tenants_come_from_keys_and_named_groups() {
        assert_eq!(all(&auth(&[], &[])).unwrap(), [Tenant::default_tenant()]);
        assert_eq!(only(&auth(&[], &[])).unwrap(), Some(Tenant::default_tenant()));
        let a = auth(&["solo-key-1234"], &[("acme", &["acme-key-0001", "acme-key-0002"])]);
        let pairs = keys_and_tenants(&a).unwrap();
        let names: Vec<&str> = pairs.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(names, ["key-645339ae2a821c63", "acme", "acme"]);
        assert_eq!(all(&a).unwrap().len(), 2);
        assert_eq!(only(&a).unwrap(), None);
        let one = auth(&[], &[("acme", &["acme-key-0001", "acme-key-0002"])]);
        assert_eq!(only(&one).unwrap(), Some(Tenant::new("acme").unwrap()));
    }

    #[test]
    fn configuration_mistakes_are_named_without_the_key() {
        let cases: [(Auth, &str); 5] = [
            (auth(&[], &[("ac me", &["acme-key-0001"])]), "auth.tenants[0]"),
            (auth(&[], &[("acme", &["acme-key-0001"]), ("acme", &["acme-key-0002"])]), "twice"),
            (auth(&[], &[("acme", &[])]), "at least one key"),
            (auth(&["short"], &[]), "fewer than 8"),
            (auth(&["shared-key-1"], &[("acme", &["shared-key-1"])]), "configured twice"),
        ];
        for (a, want) in cases {
            let e = keys_and_tenants(&a).unwrap_err();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains("key-0001") && !e.contains("shared-key-1"), "no key in `{e}`");
        }
    }
}
