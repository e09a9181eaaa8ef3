//! The tool block of every result this binary writes: its name, version and git commit.

/// The tool block of every result this binary writes.
pub fn tool() -> schemas::document::Tool {
    let commit = env!("PROVEBENCH_GIT_COMMIT");
    schemas::document::Tool {
        name: "provebench-runner".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: (!commit.is_empty()).then(|| commit.to_string()),
    }
}
