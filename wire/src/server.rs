//! The server provebench measures, as one value: its base URL, the API key every request
//! carries, the connection pool, timeouts, TLS and proxy settings. Every asynchronous HTTP
//! call of the product starts here: the load generator's streams when they go through
//! reqwest (`https://`, or `--http-client reqwest`), the answers it reads whole, `/tokenize`,
//! the server's self-report, the pre-flight check. Callers see status codes, bytes and
//! [`WireError`]s, never a reqwest type, so that no other crate depends on reqwest.
//!
//! Plain `http://` streams go through the load generator's lean reader instead (measured
//! faster, docs/PERFORMANCE.md); it takes the API key from [`Server::api_key`], so that a key
//! is set in one place for both.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a [`Server`]'s connections are made.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Sent as `Authorization: Bearer …` on every request; never logged.
    pub api_key: Option<String>,
    /// Idle keep-alive connections kept per host: the requests a load keeps in flight.
    pub max_idle_connections: usize,
    /// The longest any one request may take, start to end; `None`: as long as the caller
    /// waits (the load generator bounds its streams itself).
    pub timeout: Option<Duration>,
}

/// The server: base URL, API key and one connection pool, cheap to clone.
#[derive(Clone)]
pub struct Server {
    base: Arc<str>,
    api_key: Option<Arc<str>>,
    client: reqwest::Client,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Under the 5 s keep-alive of uvicorn (vLLM, SGLang) and llama.cpp's httplib: a connection
/// the server may already have closed is never reused.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

impl Server {
    /// The server at `base` (`http://host:port`, any trailing `/` dropped). Connections go
    /// straight to it, never through a proxy from the environment: a proxy would sit in
    /// every latency measured.
    pub fn new(base: &str, options: Options) -> Result<Server, WireError> {
        let mut builder = crate::client()
            .pool_max_idle_per_host(options.max_idle_connections.max(1))
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .tcp_nodelay(true)
            .no_proxy();
        if let Some(t) = options.timeout {
            builder = builder.timeout(t);
        }
        Ok(Server {
            base: base.trim_end_matches('/').into(),
            api_key: options.api_key.map(Into::into),
            client: builder.build().map_err(|e| WireError::of(&e))?,
        })
    }

    /// The base URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The base URL with `path` (which starts with `/`) after it.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The API key requests carry, for a client that frames its own requests.
    pub fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.client.request(method, self.url(path));
        match &self.api_key {
            Some(key) => request.bearer_auth(key),
            None => request,
        }
    }

    /// `POST` of `body` (`content_type`) to `path`; `sent` is set when the attempt that
    /// counts went out. A pooled connection the server closed before answering anything
    /// (hyper's "incomplete message") is tried once more on a fresh one: servers close idle
    /// keep-alive connections on their own schedule, and such a request never reached them,
    /// so the retry neither duplicates work nor hides a server failure.
    pub async fn post(
        &self,
        path: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        sent: &mut Instant,
    ) -> Result<Response, WireError> {
        let mut request = self
            .request(reqwest::Method::POST, path)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body);
        for &(name, value) in headers {
            request = request.header(name, value);
        }
        send_retrying(request, sent).await
    }

    /// `POST` of a JSON body, its answer read within `timeout`.
    pub async fn post_json(
        &self,
        path: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<Response, WireError> {
        let request = self
            .request(reqwest::Method::POST, path)
            .json(body)
            .timeout(timeout);
        send_retrying(request, &mut Instant::now()).await
    }

    /// `GET` of `path`, its answer read within `timeout`.
    pub async fn get(&self, path: &str, timeout: Duration) -> Result<Response, WireError> {
        let request = self.request(reqwest::Method::GET, path).timeout(timeout);
        send_retrying(request, &mut Instant::now()).await
    }
}

async fn send_retrying(
    request: reqwest::RequestBuilder,
    sent: &mut Instant,
) -> Result<Response, WireError> {
    let retry = request.try_clone();
    *sent = Instant::now();
    let response = match request.send().await {
        Err(e) if closed_before_answer(&e) && retry.is_some() => {
            tracing::debug!(
                "the server closed a pooled connection before answering; sending again"
            );
            *sent = Instant::now();
            retry.expect("checked").send().await
        }
        other => other,
    };
    response.map(Response::new).map_err(|e| WireError::of(&e))
}

/// A response whose head has arrived; its body is read with [`Response::chunk`] (a
/// stream), or whole.
pub struct Response {
    inner: reqwest::Response,
    /// The last chunk, kept so that [`Response::chunk`] can lend it.
    held: bytes::Bytes,
}

impl Response {
    fn new(inner: reqwest::Response) -> Response {
        Response {
            inner,
            held: bytes::Bytes::new(),
        }
    }

    pub fn status(&self) -> u16 {
        self.inner.status().as_u16()
    }

    /// `429 Too Many Requests`: the code and its reason phrase.
    pub fn status_line(&self) -> String {
        self.inner.status().to_string()
    }

    /// A header's value, when it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.inner.headers().get(name)?.to_str().ok()
    }

    /// Each `Set-Cookie`'s `name=value`, in order ([`crate::http1::cookie_pair`]).
    pub fn set_cookies(&self) -> Vec<String> {
        self.inner
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| crate::http1::cookie_pair(v.to_str().ok()?).map(str::to_string))
            .collect()
    }

    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<&[u8]>, WireError> {
        match self.inner.chunk().await {
            Ok(Some(bytes)) => {
                self.held = bytes;
                Ok(Some(&self.held[..]))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(WireError::of(&e)),
        }
    }

    /// The whole body as text (invalid UTF-8 replaced).
    pub async fn text(self) -> Result<String, WireError> {
        self.inner.text().await.map_err(|e| WireError::of(&e))
    }

    /// The whole body as JSON.
    pub async fn json(self) -> Result<serde_json::Value, WireError> {
        let bytes = self.inner.bytes().await.map_err(|e| WireError::of(&e))?;
        serde_json::from_slice(&bytes).map_err(|e| WireError {
            kind: ErrorKind::Body,
            causes: vec![format!("not JSON: {e}")],
        })
    }
}

/// What went wrong, by what a measurement records of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The connection could not be made.
    Connect,
    /// The request's time ran out.
    Timeout,
    /// The body could not be read as asked (not JSON).
    Body,
    /// Anything else: reset, closed mid-stream, malformed.
    Other,
}

/// An HTTP call that failed: its kind and the words of every error in its chain, the
/// outermost first (reqwest's own names only the URL; the innermost says what happened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    pub kind: ErrorKind,
    pub causes: Vec<String>,
}

impl WireError {
    fn of(e: &reqwest::Error) -> WireError {
        let kind = if e.is_connect() {
            ErrorKind::Connect
        } else if e.is_timeout() {
            ErrorKind::Timeout
        } else {
            ErrorKind::Other
        };
        let mut causes = vec![e.to_string()];
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            causes.push(s.to_string());
            source = s.source();
        }
        WireError { kind, causes }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.causes.join(": "))
    }
}

impl std::error::Error for WireError {}

fn closed_before_answer(e: &reqwest::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return h.is_incomplete_message();
        }
        source = s.source();
    }
    false
}
