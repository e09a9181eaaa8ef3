//! A blocking HTTP/1.1 GET over one kept-alive connection, for scraping `http://` metrics
//! pages every 100 ms. Ours rather than reqwest's blocking client because of a measurement
//! (scripts/bench-telemetry.sh, an 100 KB vLLM-shaped page): reqwest spent about 500 µs of
//! CPU a scrape, hopping to its runtime thread and through hyper, 0.5 % of a core on its
//! own; this spends a fraction of that (docs/PERFORMANCE.md). `https://` pages still go
//! through reqwest ([`crate::scrape`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A `http://host:port/path` URL, split.
pub struct Url {
    authority: String,
    path: String,
}

impl Url {
    /// `None` for anything but plain `http://`.
    pub fn parse(url: &str) -> Option<Url> {
        let rest = url.strip_prefix("http://")?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() || authority.contains('@') {
            return None;
        }
        Some(Url {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }
}

/// One connection, reopened when the server closed it.
pub struct Getter {
    url: Url,
    timeout: Duration,
    conn: Option<BufReader<TcpStream>>,
}

impl Getter {
    pub fn new(url: Url, timeout: Duration) -> Getter {
        Getter {
            url,
            timeout,
            conn: None,
        }
    }

    /// The body of a 2xx answer into `body` (cleared first); `Err` with why not.
    pub fn get(&mut self, body: &mut Vec<u8>) -> Result<(), String> {
        let reused = self.conn.is_some();
        let status = match self.exchange(body) {
            Ok(status) => status,
            // A kept connection the server has since closed fails at once: one retry on a
            // new one.
            Err(_) if reused => {
                self.conn = None;
                self.exchange(body).inspect_err(|_| self.conn = None)?
            }
            Err(e) => {
                self.conn = None;
                return Err(e);
            }
        };
        if !(200..300).contains(&status) {
            return Err(format!("HTTP {status}"));
        }
        Ok(())
    }

    /// One request and its answer's status and body; `Err` on I/O or protocol trouble.
    fn exchange(&mut self, body: &mut Vec<u8>) -> Result<u16, String> {
        if self.conn.is_none() {
            let s = TcpStream::connect(&self.url.authority).map_err(|e| e.to_string())?;
            s.set_read_timeout(Some(self.timeout))
                .map_err(|e| e.to_string())?;
            s.set_write_timeout(Some(self.timeout))
                .map_err(|e| e.to_string())?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            self.conn = Some(BufReader::with_capacity(64 * 1024, s));
        }
        let conn = self.conn.as_mut().expect("connected above");
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/plain\r\nUser-Agent: provebench\r\n\r\n",
            self.url.path, self.url.authority
        );
        conn.get_mut()
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        conn.read_line(&mut line).map_err(|e| e.to_string())?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not an HTTP status line: {:?}", line.trim_end()))?;
        let (mut length, mut chunked, mut close) = (None, false, false);
        loop {
            line.clear();
            if conn.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("connection closed in the headers".into());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse::<usize>().ok(),
                    "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                    "connection" => close = value.eq_ignore_ascii_case("close"),
                    _ => {}
                }
            }
        }
        body.clear();
        if chunked {
            loop {
                line.clear();
                conn.read_line(&mut line).map_err(|e| e.to_string())?;
                let size_text = line.trim_end().split(';').next().unwrap_or("");
                let size = usize::from_str_radix(size_text, 16)
                    .map_err(|_| format!("bad chunk size {size_text:?}"))?;
                if size == 0 {
                    // Trailers, then the blank line.
                    loop {
                        line.clear();
                        if conn.read_line(&mut line).map_err(|e| e.to_string())? == 0
                            || line.trim_end().is_empty()
                        {
                            break;
                        }
                    }
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                conn.read_exact(&mut body[start..])
                    .map_err(|e| e.to_string())?;
                line.clear();
                conn.read_line(&mut line).map_err(|e| e.to_string())?;
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            conn.read_exact(body).map_err(|e| e.to_string())?;
        } else {
            conn.read_to_end(body).map_err(|e| e.to_string())?;
            close = true;
        }
        if close {
            self.conn = None;
        }
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers each request on one connection with the next canned reply.
    fn serve(replies: Vec<&'static str>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let mut reader = BufReader::new(stream.unwrap());
                loop {
                    let mut line = String::new();
                    let mut ended = false;
                    while reader.read_line(&mut line).unwrap_or(0) > 0 {
                        if line.ends_with("\r\n\r\n") {
                            ended = true;
                            break;
                        }
                    }
                    let Some(reply) = replies.next().filter(|_| ended) else {
                        break;
                    };
                    reader.get_mut().write_all(reply.as_bytes()).unwrap();
                    if reply.contains("Connection: close") {
                        break;
                    }
                }
            }
        });
        format!("http://{addr}/metrics")
    }

    #[test]
    fn reads_lengths_chunks_and_closes_and_keeps_the_connection() {
        let url = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab \r\n2;x=1\r\ncd\r\n0\r\n\r\n",
            "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nbye",
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew",
        ]);
        let mut g = Getter::new(Url::parse(&url).unwrap(), Duration::from_secs(5));
        let mut body = vec![];
        g.get(&mut body).unwrap();
        assert_eq!(body, b"hello");
        g.get(&mut body).unwrap();
        assert_eq!(body, b"ab cd");
        assert_eq!(g.get(&mut body), Err("HTTP 503".into()));
        g.get(&mut body).unwrap();
        assert_eq!(body, b"bye");
        // The server closed: a new connection gets the next reply.
        g.get(&mut body).unwrap();
        assert_eq!(body, b"new");
    }

    #[test]
    fn only_plain_http_urls_are_ours() {
        assert!(Url::parse("https://h/metrics").is_none());
        assert!(Url::parse("http://user:pw@h/metrics").is_none());
        let u = Url::parse("http://127.0.0.1:8000").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.path.as_str()),
            ("127.0.0.1:8000", "/")
        );
    }
}
