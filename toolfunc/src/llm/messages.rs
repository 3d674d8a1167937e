//! A provider's tool-call message run against a registry, and the message that goes
//! back with the results.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::Target;
use crate::call::{ToolCall, ToolResult};
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::options::{CallOptions, Surface};
use crate::remote::{self, Found, Lookup, RemoteCall};

/// Runs the tool calls of a provider's assistant message and returns what goes back
/// to the provider: for OpenAI Chat Completions, an array of `role: "tool"` messages;
/// for the OpenAI Responses API (`message` is the response's `output` items, or the
/// whole response), an array of `function_call_output` items; for Anthropic, one
/// `user` message of `tool_result` blocks; for Gemini, a `user` content of
/// `functionResponse` parts.
///
/// Calls run concurrently, each isolated: a failing or unknown call becomes an error
/// result the model can read (code and message), never a failed batch. A message that
/// cannot be read (no calls, a call without an id or a name) is an `ARGUMENTS` error
/// with the JSON Pointer of the problem. For OpenAI strict, `null` sent for a
/// property the tool does not require counts as leaving it out.
///
/// `on` is a registry (`Registry::global()`, `&registry`) or a [`Runner`] whose
/// options every call carries (`registry.with(CallOptions::new().caller("alice"))`):
/// the calls pass the call middleware as that caller, with
/// [`Surface::Llm`], and a tool a layer hides from it answers as unknown.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::llm::{run_tool_calls, Target};
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: f64) -> f64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let message = json!({
///     "role": "assistant",
///     "tool_calls": [{"id": "call_1", "type": "function",
///                     "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]
/// });
/// let reply = run_tool_calls(Registry::global(), Target::OpenAi, &message).await.unwrap();
/// assert_eq!(reply, json!([{"role": "tool", "tool_call_id": "call_1", "content": "3.0"}]));
/// # });
/// ```
pub async fn run_tool_calls(
    on: impl Into<Runner>,
    target: Target,
    message: &Value,
) -> Result<Value, ToolError> {
    let runner = on.into().with(CallOptions::new().surface(Surface::Llm));
    let registry = runner.registry();
    let responses = matches!(target, Target::OpenAi | Target::OpenAiStrict)
        && responses_items(message).is_some();
    let calls = match responses_items(message) {
        Some((items, base)) if responses => read_responses_calls(items, base)?,
        _ => read_calls(target, message)?,
    };
    let strict_nulls = target == Target::OpenAiStrict;
    let mut done = Vec::new();
    let mut runnable = Vec::new();
    for (index, call) in calls.into_iter().enumerate() {
        match call {
            Parsed::Call(mut call) => {
                // Found once: a tool, or the act a `{service}_{method}` function
                // stands for (run as the service with its `act`; the result keeps
                // the name the model used).
                // A runner with a verified identity runs only what its scopes allow.
                let admitted = remote::admit(
                    registry,
                    &RemoteCall::new(&call.name, Lookup::LOCAL_FUNCTION)
                        .identity(runner.identity())
                        .args(&call.arguments),
                );
                let found = match admitted {
                    Ok(admitted) => admitted.found,
                    Err(refused) => {
                        let err = Err(refused.into_error());
                        done.push((index, ToolResult::new(call.id, call.name, err), false));
                        continue;
                    }
                };
                if let Value::Object(args) = &mut call.arguments {
                    found.name_act(args);
                }
                if strict_nulls {
                    drop_optional_nulls(&found, &mut call.arguments);
                }
                runnable.push((index, content_marked(&found), found, call));
            }
            Parsed::Bad { id, name, error } => {
                done.push((index, ToolResult::new(id, name, Err(error)), false));
            }
        }
    }
    let ran =
        futures::future::join_all(runnable.into_iter().map(|(index, marked, found, call)| {
            let runner = &runner;
            async move { (index, found.execute(runner, call).await, marked) }
        }))
        .await;
    let mut results: Vec<(usize, ToolResult, bool)> = ran.into_iter().chain(done).collect();
    results.sort_by_key(|(i, _, _)| *i);
    let results = results.into_iter().map(|(_, r, marked)| {
        let content = marked
            .then(|| r.output().ok().cloned())
            .flatten()
            .and_then(|value| crate::content::Content::from_value(value).ok());
        (r, content)
    });
    Ok(reply(target, responses, results))
}

/// What goes back to the provider for `results`, in `target`'s dialect (the
/// Responses API's with `responses`).
fn reply(
    target: Target,
    responses: bool,
    results: impl Iterator<Item = (ToolResult, Option<crate::content::Content>)>,
) -> Value {
    if responses {
        return Value::Array(
            results
                .map(|(result, content)| {
                    let text = content.map_or_else(|| text_of(&result), |c| c.to_openai());
                    json!({
                        "type": "function_call_output",
                        "call_id": result.id(),
                        "output": text,
                    })
                })
                .collect(),
        );
    }
    match target {
        Target::OpenAi | Target::OpenAiStrict => Value::Array(
            results
                .map(|(result, content)| {
                    let text = content.map_or_else(|| text_of(&result), |c| c.to_openai());
                    json!({
                        "role": "tool",
                        "tool_call_id": result.id(),
                        "content": text,
                    })
                })
                .collect(),
        ),
        Target::Anthropic | Target::AnthropicStrict => json!({
            "role": "user",
            "content": results.map(|(result, content)| {
                let content = content
                    .map_or_else(|| Value::String(text_of(&result)), |c| c.to_anthropic());
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": result.id(),
                    "content": content,
                });
                if !result.is_ok() {
                    block["is_error"] = json!(true);
                }
                block
            }).collect::<Vec<_>>(),
        }),
        Target::Gemini => json!({
            "role": "user",
            "parts": results.map(|(result, content)| {
                let response = match (result.output(), content) {
                    (Ok(_), Some(content)) => content.to_gemini(),
                    (Ok(value), None) => json!({"result": value}),
                    (Err(err), _) => json!({"error": {"code": err.code(), "message": err.to_string()}}),
                };
                let mut part = json!({"name": result.name(), "response": response});
                if !result.id().is_empty() {
                    part["id"] = json!(result.id());
                }
                json!({"functionResponse": part})
            }).collect::<Vec<_>>(),
        }),
        Target::Mcp => unreachable!("read_calls refuses MCP"),
    }
}

/// Whether the found call's result is [`Content`](crate::content::Content): its
/// blocks then go back as the provider's content, not as JSON text.
fn content_marked(found: &Found) -> bool {
    crate::content::is_content_schema(found.result())
        || (found.act().is_none()
            && found
                .definition()
                .acts
                .iter()
                .any(|act| crate::content::is_content_schema(act.result.as_ref())))
}

/// What a model reads back: the output as text (a string as it is), or the error
/// with its code.
fn text_of(result: &ToolResult) -> String {
    match result.output() {
        Ok(Value::String(text)) => text.clone(),
        Ok(value) => value.to_string(),
        Err(err) => json!({"error": {"code": err.code(), "message": err.to_string()}}).to_string(),
    }
}

enum Parsed {
    Call(ToolCall),
    /// A call the model made but that cannot run (its arguments do not parse).
    Bad {
        id: String,
        name: String,
        error: ToolError,
    },
}

fn bad_message(path: &str, message: &str) -> ToolError {
    ToolError::arguments(path, message)
}

/// The non-empty string at `value[key]`; `path` (made only on error) says where
/// `value` is.
fn str_at<'a>(
    value: &'a Value,
    key: &str,
    path: impl FnOnce() -> String,
) -> Result<&'a str, ToolError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            bad_message(
                &format!("{}/{key}", path()),
                &format!("expected a non-empty string `{key}`"),
            )
        })
}

/// The items of an OpenAI Responses API output, and the JSON Pointer they sit at:
/// `message` itself when it is an array of items, or a response's `output`.
fn responses_items(message: &Value) -> Option<(&[Value], &'static str)> {
    match message {
        Value::Array(items) => Some((items, "")),
        Value::Object(response) if !response.contains_key("tool_calls") => response
            .get("output")
            .and_then(Value::as_array)
            .map(|items| (items.as_slice(), "/output")),
        _ => None,
    }
}

/// The `function_call` items of a Responses API output (other items, such as a
/// `tool_search_call`, are the provider's own and are skipped). A function in a
/// namespace is called by its own name, which is the tool's.
fn read_responses_calls(items: &[Value], base: &str) -> Result<Vec<Parsed>, ToolError> {
    let calls: Vec<Parsed> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.get("type").and_then(Value::as_str) == Some("function_call"))
        .map(|(i, item)| {
            let path = || format!("{base}/{i}");
            let id = str_at(item, "call_id", path)?.to_owned();
            let name = str_at(item, "name", path)?.to_owned();
            Ok(match parse_arguments(item.get("arguments")) {
                Ok(arguments) => Parsed::Call(ToolCall::new(id, name, arguments)),
                Err(error) => Parsed::Bad { id, name, error },
            })
        })
        .collect::<Result<_, ToolError>>()?;
    if calls.is_empty() {
        return Err(bad_message(base, "expected `function_call` items"));
    }
    Ok(calls)
}

/// An OpenAI call's `arguments`: a JSON string (empty for none), or the object
/// itself as some gateways send it.
fn parse_arguments(arguments: Option<&Value>) -> Result<Value, ToolError> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(Value::Null),
        Some(Value::String(text)) => serde_json::from_str(text).map_err(|e| {
            ToolError::arguments("", format!("the arguments are not valid JSON: {e}"))
        }),
        Some(object @ Value::Object(_)) => Ok(object.clone()),
        Some(_) => Err(ToolError::arguments(
            "",
            "the arguments must be a JSON string",
        )),
    }
}

fn read_calls(target: Target, message: &Value) -> Result<Vec<Parsed>, ToolError> {
    match target {
        Target::OpenAi | Target::OpenAiStrict => {
            let calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/tool_calls", "expected an array of tool calls"))?;
            calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    let path = || format!("/tool_calls/{i}");
                    let id = str_at(call, "id", path)?.to_owned();
                    let function = call.get("function").ok_or_else(|| {
                        bad_message(&format!("{}/function", path()), "expected an object")
                    })?;
                    let name =
                        str_at(function, "name", || format!("{}/function", path()))?.to_owned();
                    let arguments = parse_arguments(function.get("arguments"));
                    Ok(match arguments {
                        Ok(arguments) => Parsed::Call(ToolCall::new(id, name, arguments)),
                        Err(error) => Parsed::Bad { id, name, error },
                    })
                })
                .collect()
        }
        Target::Anthropic | Target::AnthropicStrict => {
            let blocks = message
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/content", "expected an array of content blocks"))?;
            let calls: Vec<Parsed> = blocks
                .iter()
                .enumerate()
                .filter(|(_, block)| block.get("type").and_then(Value::as_str) == Some("tool_use"))
                .map(|(i, block)| {
                    let path = || format!("/content/{i}");
                    let id = str_at(block, "id", path)?.to_owned();
                    let name = str_at(block, "name", path)?.to_owned();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    Ok(Parsed::Call(ToolCall::new(id, name, input)))
                })
                .collect::<Result<_, ToolError>>()?;
            Ok(calls)
        }
        Target::Gemini => {
            let parts = message
                .get("parts")
                .and_then(Value::as_array)
                .ok_or_else(|| bad_message("/parts", "expected an array of parts"))?;
            parts
                .iter()
                .enumerate()
                .filter_map(|(i, part)| part.get("functionCall").map(|call| (i, call)))
                .map(|(i, call)| {
                    let name =
                        str_at(call, "name", || format!("/parts/{i}/functionCall"))?.to_owned();
                    let id = call
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    let args = call.get("args").cloned().unwrap_or(Value::Null);
                    Ok(Parsed::Call(ToolCall::new(id, name, args)))
                })
                .collect()
        }
        Target::Mcp => Err(ToolError::failed(
            "MCP clients call tools through an MCP server, not a chat message",
        )),
    }
}

/// OpenAI strict sends every property, `null` for the ones it leaves out: drop those
/// the schema does not require (at every depth), so the tool sees what a non-strict
/// caller would send.
fn drop_optional_nulls(found: &Found, arguments: &mut Value) {
    // A service call is checked against its method's parameters.
    let act = arguments.get("act").and_then(Value::as_str);
    let params = match found.act() {
        Some(act) => &act.params,
        None => act
            .and_then(|act| found.definition().act_named(act).map(|(_, act)| act))
            .map_or(found.definition().params.value(), |a| &a.params),
    };
    strip_nulls(params, params, arguments, 0);
}

fn strip_nulls(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    // Deep enough for real arguments, bounded for recursive schemas.
    if depth > 32 {
        return;
    }
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(schema),
        None => schema,
    };
    match value {
        Value::Object(object) => {
            let required: BTreeSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object);
            object.retain(|name, v| !v.is_null() || required.contains(name.as_str()));
            for (name, v) in object.iter_mut() {
                if let Some(sub) = properties.and_then(|p| p.get(name)) {
                    strip_nulls(root, sub, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for item in items {
                    strip_nulls(root, sub, item, depth + 1);
                }
            }
        }
        _ => {}
    }
    // A nullable union (`anyOf: [{..}, {type: null}]`): look inside its branches.
    if let Some(Value::Array(options)) = schema.get("anyOf") {
        for option in options {
            if option.get("type") != Some(&json!("null")) {
                strip_nulls(root, option, value, depth + 1);
            }
        }
    }
}
