//! Where a stored JSON value and its recomputation differ, path by path: what a verifier
//! names when a number in a document is not the one its records give.

use serde_json::Value;

/// Collects the paths where two JSON trees differ.
pub fn diff_paths(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => diff_paths(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}")),
                }
            }
            out.extend(
                y.keys()
                    .filter(|k| !x.contains_key(*k))
                    .map(|k| format!("{path}.{k}")),
            );
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_paths(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("{path} (stored {a}, recomputed {b})")),
        _ => {}
    }
}
