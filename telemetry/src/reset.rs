//! Emptying the engine's prefix cache before a benchmark, with the engine's own endpoint
//! (vLLM `POST /reset_prefix_cache`, SGLang `POST /flush_cache`), so that one benchmark's
//! prompts cannot warm the cache for the next.

use schemas::document::telemetry::CacheReset;
use std::time::Duration;

/// How to reset one engine's prefix cache, or why it cannot be.
#[derive(Clone, Debug)]
pub enum Reset {
    /// `method` (`POST`) to `url`; `shown` is the request as the document states it.
    Endpoint {
        method: String,
        url: String,
        shown: String,
    },
    /// The engine has no reset: the sentence says so (and what would do instead).
    Unsupported(String),
}

impl Reset {
    /// Asks the engine, on a thread of its own (the caller may be inside an async runtime,
    /// where a blocking client must not run).
    pub fn run(&self) -> CacheReset {
        match self {
            Reset::Unsupported(why) => CacheReset {
                request: None,
                ok: false,
                detail: why.clone(),
            },
            Reset::Endpoint { method, url, shown } => {
                let answer =
                    wire::blocking::request(method, url, Duration::from_secs(30)).map(|a| a.status);
                match answer {
                    Ok(status) => CacheReset {
                        request: Some(shown.clone()),
                        ok: (200..300).contains(&status),
                        detail: format!("HTTP {status}"),
                    },
                    Err(e) => CacheReset {
                        request: Some(shown.clone()),
                        ok: false,
                        detail: e,
                    },
                }
            }
        }
    }
}
