//! HTTP/1.1 response framing without I/O: what a response head says, and where the body's
//! next piece lies in the bytes received so far.
//!
//! The one HTTP/1.1 parser of provebench's own clients: loadgen's token-stream reader and
//! telemetry's metrics GET each own a socket and a buffer and call these between reads.
//! Keeping them free of I/O lets the fuzzer and the tests feed them any bytes, split
//! anywhere, at millions of responses a second. (Calls from those crates' read loops are
//! `#[inline]`: they are on the per-token path.)

use std::io;
use std::ops::Range;

/// Longest response head accepted (and longest trailer line).
pub const MAX_HEAD_BYTES: usize = 64 << 10;
/// Longest chunk-size line accepted (extensions included).
pub const MAX_CHUNK_SIZE_LINE: usize = 4096;

/// What a response head says about the body and the connection, and the cookies it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub framing: Framing,
    pub keep_alive: bool,
    /// Each `Set-Cookie`'s `name=value` (its attributes dropped), in order: what a session
    /// sends back (llm-d's `llm-d-session` routes the session's next requests to one pod).
    pub set_cookies: Vec<String>,
}

impl Head {
    /// A `1xx` head other than `101`: another head follows it.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }
}

/// How the body's end is known, and where its reading stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Chunked(ChunkState),
    /// Bytes of the body still to come.
    Length(u64),
    UntilClose,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkState {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk, this many data bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last (zero-size) chunk: trailer lines until an empty one.
    Trailers,
}

/// What the buffered bytes hold next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Body bytes, as a range of the buffer.
    Piece(Range<usize>),
    /// The body is complete.
    End,
    /// Nothing complete yet: read more.
    More,
}

/// A response head that is not HTTP/1.x, or says something impossible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHead(pub String);

impl std::fmt::Display for BadHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadHead {}

/// Parses a response head at the start of `bytes`: `None` while it is incomplete, else the
/// bytes it took and what it says.
#[inline]
pub fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, BadHead> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(used)) => Ok(Some((used, head_of(&parsed)?))),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(BadHead(e.to_string())),
    }
}

fn head_of(parsed: &httparse::Response<'_, '_>) -> Result<Head, BadHead> {
    let status = parsed.code.unwrap_or(0);
    let mut keep_alive = parsed.version == Some(1);
    let mut chunked = false;
    let mut length: Option<u64> = None;
    let mut set_cookies = Vec::new();
    for h in parsed.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked must be the last coding; anything else has no length but the close.
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("chunked"));
            if !chunked {
                keep_alive = false;
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse()
                .map_err(|_| BadHead(format!("Content-Length {value:?} is not a number")))?;
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if h.name.eq_ignore_ascii_case("set-cookie") {
            if let Some(pair) = cookie_pair(value) {
                set_cookies.push(pair.to_string());
            }
        }
    }
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Done
    } else if chunked {
        Framing::Chunked(ChunkState::Size)
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    Ok(Head {
        status,
        framing,
        keep_alive,
        set_cookies,
    })
}

/// A `Set-Cookie` value's `name=value` (RFC 6265 §5.2: up to the first `;`), when it has a
/// name.
pub fn cookie_pair(set_cookie: &str) -> Option<&str> {
    let pair = set_cookie.split(';').next()?.trim();
    let (name, _) = pair.split_once('=')?;
    (!name.trim().is_empty()).then_some(pair)
}

/// The next piece of the body in `buf[*start..end]`, consuming the framing around it
/// (`*start` moves past what was used).
#[inline]
pub fn decode(
    buf: &[u8],
    start: &mut usize,
    end: usize,
    framing: &mut Framing,
) -> io::Result<Decoded> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let take = |start: &mut usize, n: usize| {
        let range = *start..*start + n;
        *start += n;
        Decoded::Piece(range)
    };
    loop {
        let available = end - *start;
        match *framing {
            Framing::Done => return Ok(Decoded::End),
            Framing::Length(0) => {
                *framing = Framing::Done;
                return Ok(Decoded::End);
            }
            Framing::Length(left) if available > 0 => {
                let n = available.min(usize::try_from(left).unwrap_or(usize::MAX));
                *framing = Framing::Length(left - n as u64);
                return Ok(take(start, n));
            }
            Framing::UntilClose if available > 0 => return Ok(take(start, available)),
            Framing::Chunked(ChunkState::Data(left)) if available > 0 => {
                let n = available.min(usize::try_from(left).unwrap_or(usize::MAX));
                let left = left - n as u64;
                *framing = Framing::Chunked(if left == 0 {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data(left)
                });
                return Ok(take(start, n));
            }
            Framing::Chunked(ChunkState::Size) if available > 0 => {
                match httparse::parse_chunk_size(&buf[*start..end]) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        *start += used;
                        *framing = Framing::Chunked(if size == 0 {
                            ChunkState::Trailers
                        } else {
                            ChunkState::Data(size)
                        });
                        continue;
                    }
                    Ok(httparse::Status::Partial) if available > MAX_CHUNK_SIZE_LINE => {
                        return Err(invalid("chunk-size line longer than 4096 bytes"))
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(_) => return Err(invalid("invalid chunk-size line")),
                }
            }
            Framing::Chunked(ChunkState::DataEnd) if available >= 2 => {
                if &buf[*start..*start + 2] != b"\r\n" {
                    return Err(invalid("chunk data not followed by CRLF"));
                }
                *start += 2;
                *framing = Framing::Chunked(ChunkState::Size);
                continue;
            }
            Framing::Chunked(ChunkState::Trailers) if available > 0 => {
                let pending = &buf[*start..end];
                if let Some(i) = pending.windows(2).position(|w| w == b"\r\n") {
                    *start += i + 2;
                    if i == 0 {
                        *framing = Framing::Done;
                        return Ok(Decoded::End);
                    }
                    continue;
                }
                if available > MAX_HEAD_BYTES {
                    return Err(invalid("trailer line too long"));
                }
            }
            _ => {}
        }
        return Ok(Decoded::More);
    }
}

/// What the connection's end means for a body still being read: the end of a body framed
/// by the close, else a truncated one.
pub fn at_close(framing: &mut Framing) -> io::Result<()> {
    if *framing == Framing::UntilClose {
        // Never reused: the head made such a response not keep-alive.
        *framing = Framing::Done;
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed inside the response body",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_gives_each_cookie_it_sets_without_its_attributes() {
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
            Set-Cookie: llm-d-session=cG9kLTE=; Path=/; HttpOnly; SameSite=Lax\r\n\
            set-cookie: lb=7\r\nset-cookie: =nameless\r\nset-cookie: novalue\r\n\
            transfer-encoding: chunked\r\n\r\n";
        let (used, h) = parse_head(head).unwrap().unwrap();
        assert_eq!(used, head.len());
        assert_eq!(h.set_cookies, ["llm-d-session=cG9kLTE=", "lb=7"]);
        assert_eq!(h.framing, Framing::Chunked(ChunkState::Size));
    }
}
