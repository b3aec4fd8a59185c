//! `lyre voices list|delete|import`: the operator's view of the voice database, with the
//! server's configuration (database URL, tenants) from --config / LYRE_CONFIG and LYRE_*.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand};

use crate::config::ServerConfig;
use crate::tenants::Tenant;
use crate::voices::{read_voice_file, validate_name, StoredVoice, VoiceStore};

#[derive(Debug, Args)]
pub struct VoicesArgs {
    /// The server's TOML config (for `voices.database` and the tenants).
    #[arg(long, env = "LYRE_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// The database URL, instead of the config's `voices.database`.
    #[arg(long, global = true)]
    pub database: Option<String>,
    #[command(subcommand)]
    pub command: VoicesCommand,
}

#[derive(Debug, Subcommand)]
pub enum VoicesCommand {
    /// List stored voices: one tenant's, or every tenant's.
    List {
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Delete one tenant's voice.
    Delete {
        name: String,
        /// Needed when the configuration has several tenants.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Import voice files (`NAME.json`) into a tenant's voices; each file once.
    Import {
        dir: PathBuf,
        /// Needed when the configuration has several tenants.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// The configured tenants (never their keys).
    Tenants,
}

pub fn run(args: VoicesArgs) -> anyhow::Result<()> {
    let mut cfg = ServerConfig::load(args.config.as_deref(), std::env::vars())?;
    if let Some(url) = &args.database {
        cfg.voices.database = url.clone();
        cfg.validate()?;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        if let VoicesCommand::Tenants = args.command {
            return print_tenants(&cfg);
        }
        let store = open(&cfg).await?;
        let result = command(&store, &cfg, args.command).await;
        store.close().await;
        result
    })
}

async fn command(store: &VoiceStore, cfg: &ServerConfig, command: VoicesCommand) -> anyhow::Result<()> {
    match command {
        VoicesCommand::List { tenant } => {
            let tenant =
                tenant.as_deref().map(Tenant::new).transpose().map_err(|e| anyhow!("--tenant: {e}"))?;
            let voices = store.list(tenant.as_ref()).await?;
            println!("{:<24} {:<32} {:<28} {:>7} {:>5}", "TENANT", "NAME", "MODEL", "SECONDS", "ICL");
            for (t, v) in &voices {
                let model = format!("{} {}", v.model.model_type, v.model.size);
                let icl = if v.has_transcript { "yes" } else { "no" };
                println!("{:<24} {:<32} {:<28} {:>7.2} {:>5}", t, v.name, model, v.seconds, icl);
            }
            eprintln!("{} voice(s) in {}", voices.len(), store.describe());
        }
        VoicesCommand::Delete { name, tenant } => {
            validate_name(&name, "name").map_err(|f| anyhow!("{}", f.message))?;
            let tenant = choose_tenant(cfg, tenant.as_deref())?;
            if !store.remove(&tenant, &name).await? {
                bail!("tenant `{tenant}` has no voice `{name}` in {}", store.describe());
            }
            println!("deleted voice `{name}` of tenant `{tenant}`");
        }
        VoicesCommand::Import { dir, tenant } => {
            if !dir.is_dir() {
                bail!("{} is not a directory", dir.display());
            }
            let tenant = choose_tenant(cfg, tenant.as_deref())?;
            let r = store.import_dir(&dir, &tenant).await?;
            for (path, why) in &r.unreadable {
                eprintln!("skipped {}: {why}", path.display());
            }
            for name in &r.name_taken {
                eprintln!("not imported `{name}`: tenant `{tenant}` already has a voice of that name");
            }
            println!(
                "tenant `{tenant}`: {} imported, {} imported before, {} name(s) taken, {} unreadable",
                r.added.len(),
                r.already_imported.len(),
                r.name_taken.len(),
                r.unreadable.len()
            );
        }
        VoicesCommand::Tenants => unreachable!("handled without a database"),
    }
    Ok(())
}

fn print_tenants(cfg: &ServerConfig) -> anyhow::Result<()> {
    let pairs = cfg.auth.keys_and_tenants().map_err(|e| anyhow!("auth: {e}"))?;
    for t in cfg.auth.all_tenants().map_err(|e| anyhow!("auth: {e}"))? {
        let keys = pairs.iter().filter(|(_, tenant)| *tenant == t).count();
        println!("{t}\t{keys} key(s)");
    }
    Ok(())
}

/// The store of the configuration, ready (migrated, `voices.dir` imported as `lyre serve` would).
async fn open(cfg: &ServerConfig) -> anyhow::Result<VoiceStore> {
    let mut cfg = cfg.clone();
    // An operator's command may wait longer for a database than a request does.
    cfg.voices.database_timeout_ms = cfg.voices.database_timeout_ms.max(10_000);
    cfg.voices.database_max_connections = 2;
    let store = VoiceStore::from_config(&cfg).map_err(|e| anyhow!("voices: {e}"))?;
    store.ready().await.with_context(|| format!("opening {}", store.describe()))?;
    Ok(store)
}

/// `--tenant`, or the configuration's only tenant.
fn choose_tenant(cfg: &ServerConfig, given: Option<&str>) -> anyhow::Result<Tenant> {
    if let Some(name) = given {
        return Tenant::new(name).map_err(|e| anyhow!("--tenant: {e}"));
    }
    cfg.auth.only_tenant().map_err(|e| anyhow!("auth: {e}"))?.ok_or_else(|| {
        anyhow!("the configuration has several tenants; choose one with --tenant (see `lyre voices tenants`)")
    })
}

/// A stored voice for `lyre synth --voice`: from a directory of voice files when given, else
/// from the configured database, as `tenant` (default: the only tenant).
pub fn find_voice(
    voices_dir: Option<&Path>,
    config: Option<&Path>,
    tenant: Option<&str>,
    name: &str,
) -> anyhow::Result<StoredVoice> {
    if let Some(dir) = voices_dir {
        let path = dir.join(format!("{name}.json"));
        return read_voice_file(&path)
            .map(|(v, _)| v)
            .map_err(|e| anyhow!("--voice: no stored voice `{name}` in {} ({e})", dir.display()));
    }
    let cfg =
        ServerConfig::load(config, std::env::vars()).context("reading the voice database from the config")?;
    let tenant = choose_tenant(&cfg, tenant)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let store = open(&cfg).await?;
        let found = store.get(&tenant, name).await;
        store.close().await;
        found?.ok_or_else(|| {
            anyhow!("--voice: tenant `{tenant}` has no stored voice `{name}` in {}", store.describe())
        })
    })
}
