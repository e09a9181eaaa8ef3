//! The decode side of a disaggregated deployment: a request is prefilled by another process
//! (a simulator serving as the prefill side), its KV cache then crosses over in a known time,
//! and only then does this server decode it — as vLLM's NIXL connector and SGLang's
//! disaggregation serve a request on two engines.
//!
//! Before admission ([`crate::model::Generation::admit`]) a generation request is sent whole
//! to [`Disaggregated::prefill_url`] as a `/v1/completions` request for one token, its prompt
//! as token ids (each 16-token block's ids drawn from the block's hash, so prompts that share a
//! prefix share it there too, and the prefill side's prefix cache sees what this one would
//! have); the prefill side queues, prefills and counts it in its own `/metrics`. When that
//! answer is in, the KV transfer takes [`Disaggregated::kv_transfer_ms`] (a timer; the time it
//! really took is what is counted), and the request is then admitted here with its prompt
//! already computed: no prefix-cache lookup, no prefill cost; its first token is due
//! `ttft_ms` after admission (the first decode step).
//!
//! The transfer is counted as vLLM's NIXL connector counts it, in the histogram
//! `vllm:nixl_xfer_time_seconds` (`_sum`, `_count`, `_bucket` at vLLM's bounds) on this, the
//! decode side, which pulls the KV. The request waits (`vllm:num_requests_waiting`) through the
//! prefill and the transfer. A prefill that fails (refused, unreachable) fails the request:
//! its connection is dropped, as a proxy in front of a dead prefill worker drops it.

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve as the decode side: prefill on `prefill_url`, then a KV transfer of `kv_transfer_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct Disaggregated {
    /// The prefill side's base URL, `http://HOST:PORT` (a simulator serving the same model).
    pub prefill_url: String,
    /// How long each KV transfer takes (ms): the known delay the result's transfer latency is
    /// checked against.
    pub kv_transfer_ms: f64,
}

impl Disaggregated {
    /// `host:port` of the prefill side, or why the URL is not one this side can call.
    pub(crate) fn authority(&self) -> Result<&str, String> {
        let rest = self.prefill_url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "the prefill URL {:?} must be http://HOST:PORT",
                self.prefill_url
            )
        })?;
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || !authority.contains(':') {
            return Err(format!(
                "the prefill URL {:?} must be http://HOST:PORT, nothing after the port",
                self.prefill_url
            ));
        }
        Ok(authority)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        self.authority()?;
        if !(self.kv_transfer_ms.is_finite() && (0.0..=3.6e6).contains(&self.kv_transfer_ms)) {
            return Err(format!(
                "kv_transfer_ms must be a number between 0 and 3.6e6, not {}",
                self.kv_transfer_ms
            ));
        }
        Ok(())
    }

    /// Has the prefill side prefill a prompt of `prompt_tokens` tokens (`blocks`: its
    /// 16-token blocks' hashes; `index`: its arrival index here, which makes the tail of a
    /// prompt its own) and waits for its answer.
    pub(crate) async fn prefill(
        &self,
        model_json: &str,
        blocks: &[u64],
        prompt_tokens: u32,
        index: u64,
    ) -> io::Result<()> {
        let authority = self.authority().map_err(io::Error::other)?;
        let ids = prompt_ids(blocks, prompt_tokens, index);
        let body = format!(
            "{{\"model\":{model_json},\"prompt\":{ids},\"max_tokens\":1,\"stream\":false}}"
        );
        let request = format!(
            "POST /v1/completions HTTP/1.1\r\nHost: {authority}\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::with_capacity(1024);
        stream.read_to_end(&mut answer).await?;
        let status = answer
            .split(|&b| b == b'\r')
            .next()
            .and_then(|line| std::str::from_utf8(line).ok())
            .unwrap_or("");
        if status.split_ascii_whitespace().nth(1) != Some("200") {
            return Err(io::Error::other(format!(
                "the prefill side answered {status:?}"
            )));
        }
        Ok(())
    }
}

/// A prompt's token ids as JSON: block `i`'s 16 ids come from its hash, the tail's (the
/// tokens after the last whole block) from the arrival index.
fn prompt_ids(blocks: &[u64], prompt_tokens: u32, index: u64) -> String {
    let mut out = String::with_capacity(prompt_tokens as usize * 6 + 2);
    out.push('[');
    for i in 0..prompt_tokens {
        let block = (i / crate::PREFIX_BLOCK_TOKENS) as usize;
        let salt = blocks
            .get(block)
            .copied()
            .unwrap_or(index ^ 0x9e37_79b9_7f4a_7c15);
        let id = (salt.rotate_left(i % 64) ^ u64::from(i)) % 100_000;
        if i > 0 {
            out.push(',');
        }
        out.push_str(&id.to_string());
    }
    out.push(']');
    out
}

/// vLLM's bucket bounds for `vllm:nixl_xfer_time_seconds` (s).
pub(crate) const TRANSFER_BUCKETS_S: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_keeps_its_length_and_a_shared_prefix_its_ids() {
        let a: Vec<u64> = serde_json::from_str(&prompt_ids(&[7, 8], 40, 1)).unwrap();
        let b: Vec<u64> = serde_json::from_str(&prompt_ids(&[7, 9], 40, 2)).unwrap();
        assert_eq!((a.len(), b.len()), (40, 40));
        assert_eq!(a[..16], b[..16]);
        assert_ne!(a[16..32], b[16..32]);
        assert_ne!(a[32..], b[32..]);
    }

    #[test]
    fn only_an_http_host_and_port_is_a_prefill_url() {
        let d = |url: &str| Disaggregated {
            prefill_url: url.into(),
            kv_transfer_ms: 1.0,
        };
        assert_eq!(
            d("http://127.0.0.1:8100/").authority(),
            Ok("127.0.0.1:8100")
        );
        for bad in ["https://x:1", "http://x", "http://x:1/v1", "127.0.0.1:8100"] {
            assert!(d(bad).validate().is_err(), "{bad}");
        }
    }
}
