//! Structured output: requests that ask for JSON matching a JSON Schema (OpenAI's
//! `response_format: {type: "json_schema"}`), and the share of answers that parse and match,
//! derived from the answers the records keep (`output_text`) by [`crate::metrics`] and
//! recomputed by every verifier, the wasm module included.
//!
//! The checker below is this crate's own, and covers the keywords engines' guided decoding
//! honours (vLLM's and llama.cpp's JSON Schema to grammar converters): `type` (one or a list),
//! `enum`, `const`, `properties`, `required`, `additionalProperties` (a boolean or a schema),
//! `items`, `prefixItems`, `minItems`, `maxItems`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `minLength`, `maxLength` (in characters), `anyOf`, `oneOf`, `allOf`,
//! `$ref` to `#/$defs/…` or `#/definitions/…`, and the annotations `title`, `description`,
//! `default`, `examples`, `format`, `$schema`, `$id`, `$defs`, `definitions` (not checked). A
//! schema with any other keyword (`pattern`, say) is refused before the run, naming where: a
//! keyword this checker skipped would count answers valid that are not. Why not a library:
//! the JSON Schema crates of the field pull in regular-expression engines and hashers that need
//! the platform's randomness, which the report module (wasm32, no imports) cannot have; the
//! Python verifier checks the same answers with the `jsonschema` package, so the two are held
//! to each other.

use crate::distribution::MetricsError;
use crate::document::{Phase, RawRecord};
use crate::interval::Interval;
use crate::numbers::Finite;
use crate::summary::StructuredOutput;
use serde_json::Value;

/// Keywords the checker reads.
const CHECKED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
];

/// Keywords that say something of a schema without constraining an instance.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "format",
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
];

/// Refuses a schema that uses a keyword the checker does not check; the error names the JSON
/// path (`/properties/name`) and the keyword.
pub fn check_supported(schema: &Value) -> Result<(), String> {
    fn walk(s: &Value, at: &str) -> Result<(), String> {
        let o = match s {
            Value::Bool(_) => return Ok(()),
            Value::Object(o) => o,
            _ => return Err(format!("{at}: a schema is an object or a boolean")),
        };
        for (k, v) in o {
            let here = format!("{at}/{k}");
            if !CHECKED.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()) {
                return Err(format!(
                    "{here}: the keyword `{k}` is not one this checker checks (so answers could count as valid that are not)"
                ));
            }
            match k.as_str() {
                "properties" | "$defs" | "definitions" => {
                    let map = v
                        .as_object()
                        .ok_or_else(|| format!("{here}: an object of schemas"))?;
                    for (name, sub) in map {
                        walk(sub, &format!("{here}/{name}"))?;
                    }
                }
                "additionalProperties" | "items" => walk(v, &here)?,
                "prefixItems" | "anyOf" | "oneOf" | "allOf" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| format!("{here}: a list of schemas"))?;
                    for (i, sub) in list.iter().enumerate() {
                        walk(sub, &format!("{here}/{i}"))?;
                    }
                }
                "$ref" => {
                    let r = v.as_str().unwrap_or("");
                    if !(r.starts_with("#/$defs/") || r.starts_with("#/definitions/") || r == "#") {
                        return Err(format!(
                            "{here}: only references into this schema (`#/$defs/…`) are checked"
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
    walk(schema, "")
}

/// The most schema nodes one answer's check visits: `anyOf` inside `anyOf` would otherwise let a
/// stranger's document make a verifier (or the site) work for ever.
pub const CHECK_BUDGET: u64 = 1_000_000;

/// The first way `instance` breaks `schema` (`root` resolves `$ref`), with its JSON path.
pub fn violation(root: &Value, schema: &Value, instance: &Value) -> Option<String> {
    let mut budget = CHECK_BUDGET;
    check(root, schema, instance, "", 0, &mut budget).err()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    let name = type_name(v);
    name == t || (t == "number" && name == "integer")
}

/// JSON equality with numbers compared by value (1 equals 1.0).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

fn check(
    root: &Value,
    s: &Value,
    v: &Value,
    at: &str,
    depth: u32,
    budget: &mut u64,
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{at}: references nest deeper than 64"));
    }
    if *budget == 0 {
        return Err(format!(
            "{at}: the schema takes over {CHECK_BUDGET} steps to check"
        ));
    }
    *budget -= 1;
    let o = match s {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{at}: no value is allowed here")),
        Value::Object(o) => o,
        _ => return Err(format!("{at}: the schema is not a schema")),
    };
    let fail = |why: String| Err(format!("{}: {why}", if at.is_empty() { "/" } else { at }));
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let target = if r == "#" {
            Some(root)
        } else {
            r.strip_prefix('#').and_then(|p| root.pointer(p))
        };
        match target {
            Some(t) => check(root, t, v, at, depth + 1, budget)?,
            None => return fail(format!("$ref {r} names nothing")),
        }
    }
    if let Some(t) = o.get("type") {
        let ok = match t {
            Value::String(t) => is_type(v, t),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| is_type(v, t)),
            _ => false,
        };
        if !ok {
            return fail(format!("{} where the schema wants {t}", type_name(v)));
        }
    }
    if let Some(Value::Array(options)) = o.get("enum") {
        if !options.iter().any(|e| equal(e, v)) {
            return fail(format!(
                "{v} is not one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(c) = o.get("const") {
        if !equal(c, v) {
            return fail(format!("{v} is not {c}"));
        }
    }
    if let Value::Number(n) = v {
        let x = n.as_f64().unwrap_or(f64::NAN);
        let bound = |k: &str| o.get(k).and_then(Value::as_f64);
        if bound("minimum").is_some_and(|m| x < m)
            || bound("maximum").is_some_and(|m| x > m)
            || bound("exclusiveMinimum").is_some_and(|m| x <= m)
            || bound("exclusiveMaximum").is_some_and(|m| x >= m)
        {
            return fail(format!("{x} is out of the schema's bounds"));
        }
    }
    if let Value::String(text) = v {
        let n = text.chars().count() as u64;
        let len = |k: &str| o.get(k).and_then(Value::as_u64);
        if len("minLength").is_some_and(|m| n < m) || len("maxLength").is_some_and(|m| n > m) {
            return fail(format!(
                "a string of {n} characters is out of the schema's bounds"
            ));
        }
    }
    if let Value::Array(items) = v {
        let n = items.len() as u64;
        let len = |k: &str| o.get(k).and_then(Value::as_u64);
        if len("minItems").is_some_and(|m| n < m) || len("maxItems").is_some_and(|m| n > m) {
            return fail(format!("{n} items is out of the schema's bounds"));
        }
        let prefix = o.get("prefixItems").and_then(Value::as_array);
        let skip = prefix.map_or(0, Vec::len);
        for (i, item) in items.iter().enumerate() {
            let sub = match prefix.and_then(|p| p.get(i)) {
                Some(p) => Some(p),
                None if i >= skip => o.get("items"),
                None => None,
            };
            if let Some(sub) = sub {
                check(root, sub, item, &format!("{at}/{i}"), depth + 1, budget)?;
            }
        }
    }
    if let Value::Object(fields) = v {
        if let Some(Value::Array(required)) = o.get("required") {
            for r in required.iter().filter_map(Value::as_str) {
                if !fields.contains_key(r) {
                    return fail(format!("the required property `{r}` is missing"));
                }
            }
        }
        let properties = o.get("properties").and_then(Value::as_object);
        for (k, item) in fields {
            let here = format!("{at}/{k}");
            match properties.and_then(|p| p.get(k)) {
                Some(sub) => check(root, sub, item, &here, depth + 1, budget)?,
                None => {
                    if let Some(extra) = o.get("additionalProperties") {
                        check(root, extra, item, &here, depth + 1, budget)?;
                    }
                }
            }
        }
    }
    if let Some(Value::Array(all)) = o.get("allOf") {
        for sub in all {
            check(root, sub, v, at, depth + 1, budget)?;
        }
    }
    let spent = |budget: &u64| {
        (*budget == 0).then(|| format!("{at}: the schema takes over {CHECK_BUDGET} steps to check"))
    };
    if let Some(Value::Array(any)) = o.get("anyOf") {
        let matched = any
            .iter()
            .any(|sub| check(root, sub, v, at, depth + 1, budget).is_ok());
        if let Some(why) = spent(budget) {
            return Err(why);
        }
        if !matched {
            return fail("no schema of anyOf matches".into());
        }
    }
    if let Some(Value::Array(one)) = o.get("oneOf") {
        let n = one
            .iter()
            .filter(|sub| check(root, sub, v, at, depth + 1, budget).is_ok())
            .count();
        if let Some(why) = spent(budget) {
            return Err(why);
        }
        if n != 1 {
            return fail(format!("{n} schemas of oneOf match, not one"));
        }
    }
    Ok(())
}

/// What an answer is: JSON that matches the schema, JSON that does not (and why), or no JSON.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    Valid,
    Mismatch(String),
    NotJson,
}

/// Judges one answer's text against `schema`.
pub fn judge(schema: &Value, text: &str) -> Verdict {
    match serde_json::from_str::<Value>(text.trim()) {
        Err(_) => Verdict::NotJson,
        Ok(v) => match violation(schema, schema, &v) {
            None => Verdict::Valid,
            Some(why) => Verdict::Mismatch(why),
        },
    }
}

/// The summary's `structured_output` and its interval: over the measured, completed requests
/// that kept their answer (`output_text`), in schedule order.
pub fn stats(
    records: &[RawRecord],
    schema: &Value,
    t: f64,
) -> Result<(Option<StructuredOutput>, Option<Interval>), MetricsError> {
    let order = crate::uncertainty::schedule_order(records);
    let (mut parsed, mut valid) = (0u64, 0u64);
    let mut parts: Vec<(u64, u64)> = Vec::new();
    for &i in &order {
        let r = &records[i];
        debug_assert_eq!(r.phase, Phase::Measured);
        let (true, Some(text)) = (r.completed(), r.output_text.as_deref()) else {
            continue;
        };
        let v = judge(schema, text);
        parsed += u64::from(v != Verdict::NotJson);
        valid += u64::from(v == Verdict::Valid);
        parts.push((u64::from(v == Verdict::Valid), 1));
    }
    let n = parts.len() as u64;
    if n == 0 {
        return Ok((None, None));
    }
    let share = valid as f64 / n as f64;
    let interval = crate::uncertainty::ratio_interval(&parts, share, t)?;
    Ok((
        Some(StructuredOutput {
            requests: n,
            parsed,
            valid,
            valid_share: Finite::new(share).map_err(|e| MetricsError::NotFinite(e.0))?,
        }),
        interval,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 8},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
                "kind": {"$ref": "#/$defs/kind"}
            },
            "required": ["name", "age"],
            "additionalProperties": false,
            "$defs": {"kind": {"anyOf": [{"const": "x"}, {"type": "null"}]}}
        })
    }

    #[test]
    fn answers_are_judged_by_the_keywords_engines_honour() {
        let s = schema();
        check_supported(&s).unwrap();
        assert_eq!(
            judge(
                &s,
                r#"{"name": "Ada", "age": 36, "tags": ["a"], "kind": null}"#
            ),
            Verdict::Valid
        );
        assert_eq!(
            judge(&s, r#" {"name": "Ada", "age": 36.0} "#),
            Verdict::Valid,
            "36.0 is an integer"
        );
        assert_eq!(judge(&s, r#"{"name": "Ada", "age": 36"#), Verdict::NotJson);
        let cases = [
            (
                r#"{"name": "Ada"}"#,
                "/: the required property `age` is missing",
            ),
            (
                r#"{"name": "Ada", "age": -1}"#,
                "/age: -1 is out of the schema's bounds",
            ),
            (
                r#"{"name": "Ada", "age": 1.5}"#,
                "/age: number where the schema wants \"integer\"",
            ),
            (
                r#"{"name": "", "age": 1}"#,
                "/name: a string of 0 characters is out of the schema's bounds",
            ),
            (
                r#"{"name": "A", "age": 1, "x": 1}"#,
                "/x: no value is allowed here",
            ),
            (
                r#"{"name": "A", "age": 1, "tags": ["c"]}"#,
                "/tags/0: \"c\" is not one of [\"a\",\"b\"]",
            ),
            (
                r#"{"name": "A", "age": 1, "kind": "y"}"#,
                "/kind: no schema of anyOf matches",
            ),
        ];
        for (text, why) in cases {
            assert_eq!(judge(&s, text), Verdict::Mismatch(why.into()), "{text}");
        }
    }

    #[test]
    fn a_schema_that_would_take_for_ever_is_cut_off() {
        // Through references a schema of 30 lines has 2^30 paths: anyOf of two references to
        // the level below, none matching.
        let mut defs = serde_json::Map::new();
        defs.insert("a0".into(), json!({"type": "string"}));
        for k in 1..=30 {
            let below = format!("#/$defs/a{}", k - 1);
            defs.insert(
                format!("a{k}"),
                json!({"anyOf": [{"$ref": below}, {"$ref": below}]}),
            );
        }
        let s = json!({"$ref": "#/$defs/a30", "$defs": defs});
        check_supported(&s).unwrap();
        match judge(&s, "1") {
            Verdict::Mismatch(why) => assert!(why.contains("steps to check"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_keyword_the_checker_skips_is_refused_by_path() {
        let s = json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"}}});
        let e = check_supported(&s).unwrap_err();
        assert!(
            e.starts_with("/properties/id/pattern: the keyword `pattern`"),
            "{e}"
        );
        assert!(check_supported(&json!({"$ref": "https://example.com/s.json"})).is_err());
    }
}
