//! What a request's `voice` name means for the caller's tenant. In order:
//!
//! 1. a preset speaker of the model (case-insensitive);
//! 2. on a model that clones (Base), the tenant's stored voice of that name;
//! 3. an alias from `voices.aliases` (e.g. OpenAI's `alloy`): its preset, or on a Base model the
//!    tenant's stored voice of the alias's target;
//! 4. on a model that does not clone, a stored voice of that name is refused as made for another
//!    model; anything else is `unknown_voice` (reported by the request's validation).
//!
//! So an alias never hides a tenant's own voice where that voice can be used, and a preset is
//! never hidden by anything. Only steps 2-4 read the database, in the async handler, before a
//! session is submitted: a slow database never reaches the GPU worker.

use std::collections::BTreeMap;

use lyre_engine::checkpoint::config::{ModelConfig, ModelType};
use lyre_engine::prompt::VoiceSpec;

use super::store::VoiceStore;
use crate::errors::Failure;
use crate::tenants::Tenant;

/// Whether `name` is one of the model's preset speakers.
pub fn is_preset(cfg: &ModelConfig, name: &str) -> bool {
    cfg.talker_config.spk_id.contains_key(&name.to_lowercase())
}

/// The target of an alias, if `name` is one.
pub fn alias_target<'a>(aliases: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    aliases.get(&name.to_lowercase()).map(String::as_str)
}

/// The preset an alias names on this model, if it names one.
pub fn preset_alias<'a>(
    cfg: &ModelConfig,
    aliases: &'a BTreeMap<String, String>,
    name: &str,
) -> Option<&'a str> {
    alias_target(aliases, name).filter(|t| is_preset(cfg, t))
}

/// The stored voice a `voice` name means (steps 2-4 above); `None` when it means a preset, an
/// alias of a preset, or nothing stored (validation then resolves or refuses the name).
pub async fn stored_voice(
    store: &VoiceStore,
    cfg: &ModelConfig,
    aliases: &BTreeMap<String, String>,
    tenant: &Tenant,
    name: Option<&str>,
    field: &str,
) -> Result<Option<VoiceSpec>, Failure> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else { return Ok(None) };
    if is_preset(cfg, name) || super::validate_name(name, field).is_err() {
        return Ok(None);
    }
    if cfg.tts_model_type != ModelType::Base {
        if preset_alias(cfg, aliases, name).is_some() {
            return Ok(None);
        }
        // Only to say why it cannot be used here (voice_model_mismatch).
        return match store.get(tenant, name).await? {
            Some(v) => v.voice_spec(cfg, field).map(Some),
            None => Ok(None),
        };
    }
    if let Some(v) = store.get(tenant, name).await? {
        return v.voice_spec(cfg, field).map(Some);
    }
    match alias_target(aliases, name) {
        Some(target) if !is_preset(cfg, target) => match store.get(tenant, target).await? {
            Some(v) => v.voice_spec(cfg, field).map(Some),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}
