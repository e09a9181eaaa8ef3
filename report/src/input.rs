//! A document as the renderer takes it: what `schemas::load` read and checked, with the
//! verdict put into sentences by `schemas::findings` (markdown-escaped) for the report.
//!
//! The renderer is given trusted keys only where the host has them (the site's keys file,
//! `runner report --keys`); without them it never claims a signature is valid, it names
//! the keys that signed. Everything else the verification checks — the statement's form,
//! every record's consistency, a bit-for-bit recomputation of the summaries and
//! record-derived flags — becomes lines beside the document; only input that is not a
//! result document at all is an error.

use crate::RenderError;
use schemas::document::Statement;
use schemas::findings;
use schemas::load::{self, NotAResult};
use schemas::verify::{Policy, Verdict};

/// A document and what the renderer found out about it, as markdown lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub statement: Statement,
    /// Provenance and check results, already markdown-escaped, one sentence each.
    pub checks: Vec<String>,
    /// What verification found (`None` for statements handed over already parsed).
    pub verdict: Option<Verdict>,
}

impl Loaded {
    /// A statement handed over already parsed: nothing is checked or said about it.
    pub fn unchecked(statement: Statement) -> Loaded {
        Loaded {
            statement,
            checks: vec![],
            verdict: None,
        }
    }

    /// What `schemas::load` gave, with its verdict in the report's sentences.
    pub fn from_load(loaded: load::Loaded, keys_given: bool) -> Loaded {
        let quote = |s: &str| crate::md_escape(s);
        let mut checks = vec![findings::signature(
            &loaded.verdict,
            loaded.form,
            keys_given,
            &quote,
        )];
        checks.extend(findings::summary(&loaded.verdict, &quote));
        Loaded {
            statement: loaded.statement,
            checks,
            verdict: Some(loaded.verdict),
        }
    }
}

/// Parses `bytes` (an envelope, else a bare statement), verifying any signature against
/// `trusted` keys (none: signatures are named, not judged). `input` names the input in
/// errors (`input 2`, `A`).
pub fn load(
    bytes: &[u8],
    input: &str,
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Loaded, RenderError> {
    load_or_why(bytes, trusted).map_err(|e| RenderError::Input {
        input: input.to_string(),
        reason: e.reason,
    })
}

/// [`load()`], keeping on failure what `schemas::load` said (its verdict too).
pub fn load_or_why(
    bytes: &[u8],
    trusted: &[schemas::keys::TrustedKey],
) -> Result<Loaded, NotAResult> {
    load::load(bytes, trusted, Policy::AllowUnsigned)
        .map(|loaded| Loaded::from_load(loaded, !trusted.is_empty()))
}
