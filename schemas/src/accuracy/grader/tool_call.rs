//! The `tool_call` grader: an answer's function calls against the gold calls, by the rules of
//! the Berkeley Function Calling Leaderboard's AST checker, applied to JSON.
//!
//! - The answer is the calls the model made, as the runner stores them: a JSON array of
//!   `{"name": …, "arguments": "<JSON text>"}`. An answer that is not such an array (the
//!   model answered in text) is unparsed; a call whose arguments do not parse as an object
//!   is wrong.
//! - The gold is BFCL's possible answer: a JSON array of `{"function_name": {"param":
//!   [allowed values…]}}`, one entry a call. `""` among a parameter's allowed values means the
//!   parameter may be left out; every other gold parameter is required.
//! - The answer is correct when it makes as many calls as the gold, and the calls can be
//!   paired with the gold's in any order (each gold call taking the first unpaired call that
//!   matches it) so that each pair names the same function, the call passes no parameter the
//!   gold does not list, leaves out none that is required, and gives each a value equal to one
//!   of its allowed values.
//! - A gold of no call (`[]`, BFCL's irrelevance items: no offered function fits the
//!   question) is met by an answer that calls nothing: text, or no calls.
//! - Values are equal by type: strings after BFCL's standardization (spaces and `,./-_*^`
//!   removed, lower case, `'` as `"`); an integer gold takes only that integer; a gold with a
//!   fraction takes any number of that value (an integer where a float is expected, as BFCL
//!   allows); booleans and null by value; arrays item by item; objects key by key, with the
//!   same keys.

use super::Mark;
use serde_json::{Map, Value};

/// The mark of `answer` against `gold` (both JSON text).
pub fn grade(answer: &str, gold: &str) -> Mark {
    let Ok(gold) = read_gold(gold) else {
        return Mark::Wrong;
    };
    let calls = read_calls(answer);
    if gold.is_empty() {
        return match calls {
            Some(c) if !c.is_empty() => Mark::Wrong,
            _ => Mark::Correct,
        };
    }
    let Some(calls) = calls else {
        return Mark::Unparsed;
    };
    let mut parsed = Vec::with_capacity(calls.len());
    for (name, arguments) in calls {
        match serde_json::from_str::<Value>(&arguments) {
            Ok(Value::Object(args)) => parsed.push((name, args)),
            _ => return Mark::Wrong,
        }
    }
    if parsed.len() != gold.len() {
        return Mark::Wrong;
    }
    let mut used = vec![false; parsed.len()];
    for (function, params) in &gold {
        let found = parsed.iter().enumerate().position(|(k, (name, args))| {
            !used[k] && name == function && call_matches(args, params)
        });
        match found {
            Some(k) => used[k] = true,
            None => return Mark::Wrong,
        }
    }
    Mark::Correct
}

/// Whether `gold` is a possible answer in BFCL's form (checked when a suite is read).
pub fn check_gold(gold: &str) -> Result<(), String> {
    read_gold(gold).map(|_| ())
}

/// The calls of an answer: `[{"name", "arguments"}]`, `arguments` a string.
fn read_calls(answer: &str) -> Option<Vec<(String, String)>> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(answer.trim()) else {
        return None;
    };
    items
        .into_iter()
        .map(|c| {
            let name = c.get("name")?.as_str()?.to_string();
            let arguments = c.get("arguments")?.as_str()?.to_string();
            Some((name, arguments))
        })
        .collect()
}

type GoldCall = (String, Map<String, Value>);

fn read_gold(gold: &str) -> Result<Vec<GoldCall>, String> {
    let v: Value = serde_json::from_str(gold).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Array(calls) = v else {
        return Err(
            "the answer must be a list of calls, [{\"function\": {\"param\": [allowed values]}}]"
                .into(),
        );
    };
    calls
        .into_iter()
        .enumerate()
        .map(|(k, call)| {
            let Value::Object(call) = call else {
                return Err(format!("call {k} must be an object"));
            };
            let mut entries = call.into_iter();
            let (Some((name, params)), None) = (entries.next(), entries.next()) else {
                return Err(format!("call {k} must name one function"));
            };
            let Value::Object(params) = params else {
                return Err(format!(
                    "call {k} ({name}): its parameters must be an object"
                ));
            };
            for (p, allowed) in &params {
                match allowed {
                    Value::Array(a) if !a.is_empty() => {}
                    _ => {
                        return Err(format!(
                            "call {k} ({name}): parameter {p:?} must list its allowed values"
                        ))
                    }
                }
            }
            Ok((name, params))
        })
        .collect()
}

/// Whether the arguments `args` match the gold parameters `params`.
fn call_matches(args: &Map<String, Value>, params: &Map<String, Value>) -> bool {
    if args.keys().any(|k| !params.contains_key(k)) {
        return false;
    }
    params.iter().all(|(p, allowed)| {
        let allowed = allowed.as_array().map_or(&[][..], Vec::as_slice);
        match args.get(p) {
            None => allowed.iter().any(|a| a.as_str() == Some("")),
            Some(v) => allowed
                .iter()
                .any(|a| a.as_str() != Some("") && equal(v, a)),
        }
    })
}

/// BFCL's string standardization.
fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect::<String>()
        .to_lowercase()
        .replace('\'', "\"")
}

/// A value against one allowed value, by the gold's type.
fn equal(v: &Value, gold: &Value) -> bool {
    match (v, gold) {
        (Value::String(a), Value::String(g)) => standardize(a) == standardize(g),
        (Value::Number(a), Value::Number(g)) => {
            if g.is_f64() {
                a.as_f64() == g.as_f64()
            } else {
                !a.is_f64() && a.as_i128() == g.as_i128()
            }
        }
        (Value::Bool(a), Value::Bool(g)) => a == g,
        (Value::Null, Value::Null) => true,
        (Value::Array(a), Value::Array(g)) => {
            a.len() == g.len() && a.iter().zip(g).all(|(x, y)| equal(x, y))
        }
        (Value::Object(a), Value::Object(g)) => {
            a.len() == g.len() && a.iter().all(|(k, x)| g.get(k).is_some_and(|y| equal(x, y)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLD: &str = r#"[{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["celsius", ""], "days": [3]}}]"#;

    fn answer(calls: &[(&str, &str)]) -> String {
        let v: Vec<Value> = calls
            .iter()
            .map(|(n, a)| serde_json::json!({"name": n, "arguments": a}))
            .collect();
        Value::Array(v).to_string()
    }

    #[test]
    fn calls_are_graded_by_bfcl_ast_rules() {
        let g = |calls: &[(&str, &str)]| grade(&answer(calls), GOLD);
        assert_eq!(
            g(&[("get_weather", r#"{"city": "paris, france", "days": 3}"#)]),
            Mark::Correct,
            "standardized strings, an optional parameter left out"
        );
        assert_eq!(
            g(&[(
                "get_weather",
                r#"{"city": "Paris", "unit": "Celsius", "days": 3}"#
            )]),
            Mark::Correct
        );
        for wrong in [
            r#"{"city": "Paris"}"#,                              // required days missing
            r#"{"city": "Paris", "days": 3.0}"#, // a float where an integer is asked
            r#"{"city": "Paris", "days": 3, "extra": 1}"#, // a parameter the gold lacks
            r#"{"city": "Lyon", "days": 3}"#,    // not an allowed value
            r#"{"city": "Paris", "days": 3, "unit": "kelvin"}"#, // not an allowed value
            r#"{"city": "Paris", "days": 3"#,    // not JSON
        ] {
            assert_eq!(g(&[("get_weather", wrong)]), Mark::Wrong, "{wrong}");
        }
        assert_eq!(
            g(&[("get_time", r#"{"city": "Paris", "days": 3}"#)]),
            Mark::Wrong
        );
        assert_eq!(g(&[]), Mark::Wrong, "no call where one is due");
        assert_eq!(grade("It is sunny in Paris.", GOLD), Mark::Unparsed);
        // A float gold takes an integer; parallel calls pair in any order.
        let two = r#"[{"area": {"r": [2.0]}}, {"area": {"r": [3.5]}}]"#;
        assert_eq!(
            grade(
                &answer(&[("area", r#"{"r": 3.5}"#), ("area", r#"{"r": 2}"#)]),
                two
            ),
            Mark::Correct
        );
        assert_eq!(grade(&answer(&[("area", r#"{"r": 2}"#)]), two), Mark::Wrong);
        // Irrelevance: no call is due, so text or no call is right and any call wrong.
        assert_eq!(grade("I cannot tell the time.", "[]"), Mark::Correct);
        assert_eq!(grade("[]", "[]"), Mark::Correct);
        assert_eq!(
            grade(&answer(&[("get_time", r#"{"city": "Paris"}"#)]), "[]"),
            Mark::Wrong
        );
    }

    #[test]
    fn a_gold_not_in_bfcl_form_is_refused() {
        assert!(check_gold(GOLD).is_ok());
        assert!(check_gold("[]").is_ok(), "irrelevance: no call");
        for bad in [
            "{}",
            r#"[{"f": {"x": 1}}]"#,
            r#"[{"f": {}, "g": {}}]"#,
            "nope",
        ] {
            assert!(check_gold(bad).is_err(), "{bad}");
        }
    }
}
