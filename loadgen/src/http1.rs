//! A lean HTTP/1.1 client for `http://` targets: the token stream's hot path.
//!
//! Why not reqwest here: hyper drives each connection from its own task and hands body chunks
//! to the request's task through a channel, so every streamed token costs two task polls, a
//! channel hop and a wake-up between them; `perf` put that at about a fifth of the runner's CPU
//! per token. Here the request's own task reads its socket: one poll per read, chunked framing
//! decoded in place (`wire::http1`) in one buffer per connection, and a token's arrival time taken from the
//! read that completed it: the kernel's receive stamp where it gives one (`socket`), else
//! the read's return. reqwest still serves `https://` (TLS, HTTP/2) and everything
//! off the hot path (probes, `/tokenize`); `--http-client reqwest` routes streams through it too.
//!
//! Scope: what an OpenAI/TGI/SGLang streaming endpoint answers — a response head, then a body
//! framed by `Transfer-Encoding: chunked`, `Content-Length`, or the end of the connection.
//! Keep-alive connections are pooled; one closed by the server while idle is detected when a
//! request on it gets no byte back, and that request is sent once more on a fresh connection.

mod socket;

use socket::Socket;
pub use socket::Stamp;
use spec::TokenClock;
use std::io;
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use thiserror::Error;
use wire::http1::{self as framing, Decoded, Framing, Head, MAX_HEAD_BYTES};

/// Read buffer per connection; grows only for a head or chunk-size line longer than this.
const BUFFER_BYTES: usize = 16 << 10;
/// Idle connections older than this are not reused: under the 5 s keep-alive of uvicorn
/// (vLLM, SGLang) and llama.cpp's httplib, so a connection the server may already have
/// closed is never picked.
const IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// Why a request got no (complete) response.
#[derive(Debug, Error)]
pub enum Http1Error {
    #[error("connecting to {authority}: {source}")]
    Connect {
        authority: String,
        source: io::Error,
    },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the server closed the connection before answering")]
    ClosedBeforeAnswer,
    #[error("malformed HTTP response: {0}")]
    BadResponse(String),
}

impl From<wire::http1::BadHead> for Http1Error {
    fn from(e: wire::http1::BadHead) -> Self {
        Http1Error::BadResponse(e.0)
    }
}

/// Where requests go: one host, a pool of keep-alive connections to it.
pub struct Pool {
    host: String,
    port: u16,
    /// The `Host` header: the URL's host, and its port when the URL names one.
    authority: String,
    clock: TokenClock,
    idle: Mutex<Vec<(Conn, Instant)>>,
}

/// A request: `POST path` with a JSON body.
pub struct Post<'a> {
    pub path: &'a str,
    pub body: &'a [u8],
    pub bearer: Option<&'a str>,
    /// Further headers, name and value: the request's id, its session's.
    pub headers: &'a [(&'a str, &'a str)],
}

impl Pool {
    /// A pool for the server of `url` (`http://host[:port]/…`); `None` for other schemes.
    pub fn for_url(url: &str) -> Option<(Pool, String)> {
        let parsed = url::Url::parse(url).ok()?;
        if parsed.scheme() != "http" {
            return None;
        }
        let mut authority = parsed.host_str()?.to_string();
        // An IPv6 literal is bracketed in a URL and in `Host`, not in an address.
        let host = authority
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = parsed.port_or_known_default()?;
        if let Some(p) = parsed.port() {
            authority.push_str(&format!(":{p}"));
        }
        let mut path = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path.push('?');
            path.push_str(q);
        }
        let pool = Pool {
            host,
            port,
            authority,
            clock: TokenClock::default(),
            idle: Mutex::new(Vec::new()),
        };
        Some((pool, path))
    }

    /// The same pool, its tokens stamped by `clock`.
    pub fn with_token_clock(self, clock: TokenClock) -> Pool {
        Pool { clock, ..self }
    }

    /// Sends `post` and reads the response head. `sent` is stamped when the request is
    /// written, and again if it has to be sent a second time (see the module doc).
    pub async fn send(
        &self,
        post: &Post<'_>,
        sent: &mut Instant,
    ) -> Result<Response<'_>, Http1Error> {
        let request = self.encode(post);
        if let Some(conn) = self.take_idle() {
            *sent = Instant::now();
            match conn.exchange(&request).await {
                Ok((conn, head, written)) => {
                    return Ok(self.response(conn, head, None, written));
                }
                // The server had closed this idle connection: the request never reached it.
                Err(Http1Error::ClosedBeforeAnswer) => {
                    tracing::debug!("a pooled connection was closed by the server; sending again")
                }
                Err(e) => return Err(e),
            }
        }
        let connecting = Instant::now();
        let socket = Socket::connect(&self.host, self.port, self.clock)
            .await
            .map_err(|source| Http1Error::Connect {
                authority: self.authority.clone(),
                source,
            })?;
        let conn = Conn {
            socket,
            buf: vec![0; BUFFER_BYTES],
            start: 0,
            end: 0,
            stamp: Stamp::read_now(),
        };
        let connect = connecting.elapsed();
        *sent = Instant::now();
        let (conn, head, written) = conn.exchange(&request).await?;
        Ok(self.response(conn, head, Some(connect), written))
    }

    fn encode(&self, post: &Post<'_>) -> Vec<u8> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAccept: */*\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            post.path,
            self.authority,
            post.body.len()
        );
        if let Some(key) = post.bearer {
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        for (name, value) in post.headers {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(post.body);
        bytes
    }

    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().expect("pool lock");
        let now = Instant::now();
        idle.retain(|(_, since)| now.duration_since(*since) < IDLE_TIMEOUT);
        idle.pop().map(|(conn, _)| conn)
    }

    fn response(
        &self,
        conn: Conn,
        head: Head,
        connect: Option<Duration>,
        written: Instant,
    ) -> Response<'_> {
        let head_at = conn.stamp.at;
        Response {
            pool: self,
            conn: Some(conn),
            status: head.status,
            phases: Phases {
                connect,
                written,
                // When the bytes that completed the head arrived, stamped as the tokens are
                // (a one-token answer's head and body arrive in one read: one stamp).
                head: head_at,
            },
            framing: head.framing,
            reusable: head.keep_alive,
            set_cookies: head.set_cookies,
        }
    }
}

/// The client's side of a request up to its response head.
#[derive(Clone, Copy, Debug)]
pub struct Phases {
    /// Opening a new connection; `None` when a kept-alive one carried the request.
    pub connect: Option<Duration>,
    /// When the request's last byte was written to the socket.
    pub written: Instant,
    /// When the read that completed the response head returned its bytes (the kernel's
    /// stamp where the token clock takes it).
    pub head: Instant,
}

/// A response whose head has been read; its body is read with [`Response::chunk`].
/// Dropped after its body ended, it gives its connection back to the pool.
pub struct Response<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    pub status: u16,
    /// What getting here took: the connect, the write, the head.
    pub phases: Phases,
    framing: Framing,
    reusable: bool,
    /// The head's `Set-Cookie` pairs (`name=value`).
    pub set_cookies: Vec<String>,
}

impl Response<'_> {
    /// The next piece of the body (`None` at its end), and when the bytes of the read that
    /// completed it arrived: the piece's arrival time.
    pub async fn chunk(&mut self) -> io::Result<Option<(Stamp, &[u8])>> {
        let conn = self.conn.as_mut().expect("a response owns its connection");
        let range = next_body_range(conn, &mut self.framing).await?;
        let conn = self.conn.as_ref().expect("owned");
        Ok(range.map(|r| (conn.stamp, &conn.buf[r])))
    }

    /// The body as text, at most `limit` bytes of it (for error messages).
    pub async fn text(mut self, limit: usize) -> io::Result<String> {
        let mut text = Vec::new();
        while let Some((_, piece)) = self.chunk().await? {
            let room = limit.saturating_sub(text.len());
            text.extend_from_slice(&piece[..piece.len().min(room)]);
        }
        Ok(String::from_utf8_lossy(&text).into_owned())
    }
}

impl Drop for Response<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.reusable && matches!(self.framing, Framing::Done) && conn.start == conn.end {
                let mut idle = self.pool.idle.lock().expect("pool lock");
                idle.push((conn, Instant::now()));
            }
        }
    }
}

/// One connection and its read buffer: `buf[start..end]` is received but not yet consumed;
/// `stamp` is when the last read's bytes arrived.
struct Conn {
    socket: Socket,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    stamp: Stamp,
}

impl Conn {
    /// Reads more bytes after `end`; `Ok(0)` at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                let len = self.buf.len();
                self.buf.resize(len * 2, 0);
            }
        }
        let (n, stamp) = self.socket.read(&mut self.buf[self.end..]).await?;
        self.stamp = stamp;
        self.end += n;
        Ok(n)
    }

    /// Writes the request and reads the response head (skipping `1xx` heads); when the write
    /// ended, with it.
    async fn exchange(mut self, request: &[u8]) -> Result<(Conn, Head, Instant), Http1Error> {
        let closed = |e: io::Error| match e.kind() {
            io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted => Http1Error::ClosedBeforeAnswer,
            _ => Http1Error::Io(e),
        };
        self.start = 0;
        self.end = 0;
        self.socket.write_all(request).await.map_err(closed)?;
        let written = Instant::now();
        let mut answered = false;
        loop {
            if let Some((used, head)) = framing::parse_head(&self.buf[self.start..self.end])? {
                self.start += used;
                if head.is_interim() {
                    continue;
                }
                return Ok((self, head, written));
            }
            if self.end - self.start > MAX_HEAD_BYTES {
                return Err(Http1Error::BadResponse(format!(
                    "response head longer than {MAX_HEAD_BYTES} bytes"
                )));
            }
            match self.fill().await {
                Ok(0) if !answered => return Err(Http1Error::ClosedBeforeAnswer),
                Ok(0) => {
                    return Err(Http1Error::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection closed inside the response head",
                    )))
                }
                Ok(_) => answered = true,
                Err(e) if !answered => return Err(closed(e)),
                Err(e) => return Err(Http1Error::Io(e)),
            }
        }
    }
}

/// Decodes the body framing in place: the range of `conn.buf` holding the next body bytes,
/// reading the socket only when the buffer holds no complete piece.
async fn next_body_range(
    conn: &mut Conn,
    framing: &mut Framing,
) -> io::Result<Option<Range<usize>>> {
    loop {
        match framing::decode(&conn.buf, &mut conn.start, conn.end, framing)? {
            Decoded::Piece(range) => return Ok(Some(range)),
            Decoded::End => return Ok(None),
            Decoded::More => {}
        }
        if conn.fill().await? == 0 {
            return framing::at_close(framing).map(|()| None);
        }
    }
}

#[cfg(test)]
mod tests;
