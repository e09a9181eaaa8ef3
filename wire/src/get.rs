//! A blocking HTTP/1.1 GET over one kept-alive connection, for scraping `http://` metrics
//! pages every 100 ms (telemetry's scraper). Ours rather than reqwest's blocking client
//! because of a measurement (scripts/bench-telemetry.sh, an 100 KB vLLM-shaped page):
//! reqwest spent about 500 µs of CPU a scrape, hopping to its runtime thread and through
//! hyper, 0.5 % of a core on its own; this spends a fraction of that (docs/PERFORMANCE.md).
//! Responses are read with [`crate::http1`], as the load generator's streams are; `https://`
//! pages go through reqwest ([`crate::blocking`]).

use crate::http1::{self, Decoded, MAX_HEAD_BYTES};
use std::io::{Read, Write};
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
    conn: Option<TcpStream>,
    /// What was read and not yet used: `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Getter {
    pub fn new(url: Url, timeout: Duration) -> Getter {
        Getter {
            url,
            timeout,
            conn: None,
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
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
                self.drop_conn();
                self.exchange(body).inspect_err(|_| self.drop_conn())?
            }
            Err(e) => {
                self.drop_conn();
                return Err(e);
            }
        };
        if !(200..300).contains(&status) {
            return Err(format!("HTTP {status}"));
        }
        Ok(())
    }

    fn drop_conn(&mut self) {
        self.conn = None;
        (self.start, self.end) = (0, 0);
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
            self.conn = Some(s);
        }
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/plain\r\nUser-Agent: provebench\r\n\r\n",
            self.url.path, self.url.authority
        );
        self.conn
            .as_mut()
            .expect("connected above")
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let head = loop {
            match http1::parse_head(&self.buf[self.start..self.end]).map_err(|e| e.to_string())? {
                Some((used, head)) => {
                    self.start += used;
                    if !head.is_interim() {
                        break head;
                    }
                }
                None if self.end - self.start > MAX_HEAD_BYTES => {
                    return Err("response head longer than 64 KiB".into())
                }
                None => {
                    if self.fill()? == 0 {
                        return Err("connection closed in the headers".into());
                    }
                }
            }
        };
        body.clear();
        let mut framing = head.framing;
        loop {
            match http1::decode(&self.buf, &mut self.start, self.end, &mut framing)
                .map_err(|e| e.to_string())?
            {
                Decoded::Piece(range) => body.extend_from_slice(&self.buf[range]),
                Decoded::End => break,
                Decoded::More => {
                    if self.fill()? == 0 {
                        http1::at_close(&mut framing).map_err(|e| e.to_string())?;
                        break;
                    }
                }
            }
        }
        if !head.keep_alive {
            self.drop_conn();
        }
        Ok(head.status)
    }

    /// Reads what the socket has after the unused bytes, moved to the front (the buffer
    /// grows only when they fill it); the count read, 0 at the connection's end.
    fn fill(&mut self) -> Result<usize, String> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let conn = self.conn.as_mut().ok_or("not connected")?;
        let n = conn
            .read(&mut self.buf[self.end..])
            .map_err(|e| e.to_string())?;
        self.end += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
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
