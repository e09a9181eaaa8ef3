//! The truth log: every request that ended, one JSON line each, appended to a file as it ends,
//! so that a test running the simulator as its own process (`runner sim --truth-log FILE`)
//! holds the server's account beside the client's.
//!
//! Fields: `index` (arrival order), `route`, `fault` (null, or as [`RequestTruth::fault`]),
//! `prompt_tokens`, `output_tokens` (content tokens written), `adapter`, and the times in µs
//! since the server started: `arrived_us` (its bytes at the server, [`RequestTruth::arrived`]),
//! `received_us` (its handler's start), `admitted_us`, `first_token_us` (null when none was
//! written), `end_us`; speculative decoding's `drafts` (verification steps), `draft_tokens`
//! and `accepted_tokens` (0 without it); and on the decode side of a disaggregated deployment
//! `remote_prefill_us` and `kv_transfer_us` (null otherwise).

use crate::RequestTruth;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

pub(crate) struct TruthLog {
    file: Mutex<File>,
    started: Instant,
}

impl TruthLog {
    /// Opens `path` for appending (creating it), the server's clock starting at `started`.
    pub fn open(path: &Path, started: Instant) -> std::io::Result<TruthLog> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(TruthLog {
            file: Mutex::new(file),
            started,
        })
    }

    /// Appends `t` as one line, whole (one write), with the content tokens it wrote and when
    /// the first went; a failed write is logged, never fatal.
    pub fn write(&self, t: &RequestTruth, output_tokens: u32, first_token: Option<Instant>) {
        let us = |at: Instant| at.saturating_duration_since(self.started).as_micros() as u64;
        let line = serde_json::json!({
            "index": t.index,
            "route": t.route,
            "fault": t.fault,
            "prompt_tokens": t.prompt_tokens,
            "output_tokens": output_tokens,
            "adapter": t.adapter,
            "arrived_us": t.arrived.map(us),
            "received_us": us(t.received),
            "admitted_us": us(t.admitted),
            "first_token_us": first_token.map(us),
            "end_us": us(t.end),
            "drafts": t.drafts,
            "draft_tokens": t.draft_tokens,
            "accepted_tokens": t.accepted_tokens,
            "remote_prefill_us": t.remote_prefill.map(|d| d.as_micros() as u64),
            "kv_transfer_us": t.kv_transfer.map(|d| d.as_micros() as u64),
        });
        let mut text = line.to_string();
        text.push('\n');
        let mut file = self.file.lock().expect("truth log lock");
        if let Err(e) = file.write_all(text.as_bytes()) {
            tracing::warn!("writing the truth log: {e}");
        }
    }
}
