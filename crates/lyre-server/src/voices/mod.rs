//! Cloned voices as tenant data: a voice is an x-vector and, when the upload had a transcript,
//! the reference text and codec frames for in-context (ICL) cloning. Voices are computed once
//! from uploaded audio (which is not kept) and stored in a database (SQLite by default,
//! PostgreSQL for several replicas), each owned by the tenant whose key uploaded it.

mod clone;
pub(crate) mod database;
mod import;
mod name;
mod resolve;
mod store;
mod voice;

use std::sync::Arc;

pub use clone::{ClonedVoice, Encoders};
pub use database::DatabaseUrl;
pub use import::{read_voice_file, voice_files, ImportReport, Imported};
pub use name::validate_name;
pub use resolve::{alias_target, is_preset, preset_alias, stored_voice};
pub use store::{StoreError, VoiceStore, TENANT_INSERT_LOCK};
pub use voice::{ModelStamp, StoredVoice, VoiceSummary};

/// Prepares the store in the background (the server starts, and serves presets, while the
/// database is still down): migrations, then the one-time import of `voices.dir`.
pub fn prepare_in_background(store: Arc<VoiceStore>) {
    tokio::spawn(async move {
        let mut wait = std::time::Duration::from_millis(500);
        while let Err(e) = store.ready().await {
            tracing::warn!(database = %store.describe(), error = %e, "voice database unavailable; retrying");
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(std::time::Duration::from_secs(30));
        }
    });
}
