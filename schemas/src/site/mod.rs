//! What a published site is and how a reader checks it: the signed manifest of every file
//! `runner publish` wrote ([`manifest`]), the SLSA provenance of the report module it serves
//! ([`provenance`]), and the one check over both ([`check`]) that `runner verify-site` runs
//! natively and the site's "verify this site" page runs in the browser through the module.
//!
//! A result is trusted because it is signed and recomputes; the module that verifies and
//! renders it is trusted because its bytes are those a named commit builds reproducibly with
//! the pinned toolchain (its provenance), and the site as a whole because its publisher
//! signed the list of its files. Paths are relative to the site's root, `/`-separated.

pub mod check;
pub mod logs;
pub mod manifest;
pub mod provenance;

#[cfg(test)]
mod tests;

pub use check::{SiteCheck, SiteProblem, SiteVerdict};

/// The signed manifest, at the site's root.
pub const MANIFEST_PATH: &str = "site-manifest.json";
/// The module's signed provenance, beside the module.
pub const PROVENANCE_PATH: &str = "wasm/report_wasm.provenance.json";
/// The module and its wasm-bindgen glue.
pub const MODULE_PATH: &str = "wasm/report_wasm_bg.wasm";
pub const GLUE_PATH: &str = "wasm/report_wasm.js";
/// The page's index of results and campaigns.
pub const INDEX_PATH: &str = "index.json";
/// Where results and campaigns lie.
pub const RESULTS_DIR: &str = "results/";

/// Whether `path` may name a file of a site: relative, `/`-separated, no `.`/`..` or empty
/// component, no backslash or control character (a manifest must not make a verifier read
/// outside the site).
pub fn safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 1024
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}
