//! `wire`: the one place where provebench speaks HTTP, and the only crate that depends on
//! reqwest. [`Server`] is the server measured (base URL, API key, connection pool, timeouts,
//! TLS and proxy settings): the load generator, `/tokenize`, the host probe and the
//! pre-flight check make their requests through it. [`blocking`] serves the GPU host's side
//! (health checks, version probes, cache resets, `https://` scrapes) and `verify-site`.
//! Neither hands out a reqwest type: callers see status codes, bytes and [`WireError`]s.
//!
//! TLS is rustls with the ring provider, installed as the process default the first time a
//! client is built (reqwest is built without a provider of its own).
//!
//! Plain `http://` streams and metrics scrapes do not go through reqwest at all on their hot
//! paths (loadgen's HTTP/1.1 reader, [`get`]'s kept-alive GET): measured faster there, see
//! docs/PERFORMANCE.md. Both read responses with [`http1`], the one HTTP/1.1 parser here.

use std::sync::Once;

#[cfg(feature = "blocking")]
pub mod blocking;
pub mod get;
pub mod http1;
mod server;

pub use server::{ErrorKind, Options, Response, Server, WireError};

/// `429 Too Many Requests`: a status code and its reason phrase (the code alone when it has
/// none), for a client that reads status lines of its own.
pub fn status_line(status: u16) -> String {
    reqwest::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

/// reqwest's async client builder, with the process's TLS provider in place.
fn client() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}

/// Installs ring as rustls' process-wide provider, once. Another provider already installed
/// (by a program embedding these crates) is kept. Public for tests that drive a server with
/// a reqwest client of their own.
pub fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
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
