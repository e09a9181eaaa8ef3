//! What the integration tests share: where the real `llama-server` is installed, reading
//! a result's statement, a free port, `runner sim` as a process ([`sim`]), the runner run to
//! its end with the built wasm module ([`run`]), and the runner as a bounded child
//! ([`children`]).
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

/// `runner sim` as a process of its own, killed when dropped; `.1` is its base URL.
pub struct Sim(pub std::process::Child, pub String);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `runner sim ARGS` on a free port and waits (up to 30 s) until it listens.
pub fn sim(args: &[&str]) -> Sim {
    let port = free_port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_runner"))
        .args(["sim", "--port", &port.to_string()])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the simulator did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Sim(child, format!("http://127.0.0.1:{port}"))
}

/// `runner run --target TARGET ARGS` in `dir`, signed with `lab.key` (made on first use), NVML
/// played from `script` by the fake library (`None`: no library at all), then `runner verify`;
/// the run's output, its statement and its file's name (a file of its own each run: a journal
/// is never overwritten).
pub fn run_on_nvml(
    dir: &Path,
    target: &str,
    script: Option<&str>,
    args: &[&str],
) -> (std::process::Output, serde_json::Value, String) {
    use std::process::Command;
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !dir.join("lab.key").exists() {
        let k = Command::new(env!("CARGO_BIN_EXE_runner"))
            .current_dir(dir)
            .args(["keygen", "lab"])
            .output()
            .unwrap();
        assert!(k.status.success());
    }
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let name = format!("r{}.json", RUNS.fetch_add(1, Ordering::Relaxed));
    let mut c = Command::new(env!("CARGO_BIN_EXE_runner"));
    c.current_dir(dir)
        .args([
            "run", "--target", target, "--key", "lab.key", "--out", &name,
        ])
        .args(args)
        .env("RUST_LOG", "warn");
    match script {
        Some(text) => {
            let s = testkit::nvml::script(dir, text);
            c.env("PROVEBENCH_NVML_LIB", testkit::nvml::fake_nvml_lib())
                .env("FAKE_NVML_SCRIPT", s);
        }
        None => {
            c.env("PROVEBENCH_NVML_LIB", dir.join("no-such-libnvidia-ml.so"));
        }
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let verify = Command::new(env!("CARGO_BIN_EXE_runner"))
        .current_dir(dir)
        .args(["verify", "--key", "lab.pub", &name])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "verify: {}",
        String::from_utf8_lossy(&verify.stdout)
    );
    let st = statement(&dir.join(&name));
    (out, st, name)
}
