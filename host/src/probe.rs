//! What the server says about itself, recorded as it said it: `/v1/models`, `/version`
//! (vLLM), `/info` (TGI), `/props` (llama.cpp), `/get_server_info` (SGLang). Absent
//! endpoints are skipped; nothing here can fail a run.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const PATHS: &[&str] = &[
    "/v1/models",
    "/version",
    "/info",
    "/props",
    "/get_server_info",
];

/// Bodies of the self-report endpoints that answered 2xx, by path (JSON, or a string).
pub async fn self_report(server: &wire::Server) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for path in PATHS {
        let Ok(resp) = server.get(path, Duration::from_secs(5)).await else {
            continue;
        };
        if !(200..300).contains(&resp.status()) {
            continue;
        }
        let Ok(text) = resp.text().await else {
            continue;
        };
        let mut value = serde_json::from_str(&text)
            .unwrap_or_else(|_| Value::String(text.chars().take(2000).collect()));
        schemas::shape::clip(&mut value);
        out.insert(path.to_string(), value);
    }
    out
}

/// Engine name and version, read from the self-report.
pub fn engine_identity(reported: &BTreeMap<String, Value>) -> (String, Option<String>) {
    let str_at = |path: &str, pointer: &str| {
        reported
            .get(path)
            .and_then(|v| v.pointer(pointer))
            .and_then(Value::as_str)
            .map(String::from)
    };
    if let Some(engine) = str_at("/version", "/engine") {
        return (engine, str_at("/version", "/version"));
    }
    if reported.contains_key("/get_server_info") {
        return ("sglang".into(), str_at("/get_server_info", "/version"));
    }
    if reported
        .get("/info")
        .is_some_and(|v| v.get("model_id").is_some())
    {
        return ("tgi".into(), str_at("/info", "/version"));
    }
    if reported.get("/props").is_some_and(|v| {
        v.get("default_generation_settings").is_some() || v.get("build_info").is_some()
    }) {
        return ("llama.cpp".into(), str_at("/props", "/build_info"));
    }
    match str_at("/v1/models", "/data/0/owned_by").as_deref() {
        Some("vllm") => ("vllm".into(), str_at("/version", "/version")),
        Some("llamacpp") => ("llama.cpp".into(), None),
        Some("sglang") => ("sglang".into(), None),
        _ if reported.contains_key("/version") => ("vllm".into(), str_at("/version", "/version")),
        _ => ("unknown".into(), None),
    }
}

/// The served model: `/v1/models`' first id, else TGI's `model_id`.
pub fn default_model(reported: &BTreeMap<String, Value>) -> Option<String> {
    let at = |path: &str, pointer: &str| {
        reported
            .get(path)
            .and_then(|v| v.pointer(pointer))
            .and_then(Value::as_str)
            .map(String::from)
    };
    at("/v1/models", "/data/0/id")
        .or_else(|| at("/info", "/model_id"))
        .or_else(|| at("/get_server_info", "/model_path"))
}

/// The model's context length as the server states it: `max_model_len` in `/v1/models`
/// (vLLM, SGLang, the simulator), or llama.cpp's `n_ctx` in `/props`.
pub fn context_window(reported: &BTreeMap<String, Value>) -> Option<u32> {
    let at = |path: &str, pointer: &str| {
        reported
            .get(path)
            .and_then(|v| v.pointer(pointer))
            .and_then(Value::as_u64)
            .map(|n| n.min(u64::from(u32::MAX)) as u32)
    };
    at("/v1/models", "/data/0/max_model_len")
        .or_else(|| at("/props", "/default_generation_settings/n_ctx"))
        .or_else(|| at("/props", "/n_ctx"))
}

/// The model revision a server states (TGI's `model_sha`).
pub fn model_revision(reported: &BTreeMap<String, Value>) -> Option<String> {
    reported
        .get("/info")
        .and_then(|v| v.get("model_sha"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// The endpoint without credentials, for the document.
pub fn public_endpoint(target: &str) -> String {
    match url::Url::parse(target) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => target.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifies_engines_from_their_self_reports() {
        let one = |path: &str, v: Value| BTreeMap::from([(path.to_string(), v)]);
        assert_eq!(
            engine_identity(&one("/info", json!({"model_id": "m", "version": "1.3.4"}))),
            ("tgi".into(), Some("1.3.4".into()))
        );
        assert_eq!(
            engine_identity(&one("/version", json!({"version": "0.6.3"}))).0,
            "vllm"
        );
        assert_eq!(
            engine_identity(&one("/get_server_info", json!({"version": "0.4"}))).0,
            "sglang"
        );
        assert_eq!(
            engine_identity(&one("/props", json!({"default_generation_settings": {}}))).0,
            "llama.cpp"
        );
        assert_eq!(engine_identity(&BTreeMap::new()).0, "unknown");
        assert_eq!(
            default_model(&one("/v1/models", json!({"data": [{"id": "smol"}]}))),
            Some("smol".into())
        );
        assert_eq!(
            public_endpoint("http://user:pw@127.0.0.1:8000/?k=1"),
            "http://127.0.0.1:8000"
        );
    }
    #[test]
    fn reads_the_context_length_vllm_and_llama_cpp_state() {
        let one = |path: &str, v: Value| BTreeMap::from([(path.to_string(), v)]);
        let vllm = one(
            "/v1/models",
            json!({"data": [{"id": "m", "max_model_len": 32768}]}),
        );
        assert_eq!(context_window(&vllm), Some(32768));
        let llama = one(
            "/props",
            json!({"default_generation_settings": {"n_ctx": 4096}}),
        );
        assert_eq!(context_window(&llama), Some(4096));
        assert_eq!(context_window(&BTreeMap::new()), None);
    }
}
