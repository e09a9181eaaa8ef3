//! Tool calls: a streamed chat or Responses request that offers `tools` gets a call to one of them (the
//! function `tool_choice` names; else, for `auto`, `required` or none given, one picked from
//! the seed and the request's arrival index; `tool_choice: "none"` gets text), its arguments
//! built from the function's `parameters` as [`crate::structured`] builds a schema's answer,
//! then `finish_reason: "tool_calls"` (Responses: `response.completed`). On chat it streams as
//! llama.cpp streams calls: the first piece with the call's id, type and name, then argument
//! pieces of at most 12 bytes, one a token; on Responses as OpenAI does: the `function_call`
//! output item (its name), one `function_call_arguments.delta` a piece, then
//! `…arguments.done` and the item done.
//!
//! A seeded share of calls (`malformed_tool_call_fraction`, from the seed and the arrival
//! index) has its arguments cut one character short: not JSON. The truth records the function
//! and whether its arguments are valid ([`crate::RequestTruth::tool_call`]).

use serde_json::{Map, Value};

/// What a chat request offered: `tools` and `tool_choice`.
#[derive(Clone, Debug)]
pub struct ToolOffer {
    pub tools: Vec<Value>,
    pub choice: Option<Value>,
}

impl ToolOffer {
    /// `tools` (with `tool_choice`) of a chat or Responses body, when it offers some. Chat
    /// nests each function (`{"type": "function", "function": {"name", …}}`), Responses does not
    /// (`{"type": "function", "name", …}`), nor its named choice: both are read as chat's.
    pub(crate) fn read(obj: &Map<String, Value>) -> Option<ToolOffer> {
        let nest = |v: &Value| match v.get("function") {
            Some(_) => v.clone(),
            None => serde_json::json!({"type": "function", "function": v}),
        };
        let tools: Vec<Value> = obj.get("tools")?.as_array()?.iter().map(nest).collect();
        let choice = obj.get("tool_choice").map(|c| match c.get("name") {
            Some(_) if c.get("function").is_none() => nest(c),
            _ => c.clone(),
        });
        (!tools.is_empty()).then_some(ToolOffer { tools, choice })
    }

    /// Whether the answer is a call (`tool_choice` is not `"none"`).
    pub fn calls(&self) -> bool {
        !matches!(&self.choice, Some(Value::String(c)) if c == "none")
    }

    /// The function called and its parameters; `None` for `tool_choice: "none"`. `draw`: a
    /// uniform draw in (0, 1) that picks among the tools when the choice is free.
    pub fn pick(&self, draw: f64) -> Option<(String, Value)> {
        let named = |t: &Value| {
            let f = t.get("function")?;
            let params = f
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"}));
            Some((f.get("name")?.as_str()?.to_string(), params))
        };
        match &self.choice {
            Some(Value::String(c)) if c == "none" => None,
            Some(Value::Object(o)) => {
                let want = o.get("function")?.get("name")?.as_str()?;
                self.tools
                    .iter()
                    .filter_map(named)
                    .find(|(name, _)| name == want)
            }
            _ => {
                let k = ((draw * self.tools.len() as f64) as usize).min(self.tools.len() - 1);
                named(&self.tools[k])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_choice_names_the_function_else_the_draw_picks_one() {
        let offer = |choice: Option<Value>| ToolOffer {
            tools: vec![
                json!({"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}),
                json!({"type": "function", "function": {"name": "b"}}),
            ],
            choice,
        };
        assert_eq!(offer(None).pick(0.2).unwrap().0, "a");
        assert_eq!(offer(Some(json!("required"))).pick(0.7).unwrap().0, "b");
        assert_eq!(
            offer(Some(json!({"type": "function", "function": {"name": "b"}})))
                .pick(0.1)
                .unwrap(),
            ("b".to_string(), json!({"type": "object"}))
        );
        assert!(offer(Some(json!("none"))).pick(0.5).is_none());
        assert!(!offer(Some(json!("none"))).calls() && offer(None).calls());
    }
}
