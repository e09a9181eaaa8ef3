//! `wire`: the one place where provebench builds an HTTP client. The load generator
//! (`loadgen`), the GPU host's watchers (`telemetry`), the engine launcher (`engine`) and the
//! host probe (`host`) all start from [`client`] or [`blocking::client`], so that TLS, and
//! anything every request must carry, is set once.
//!
//! TLS is rustls with the ring provider, installed as the process default the first time a
//! client is built (reqwest is built without a provider of its own).
//!
//! Plain `http://` streams and metrics scrapes do not go through reqwest at all on their hot
//! paths (loadgen's HTTP/1.1 reader, telemetry's kept-alive GET): measured faster there, see
//! docs/PERFORMANCE.md. Both read responses with [`http1`], the one HTTP/1.1 parser here.

use std::sync::Once;

pub mod get;
pub mod http1;

/// reqwest's async client builder, with the process's TLS provider in place.
pub fn client() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}

/// Installs ring as rustls' process-wide provider, once. Another provider already installed
/// (by a program embedding these crates) is kept.
fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Blocking requests, for the GPU host's side: probes and resets that run between
/// benchmarks, never on the measuring path.
#[cfg(feature = "blocking")]
pub mod blocking {
    use std::time::Duration;

    /// reqwest's blocking client builder, with the process's TLS provider in place.
    pub fn client() -> reqwest::blocking::ClientBuilder {
        super::install_tls_provider();
        reqwest::blocking::Client::builder()
    }

    /// One request on a thread of its own, so that it may be made from inside an async
    /// runtime (where reqwest's blocking client must not run); `read` turns the response
    /// into the answer; the error says why there is none (the client could not be built, the
    /// request failed, or `read` said so).
    pub fn request<T: Send>(
        method: reqwest::Method,
        url: &str,
        timeout: Duration,
        read: impl FnOnce(reqwest::blocking::Response) -> Result<T, String> + Send,
    ) -> Result<T, String> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let response = client()
                    .timeout(timeout)
                    .build()
                    .map_err(|e| e.to_string())?
                    .request(method, url)
                    .send()
                    .map_err(|e| e.to_string())?;
                read(response)
            })
            .join()
            .unwrap_or_else(|_| Err("the request's thread panicked".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_https_client_builds_with_the_ring_provider() {
        let client = super::client().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
