//! Session affinity: what keeps a session's requests on one replica behind a router. Every
//! request of a session (an agentic session, or a multi-turn conversation) names it in [`SESSION_HEADER`] (inference-perf's and the simulator's
//! convention, for routers that hash a header), and sends back the cookies the router set on
//! the session's earlier answers — llm-d's session-affinity scorer answers with `Set-Cookie:
//! llm-d-session=<the pod, base64>` and routes a request that carries it to that pod; Envoy's
//! and NGINX's sticky sessions work the same way. The client keeps one small jar a session
//! (not one for the whole benchmark): sessions are routed independently, as separate users
//! would be.

pub use schemas::document::agentic::SESSION_HEADER;
use std::sync::Mutex;

/// One session's route: its id and the cookies set on its answers so far.
#[derive(Debug, Default)]
pub struct SessionRoute {
    pub id: String,
    /// `name=value` pairs, one a name (the latest set wins), in the order first set.
    cookies: Mutex<Vec<String>>,
}

impl SessionRoute {
    /// Session `index` of a benchmark whose session ids start with `prefix` (the run's and
    /// the benchmark's): its id is `<prefix>-s<index>`.
    pub fn new(prefix: &str, index: usize) -> SessionRoute {
        SessionRoute {
            id: format!("{prefix}-s{index}"),
            cookies: Mutex::new(Vec::new()),
        }
    }

    /// The `Cookie` header's value for the next request, when the session holds cookies.
    pub fn cookie_header(&self) -> Option<String> {
        let jar = self.cookies.lock().expect("cookie jar lock");
        (!jar.is_empty()).then(|| jar.join("; "))
    }

    /// Keeps the `name=value` pairs an answer's `Set-Cookie` headers gave.
    pub fn remember(&self, set: &[String]) {
        if set.is_empty() {
            return;
        }
        let name = |pair: &str| pair.split('=').next().unwrap_or("").trim().to_string();
        let mut jar = self.cookies.lock().expect("cookie jar lock");
        for pair in set {
            let n = name(pair);
            match jar.iter_mut().find(|kept| name(kept) == n) {
                Some(kept) => kept.clone_from(pair),
                None => jar.push(pair.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_cookie_of_a_name_is_sent_back_with_the_others() {
        let r = SessionRoute::new("run", 0);
        assert_eq!(r.id, "run-s0");
        assert_eq!(r.cookie_header(), None);
        r.remember(&["llm-d-session=cG9kLWE=".into(), "lb=1".into()]);
        r.remember(&["llm-d-session=cG9kLWI=".into()]);
        assert_eq!(
            r.cookie_header().as_deref(),
            Some("llm-d-session=cG9kLWI=; lb=1")
        );
    }
}
