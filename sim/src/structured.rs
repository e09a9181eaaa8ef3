//! Structured output: a streamed chat or completions request with OpenAI's
//! `response_format: {type: "json_schema", json_schema: {schema}}` gets a JSON answer built
//! from the schema, then `finish_reason: "stop"`, as an engine's grammar-constrained decoding
//! gives one. The answer is deterministic: each object holds every property in the schema's
//! order (required or not), the first option of `enum`, `anyOf` and `oneOf`, `const` as given,
//! strings of lowercase letters at their shortest allowed length (3 when free), numbers at
//! their lower bound (0 when free), arrays of their fewest items (1 when free), `true`, `null`.
//!
//! A seeded share of answers (`invalid_json_fraction`, picked from the seed and the request's
//! arrival index) is cut one character short: not JSON. The truth records which
//! ([`crate::RequestTruth::structured_valid`]). The answer streams in pieces of at most 12
//! bytes (JSON-escaped), one piece a token; a `max_tokens` below its pieces cuts it there
//! (`finish_reason: "length"`), as an engine's would.

use serde_json::{Map, Value};

/// A value that `schema` accepts (`root` resolves `$ref`).
pub fn instance(root: &Value, schema: &Value, depth: u32) -> Value {
    let Value::Object(o) = schema else {
        return Value::Null;
    };
    if depth > 16 {
        return Value::Null;
    }
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let target = if r == "#" {
            Some(root)
        } else {
            r.strip_prefix('#').and_then(|p| root.pointer(p))
        };
        if let Some(t) = target {
            return instance(root, t, depth + 1);
        }
    }
    if let Some(c) = o.get("const") {
        return c.clone();
    }
    if let Some(first) = o
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = o.get(key).and_then(Value::as_array).and_then(|e| e.first()) {
            return instance(root, first, depth + 1);
        }
    }
    let kind = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str).unwrap_or("null"),
        _ if o.contains_key("properties") => "object",
        _ => "null",
    };
    let number = |k: &str| o.get(k).and_then(Value::as_f64);
    match kind {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = o.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    out.insert(k.clone(), instance(root, sub, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = o.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            let n = o
                .get("maxItems")
                .and_then(Value::as_u64)
                .map_or(n, |m| n.min(m));
            let item = o.get("items").cloned().unwrap_or(Value::Bool(true));
            Value::Array((0..n).map(|_| instance(root, &item, depth + 1)).collect())
        }
        "string" => {
            let min = o.get("minLength").and_then(Value::as_u64).unwrap_or(3);
            let n = o
                .get("maxLength")
                .and_then(Value::as_u64)
                .map_or(min, |m| min.min(m));
            Value::String(
                "abcdefghijklmnopqrstuvwxyz"
                    .chars()
                    .cycle()
                    .take(n as usize)
                    .collect(),
            )
        }
        "integer" => {
            let low = number("minimum")
                .or(number("exclusiveMinimum").map(|m| m.floor() + 1.0))
                .unwrap_or(0.0);
            Value::from(low.ceil() as i64)
        }
        "number" => {
            let low = number("minimum")
                .or(number("exclusiveMinimum").map(|m| m + 0.5))
                .unwrap_or(0.0);
            Value::from(low)
        }
        "boolean" => Value::Bool(true),
        _ => Value::Null,
    }
}

/// The answer to a request asking for `schema`, in pieces of at most 12 JSON-escaped bytes,
/// and whether it is valid; `invalid`: cut it one character short.
pub fn answer(schema: &Value, invalid: bool) -> (Vec<String>, bool) {
    let mut text = serde_json::to_string(&instance(schema, schema, 0)).expect("JSON");
    if invalid {
        text.pop();
    }
    let mut pieces: Vec<String> = Vec::new();
    let mut piece = String::new();
    for c in text.chars() {
        let escaped: String = match c {
            '"' => "\\\"".into(),
            '\\' => "\\\\".into(),
            c if c.is_ascii() && !c.is_ascii_control() => c.to_string(),
            c => format!("\\u{:04x}", c as u32 & 0xffff),
        };
        if piece.len() + escaped.len() > 12 {
            pieces.push(std::mem::take(&mut piece));
        }
        piece.push_str(&escaped);
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    (pieces, !invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_answer_matches_its_schema_and_streams_in_escaped_pieces() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 5},
            "age": {"type": "integer", "minimum": 18},
            "kind": {"enum": ["cat", "dog"]},
            "tags": {"type": "array", "items": {"type": "boolean"}, "minItems": 2}
        }, "required": ["name"]});
        let (pieces, valid) = answer(&schema, false);
        assert!(valid && pieces.iter().all(|p| p.len() <= 12));
        let text: String = pieces.concat();
        let back: Value = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        let v: Value = serde_json::from_str(back.as_str().unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"name": "abcde", "age": 18, "kind": "cat", "tags": [true, true]})
        );
        let (cut, valid) = answer(&schema, true);
        assert!(!valid);
        let back: Value = serde_json::from_str(&format!("\"{}\"", cut.concat())).unwrap();
        assert!(serde_json::from_str::<Value>(back.as_str().unwrap()).is_err());
    }
}
