//! Tool calls, judged: a call is valid when it names a function the request offered and its
//! arguments parse as JSON and match that function's `parameters` (by
//! [`crate::structured`]'s checker, the same in every verifier and in the module). The
//! summary's `tool_calls` counts them over a benchmark's completed requests that offered tools.

use crate::distribution::MetricsError;
use crate::document::tools::{function_parameters, ToolCall};
use crate::document::{Phase, RawRecord};
use crate::interval::Interval;
use crate::numbers::Finite;
use crate::structured::{judge, Verdict};
use crate::summary::ToolCallStats;
use serde_json::Value;

/// What one call is.
#[derive(Debug, PartialEq)]
pub enum CallVerdict {
    /// Named an offered function; its arguments parse and match its parameters.
    Valid,
    /// Its arguments parse, but name no offered function or do not match (and why).
    Mismatch(String),
    /// Its arguments are not JSON.
    NotJson,
}

/// Judges `call` against the offered `tools` (OpenAI's `tools` array).
pub fn judge_call(tools: &[Value], call: &ToolCall) -> CallVerdict {
    let Some(parameters) = function_parameters(tools, &call.name) else {
        return match serde_json::from_str::<Value>(call.arguments.trim()) {
            Err(_) => CallVerdict::NotJson,
            Ok(_) => CallVerdict::Mismatch(format!("no offered function is named {:?}", call.name)),
        };
    };
    match judge(&parameters, &call.arguments) {
        Verdict::Valid => CallVerdict::Valid,
        Verdict::NotJson => CallVerdict::NotJson,
        Verdict::Mismatch(why) => CallVerdict::Mismatch(why),
    }
}

/// The summary's `tool_calls` and the interval of its valid share: over the measured,
/// completed requests that kept their calls (`tool_calls`), in schedule order; the interval is
/// the batch means of valid calls over calls.
pub fn stats(
    records: &[RawRecord],
    tools: &[Value],
    t: f64,
) -> Result<(Option<ToolCallStats>, Option<Interval>), MetricsError> {
    let order = crate::uncertainty::schedule_order(records);
    let (mut called, mut calls, mut parsed, mut valid) = (0u64, 0u64, 0u64, 0u64);
    let mut parts: Vec<(u64, u64)> = Vec::new();
    for &i in &order {
        let r = &records[i];
        debug_assert_eq!(r.phase, Phase::Measured);
        let (true, Some(made)) = (r.completed(), r.tool_calls.as_deref()) else {
            continue;
        };
        let mut good = 0u64;
        for call in made {
            let v = judge_call(tools, call);
            parsed += u64::from(v != CallVerdict::NotJson);
            good += u64::from(v == CallVerdict::Valid);
        }
        called += u64::from(!made.is_empty());
        calls += made.len() as u64;
        valid += good;
        parts.push((good, made.len() as u64));
    }
    let requests = parts.len() as u64;
    if requests == 0 {
        return Ok((None, None));
    }
    let finite = |v: f64| Finite::new(v).map_err(|e| MetricsError::NotFinite(e.0));
    let share = (calls > 0).then(|| valid as f64 / calls as f64);
    let interval = match share {
        Some(s) => crate::uncertainty::ratio_interval(&parts, s, t)?,
        None => None,
    };
    Ok((
        Some(ToolCallStats {
            requests,
            called,
            calls,
            parsed,
            valid,
            valid_share: share.map(finite).transpose()?,
        }),
        interval,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Value> {
        vec![json!({"type": "function", "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }
        }})]
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_call_is_valid_when_it_names_an_offered_function_and_matches_its_parameters() {
        let t = tools();
        assert_eq!(
            judge_call(&t, &call("get_weather", r#"{"city": "Paris"}"#)),
            CallVerdict::Valid
        );
        assert_eq!(
            judge_call(&t, &call("get_weather", r#"{"city": "Paris""#)),
            CallVerdict::NotJson
        );
        assert!(matches!(
            judge_call(&t, &call("get_weather", r#"{"unit": "kelvin", "city": "x"}"#)),
            CallVerdict::Mismatch(why) if why.contains("/unit")
        ));
        assert!(matches!(
            judge_call(&t, &call("get_time", r#"{}"#)),
            CallVerdict::Mismatch(why) if why.contains("get_time")
        ));
        // A function that declares no parameters takes any object.
        let bare = vec![json!({"type": "function", "function": {"name": "now"}})];
        assert_eq!(judge_call(&bare, &call("now", "{}")), CallVerdict::Valid);
    }
}
