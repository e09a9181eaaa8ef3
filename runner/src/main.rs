//! `runner`: provebench's command line. It composes the libraries along the data path —
//! spec → load (`loadgen`, against a server or `sim`) → records → summary and signed
//! document (`schemas`) → render (report-wasm in wasmtime) → site — and owns the console,
//! the keys and the files. Each subcommand lives in its own module under `commands`.

mod attempt;
mod cli;
mod commands;
mod console;
mod fail_on;
mod files;
mod keyfile;
mod on_host;
mod output;
mod read;
mod tool;
mod wasm_host;

use clap::Parser;
use schemas::outcome::{Exit, ExitReason, Outcome};
use std::process::ExitCode;

/// What went wrong, and so which exit code the shell sees (`schemas::outcome::ExitReason`
/// declares the codes).
#[derive(Debug)]
pub enum Failure {
    /// A result did not verify.
    Verification,
    /// Bad input or an I/O error.
    Input(anyhow::Error),
    /// A key was refused: wrong permissions, unreadable, wrong type.
    Key(anyhow::Error),
    /// Ctrl-C: what was measured is written, marked incomplete.
    Interrupted,
    /// The engine did not start or serve; the error ends with its log's last lines.
    Engine(anyhow::Error),
    /// A campaign has cells without a verified result; the error lists them.
    Cells(anyhow::Error),
    /// A reproduction differs from its original beyond the noise; the error names the metrics.
    NotReproduced(anyhow::Error),
    /// The result is written but carries a validity flag at or above `--fail-on`.
    Flagged(anyhow::Error),
    /// The server could not be reached before any load: nothing measured, nothing written.
    Unreachable(anyhow::Error),
    /// `runner gate`: a metric regressed beyond the noise and the allowed regression.
    Regressed(anyhow::Error),
}

impl Failure {
    pub fn reason(&self) -> ExitReason {
        match self {
            Failure::Verification => ExitReason::VerificationFailed,
            Failure::Input(_) => ExitReason::Input,
            Failure::Key(_) => ExitReason::Key,
            Failure::Interrupted => ExitReason::Interrupted,
            Failure::Engine(_) => ExitReason::Engine,
            Failure::Cells(_) => ExitReason::Cells,
            Failure::NotReproduced(_) => ExitReason::NotReproduced,
            Failure::Flagged(_) => ExitReason::Flagged,
            Failure::Unreachable(_) => ExitReason::Unreachable,
            Failure::Regressed(_) => ExitReason::Regressed,
        }
    }

    pub fn code(&self) -> u8 {
        self.reason().code()
    }

    /// The error as the console prints it; `None` for the two that print their own.
    pub fn message(&self) -> Option<String> {
        match self {
            Failure::Verification | Failure::Interrupted => None,
            Failure::Input(e)
            | Failure::Key(e)
            | Failure::Engine(e)
            | Failure::Cells(e)
            | Failure::NotReproduced(e)
            | Failure::Flagged(e)
            | Failure::Unreachable(e)
            | Failure::Regressed(e) => Some(format!("{e:#}")),
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
    // `--json`: the command fills its outcome, and it is printed here, however it ended.
    let json = cli.command.json();
    let mut outcome = Outcome::new(cli.command.name());
    let result = match cli.command {
        cli::Command::Keygen { name } => commands::keygen::run(&name),
        cli::Command::Verify(args) => commands::verify::run(&args, &mut outcome),
        cli::Command::Run(args) => commands::run::run(&args, &mut outcome),
        cli::Command::Finalize(args) => commands::finalize::run(&args),
        cli::Command::Trust(args) => commands::trust::run(&args),
        cli::Command::Merge(args) => commands::merge::run(&args),
        cli::Command::Sim(args) => commands::sim::run(&args),
        cli::Command::Campaign(args) => commands::campaign::run(&args),
        cli::Command::Synth(args) => commands::synth::run(&args),
        cli::Command::Reproduce(args) => commands::reproduce::run(&args),
        cli::Command::Publish(args) => commands::publish::run(&args),
        cli::Command::Serve(args) => commands::serve::run(&args),
        cli::Command::VerifySite(args) => commands::verify_site::run(&args),
        cli::Command::Register(args) => commands::register::run(&args),
        cli::Command::Log(command) => commands::log::run(&command),
        cli::Command::Witness(args) => commands::witness::run(&args),
        cli::Command::Export { args } => return commands::export::run(&args),
        cli::Command::Report(args) => commands::report::render_files(&args.files, &args.render),
        cli::Command::Diff(args) => commands::report::diff(&args, &mut outcome),
        cli::Command::Gate(args) => commands::gate::run(&args, &mut outcome),
        cli::Command::Compare(args) => commands::report::compare(&args),
        cli::Command::Import(args) => commands::import::run(&args),
    };
    let code = match &result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let message = failure.message();
            if let Some(message) = &message {
                eprintln!("error: {message}");
            }
            outcome.exit = Exit::new(failure.reason(), message);
            ExitCode::from(failure.code())
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string(&outcome).expect("an outcome serialises")
        );
    }
    code
}
