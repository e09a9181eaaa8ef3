//! Asking a started engine its version, the way its recipe says: an HTTP request and a
//! JSON field (`GET /version` → `version`), or a command's first line of output.

use crate::recipe::{split_request, Version};
use std::time::Duration;

/// The version, or `None` when the engine does not say.
pub fn probe(v: &Version, base_url: &str) -> Option<String> {
    if let (Some(request), Some(field)) = (&v.request, &v.field) {
        let (method, path) = split_request(request).ok()?;
        let url = format!("{}{path}", base_url.trim_end_matches('/'));
        let json = wire::blocking::request(method, &url, Duration::from_secs(10))
            .ok()?
            .json()
            .ok()?;
        return match json.get(field)? {
            serde_json::Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        };
    }
    let command = v.command.as_ref()?;
    let out = std::process::Command::new(command.first()?)
        .args(&command[1..])
        .output()
        .ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(String::from)
}
