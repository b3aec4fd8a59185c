//! `LYRE_<SECTION>_<KEY>` environment variables applied on top of a configuration file's table,
//! typed by each key's default.

use anyhow::{bail, Context};

use super::ServerConfig;

const SECTIONS: &[&str] = &["server", "model", "engine", "limits", "auth", "logging", "voices"];

/// The key `rest` names in `table`, as a path: `rest` itself (a map such as `aliases` too), or
/// for a sub-table `t` whose name `rest` starts with (`t_`), the key the remainder names in it.
/// With the key's default value.
fn find_key<'a>(table: &'a toml::Table, rest: &str) -> Option<(Vec<String>, &'a toml::Value)> {
    if let Some(v) = table.get(rest) {
        return Some((vec![rest.to_string()], v));
    }
    table.iter().find_map(|(name, v)| {
        let inner = rest.strip_prefix(name.as_str())?.strip_prefix('_')?;
        let (mut path, default) = find_key(v.as_table()?, inner)?;
        path.insert(0, name.clone());
        Some((path, default))
    })
}

/// `LYRE_ENGINE_MAX_SESSIONS=64` sets `[engine] max_sessions = 64`, and
/// `LYRE_ENGINE_TUNING_GEMM=off` sets `[engine.tuning] gemm = "off"`. The value's type follows
/// the key's default; lists are comma-separated. Variables that name no key are errors. A
/// variable that sets `model.dir` or `model.repo` clears the other one from the file.
pub(super) fn apply_env(
    table: &mut toml::Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> anyhow::Result<()> {
    let defaults = toml::Table::try_from(ServerConfig::default()).expect("defaults serialise");
    let env: Vec<(String, String)> = env.into_iter().collect();
    let set = |key: &str| env.iter().any(|(n, v)| n == key && !v.trim().is_empty());
    match (set("LYRE_MODEL_DIR"), set("LYRE_MODEL_REPO")) {
        (true, true) => bail!("LYRE_MODEL_DIR and LYRE_MODEL_REPO are both set; choose one"),
        (true, false) => clear(table, "model", "repo"),
        (false, true) => clear(table, "model", "dir"),
        (false, false) => {}
    }
    for (name, value) in env {
        let Some(rest) = name.strip_prefix("LYRE_") else { continue };
        let rest = rest.to_lowercase();
        let Some(section) = SECTIONS.iter().find(|s| rest.starts_with(&format!("{s}_"))) else { continue };
        let key = &rest[section.len() + 1..];
        let section_defaults = defaults.get(*section).and_then(|t| t.as_table());
        let Some((path, default)) = section_defaults.and_then(|t| find_key(t, key)) else {
            // Name the sub-table the variable aims at, if any (`LYRE_ENGINE_TUNING_X`).
            let sub = section_defaults.and_then(|t| {
                t.iter().find_map(|(n, v)| {
                    Some((n, key.strip_prefix(n.as_str())?.strip_prefix('_')?, v.as_table()?))
                })
            });
            match sub {
                Some((table, key, _)) => bail!("{name}: no key `{key}` in section [{section}.{table}]"),
                None => bail!("{name}: no key `{key}` in section [{section}]"),
            }
        };
        let parsed = match default {
            _ if name == "LYRE_AUTH_TENANTS" => parse_tenants(&value).with_context(|| name.clone())?,
            toml::Value::Table(_) => parse_map(&value).with_context(|| name.clone())?,
            toml::Value::Boolean(_) => {
                toml::Value::Boolean(parse_bool(&value).with_context(|| name.clone())?)
            }
            toml::Value::Integer(_) => {
                toml::Value::Integer(value.trim().parse().with_context(|| format!("{name}: not an integer"))?)
            }
            toml::Value::Array(_) => toml::Value::Array(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| toml::Value::String(s.into()))
                    .collect(),
            ),
            _ => toml::Value::String(value),
        };
        let mut t = &mut *table;
        for part in std::iter::once(*section).chain(path[..path.len() - 1].iter().map(String::as_str)) {
            let entry = t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
            let toml::Value::Table(inner) = entry else { bail!("{name}: `{part}` is not a table") };
            t = inner;
        }
        t.insert(path[path.len() - 1].clone(), parsed);
    }
    Ok(())
}

/// `alloy=vivian, echo=ryan` as a table of strings.
fn parse_map(s: &str) -> anyhow::Result<toml::Value> {
    let mut table = toml::Table::new();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').with_context(|| format!("`{pair}` is not KEY=VALUE"))?;
        table.insert(k.trim().to_string(), toml::Value::String(v.trim().to_string()));
    }
    Ok(toml::Value::Table(table))
}

/// `acme: key-1 key-2; beta: key-3` as `[[auth.tenants]]` entries (keys separated by spaces).
fn parse_tenants(s: &str) -> anyhow::Result<toml::Value> {
    let mut tenants = Vec::new();
    for entry in s.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, keys) = entry.split_once(':').context("each tenant is `NAME: KEY KEY ...`")?;
        let mut t = toml::Table::new();
        t.insert("name".into(), toml::Value::String(name.trim().to_string()));
        let keys = keys.split_whitespace().map(|k| toml::Value::String(k.to_string())).collect();
        t.insert("keys".into(), toml::Value::Array(keys));
        tenants.push(toml::Value::Table(t));
    }
    Ok(toml::Value::Array(tenants))
}

fn clear(table: &mut toml::Table, section: &str, key: &str) {
    if let Some(toml::Value::Table(t)) = table.get_mut(section) {
        t.remove(key);
    }
}

fn parse_bool(s: &str) -> anyhow::Result<bool> {
    match s.trim().to_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        other => bail!("`{other}` is not a boolean"),
    }
}
