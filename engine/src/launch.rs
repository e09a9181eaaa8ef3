//! Starting an engine from a recipe, knowing when it serves, and stopping it with nothing
//! left behind.
//!
//! The engine runs in a process group of its own (so a stop reaches every worker it
//! forked, and the terminal's Ctrl-C reaches the runner, which stops it in order), with
//! `PR_SET_PDEATHSIG`, and under a guard: a small `sh` that holds the read end of a pipe
//! only the runner writes to. However the runner ends — returning, Ctrl-C, SIGTERM,
//! `kill -9` — the pipe closes, and the guard sends the group SIGTERM, then SIGKILL after
//! the recipe's stop timeout, and removes the container if there is one (a container
//! outlives its `docker run` client, so the parent-death signal alone would not do).

use crate::recipe::{self, Loaded, Values};
use anyhow::{anyhow, bail, Context};
use schemas::document::SpeculativeSettings;
use schemas::document::{Launch, LogFile};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `<out>.engine.log`: where the engine's output goes, beside the result it serves.
pub fn log_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".engine.log");
    s.into()
}

/// How to run the recipe's engine.
#[derive(Clone, Debug)]
pub struct Options {
    pub values: Values,
    /// Run the recipe's container image with this runtime (`docker`, `podman`).
    pub container_runtime: Option<String>,
    /// Overrides the recipe's image.
    pub image: Option<String>,
    /// Extra environment for the engine (after the recipe's).
    pub env: BTreeMap<String, String>,
    /// Also set the environment the prefix-cache reset endpoint needs.
    pub reset_prefix_cache: bool,
    /// Names the container (`provebench-<run id>`).
    pub run_id: String,
    /// Speculative decoding asked for: the recipe's `[speculative]` flags carry it, after the
    /// user's `{args}`.
    pub speculative: Option<SpeculativeSettings>,
    /// LoRA adapters to load at start (`NAME=PATH` each) and how many one batch may hold:
    /// the recipe's `[lora]` flags carry them, after the user's `{args}`.
    pub lora_modules: Vec<String>,
    pub max_loras: Option<u32>,
    /// The name to serve the model under, through the recipe's `served_name` flag (none: the
    /// engine's own choice, which for a local model is its path).
    pub served_name: Option<String>,
}

/// The exact command, checked, before anything starts.
#[derive(Clone, Debug)]
pub struct Plan {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub container: Option<(String, String)>,
    pub image: Option<String>,
    pub speculative: Option<SpeculativeSettings>,
    pub port: u16,
}

/// Names whose values never enter a result (`HF_TOKEN`, `--api-key`, `AWS_SECRET_ACCESS_KEY`,
/// `--password`); not `--key` alone, the runner's signing key file.
pub fn secret(name: &str) -> bool {
    let n = name
        .trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_");
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "API_KEY",
        "ACCESS_KEY",
        "APIKEY",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// An argv as a result may record it: the value of a secret-named option (`--api-key X`,
/// `--hf-token=X`) or variable (`-e HF_TOKEN=X`) is written `<redacted>`.
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for arg in argv {
        if std::mem::take(&mut hide_next) {
            out.push("<redacted>".into());
            continue;
        }
        match arg.split_once('=') {
            Some((k, _)) if secret(k) => out.push(format!("{k}=<redacted>")),
            None if arg.starts_with('-') && secret(arg) => {
                hide_next = true;
                out.push(arg.clone());
            }
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// The argv and environment the recipe gives with these options; refuses what cannot start
/// (binary not found, port taken) naming the recipe and field.
pub fn plan(loaded: &Loaded, o: &Options) -> anyhow::Result<Plan> {
    let r = &loaded.recipe;
    let mut env = r.env.clone();
    if o.reset_prefix_cache {
        if let Some(reset) = &r.prefix_cache_reset {
            env.extend(reset.env.clone());
        }
    }
    env.extend(o.env.clone());
    let mut values = o.values.clone();
    if let (Some(name), Some(flag)) = (&o.served_name, r.served_name.first()) {
        let named = r
            .served_name
            .iter()
            .any(|f| recipe::gives_flag(&values.args, f));
        if !named {
            values.args.extend([flag.clone(), name.clone()]);
        }
    }
    if let Some(s) = &o.speculative {
        let flags = r.speculative.as_ref().ok_or_else(|| {
            anyhow!(
                "engine recipe {} has no [speculative] table: pass the engine's own flags with \
                 --engine-arg",
                loaded.source
            )
        })?;
        let args = flags.args(&loaded.source, s, &values.args)?;
        values.args.extend(args);
    }
    if !o.lora_modules.is_empty() || o.max_loras.is_some() {
        let flags = r.lora.as_ref().ok_or_else(|| {
            anyhow!(
                "engine recipe {} has no [lora] table (it serves no adapter under a request's \
                 model name): pass the engine's own flags with --engine-arg",
                loaded.source
            )
        })?;
        values
            .args
            .extend(flags.args(&loaded.source, &o.lora_modules, o.max_loras)?);
    }
    let v = &values;
    let (argv, container, image) = match &o.container_runtime {
        None => (recipe::expand(&r.command, v), None, None),
        Some(runtime) => {
            let c = r.container.as_ref().ok_or_else(|| {
                anyhow!(
                    "engine recipe {} has no [container] table: run it natively",
                    loaded.source
                )
            })?;
            let image = o.image.clone().unwrap_or_else(|| c.image.clone());
            let name = format!("provebench-{}", o.run_id);
            let mut argv = vec![
                runtime.clone(),
                "run".into(),
                "--rm".into(),
                "--name".into(),
                name.clone(),
            ];
            // docker's --gpus; podman reaches NVIDIA GPUs through CDI.
            if runtime.ends_with("podman") {
                argv.extend(["--device".into(), "nvidia.com/gpu=all".into()]);
            } else {
                argv.extend(["--gpus".into(), "all".into()]);
            }
            argv.extend(["-p".into(), format!("127.0.0.1:{0}:{0}", v.port)]);
            for (k, val) in &env {
                argv.extend(["-e".into(), format!("{k}={val}")]);
            }
            argv.extend(recipe::expand(&c.run_args, v));
            argv.push(image.clone());
            argv.extend(recipe::expand(&c.args, v));
            (argv, Some((runtime.clone(), name)), Some(image))
        }
    };
    let program = &argv[0];
    if find_program(program).is_none() {
        bail!(
            "engine recipe {}: {} {program:?} is not found (not a file, and not on PATH)",
            loaded.source,
            if container.is_some() {
                "container runtime"
            } else {
                "command"
            }
        );
    }
    if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", v.port)) {
        bail!(
            "engine recipe {}: port {} is taken ({e}); stop what listens there or choose \
             another with --engine-port",
            loaded.source,
            v.port
        );
    }
    Ok(Plan {
        argv,
        env,
        container,
        image,
        speculative: o.speculative.clone(),
        port: v.port,
    })
}

/// The path a program name runs, as `execvp` would find it.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| PathBuf::from(program));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// A started engine. Dropping it stops it.
pub struct Running {
    child: Option<Child>,
    guard: Option<Child>,
    plan: Plan,
    log: PathBuf,
    started: Instant,
    stop_timeout: Duration,
}

/// Why a start failed, with the end of the engine's log.
#[derive(Debug, thiserror::Error)]
#[error("{what}\n--- last lines of {log} ---\n{tail}")]
pub struct StartFailed {
    pub what: String,
    pub log: String,
    pub tail: String,
}

/// Starts the planned engine. Must be called from a thread that lives as long as the
/// engine (the parent-death signal follows the thread that forked, not the process).
pub fn start(plan: Plan, log: &Path, stop_timeout: Duration) -> anyhow::Result<Running> {
    let out =
        File::create(log).with_context(|| format!("creating engine log {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(&plan.argv[0]);
    cmd.args(&plan.argv[1..])
        .envs(&plan.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", plan.argv[0]))?;
    let pgid = child.id();
    let (runtime, container) = plan.container.clone().unzip();
    let guard = Command::new("sh")
        .args([
            "-c",
            // Reads until the runner's end of the pipe closes, however the runner ended.
            r#"trap '' INT TERM HUP; read _ignored; kill -TERM -- -"$1" 2>/dev/null; i=0; while kill -0 -- -"$1" 2>/dev/null && [ $i -lt "$2" ]; do sleep 1; i=$((i+1)); done; kill -KILL -- -"$1" 2>/dev/null; [ -n "$3" ] && "$4" rm -f "$3" >/dev/null 2>&1; exit 0"#,
            "provebench-engine-guard",
            &pgid.to_string(),
            &stop_timeout.as_secs().max(1).to_string(),
            container.as_deref().unwrap_or(""),
            runtime.as_deref().unwrap_or(""),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the engine's guard (sh)")?;
    tracing::info!(pid = pgid, argv = ?plan.argv, log = %log.display(), "engine started");
    Ok(Running {
        child: Some(child),
        guard: Some(guard),
        plan,
        log: log.to_path_buf(),
        started: Instant::now(),
        stop_timeout,
    })
}

impl Running {
    /// The engine's process id (its process group's too), while it has not been stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Where the engine's output goes.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Waits until `GET url` answers 2xx; fails when the engine exits or `timeout` passes.
    pub fn wait_ready(
        &mut self,
        url: &str,
        method: &str,
        timeout: Duration,
    ) -> Result<Duration, StartFailed> {
        let serves = || {
            wire::blocking::request(method, url, Duration::from_secs(5))
                .is_ok_and(|a| a.is_success())
        };
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(self.failed(format!("the engine exited ({status}) before it served")));
            }
            if serves() {
                return Ok(self.started.elapsed());
            }
            if self.started.elapsed() > timeout {
                return Err(self.failed(format!(
                    "the engine did not serve {url} within {} s",
                    timeout.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn failed(&self, what: String) -> StartFailed {
        StartFailed {
            what,
            log: self.log.display().to_string(),
            tail: log_tail(&self.log, 30),
        }
    }

    /// The image's digest, as the container runtime resolved it.
    pub fn image_digest(&self) -> Option<String> {
        let (runtime, _) = self.plan.container.as_ref()?;
        let image = self.plan.image.as_ref()?;
        let out = Command::new(runtime)
            .args([
                "image",
                "inspect",
                "--format",
                "{{json .RepoDigests}} {{.Id}}",
                image,
            ])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let (digests, id) = text.trim().rsplit_once(' ')?;
        let repo: Vec<String> = serde_json::from_str(digests).unwrap_or_default();
        Some(repo.into_iter().next().unwrap_or_else(|| id.to_string()))
    }

    /// Stops the engine (SIGTERM to its group, SIGKILL after the stop timeout) and returns
    /// its log's name and digest.
    pub fn stop(&mut self) -> LogFile {
        self.shutdown();
        log_file(&self.log)
    }

    fn shutdown(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id() as i32;
        // The guard would act once the runner's end of its pipe closes: stopped first.
        if let Some(mut guard) = self.guard.take() {
            let _ = guard.kill();
            let _ = guard.wait();
        }
        if let Some((runtime, name)) = &self.plan.container {
            let _ = Command::new(runtime)
                .args(["stop", "-t", &self.stop_timeout.as_secs().to_string(), name])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + self.stop_timeout;
        while Instant::now() < deadline && group_alive(pgid) {
            let _ = child.try_wait();
            std::thread::sleep(Duration::from_millis(100));
        }
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = child.wait();
        tracing::info!(pid = pgid, "engine stopped");
    }

    /// What the document says of this launch.
    pub fn describe(
        &self,
        loaded: &Loaded,
        ready: Duration,
        image_digest: Option<String>,
        log: LogFile,
    ) -> Launch {
        Launch {
            recipe: loaded.recipe.name.clone(),
            recipe_sha256: loaded.sha256.clone(),
            recipe_text: loaded.text.clone(),
            argv: redact_argv(&self.plan.argv),
            env: self
                .plan
                .env
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        if secret(k) {
                            "<redacted>".into()
                        } else {
                            v.clone()
                        },
                    )
                })
                .collect(),
            image: self.plan.image.clone(),
            image_digest,
            ready_ms: ready.as_millis() as u64,
            log,
            speculative: self.plan.speculative.clone(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// The log's name (as given), sha256 and size.
pub fn log_file(path: &Path) -> LogFile {
    use sha2::Digest;
    let bytes = std::fs::read(path).unwrap_or_default();
    LogFile {
        file: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        sha256: hex::encode(sha2::Sha256::digest(&bytes)),
        bytes: bytes.len() as u64,
    }
}

/// The last `n` lines of a file (at most its last 64 KB).
pub fn log_tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return "(no log)".into();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(65_536)));
    let mut bytes = vec![];
    let _ = f.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// How process `pid` (a child of this process) ended, once it has: `None` while it runs.
/// The child is not reaped (`WNOWAIT`), so [`Running::stop`] still collects it.
pub fn exited(pid: u32) -> Option<String> {
    // SAFETY: waitid(2) on our own child with WNOHANG | WNOWAIT only reads its state into
    // `info`, zeroed first so that "still running" reads as si_pid 0.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: after a successful waitid the pid and status fields are set.
    if r != 0 || unsafe { info.si_pid() } == 0 {
        return None;
    }
    let status = unsafe { info.si_status() };
    Some(match info.si_code {
        libc::CLD_EXITED => format!("exit status {status}"),
        libc::CLD_KILLED | libc::CLD_DUMPED => format!("killed by signal {status}"),
        _ => format!("ended (code {})", info.si_code),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_leave_argv_as_names_only() {
        let argv: Vec<String> = [
            "vllm",
            "--api-key",
            "sk-1",
            "--hf-token=hf_2",
            "-e",
            "HF_TOKEN=hf_3",
            "--port",
            "8000",
            "--max-model-len",
            "8192",
            "--key",
            "lab.key",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            super::redact_argv(&argv),
            [
                "vllm",
                "--api-key",
                "<redacted>",
                "--hf-token=<redacted>",
                "-e",
                "HF_TOKEN=<redacted>",
                "--port",
                "8000",
                "--max-model-len",
                "8192",
                "--key",
                "lab.key",
            ]
        );
    }
}
