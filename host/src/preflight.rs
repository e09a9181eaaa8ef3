//! Before any load: does the server answer at all? The one check here that can stop a
//! run, and it stops it before anything is measured or written.
//!
//! One POST of an empty JSON object to the endpoint the benchmark will use. Every API
//! provebench speaks refuses that body (vLLM, SGLang and llama.cpp with 400, TGI with 422 or
//! an error event), so the server generates nothing; yet the answer shows that the name
//! resolves, the connection and TLS open, the key is accepted and the path exists.

use std::time::Duration;

/// How long the server may take to refuse the empty body.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// `Ok` when `server` answered the probe at `path` with anything but a refusal of the client
/// (401, 403) or of the path (404, 405); else one line saying why, for `URL: why`.
pub async fn check(server: &wire::Server, path: &str) -> Result<(), String> {
    match server
        .post_json(path, &serde_json::json!({}), TIMEOUT)
        .await
    {
        Ok(resp) => refusal(resp.status(), server.api_key().is_some()).map_or(Ok(()), Err),
        Err(e) => Err(cause(&e, server.base().starts_with("https://"))),
    }
}

/// What a status says of the client, when it refuses it.
fn refusal(status: u16, key_sent: bool) -> Option<String> {
    let key = if key_sent {
        "the API key in OPENAI_API_KEY (or PROVEBENCH_API_KEY) was refused"
    } else {
        "the server wants an API key: set OPENAI_API_KEY (or PROVEBENCH_API_KEY)"
    };
    match status {
        401 => Some(format!("HTTP 401 Unauthorized: {key}")),
        403 => Some(format!("HTTP 403 Forbidden: {key}")),
        404 => Some(
            "HTTP 404 Not Found: nothing serves this path (is --target the server's root URL, \
             and --backend the API it serves?)"
                .into(),
        ),
        405 => Some("HTTP 405 Method Not Allowed: this path takes no POST (is --backend the API the server serves?)".into()),
        _ => None,
    }
}

/// The cause of a failed request in a few words: refused, unresolvable, TLS, timeout, or the
/// innermost error's own words.
fn cause(e: &wire::WireError, https: bool) -> String {
    if e.kind == wire::ErrorKind::Timeout {
        return format!("no answer within {} s", TIMEOUT.as_secs());
    }
    let sources = e.causes.get(1..).unwrap_or_default();
    let all = sources.join(": ").to_ascii_lowercase();
    let innermost = e.causes.last().cloned().unwrap_or_default();
    if all.contains("connection refused") {
        "connection refused: nothing listens at this address and port".into()
    } else if all.contains("dns error") || all.contains("failed to lookup address") {
        format!("the host name does not resolve ({innermost})")
    } else if https
        || all.contains("certificate")
        || all.contains("tls")
        || all.contains("handshake")
    {
        // Past the name and the connection, an https request fails in the handshake.
        format!("TLS failed: {innermost}")
    } else {
        format!("cannot connect: {innermost}")
    }
}

#[cfg(test)]
mod tests {
    use super::refusal;

    #[test]
    fn only_refusals_of_the_client_or_the_path_stop_a_run() {
        for ok in [200, 400, 422, 500, 503] {
            assert_eq!(refusal(ok, false), None, "{ok}");
        }
        assert!(refusal(401, false).unwrap().contains("wants an API key"));
        assert!(refusal(401, true).unwrap().contains("was refused"));
        assert!(refusal(404, false).unwrap().contains("--target"));
    }
}
