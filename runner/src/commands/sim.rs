//! `runner sim`: the built-in simulator as a standalone server, for trying the load generator (or
//! any OpenAI/TGI/SGLang client) without a GPU.

use crate::cli::sim::SimArgs;
use crate::Failure;
use anyhow::Context;
use sim::{Faults, Placement, SimConfig, SimServer};
use std::net::SocketAddr;

impl SimArgs {
    pub fn config(&self) -> SimConfig {
        SimConfig {
            model: self.model.clone(),
            ttft_ms: self.ttft_ms,
            prefill_us_per_token: self.prefill_us_per_token,
            itl_ms: self.itl_ms,
            itl_growth: self.itl_growth,
            ttft_noise_ms: self.ttft_noise_ms,
            itl_noise_ms: self.itl_noise_ms,
            max_batch: self.max_batch,
            decode_steps: self.decode_steps,
            kv_cache_tokens: self.kv_cache_tokens,
            prefix_caching: !self.no_enable_prefix_caching,
            prompt_tokens_details: self.enable_prompt_tokens_details,
            invalid_json_fraction: self.invalid_json_fraction,
            malformed_tool_call_fraction: self.malformed_tool_call_fraction,
            affinity_cookie: self.affinity_cookie,
            reasoning_tokens: self.reasoning_tokens,
            seed: self.seed,
            api_key: self.api_key.clone(),
            wrong_answers: self.wrong_answers,
            wrong_answers_when_busy: self.wrong_answers_when_busy,
            faults: Faults {
                error_fraction: self.error_fraction,
                rate_limit_fraction: self.rate_limit_fraction,
                reset_fraction: self.reset_fraction,
                reset_after_tokens: self.reset_after_tokens,
                stall_fraction: self.stall_fraction,
                stall_after_tokens: self.stall_after_tokens,
                stall_ms: self.stall_ms,
                malformed_fraction: self.malformed_fraction,
                malformed_after_tokens: self.malformed_after_tokens,
                keep_alive_requests: self.keep_alive_requests,
                short_batch_fraction: self.short_batch_fraction,
            },
            embedding_dim: self.embedding_dim,
            speculative: self.speculative.map(|k| sim::Speculative {
                k,
                acceptance: self.acceptance.clone(),
            }),
            timings: self.timings,
            metrics_as: self.metrics_as,
            lora: (!self.lora_modules.is_empty()).then(|| sim::Lora {
                adapters: self.lora_modules.clone(),
                max_loras: self.max_loras,
                load_ms: self.lora_load_ms,
            }),
            disaggregated: self.prefill_url.as_ref().map(|url| sim::Disaggregated {
                prefill_url: url.clone(),
                kv_transfer_ms: self.kv_transfer_ms,
            }),
            truth_log: self.truth_log.clone(),
        }
    }
}

pub fn run(args: &SimArgs) -> Result<(), Failure> {
    let cfg = args.config();
    let addr = SocketAddr::new(args.host, args.port);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(Failure::Input)?;
    runtime
        .block_on(async {
            // No ground truth kept: a long-lived server would grow it without bound.
            let server = SimServer::launch(addr, cfg, false, Placement::CallersRuntime)
                .await
                .with_context(|| format!("listening on {addr}"))?;
            tracing::info!("listening on {}", server.base_url());
            // The URL alone on stdout, for scripts and tests that started us with --port 0.
            println!("{}", server.base_url());
            use std::io::Write;
            std::io::stdout().flush().context("writing the URL")?;
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            tracing::info!("shutting down");
            server.shutdown().await;
            anyhow::Ok(())
        })
        .map_err(Failure::Input)
}
