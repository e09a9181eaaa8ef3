//! `runner export ARGS…`: runs `runner-export ARGS…`, the `export` crate's program, in this
//! process's place, as git and cargo run their external subcommands. Polars, the largest
//! dependency graph in the project, lives in that program alone: linked into the runner, its
//! features would change shared crates and so every crate's build.
//!
//! The program is looked for beside this one (where `make` and `cargo install` put both),
//! then on `PATH`. Its exit code is the command's: it uses the runner's codes.

use schemas::outcome::ExitReason;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The program's name.
pub const PROGRAM: &str = "runner-export";

pub fn run(args: &[OsString]) -> ExitCode {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(PROGRAM)))
        .filter(|p| p.is_file());
    let program = beside.unwrap_or_else(|| PathBuf::from(PROGRAM));
    let mut command = Command::new(&program);
    command.args(args);
    #[cfg(unix)]
    let error = std::os::unix::process::CommandExt::exec(&mut command);
    #[cfg(not(unix))]
    let error = match command.status() {
        Ok(status) => return ExitCode::from(status.code().unwrap_or(1) as u8),
        Err(e) => e,
    };
    if error.kind() == std::io::ErrorKind::NotFound {
        eprintln!(
            "error: `runner export` runs the program {PROGRAM}, which is not beside this runner nor on PATH. \
It holds polars and is built apart: `make export` in a checkout (it lands beside target/debug/runner), \
or `cargo install --path export` (beside an installed runner)"
        );
    } else {
        eprintln!("error: running {}: {error}", program.display());
    }
    ExitCode::from(ExitReason::Input.code())
}
