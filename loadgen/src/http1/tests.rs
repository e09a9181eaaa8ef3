//! The lean client against scripted servers on 127.0.0.1: every framing, responses split at
//! every byte, keep-alive reuse, and a pooled connection the server closed while idle.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a scripted connection does after each request: write these pieces, in order,
/// each flushed and followed by a short pause, then (if `close`) close the connection.
#[derive(Clone)]
struct Answer {
    pieces: Vec<Vec<u8>>,
    close: bool,
}

fn answer(pieces: &[&[u8]]) -> Answer {
    Answer {
        pieces: pieces.iter().map(|p| p.to_vec()).collect(),
        close: false,
    }
}

/// Serves `script[i]` to the i-th connection (one answer per request), counting accepts.
async fn scripted(script: Vec<Vec<Answer>>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/completions", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        for answers in script {
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.set_nodelay(true).unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                for a in answers {
                    if read_request(&mut socket).await.is_none() {
                        return;
                    }
                    for piece in &a.pieces {
                        if socket.write_all(piece).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    if a.close {
                        return;
                    }
                }
                // Hold the connection open until the client closes it.
                let mut sink = [0u8; 64];
                while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
            });
        }
    });
    (url, accepted)
}

/// Reads one request (head and Content-Length body); `None` if the client went away.
async fn read_request(socket: &mut TcpStream) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if got.len() >= end + 4 + length {
                return Some(got);
            }
        }
        let n = socket.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
    }
}

const POST: Post<'static> = Post {
    path: "/v1/completions",
    body: b"{}",
    bearer: None,
    headers: &[],
};

async fn body_of(pool: &Pool) -> Result<(u16, Vec<u8>), String> {
    let mut sent = Instant::now();
    let mut response = pool
        .send(&POST, &mut sent)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status;
    let mut body = Vec::new();
    while let Some((_, piece)) = response.chunk().await.map_err(|e| e.to_string())? {
        body.extend_from_slice(piece);
    }
    Ok((status, body))
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
14\r\ndata: {\"text\":\"a\"}\n\n\r\n14;ext=1\r\ndata: {\"text\":\"b\"}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\nX-Trailer: t\r\n\r\n";

#[tokio::test]
async fn chunked_bodies_decode_the_same_wherever_the_bytes_are_split() {
    let expected = b"data: {\"text\":\"a\"}\n\ndata: {\"text\":\"b\"}\n\ndata: [DONE]\n\n".to_vec();
    let mut script = vec![vec![answer(&[CHUNKED])]];
    for split in 1..CHUNKED.len() {
        script.push(vec![answer(&[&CHUNKED[..split], &CHUNKED[split..]])]);
    }
    let cases = script.len();
    let (url, _) = scripted(script).await;
    let (pool, path) = Pool::for_url(&url).unwrap();
    assert_eq!(path, "/v1/completions");
    for case in 0..cases {
        // A fresh connection each time: drop what the pool kept.
        pool.idle.lock().unwrap().clear();
        let (status, body) = body_of(&pool).await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(body, expected, "case {case}");
    }
}

#[tokio::test]
async fn one_byte_at_a_time_still_decodes() {
    let pieces: Vec<&[u8]> = CHUNKED.chunks(1).collect();
    let (url, _) = scripted(vec![vec![answer(&pieces)]]).await;
    let (pool, _) = Pool::for_url(&url).unwrap();
    let (_, body) = body_of(&pool).await.unwrap();
    assert!(body.ends_with(b"data: [DONE]\n\n"));
}

#[tokio::test]
async fn keep_alive_connections_are_reused_and_close_is_honoured() {
    let length = answer(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"]);
    let closing = answer(&[b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi"]);
    let (url, accepted) = scripted(vec![
        vec![answer(&[CHUNKED]), length.clone(), closing],
        vec![length],
    ])
    .await;
    let (pool, _) = Pool::for_url(&url).unwrap();
    body_of(&pool).await.unwrap();
    assert_eq!(body_of(&pool).await.unwrap().1, b"hello");
    assert_eq!(body_of(&pool).await.unwrap().1, b"hi");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "three requests, one connection"
    );
    assert_eq!(body_of(&pool).await.unwrap().1, b"hello");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "after Connection: close, a new one"
    );
}

#[tokio::test]
async fn a_pooled_connection_closed_while_idle_is_replaced_and_the_request_sent_again() {
    let mut first = answer(&[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]);
    first.close = true; // closes without saying so, as a server's idle timeout does
    let second = answer(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain"]);
    let (url, accepted) = scripted(vec![vec![first], vec![second]]).await;
    let (pool, _) = Pool::for_url(&url).unwrap();
    assert_eq!(body_of(&pool).await.unwrap().1, b"ok");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(body_of(&pool).await.unwrap().1, b"again");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn bodies_until_close_and_informational_heads() {
    let until_close = Answer {
        pieces: vec![b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\n\r\nall of it".to_vec()],
        close: true,
    };
    let (url, _) = scripted(vec![vec![until_close]]).await;
    let (pool, _) = Pool::for_url(&url).unwrap();
    assert_eq!(body_of(&pool).await.unwrap(), (200, b"all of it".to_vec()));
    assert!(
        pool.idle.lock().unwrap().is_empty(),
        "an until-close connection is not reused"
    );
}

#[tokio::test]
async fn truncated_and_malformed_bodies_are_errors() {
    let truncated = Answer {
        pieces: vec![
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n14\r\ndata: {\"te".to_vec(),
        ],
        close: true,
    };
    let bad_size = answer(&[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]);
    let bad_head = answer(&[b"HTTX/1.1 200 OK\r\n\r\n"]);
    let (url, _) = scripted(vec![vec![truncated], vec![bad_size], vec![bad_head]]).await;
    let (pool, _) = Pool::for_url(&url).unwrap();
    let e = body_of(&pool).await.unwrap_err();
    assert!(e.contains("closed inside the response body"), "{e}");
    let e = body_of(&pool).await.unwrap_err();
    assert!(e.contains("invalid chunk-size"), "{e}");
    let e = body_of(&pool).await.unwrap_err();
    assert!(e.contains("malformed HTTP response"), "{e}");
}

#[tokio::test]
async fn the_request_names_host_length_and_key() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let request = read_request(&mut socket).await.unwrap();
        socket
            .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8(request).unwrap()
    });
    let (pool, path) = Pool::for_url(&format!("http://localhost:{port}/generate?x=1")).unwrap();
    assert_eq!(path, "/generate?x=1");
    let post = Post {
        path: &path,
        body: b"{\"a\":1}",
        bearer: Some("sk-test"),
        headers: &[],
    };
    let mut sent = Instant::now();
    let mut response = pool.send(&post, &mut sent).await.unwrap();
    assert_eq!(response.status, 204);
    assert!(response.chunk().await.unwrap().is_none());
    let request = server.await.unwrap();
    assert!(
        request.starts_with("POST /generate?x=1 HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(request.contains(&format!("Host: localhost:{port}\r\n")));
    assert!(request.contains("Content-Length: 7\r\n"));
    assert!(request.contains("Authorization: Bearer sk-test\r\n"));
    assert!(request.ends_with("\r\n\r\n{\"a\":1}"));
    assert!(Pool::for_url("https://example.com/v1").is_none());
}

/// A connected pair on 127.0.0.1, Nagle off: the client's end non-blocking (for the
/// reactor), the server's end a plain blocking socket.
fn connected() -> (std::net::TcpStream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    server.set_nodelay(true).unwrap();
    client.set_nodelay(true).unwrap();
    client.set_nonblocking(true).unwrap();
    (client, server)
}

/// [`connected`], the client's end a [`Socket`] stamped by `clock`.
fn pair(clock: TokenClock) -> (Socket, std::net::TcpStream) {
    let (client, server) = connected();
    (Socket::new(client, clock).unwrap(), server)
}

/// Writes two segments 5 ms apart while the client's thread is blocked, then reads them in
/// one read: returns when the second was written, the read's stamp and when the read
/// returned.
async fn late_read(socket: &Socket, server: &mut std::net::TcpStream) -> (Instant, Stamp, Instant) {
    use std::io::Write;
    server.write_all(b"data: a\n\n").unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let second = Instant::now();
    server.write_all(b"data: b\n\n").unwrap();
    // The reader's thread busy elsewhere: both segments wait in the socket.
    std::thread::sleep(Duration::from_millis(30));
    let mut buf = [0u8; 64];
    let (n, stamp) = socket.read(&mut buf).await.unwrap();
    let returned = Instant::now();
    assert_eq!(&buf[..n], b"data: a\n\ndata: b\n\n");
    (second, stamp, returned)
}

/// The kernel's stamp is when the bytes arrived, not when the thread got to read them; and,
/// TCP's rule, one read of two queued segments carries the later segment's stamp.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "current_thread")]
async fn the_kernel_stamps_arrival_and_a_late_read_keeps_the_last_segments_time() {
    let (socket, mut server) = pair(TokenClock::Kernel);
    assert!(socket.kernel_stamps());
    let (second, stamp, returned) = late_read(&socket, &mut server).await;
    assert!(stamp.kernel, "{stamp:?}");
    let after_write = stamp.at.saturating_duration_since(second);
    assert!(
        stamp.at >= second && after_write < Duration::from_millis(2),
        "stamped {after_write:?} after the second write"
    );
    assert!(returned - stamp.at >= Duration::from_millis(25));
}

/// `--token-clock read`, and a kernel that refuses the socket option: the read's return.
#[tokio::test(flavor = "current_thread")]
async fn without_kernel_stamps_a_read_is_stamped_when_it_returns() {
    let (socket, mut server) = pair(TokenClock::Read);
    assert!(!socket.kernel_stamps());
    let (second, stamp, returned) = late_read(&socket, &mut server).await;
    assert!(!stamp.kernel);
    assert!(stamp.at - second >= Duration::from_millis(25) && stamp.at <= returned);

    let (client, mut server) = connected();
    let refused = socket::refused_flags_fall_back(client).unwrap();
    assert!(
        !refused.kernel_stamps(),
        "the kernel took an undefined flag"
    );
    let (_, stamp, returned) = late_read(&refused, &mut server).await;
    assert!(!stamp.kernel && stamp.at <= returned);
}
