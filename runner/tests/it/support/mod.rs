//! What the integration tests share: where the real `llama-server` is installed, reading
//! a result's statement, a free port, the runner run to its end with the built wasm module
//! ([`run`]), and the runner as a bounded child ([`children`]).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod children;

/// LLAMA_SERVER_BIN and LLAMA_MODEL from the environment or `build/llama-server.env`;
/// `None` (the test skips) outside CI when `scripts/install-llama-server.sh` has not run.
pub fn llama_server() -> Option<(PathBuf, PathBuf)> {
    let from_env = || {
        Some((
            std::env::var_os("LLAMA_SERVER_BIN")?.into(),
            std::env::var_os("LLAMA_MODEL")?.into(),
        ))
    };
    let from_file = || {
        let text = std::fs::read_to_string(
            Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
                .join("../build/llama-server.env"),
        )
        .ok()?;
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
                .map(PathBuf::from)
        };
        Some((get("LLAMA_SERVER_BIN")?, get("LLAMA_MODEL")?))
    };
    let found = from_env().or_else(from_file);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "llama-server is not installed: run scripts/install-llama-server.sh (make test does)"
        );
        eprintln!("SKIPPED: llama-server not installed; run scripts/install-llama-server.sh");
    }
    found
}

/// The in-toto statement inside a result's DSSE envelope.
pub fn statement(path: &Path) -> serde_json::Value {
    let envelope: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    use base64::Engine;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(envelope["payload"].as_str().expect("payload"))
        .expect("payload is base64");
    serde_json::from_slice(&payload).expect("payload is JSON")
}

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The module `scripts/build-wasm.sh` built, if it did.
pub fn wasm_module() -> Option<PathBuf> {
    let p = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").unwrap())
        .join("../build/wasm/report_wasm_bg.wasm");
    p.is_file().then_some(p)
}

/// `runner ARGS` in `dir` with quiet logs, rendering with the built module (as `make test`
/// has it; without one the runner looks for it as a user's would).
pub fn command(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_runner"));
    c.current_dir(dir).args(args).env("RUST_LOG", "warn");
    if let Some(wasm) = wasm_module() {
        c.env("PROVEBENCH_WASM", wasm);
    }
    c
}

/// What a finished command printed, stdout then stderr.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// [`command`], run to its end.
pub fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    command(dir, args).output().unwrap()
}

/// [`run`], which must succeed (its stderr in the failure).
pub fn run_ok(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "runner {args:?} exited {}: {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
