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
    println!("{}", toml::to_string_pretty(&cfg)?);
    Ok(())
}
