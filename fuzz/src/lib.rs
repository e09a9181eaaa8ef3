//! Fuzz targets: every parser that reads bytes someone else wrote, each behind one
//! `fn(&[u8])`.
//!
//! Two kinds of untrusted bytes reach provebench: what a measured server streams back (HTTP
//! response framing, server-sent events, the engines' JSON chunks, Prometheus text) and
//! what anyone hands a verifier or the site (result documents, imported reports, trace and
//! dataset files, attempt logs' checkpoints and tiles). A target must never panic, hang or allocate without bound on any input;
//! where a parser has a property that holds for every input (the same events however the
//! stream is split; one spelling per decoded value), the target asserts it, so a breach is a
//! crash too.
//!
//! `fuzz_targets/` wraps each function for libFuzzer (`scripts/fuzz.sh TARGET SECONDS`);
//! this crate's tests replay the committed corpora and every crash kept in `regressions/`.

mod documents;
mod split;
mod stream;
mod tlog;

pub use documents::{
    import, record_columns, report_diff, report_render, token_gaps, tool_call_grade,
    verify_document,
};
pub use stream::{
    agentx_trace, chunk_openai, chunk_responses, chunk_sglang, chunk_tgi, dataset_file,
    http1_response, pooled_answer, prometheus_text, sse_events, trace_file,
};
pub use tlog::{checkpoint_note, log_tiles};

/// A fuzz target: any bytes in, a panic for a finding.
pub type Target = fn(&[u8]);

/// Every target by name, for the replay tests.
pub const TARGETS: &[(&str, Target)] = &[
    ("sse_events", sse_events),
    ("agentx_trace", agentx_trace),
    ("http1_response", http1_response),
    ("chunk_openai", chunk_openai),
    ("chunk_tgi", chunk_tgi),
    ("chunk_sglang", chunk_sglang),
    ("chunk_responses", chunk_responses),
    ("pooled_answer", pooled_answer),
    ("prometheus_text", prometheus_text),
    ("trace_file", trace_file),
    ("dataset_file", dataset_file),
    ("verify_document", verify_document),
    ("record_columns", record_columns),
    ("token_gaps", token_gaps),
    ("import", import),
    ("report_render", report_render),
    ("report_diff", report_diff),
    ("checkpoint_note", checkpoint_note),
    ("log_tiles", log_tiles),
    ("tool_call_grade", tool_call_grade),
];
