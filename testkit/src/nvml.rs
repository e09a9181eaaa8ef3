//! The fake NVML of `fixtures/fake_nvml.c`,
//! built into a shared library that `telemetry::nvml::Nvml::open` loads in place of
//! libnvidia-ml, and its scripts. The C source is embedded so that other crates' tests
//! use it too. The script format is documented at the top of the C file; the library
//! reads the script named by the env var `FAKE_NVML_SCRIPT` at nvmlInit, so tests that
//! set it must not run at the same time (one test, or a static Mutex).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

const SOURCE: &str = include_str!("../fixtures/fake_nvml.c");

/// The fake NVML library, compiled with `cc -shared -fPIC -O2` once per process into a
/// temp dir keyed by a hash of the source (so processes share it and an edit rebuilds).
/// Panics, naming what failed, when it cannot be built.
pub fn fake_nvml_lib() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| build().unwrap_or_else(|e| panic!("fake NVML: {e}")))
        .clone()
}

fn build() -> Result<PathBuf, String> {
    let mut hasher = DefaultHasher::new();
    SOURCE.hash(&mut hasher);
    let dir = std::env::temp_dir().join(format!("provebench-fake-nvml-{:016x}", hasher.finish()));
    let lib = dir.join("libfake_nvml.so");
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Built under names of this process's own and renamed into place: test processes
    // running side by side never load a half-written library.
    let pid = std::process::id();
    let src = dir.join(format!("fake_nvml.{pid}.c"));
    let tmp = dir.join(format!("libfake_nvml.{pid}.so"));
    std::fs::write(&src, SOURCE).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&tmp)
        .arg(&src);
    let out = cc
        .output()
        .map_err(|e| format!("running {cc:?} (is a C compiler installed?): {e}"))?;
    let _ = std::fs::remove_file(&src);
    if !out.status.success() {
        return Err(format!(
            "{cc:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    std::fs::rename(&tmp, &lib)
        .map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), lib.display()))?;
    Ok(lib)
}

/// Writes `text` as a new script file in `dir` and returns its path, for
/// `FAKE_NVML_SCRIPT`. Each call gets a file of its own. Panics, naming the file, on failure.
pub fn script(dir: &Path, text: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("fake_nvml_script.{}.{n}.txt", std::process::id()));
    std::fs::write(&path, text)
        .unwrap_or_else(|e| panic!("fake NVML: writing script {}: {e}", path.display()));
    path
}
