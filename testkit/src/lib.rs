//! `testkit`: what the tests of several crates share, kept out of the product.
//!
//! - [`timing`]: tests that measure time (`loadgen`'s known answers, `sim`'s timelines) take
//!   one lock and retry when the hypervisor stole the CPUs;
//! - [`nvml`]: the scripted fake NVML library that `telemetry` and `runner` tests load in
//!   place of libnvidia-ml.
//!
//! Every crate takes it as a dev-dependency only, so `cargo build` and `cargo test` build
//! the product crates with the same features, and the tests reuse the build.

pub mod nvml;
pub mod timing;
