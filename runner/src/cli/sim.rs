//! `runner sim`'s flags (the command itself: `commands::sim`).

use std::net::IpAddr;

/// Serve a deterministic simulated LLM until Ctrl-C.
///
/// Endpoints: POST /v1/completions and /v1/chat/completions (OpenAI, as vLLM streams them),
/// /generate_stream (TGI), /generate (SGLang when the body has "text", TGI when it has
/// "inputs"); GET /v1/models, /health, /version, /metrics; POST /tokenize.
///
/// Each request waits FIFO for one of --max-batch slots, gets its first token
/// --ttft-ms + --prefill-us-per-token × prompt tokens after admission, then one token every
/// --itl-ms × (1 + --itl-growth × (running − 1)). Prompts count one token per
/// whitespace-separated word; the output is always exactly max_tokens (default 16) words.
///
/// Faults pick requests deterministically from --seed and the request's arrival index; each
/// request gets at most one, and the fractions should sum to at most 1.
#[derive(clap::Args, Debug)]
pub struct SimArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Address to listen on. The default only accepts local clients; 0.0.0.0 exposes the simulator to the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Model id to serve (reported by /v1/models and echoed in responses).
    #[arg(long, default_value = "provebench-sim")]
    pub model: String,
    /// Time to first token after admission into the batch, in ms.
    #[arg(long, default_value_t = 20.0, value_parser = non_negative)]
    pub ttft_ms: f64,
    /// Extra time to first token per prompt token, in µs (prefill cost).
    #[arg(long, default_value_t = 20.0, value_parser = non_negative)]
    pub prefill_us_per_token: f64,
    /// Inter-token latency with one running request, in ms. 0 streams as fast as possible
    /// (useful to measure the client's own CPU cost per token).
    #[arg(long, default_value_t = 8.0, value_parser = non_negative)]
    pub itl_ms: f64,
    /// Relative ITL increase per additional running request (0.05: 32 running → 2.55 × ITL).
    #[arg(long, default_value_t = 0.05, value_parser = non_negative)]
    pub itl_growth: f64,
    /// Mean (ms) of a seeded exponential draw added to each request's time to first token: noise
    /// with a known distribution, to see what a result's intervals say (0: none).
    #[arg(long, default_value_t = 0.0, value_parser = non_negative)]
    pub ttft_noise_ms: f64,
    /// Mean (ms) of a seeded exponential draw added to each gap between tokens (0: none).
    #[arg(long, default_value_t = 0.0, value_parser = non_negative)]
    pub itl_noise_ms: f64,
    /// Requests generating at once; the rest queue FIFO, so saturation shows up as growing TTFT.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_batch: u32,
    /// Emit tokens at decode steps (multiples of --itl-ms since start), all running requests'
    /// tokens together, as a continuous-batching engine does. Default: each request keeps its
    /// own rhythm (every token arrives on its own: the client's worst case).
    #[arg(long)]
    pub decode_steps: bool,
    /// Answer every request without `Authorization: Bearer KEY` with HTTP 401, but those to
    /// /health and /metrics: as an API gateway in front of an engine does (vLLM's own
    /// `--api-key` guards /v1 only).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// The share of the builtin accuracy suite's arithmetic questions answered wrongly (off by
    /// one), chosen by the seed from each question; the rest are answered right. Streamed
    /// OpenAI answers only: every other prompt gets generated words as usual.
    #[arg(long, default_value_t = 0.0, value_parser = fraction, value_name = "FRACTION")]
    pub wrong_answers: f64,
    /// A batching bug to find (`runner run --accuracy-during-load`): every builtin arithmetic
    /// question that arrives while at least N requests are running or queued is answered
    /// wrongly (off by one); 0 for none.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub wrong_answers_when_busy: u32,
    /// Seed for the generated text and for which requests get faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fraction of requests answered HTTP 500 (JSON error body, no stream).
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub error_fraction: f64,
    /// Fraction of requests answered HTTP 429 (rate limited).
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub rate_limit_fraction: f64,
    /// Fraction of requests whose connection is aborted mid-stream (no last chunk, no [DONE]).
    // The help text is for the terminal, not rustdoc.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub reset_fraction: f64,
    /// Content events sent before the reset.
    #[arg(long, default_value_t = 4, help_heading = "Faults")]
    pub reset_after_tokens: u32,
    /// Fraction of requests that stop sending for --stall-ms mid-stream, then carry on.
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub stall_fraction: f64,
    /// Content events sent before the stall.
    #[arg(long, default_value_t = 4, help_heading = "Faults")]
    pub stall_after_tokens: u32,
    /// Length of the stall, in ms.
    #[arg(long, default_value_t = 2000, help_heading = "Faults")]
    pub stall_ms: u64,
    /// Fraction of requests that get one event whose data is not valid JSON (the stream then continues).
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub malformed_fraction: f64,
    /// Content events sent before the malformed one.
    #[arg(long, default_value_t = 4, help_heading = "Faults")]
    pub malformed_after_tokens: u32,
    /// Close each connection after it has answered this many requests, without saying so
    /// (nginx's `keepalive_requests`); 0 keeps connections open.
    #[arg(long, default_value_t = 0, help_heading = "Faults")]
    pub keep_alive_requests: u32,
    /// Fraction of embeddings and rerank requests answered with one vector or score fewer
    /// than their inputs.
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub short_batch_fraction: f64,
    /// Embeddings: each vector's dimension.
    #[arg(long, default_value_t = 384)]
    pub embedding_dim: u32,
    /// KV-cache capacity in tokens (`vllm:kv_cache_usage_perc` is the share in use); the
    /// prefix cache keeps up to this many tokens' blocks.
    #[arg(long, default_value_t = 262_144)]
    pub kv_cache_tokens: u64,
    /// Turn the prefix cache off (vLLM's flag): repeated prompt prefixes are prefilled again.
    #[arg(long)]
    pub no_enable_prefix_caching: bool,
    /// Say the prompt tokens served from the prefix cache in OpenAI usage
    /// (`prompt_tokens_details.cached_tokens`), as vLLM's flag of the same name does.
    #[arg(long)]
    pub enable_prompt_tokens_details: bool,
    /// Structured output: cut this share of JSON answers one character short (not JSON), seeded.
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub invalid_json_fraction: f64,
    /// Tool calls: cut this share of calls' arguments one character short (not JSON), seeded.
    #[arg(long, default_value_t = 0.0, value_parser = fraction, help_heading = "Faults")]
    pub malformed_tool_call_fraction: f64,
    /// Answer as llm-d's session-affinity router: set an `llm-d-session` cookie on answers to
    /// requests that carry none (the client should send it back for the session).
    #[arg(long)]
    pub affinity_cookie: bool,
    /// Chat answers open with this many reasoning tokens (`delta.reasoning_content`), like a
    /// reasoning model behind vLLM's `--reasoning-parser`.
    #[arg(long, default_value_t = 0)]
    pub reasoning_tokens: u32,
    /// Decode speculatively, drafting K tokens a step (vLLM's num_speculative_tokens): each
    /// step yields the accepted drafts and one token more, in one stream event (OpenAI and
    /// SGLang streams; TGI and Responses send one event a token), and /metrics counts the
    /// drafts as vLLM's `vllm:spec_decode_*` do. Needs --acceptance.
    #[arg(
        long,
        value_name = "K",
        requires = "acceptance",
        help_heading = "Speculative decoding"
    )]
    pub speculative: Option<u32>,
    /// Each draft position's acceptance rate, K values, non-increasing (position i is
    /// accepted in that share of steps): `0.8,0.6,0.4`.
    #[arg(
        long,
        value_name = "RATES",
        value_delimiter = ',',
        requires = "speculative",
        help_heading = "Speculative decoding"
    )]
    pub acceptance: Vec<f64>,
    /// Put llama.cpp's `timings` object (prompt and generation ms, drafts, and the
    /// simulator's queue_ms) on the last chunk of OpenAI streams, and SGLang's request
    /// timestamps on the last of its own: the server's own clock. On whenever --speculative is.
    #[arg(long)]
    pub timings: bool,
    /// Whose metric names /metrics uses: vLLM's, or SGLang's (`sglang:num_running_reqs`,
    /// `…_prompt_tokens_total`, `…_spec_verify_calls_total`, …); /version then names the
    /// engine `provebench-sim/sglang`, and the runner reads the page with SGLang's recipe.
    #[arg(long, value_enum, default_value_t = sim::MetricsAs::Vllm)]
    pub metrics_as: sim::MetricsAs,
    /// Serve these LoRA adapters beside the model, comma-separated, as vLLM's
    /// `--lora-modules` does: /v1/models lists them, a request's `model` picks one, and a
    /// model neither the base nor an adapter is refused with vLLM's 404.
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        help_heading = "LoRA adapters"
    )]
    pub lora_modules: Vec<String>,
    /// Adapters loaded at once (vLLM's --max-loras); a request whose adapter is not loaded
    /// loads it, the least recently used out.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        help_heading = "LoRA adapters"
    )]
    pub max_loras: u32,
    /// What loading an adapter adds to its request's time to first token (ms): the swap cost.
    #[arg(long, default_value_t = 0.0, value_name = "MS", value_parser = non_negative,
          help_heading = "LoRA adapters")]
    pub lora_load_ms: f64,
    /// Serve as the decode side of a disaggregated deployment: prefill each generation
    /// request on the simulator at this URL (`http://HOST:PORT`, serving the same --model),
    /// then take --kv-transfer-ms for its KV cache to cross over, then decode it here with no
    /// prefill of its own. /metrics counts the transfers as vLLM's NIXL connector does
    /// (`vllm:nixl_xfer_time_seconds`).
    #[arg(long, value_name = "URL", help_heading = "Disaggregated serving")]
    pub prefill_url: Option<String>,
    /// How long each KV transfer from the prefill side takes (ms).
    #[arg(long, default_value_t = 0.0, value_name = "MS", value_parser = non_negative,
          requires = "prefill_url", help_heading = "Disaggregated serving")]
    pub kv_transfer_ms: f64,
    /// Append one JSON line per request that ended to FILE: what the server did, by its own
    /// clock (arrival, admission, first token and end, tokens, and on the decode side the
    /// prefill and the KV transfer), for checking a client's figures against.
    #[arg(long, value_name = "FILE")]
    pub truth_log: Option<std::path::PathBuf>,
}

/// A finite number ≥ 0 (times, growth factors).
fn non_negative(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("must be a finite number ≥ 0, not {s}"))
    }
}

/// A finite number in [0, 1].
fn fraction(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("must be a fraction in [0, 1], not {s}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SimArgs,
    }

    #[test]
    fn flags_parse_and_validate() {
        let cli = Cli::try_parse_from([
            "sim",
            "--port",
            "0",
            "--itl-ms",
            "0",
            "--stall-fraction",
            "0.5",
            "--stall-ms",
            "100",
        ])
        .unwrap();
        let cfg = cli.args.config();
        assert_eq!(
            (cfg.itl_ms, cfg.faults.stall_fraction, cfg.faults.stall_ms),
            (0.0, 0.5, 100)
        );
        assert_eq!(cfg.model, "provebench-sim");
        for bad in [
            ["--error-fraction", "1.5"],
            ["--ttft-ms", "NaN"],
            ["--itl-ms", "-1"],
            ["--max-batch", "0"],
            ["--itl-growth", "inf"],
        ] {
            assert!(
                Cli::try_parse_from(["sim", bad[0], bad[1]]).is_err(),
                "{bad:?} accepted"
            );
        }
    }
}
