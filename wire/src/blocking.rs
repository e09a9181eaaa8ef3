//! Blocking requests, for the GPU host's side: health checks, version probes, cache resets
//! and `https://` metrics scrapes that run between benchmarks or on a watcher's thread,
//! never on the measuring path; and `runner verify-site`'s fetches. Answers come back as
//! status and bytes, never as reqwest types.

use std::io::Read;
use std::time::Duration;

/// An answer: its status, the length its head declared, and its body (at most the limit
/// asked for, plus one byte, so that a caller can tell a body that was longer).
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub content_length: Option<u64>,
    pub body: Vec<u8>,
}

impl Answer {
    /// A 2xx status.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        serde_json::from_slice(&self.body).map_err(|e| format!("not JSON: {e}"))
    }
}

/// Bodies read by default: a metrics page or a health answer, never a document.
pub const DEFAULT_LIMIT: u64 = 16 << 20;

/// A kept-alive blocking client, made on the thread that uses it (a blocking client must
/// not be made or dropped inside an async runtime).
pub struct Client {
    inner: reqwest::blocking::Client,
}

impl Client {
    /// Every request it makes takes at most `timeout`, start to end.
    pub fn new(timeout: Duration) -> Result<Client, String> {
        crate::install_tls_provider();
        reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map(|inner| Client { inner })
            .map_err(|e| chain(&e))
    }

    /// `method url`, its body read up to `limit` bytes (and one more); a declared length
    /// over `limit` leaves the body unread.
    pub fn request(&self, method: &str, url: &str, limit: u64) -> Result<Answer, String> {
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| format!("{method:?} is not an HTTP method"))?;
        let response = self
            .inner
            .request(method, url)
            .send()
            .map_err(|e| chain(&e))?;
        let status = response.status().as_u16();
        let content_length = response.content_length();
        let mut body = Vec::new();
        if content_length.is_none_or(|n| n <= limit) {
            response
                .take(limit + 1)
                .read_to_end(&mut body)
                .map_err(|e| chain(&e))?;
        }
        Ok(Answer {
            status,
            content_length,
            body,
        })
    }

    /// `GET url`, its body read up to `limit` bytes (and one more).
    pub fn get(&self, url: &str, limit: u64) -> Result<Answer, String> {
        self.request("GET", url, limit)
    }
}

/// One request on a thread of its own, so that it may be made from inside an async
/// runtime (where reqwest's blocking client must not run); the error says why there is no
/// answer (the method or client was refused, or the request failed).
pub fn request(method: &str, url: &str, timeout: Duration) -> Result<Answer, String> {
    std::thread::scope(|s| {
        s.spawn(|| Client::new(timeout)?.request(method, url, DEFAULT_LIMIT))
            .join()
            .unwrap_or_else(|_| Err("the request's thread panicked".into()))
    })
}

/// An error and its causes, `: `-separated (reqwest's own message names only the URL).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
