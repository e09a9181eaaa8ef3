//! `testkit`: what the tests of several crates share, kept out of the product.
//!
//! - [`timing`]: tests that measure time (`loadgen`'s known answers, `sim`'s timelines) take
//!   one lock and retry when the hypervisor stole the CPUs;
//! - [`nvml`]: the scripted fake NVML library that `telemetry` and `runner` tests load in
//!   place of libnvidia-ml;
//! - [`repo_file`]: a fixture, seed or reference page of the repository, read at run time.
//!
//! Every crate takes it as a dev-dependency only, so `cargo build` and `cargo test` build
//! the product crates with the same features, and the tests reuse the build.

pub mod nvml;
pub mod timing;

/// A file of the repository, read where the test runs (`CARGO_MANIFEST_DIR` at run time, which
/// cargo and nextest set to the running checkout). Not `include_str!`: cargo records a path
/// outside the including crate whole, so a clone of the same sources elsewhere would compile
/// the tests again, and a reused test binary would read the checkout it was compiled in.
pub fn repo_file(path: &str) -> String {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo or nextest");
    let root = std::path::Path::new(&crate_dir).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}
