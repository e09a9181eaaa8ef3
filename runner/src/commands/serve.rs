//! `runner serve DIR [--port P]`: previews a published site on 127.0.0.1.
//!
//! A plain static file server, loopback only: GET and HEAD of files under DIR, nothing
//! else. A path with a `..` segment, a backslash or a NUL is refused, and so is anything
//! that resolves (through symlinks) outside DIR. Every response carries the site's
//! Content-Security-Policy as a header too (the page also sets it in a `<meta>`), with
//! `nosniff` and the Content-Type the browser needs (`application/wasm` for the module,
//! `text/javascript` for the scripts).

use crate::cli::ServeArgs;
use crate::Failure;
use anyhow::{anyhow, Context};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The policy of `site/index.html`'s `<meta>`, plus what only a header can say.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn run(args: &ServeArgs) -> Result<(), Failure> {
    let root = args
        .dir
        .canonicalize()
        .with_context(|| format!("{}: cannot serve it", args.dir.display()))
        .map_err(Failure::Input)?;
    if !root.is_dir() {
        return Err(Failure::Input(anyhow!(
            "{}: not a directory",
            args.dir.display()
        )));
    }
    if !root.join("index.html").is_file() {
        tracing::warn!(
            "{} has no index.html (publish a site with `runner publish`)",
            root.display()
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
        .map_err(Failure::Input)?;
    runtime.block_on(async move {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))
            .map_err(Failure::Input)?;
        let bound = listener.local_addr().map_err(|e| Failure::Input(e.into()))?;
        // The URL on stdout, alone on its line, for people and for scripts.
        println!("http://{bound}/");
        let _ = std::io::stdout().flush();
        tracing::info!("serving {} on http://{bound}/ (Ctrl-C stops)", root.display());
        let root = Arc::new(root);
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let root = root.clone();
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(move |req| {
                                let root = root.clone();
                                async move { Ok::<_, std::convert::Infallible>(handle(&root, &req).await) }
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .timer(TokioTimer::new())
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    }
                },
            }
        }
        Ok(())
    })
}

/// Content-Type by extension; anything else is served as bytes.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "md" | "txt" | "sha256" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Why a request path is not served.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a path this server can map (bad escape, `..`, backslash, NUL): 400.
    Bad,
    /// Nothing there, or it resolves outside the root: 404.
    Missing,
}

fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Maps a request path (`/results/a%20b.json`) to a file under `root` (canonical).
pub fn resolve(root: &Path, request_path: &str) -> Result<PathBuf, Refused> {
    let decoded = percent_decode(request_path).ok_or(Refused::Bad)?;
    let decoded = String::from_utf8(decoded).map_err(|_| Refused::Bad)?;
    if !decoded.starts_with('/') || decoded.contains('\\') || decoded.contains('\0') {
        return Err(Refused::Bad);
    }
    let mut path = root.to_path_buf();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(Refused::Bad),
            s => path.push(s),
        }
    }
    if decoded.ends_with('/') {
        path.push("index.html");
    }
    // Symlinks are followed, but what they reach must still be under the root.
    let real = path.canonicalize().map_err(|_| Refused::Missing)?;
    if !real.starts_with(root) {
        return Err(Refused::Missing);
    }
    if real.is_dir() {
        let index = real.join("index.html");
        return if index.is_file() {
            Ok(index)
        } else {
            Err(Refused::Missing)
        };
    }
    if !real.is_file() {
        return Err(Refused::Missing);
    }
    Ok(real)
}

fn response(
    status: StatusCode,
    content_type: &str,
    body: Bytes,
    head: bool,
) -> Response<Full<Bytes>> {
    let len = body.len();
    let mut r = Response::new(Full::new(if head { Bytes::new() } else { body }));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_str(content_type).expect("ASCII"),
    );
    h.insert(CONTENT_LENGTH, HeaderValue::from(len));
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn handle(root: &Path, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        let mut r = response(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"only GET and HEAD\n"),
            false,
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let text = "text/plain; charset=utf-8";
    match resolve(root, req.uri().path()) {
        Ok(file) => match tokio::fs::read(&file).await {
            Ok(bytes) => response(
                StatusCode::OK,
                content_type(&file),
                Bytes::from(bytes),
                head,
            ),
            Err(e) => {
                tracing::warn!("reading {}: {e}", file.display());
                response(
                    StatusCode::NOT_FOUND,
                    text,
                    Bytes::from_static(b"not found\n"),
                    head,
                )
            }
        },
        Err(Refused::Bad) => response(
            StatusCode::BAD_REQUEST,
            text,
            Bytes::from_static(b"bad path\n"),
            head,
        ),
        Err(Refused::Missing) => response(
            StatusCode::NOT_FOUND,
            text,
            Bytes::from_static(b"not found\n"),
            head,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_files_under_the_root_only() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("site");
        std::fs::create_dir_all(root.join("results")).unwrap();
        std::fs::write(root.join("index.html"), b"<!DOCTYPE html>").unwrap();
        std::fs::write(root.join("results/a b.json"), b"{}").unwrap();
        std::fs::write(d.path().join("secret.txt"), b"no").unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, "/").unwrap(), root.join("index.html"));
        assert_eq!(
            resolve(&root, "/results/a%20b.json").unwrap(),
            root.join("results/a b.json")
        );
        assert_eq!(
            resolve(&root, "/./results//a%20b.json").unwrap(),
            root.join("results/a b.json")
        );
        assert_eq!(resolve(&root, "/../secret.txt"), Err(Refused::Bad));
        assert_eq!(
            resolve(&root, "/results/%2e%2e/%2e%2e/secret.txt"),
            Err(Refused::Bad)
        );
        assert_eq!(
            resolve(&root, "/results/..%2f..%2fsecret.txt"),
            Err(Refused::Bad)
        );
        assert_eq!(resolve(&root, "/..\\secret.txt"), Err(Refused::Bad));
        assert_eq!(resolve(&root, "/a%00b"), Err(Refused::Bad));
        assert_eq!(resolve(&root, "/%zz"), Err(Refused::Bad));
        assert_eq!(resolve(&root, "/missing.json"), Err(Refused::Missing));
        assert_eq!(resolve(&root, "/results"), Err(Refused::Missing));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.path().join("secret.txt"), root.join("leak.txt")).unwrap();
            assert_eq!(resolve(&root, "/leak.txt"), Err(Refused::Missing));
            std::os::unix::fs::symlink(root.join("index.html"), root.join("inside.html")).unwrap();
            assert_eq!(
                resolve(&root, "/inside.html").unwrap(),
                root.join("index.html")
            );
        }
    }

    #[test]
    fn content_types() {
        for (name, ty) in [
            ("a.wasm", "application/wasm"),
            ("a.js", "text/javascript; charset=utf-8"),
            ("a.json", "application/json"),
            ("a.svg", "image/svg+xml"),
            ("a.css", "text/css; charset=utf-8"),
            ("a.html", "text/html; charset=utf-8"),
            ("a", "application/octet-stream"),
        ] {
            assert_eq!(content_type(Path::new(name)), ty);
        }
    }

    #[test]
    fn header_policy_extends_the_page_policy() {
        let html = std::str::from_utf8(crate::commands::publish::ASSETS[0].1).unwrap();
        let meta = CSP.trim_end_matches("; frame-ancestors 'none'");
        assert!(
            html.contains(&format!("content=\"{meta}\"")),
            "index.html's CSP differs from serve's"
        );
    }
}
