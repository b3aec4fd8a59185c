//! Server configuration: `config/default.toml` documents every key. A file, then `LYRE_*`
//! environment variables, then command-line flags; unknown keys are errors, so typos surface
//! in `lyre check-config`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};

mod env;

use env::apply_env;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub server: ServerSection,
    pub model: ModelSection,
    pub engine: EngineSection,
    pub limits: LimitsSection,
    pub auth: AuthSection,
    pub logging: LoggingSection,
    pub voices: VoicesSection,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    pub listen: String,
    pub request_timeout_s: u64,
    pub max_body_bytes: usize,
    pub cors_origins: Vec<String>,
    pub drain_timeout_s: u64,
    /// Kernel send buffer per connection in bytes; 0 keeps the OS default (auto-tuned).
    pub send_buffer_bytes: usize,
    /// Seconds a client has to send a request's headers before its connection is closed.
    pub header_read_timeout_s: u64,
    /// Open connections at most; beyond, a connection gets 503 and is closed.
    pub max_connections: usize,
    /// Seconds between the server's WebSocket pings (0: no pings); two unanswered pings close
    /// the socket.
    pub ws_ping_interval_s: u64,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: "0.0.0.0:8080".into(),
            request_timeout_s: 300,
            max_body_bytes: 4 << 20,
            cors_origins: Vec::new(),
            drain_timeout_s: 30,
            send_buffer_bytes: 0,
            header_read_timeout_s: 30,
            max_connections: 1024,
            ws_ping_interval_s: 20,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSection {
    pub dir: String,
    pub repo: String,
    pub allow_cpu_adapter: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    pub max_sessions: usize,
    pub max_queue: usize,
    pub max_positions: usize,
    pub max_rows_per_tick: usize,
    /// The talker's KV cache: "f32" or "f16" (half the memory; needs shader-f16).
    pub kv_cache: String,
    /// Text tokens per segment of a long text; 0: sized so a segment's speech fits the cache.
    pub segment_tokens: usize,
    /// How long before the GPU finishes a tick the next one is submitted; 0: at once. Later
    /// launches let sessions that arrive meanwhile join the next tick.
    pub launch_slack_ms: u64,
    /// A new session's prompt gets a short tick of its own, before the other sessions' next
    /// frame, when every playing stream has audio to spare for it.
    pub fast_first_audio: bool,
    /// Audio every playing stream must have in hand beyond a prompt tick and a full tick before
    /// a prompt tick runs: room for the time a frame takes to reach its client.
    pub first_audio_margin_ms: u64,
    /// `[engine.tuning]`: which kernels run (defaults measured best; see docs/kernels.md).
    pub tuning: lyre_engine::EngineTuning,
}

impl Default for EngineSection {
    fn default() -> Self {
        EngineSection {
            max_sessions: 32,
            max_queue: 64,
            max_positions: 4096,
            max_rows_per_tick: 1024,
            kv_cache: "f32".into(),
            segment_tokens: 0,
            launch_slack_ms: 2,
            fast_first_audio: true,
            first_audio_margin_ms: 15,
            tuning: lyre_engine::EngineTuning::default(),
        }
    }
}

impl EngineSection {
    /// `kv_cache` as the engine's format.
    pub fn kv_format(&self) -> anyhow::Result<lyre_engine::KvFormat> {
        parse_kv_format(&self.kv_cache).map_err(|e| anyhow!("engine.kv_cache: {e}"))
    }

    /// What cutting a long text into segments depends on (as the engine built from this
    /// section sees it).
    pub fn segment_limits(&self) -> lyre_engine::SegmentLimits {
        lyre_engine::SegmentLimits {
            max_positions: self.max_positions,
            max_rows: self.max_rows_per_tick.max(self.max_sessions),
            segment_tokens: self.segment_tokens,
        }
    }
}

/// "f32" or "f16" (for `engine.kv_cache` and `lyre bench --kv-cache`).
pub fn parse_kv_format(s: &str) -> Result<lyre_engine::KvFormat, String> {
    match s {
        "f32" => Ok(lyre_engine::KvFormat::F32),
        "f16" => Ok(lyre_engine::KvFormat::F16),
        other => Err(format!("`{other}` is not a KV-cache format; use f32 or f16")),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    pub max_text_chars: usize,
    pub max_frames: u32,
    pub max_ws_messages_per_second: u32,
    pub max_ws_message_bytes: usize,
    pub ws_idle_timeout_s: u64,
    pub max_buffered_frames: usize,
    /// Open WebSocket connections, in total and per API key (0: no cap).
    pub max_ws_connections: usize,
    pub max_ws_connections_per_key: usize,
    /// Contexts one multiplexed WebSocket may hold at once.
    pub max_ws_contexts: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_text_chars: 500_000,
            max_frames: 0,
            max_ws_messages_per_second: 50,
            max_ws_message_bytes: 65536,
            ws_idle_timeout_s: 60,
            max_buffered_frames: 256,
            max_ws_connections: 1024,
            max_ws_connections_per_key: 256,
            max_ws_contexts: 8,
        }
    }
}

/// Cloned voices (Base models): the database that keeps them, upload limits, and the aliases
/// that map other names (OpenAI's voices) to voices of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VoicesSection {
    /// Where the default SQLite database lives, and voice files (`*.json`) to import.
    pub dir: String,
    /// `sqlite://PATH` or `postgres://...`; empty: `sqlite://{dir}/voices.db`.
    pub database: String,
    /// Connections the server may hold open to the database.
    pub database_max_connections: u32,
    /// How long one voice operation may wait for the database before answering 503.
    pub database_timeout_ms: u64,
    pub max_upload_bytes: usize,
    /// Most voices one tenant may store.
    pub max_voices: usize,
    /// Another name for a voice (lower case), e.g. `alloy = "vivian"`.
    pub aliases: BTreeMap<String, String>,
}

impl Default for VoicesSection {
    fn default() -> Self {
        VoicesSection {
            dir: "voices".into(),
            database: String::new(),
            database_max_connections: 8,
            database_timeout_ms: 2000,
            max_upload_bytes: 20 << 20,
            max_voices: 1000,
            aliases: default_aliases(),
        }
    }
}

/// OpenAI's voice names on the CustomVoice models' presets, so OpenAI clients work unchanged.
fn default_aliases() -> BTreeMap<String, String> {
    [
        ("alloy", "vivian"),
        ("ash", "ryan"),
        ("ballad", "uncle_fu"),
        ("coral", "serena"),
        ("echo", "aiden"),
        ("fable", "ryan"),
        ("nova", "vivian"),
        ("onyx", "uncle_fu"),
        ("sage", "serena"),
        ("shimmer", "sohee"),
        ("verse", "aiden"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

impl VoicesSection {
    /// The database URL, with the default (SQLite in `dir`) filled in.
    pub fn database_url(&self) -> String {
        if self.database.trim().is_empty() {
            format!("sqlite://{}/voices.db", self.dir.trim_end_matches('/'))
        } else {
            self.database.trim().to_string()
        }
    }
}

pub use crate::tenants::TenantSection;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSection {
    /// Keys that are each a tenant of their own.
    pub api_keys: Vec<String>,
    /// Named tenants with their keys.
    pub tenants: Vec<TenantSection>,
    pub max_sessions_per_key: usize,
}

impl AuthSection {
    /// Every configured key with its tenant (see `tenants`).
    pub fn keys_and_tenants(&self) -> Result<Vec<(String, crate::tenants::Tenant)>, String> {
        crate::tenants::keys_and_tenants(&self.api_keys, &self.tenants)
    }

    /// Every tenant, sorted, each once.
    pub fn all_tenants(&self) -> Result<Vec<crate::tenants::Tenant>, String> {
        crate::tenants::all(&self.api_keys, &self.tenants)
    }

    /// The one tenant of a single-tenant configuration.
    pub fn only_tenant(&self) -> Result<Option<crate::tenants::Tenant>, String> {
        crate::tenants::only(&self.api_keys, &self.tenants)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingSection {
    pub json: bool,
    pub level: String,
}

impl Default for LoggingSection {
    fn default() -> Self {
        LoggingSection { json: false, level: "info".into() }
    }
}

impl ServerConfig {
    /// Reads `path` (if any), applies `LYRE_*` variables from `env`, and validates.
    pub fn load(
        path: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        let mut table = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                text.parse::<toml::Table>().with_context(|| format!("{}: invalid TOML", p.display()))?
            }
            None => toml::Table::new(),
        };
        apply_env(&mut table, env)?;
        let cfg: ServerConfig = toml::Value::Table(table).try_into().map_err(|e| {
            anyhow!("{}: {e}", path.map_or("configuration".into(), |p| p.display().to_string()))
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        self.server.listen.parse::<std::net::SocketAddr>().with_context(|| {
            format!("server.listen: `{}` is not an address like 0.0.0.0:8080", self.server.listen)
        })?;
        if self.server.header_read_timeout_s == 0 {
            bail!("server.header_read_timeout_s: must be at least 1");
        }
        if self.server.max_connections == 0 {
            bail!("server.max_connections: must be at least 1");
        }
        let e = &self.engine;
        if e.max_sessions == 0 || e.max_sessions > 4096 {
            bail!("engine.max_sessions: must be in 1..=4096, got {}", e.max_sessions);
        }
        if e.max_positions < 64 {
            bail!("engine.max_positions: must be at least 64, got {}", e.max_positions);
        }
        e.kv_format()?;
        if e.segment_tokens != 0 && e.segment_tokens < lyre_engine::segment::MIN_SEGMENT_TOKENS {
            bail!(
                "engine.segment_tokens: must be 0 (sized for the cache) or at least {}, got {}",
                lyre_engine::segment::MIN_SEGMENT_TOKENS,
                e.segment_tokens
            );
        }
        e.tuning.validate()?;
        if e.launch_slack_ms > 100 {
            bail!("engine.launch_slack_ms: must be at most 100, got {}", e.launch_slack_ms);
        }
        if e.first_audio_margin_ms > 80 {
            bail!(
                "engine.first_audio_margin_ms: must be at most 80 (a frame's audio), got {}",
                e.first_audio_margin_ms
            );
        }
        if e.max_rows_per_tick < 16 {
            bail!("engine.max_rows_per_tick: must be at least 16, got {}", e.max_rows_per_tick);
        }
        if self.limits.max_text_chars == 0 {
            bail!("limits.max_text_chars: must be at least 1");
        }
        if self.limits.max_buffered_frames < 4 {
            bail!("limits.max_buffered_frames: must be at least 4, got {}", self.limits.max_buffered_frames);
        }
        if self.limits.max_ws_contexts == 0 {
            bail!("limits.max_ws_contexts: must be at least 1");
        }
        if self.limits.ws_idle_timeout_s == 0 {
            bail!("limits.ws_idle_timeout_s: must be at least 1");
        }
        if self.limits.max_ws_messages_per_second == 0 {
            bail!("limits.max_ws_messages_per_second: must be at least 1");
        }
        if !self.model.dir.is_empty() && !self.model.repo.is_empty() {
            bail!("model.dir and model.repo are both set; choose one");
        }
        if self.voices.dir.trim().is_empty() {
            bail!("voices.dir: must name a directory");
        }
        if self.voices.max_upload_bytes < 1024 {
            bail!("voices.max_upload_bytes: must be at least 1024, got {}", self.voices.max_upload_bytes);
        }
        self.auth.keys_and_tenants().map_err(|e| anyhow!("auth: {e}"))?;
        let v = &self.voices;
        crate::voices::DatabaseUrl::parse(&v.database_url()).map_err(|e| anyhow!("voices.database: {e}"))?;
        if v.database_max_connections == 0 {
            bail!("voices.database_max_connections: must be at least 1");
        }
        if v.database_timeout_ms < 10 {
            bail!("voices.database_timeout_ms: must be at least 10, got {}", v.database_timeout_ms);
        }
        for (alias, target) in &v.aliases {
            for name in [alias, target] {
                crate::voices::validate_name(name, "")
                    .map_err(|e| anyhow!("voices.aliases: `{alias} = \"{target}\"`: {}", e.message))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
