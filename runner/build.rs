//! Records the git commit the runner is built from, for `run.tool.git_commit`.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let dirty = Command::new("git")
        // No optional locks: a plain `git status` may rewrite the index to refresh it, which
        // would make this script (and the runner's compile) run again on the next build.
        .args([
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let value = match (commit.is_empty(), dirty) {
        (true, _) => String::new(),
        (false, true) => format!("{commit}-dirty"),
        (false, false) => commit,
    };
    println!("cargo:rustc-env=PROVEBENCH_GIT_COMMIT={value}");
    // Re-run when HEAD moves or the index changes, not on every build.
    for path in ["../.git/HEAD", "../.git/index", "../.git/refs"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
