//! `runner`: provebench's command line. It composes the libraries along the data path —
//! spec → load (`loadgen`, against a server or `sim`) → records → summary and signed
//! document (`schemas`) → render (report-wasm in wasmtime) → site — and owns the console,
//! the keys and the files. Each subcommand lives in its own module under `commands`.

mod cli;
mod commands;
mod console;
mod keyfile;
mod on_host;
mod output;
mod read;
mod tool;
mod wasm_host;

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
    /// Ctrl-C: what was measured is written, marked incomplete (exit 130).
    Interrupted,
    /// The engine did not start or serve (exit 5); the error ends with its log's last lines.
    Engine(anyhow::Error),
    /// A campaign has cells without a verified result (exit 6); the error lists them.
    Cells(anyhow::Error),
    /// A reproduction differs from its original beyond the noise (exit 7); the error names
    /// the metrics.
    NotReproduced(anyhow::Error),
}

impl Failure {
    pub fn code(&self) -> u8 {
        match self {
            Failure::Verification => 1,
            Failure::Input(_) => 3,
            Failure::Key(_) => 4,
            Failure::Interrupted => 130,
            Failure::Engine(_) => 5,
            Failure::Cells(_) => 6,
            Failure::NotReproduced(_) => 7,
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let cli = cli::Cli::parse();
    let result = match cli.command {
        cli::Command::Keygen { name } => commands::keygen::run(&name),
        cli::Command::Verify(args) => commands::verify::run(&args),
        cli::Command::Run(args) => commands::run::run(&args),
        cli::Command::Finalize(args) => commands::finalize::run(&args),
        cli::Command::Trust(args) => commands::trust::run(&args),
        cli::Command::Merge(args) => commands::merge::run(&args),
        cli::Command::Sim(args) => commands::sim::run(&args),
        cli::Command::Campaign(args) => commands::campaign::run(&args),
        cli::Command::Synth(args) => commands::synth::run(&args),
        cli::Command::Reproduce(args) => commands::reproduce::run(&args),
        cli::Command::Publish(args) => commands::publish::run(&args),
        cli::Command::Serve(args) => commands::serve::run(&args),
        #[cfg(feature = "polars")]
        cli::Command::Export(args) => commands::export::run(&args),
        cli::Command::Report(args) => commands::report::render_files(&args.files, &args.render),
        cli::Command::Diff(args) => commands::report::diff(&args),
        cli::Command::Compare(args) => commands::report::compare(&args),
        cli::Command::Import(args) => commands::import::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            match &failure {
                Failure::Verification | Failure::Interrupted => {}
                Failure::Input(e)
                | Failure::Key(e)
                | Failure::Engine(e)
                | Failure::Cells(e)
                | Failure::NotReproduced(e) => eprintln!("error: {e:#}"),
            }
            ExitCode::from(failure.code())
        }
    }
}
