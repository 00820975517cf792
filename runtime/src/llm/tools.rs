//! Tool-call arguments: parsed as JSON and checked against the tool's JSON schema. The subset
//! of JSON Schema checked is what tool definitions use: `type` (one or several), `properties`,
//! `required`, `additionalProperties: false`, `enum`, `items`, `minimum`/`maximum`,
//! `minLength`/`maxLength`. Other keywords are accepted and not checked.

use serde_json::Value;

use super::{Message, ToolCall, ToolSpec};

/// Why a tool call cannot run. Sent back to the model (see [`ToolError::to_message`]) so it can
/// correct itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool call {tool:?} rejected: {reason}")]
pub struct ToolError {
    /// The call's id.
    pub call_id: String,
    /// The tool it named.
    pub tool: String,
    /// What was wrong, naming the offending argument.
    pub reason: String,
}

impl ToolError {
    /// The tool message that tells the model what was wrong.
    pub fn to_message(&self) -> Message {
        Message::tool_result(
            self.call_id.clone(),
            format!("error: {}. Call the tool again with corrected arguments.", self.reason),
        )
    }
}

/// Parses a call's arguments and checks them against its tool's schema.
pub(super) fn check_call(call: &ToolCall, tools: &[ToolSpec]) -> Result<Value, ToolError> {
    let fail =
        |reason: String| ToolError { call_id: call.id.clone(), tool: call.name.clone(), reason };
    let Some(spec) = tools.iter().find(|t| t.name == call.name) else {
        let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(fail(format!(
            "there is no tool named {:?} (tools: {})",
            call.name,
            known.join(", ")
        )));
    };
    let text = call.arguments.trim();
    let args: Value = if text.is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_str(text)
            .map_err(|e| fail(format!("the arguments are not valid JSON ({e})")))?
    };
    validate_arguments(&spec.parameters, &args).map_err(fail)?;
    Ok(args)
}

/// Checks `value` against `schema`; the error names the path of the first problem.
pub fn validate_arguments(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "arguments")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    match (want, type_name(v)) {
        ("number", "integer") => true,
        // 3.0 is an integer to JSON Schema.
        ("integer", "number") => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        (w, got) => w == got,
    }
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else { return Ok(()) };
    if let Some(t) = schema.get("type") {
        let wanted: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !wanted.is_empty() && !wanted.iter().any(|w| type_matches(w, value)) {
            return Err(format!(
                "{path} must be {}, not {}",
                wanted.join(" or "),
                type_name(value)
            ));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!("{path} must be one of {}", list.join(", ")));
    }
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        return Err(format!("{path}.{name} is required"));
                    }
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            for (key, v) in map {
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => check(sub, v, &format!("{path}.{key}"))?,
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return Err(format!("{path}.{key} is not a known argument"));
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(item_schema, v, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::String(s) => {
            let n = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && n < min
            {
                return Err(format!("{path} must have at least {min} characters"));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && n > max
            {
                return Err(format!("{path} must have at most {max} characters"));
            }
        }
        Value::Number(num) => {
            let x = num.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return Err(format!("{path} must be at least {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return Err(format!("{path} must be at most {max}"));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn search_tool() -> ToolSpec {
        ToolSpec {
            name: "search".into(),
            description: "search the code".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50},
                    "mode": {"enum": ["lexical", "semantic", "hybrid"]},
                    "paths": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments: args.into() }
    }

    #[test]
    fn good_arguments_come_back_parsed() {
        let v = call("search", r#"{"query": "chunk", "k": 5, "mode": "hybrid", "paths": ["a"]}"#)
            .checked(&[search_tool()])
            .unwrap();
        assert_eq!(v["k"], 5);
    }

    #[test]
    fn each_kind_of_mistake_is_named() {
        let tools = [search_tool()];
        let reason = |args: &str| call("search", args).checked(&tools).unwrap_err().reason;
        assert!(reason(r#"{"query": "x""#).contains("not valid JSON"));
        assert_eq!(reason(r#"{"k": 3}"#), "arguments.query is required");
        assert_eq!(reason(r#"{"query": 3}"#), "arguments.query must be string, not integer");
        assert_eq!(reason(r#"{"query": ""}"#), "arguments.query must have at least 1 characters");
        assert_eq!(reason(r#"{"query": "x", "k": 0}"#), "arguments.k must be at least 1");
        assert_eq!(
            reason(r#"{"query": "x", "k": 2.5}"#),
            "arguments.k must be integer, not number"
        );
        assert!(
            reason(r#"{"query": "x", "mode": "fuzzy"}"#)
                .starts_with("arguments.mode must be one of")
        );
        assert_eq!(
            reason(r#"{"query": "x", "paths": ["a", 1]}"#),
            "arguments.paths[1] must be string, not integer"
        );
        assert_eq!(
            reason(r#"{"query": "x", "extra": 1}"#),
            "arguments.extra is not a known argument"
        );
        let unknown = call("grep", "{}").checked(&tools).unwrap_err();
        assert!(unknown.reason.contains("no tool named \"grep\""), "{}", unknown.reason);
    }

    #[test]
    fn an_error_becomes_a_tool_message_for_the_model() {
        let err = call("search", "{}").checked(&[search_tool()]).unwrap_err();
        let msg = err.to_message();
        assert_eq!(msg.role, super::super::Role::Tool);
        assert_eq!(msg.tool_call_id.as_deref(), Some("c1"));
        assert!(msg.content.contains("arguments.query is required"));
    }

    #[test]
    fn empty_arguments_mean_an_empty_object() {
        let tool = ToolSpec {
            name: "now".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        };
        assert_eq!(call("now", "  ").checked(&[tool]).unwrap(), json!({}));
    }
}
