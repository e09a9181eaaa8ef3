//! `host`: what provebench learns about where it measures, for the result's provenance.
//!
//! On the data path it sits beside the load generator, before the records: the run asks
//! the machine ([`machine`], [`gpu`]) and the server ([`probe`]) about themselves once, and
//! the runner writes the answers into the result's `host` and `engine` blocks. Nothing here
//! can fail a run — what cannot be learnt is recorded as missing, with the reason — except
//! [`preflight`], which asks before any load whether the server answers at all.

pub mod gpu;
pub mod machine;
pub mod preflight;
pub mod probe;
