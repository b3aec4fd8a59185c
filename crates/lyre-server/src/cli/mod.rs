//! Command-line parsing and dispatch.

mod bench;
mod check_config;
mod runtime_dir;
mod serve;
mod synth;
mod synth_progress;
mod voices;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "lyre", version, about = "Lyre: a Qwen3-TTS server on wgpu")]
pub struct Cli {
    /// Log lines as JSON (serve: as `logging.json = true`).
    #[arg(long, global = true, env = "LYRE_LOG_JSON")]
    pub log_json: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// (Parsed once per process, so the large `synth` arguments are not boxed.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP and WebSocket API (on a built-in demo model when no checkpoint is given).
    Serve(serve::ServeArgs),
    /// Synthesise one clip from the command line.
    Synth(synth::SynthArgs),
    /// Benchmark the engine (no HTTP) at several batch sizes.
    Bench(bench::BenchArgs),
    /// Validate a configuration file (with LYRE_* overrides) without starting anything.
    CheckConfig(check_config::CheckConfigArgs),
    /// Stored cloned voices in the voice database: list, delete, import voice files.
    Voices(voices::VoicesArgs),
}

pub fn main() -> ExitCode {
    runtime_dir::ensure();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args, cli.log_json),
        Command::Synth(args) => {
            crate::telemetry::init(cli.log_json, "warn,lyre_server=info,lyre_engine=info");
            synth::run(args)
        }
        Command::CheckConfig(args) => check_config::run(args),
        Command::Voices(args) => {
            crate::telemetry::init(cli.log_json, "warn");
            voices::run(args)
        }
        Command::Bench(args) => {
            crate::telemetry::init(cli.log_json, "warn");
            bench::run(args)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
