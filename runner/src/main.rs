//! `runner`: provebench's command line.
//!
//! The data path: spec → load → records → summary → signed document. Each
//! subcommand lives in its own module under `commands`.

mod cli;
mod commands;
mod keyfile;
mod output;
mod provenance;
mod synth;

use clap::Parser;
use std::process::ExitCode;

/// What went wrong, and so which exit code the shell sees.
#[derive(Debug)]
pub enum Failure {
    /// A result did not verify (exit 1).
    Verification,
    /// Bad input or an I/O error (exit 3).
    Input(anyhow::Error),
    /// A key was refused: wrong permissions, unreadable, wrong type (exit 4).
    Key(anyhow::Error),
}

impl Failure {
    fn code(&self) -> u8 {
        match self {
            Failure::Verification => 1,
            Failure::Input(_) => 3,
            Failure::Key(_) => 4,
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Keygen { name } => commands::keygen::run(&name),
        cli::Command::Verify(args) => commands::verify::run(&args),
        cli::Command::Trust(args) => commands::trust::run(&args),
        cli::Command::Synth(args) => commands::synth::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            match &failure {
                Failure::Verification => {}
                Failure::Input(e) | Failure::Key(e) => eprintln!("error: {e:#}"),
            }
            ExitCode::from(failure.code())
        }
    }
}
