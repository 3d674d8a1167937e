//! The tools the official MCP conformance suite (`@modelcontextprotocol/conformance`)
//! calls, by the names its scenarios use, written with toolfunc's public API: shared
//! by `examples/mcp_conformance.rs` and `tests/mcp_conformance.rs`.
//! `interop/conformance/SCENARIOS.md` says what each scenario sends and checks.

use std::time::Duration;

use serde_json::json;
use toolfunc::complete::{Completer, Completion, CompletionRequest};
use toolfunc::prompt::{PromptFunc, PromptMessage};
use toolfunc::resource::ResourceFunc;
use toolfunc::{Content, Ctx, LogLevel, Registry, ToolError, ToolFunc, ask, content, tool};

/// A 1x1 PNG, the image the suite's reference server answers with.
const PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV header with one silent sample.
const WAV: [u8; 46] = [
    b'R', b'I', b'F', b'F', 0x26, 0x00, 0x00, 0x00, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ',
    0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x40, 0x1f, 0x00, 0x00, 0x00, 0x7d, 0x00, 0x00,
    0x02, 0x00, 0x10, 0x00, b'd', b'a', b't', b'a', 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
];

/// Answers with one text block.
#[tool]
pub(crate) fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Always fails: the error comes back as a result with `isError: true`.
#[tool]
pub(crate) fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::failed(
        "This tool intentionally returns an error for testing",
    ))
}

/// Reports progress at 0, 50 and 100 of 100, 50 ms apart.
#[tool]
pub(crate) async fn test_tool_with_progress(ctx: &Ctx) -> String {
    for done in [0.0, 50.0, 100.0] {
        ctx.progress(done, Some(100.0), Some("working"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Progress test completed".to_owned()
}

/// Answers with an image.
#[tool]
pub(crate) fn test_image_content() -> Content {
    Content::new().image(PNG, "image/png")
}

/// Answers with an audio clip.
#[tool]
pub(crate) fn test_audio_content() -> Content {
    Content::new().audio(WAV, "audio/wav")
}

/// Answers with an embedded text resource.
#[tool]
pub(crate) fn test_embedded_resource() -> Content {
    Content::new().resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

/// Answers with text, an image and a resource.
#[tool]
pub(crate) fn test_multiple_content_types() -> Content {
    Content::text("Multiple content types test:")
        .image(PNG, "image/png")
        .resource_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        )
}

/// Reports progress, then answers: a stream of notifications and one result, with
/// no request to the client on the way.
#[tool]
pub(crate) fn test_streaming_elicitation(ctx: &Ctx) -> String {
    ctx.progress(1.0, Some(1.0), Some("streaming"));
    "Streaming test completed".to_owned()
}

/// Logs three messages, 50 ms apart, while it runs.
#[tool]
pub(crate) async fn test_tool_with_logging(ctx: &Ctx) -> String {
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        ctx.log(LogLevel::Info, message);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Tool with logging executed successfully".to_owned()
}

/// Logs one message: a client that asked for no level gets none.
#[tool]
pub(crate) fn test_logging_tool(ctx: &Ctx) -> String {
    ctx.log(LogLevel::Info, "logging tool ran");
    "Logging tool executed".to_owned()
}

/// Asks the client's model to complete `prompt`.
#[tool]
pub(crate) async fn test_sampling(
    ctx: &Ctx,
    /// What to ask the model.
    prompt: String,
) -> Result<String, ToolError> {
    let answer = ctx.sample(ask::sample_prompt(&prompt, 100)).await?;
    let text = ask::sampled_text(&answer).unwrap_or_default();
    Ok(format!("LLM response: {text}"))
}

/// Asks the user for a username and an email.
#[tool]
pub(crate) async fn test_elicitation(
    ctx: &Ctx,
    /// What to tell the user.
    message: String,
) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "Your username"},
            "email": {"type": "string", "description": "Your email address"}
        },
        "required": ["username", "email"]
    });
    let answer = ctx.elicit(message, schema).await?;
    Ok(format!(
        "User response: action={}, content={}",
        json!(answer.action),
        answer.content.unwrap_or_default()
    ))
}

/// Asks with a default for every primitive type.
#[tool]
pub(crate) async fn test_elicitation_sep1034_defaults(ctx: &Ctx) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    });
    let answer = ctx.elicit("Please review your details", schema).await?;
    Ok(format!("Elicitation completed: {}", json!(answer.content)))
}

/// Asks with every enum form: untitled, titled, legacy, single and multiple.
#[tool]
pub(crate) async fn test_elicitation_sep1330_enums(ctx: &Ctx) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    });
    let answer = ctx.elicit("Choose", schema).await?;
    Ok(format!("Elicitation completed: {}", json!(answer.content)))
}

/// Needs the client's model: a client that did not declare `sampling` is refused
/// before it runs.
#[tool(needs_client = "sampling")]
pub(crate) async fn test_missing_capability(ctx: &Ctx) -> Result<String, ToolError> {
    let answer = ctx.sample(ask::sample_prompt("Say hello", 20)).await?;
    Ok(ask::sampled_text(&answer).unwrap_or_default())
}

// The input-required tools of 2026-07-28 (SEP-2322): each question is asked by the
// name the suite answers under.

/// The schema of a one-string answer.
fn one_string(name: &str) -> serde_json::Value {
    json!({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
}

/// Asks the user's name, then greets them.
#[tool]
pub(crate) async fn test_input_required_result_elicitation(ctx: &Ctx) -> Result<String, ToolError> {
    let answer = ctx
        .elicit_named("user_name", "What is your name?", one_string("name"))
        .await?;
    let content = answer.content.unwrap_or_default();
    Ok(format!(
        "Hello, {}!",
        content["name"].as_str().unwrap_or("stranger")
    ))
}

/// Asks the client's model a question.
#[tool]
pub(crate) async fn test_input_required_result_sampling(ctx: &Ctx) -> Result<String, ToolError> {
    let params = ask::sample_prompt("What is the capital of France?", 100);
    let answer = ctx
        .ask_named("capital_question", ask::ClientRequest::Sample(params))
        .await?;
    Ok(ask::sampled_text(&answer).unwrap_or_default())
}

/// Asks the client for its roots.
#[tool]
pub(crate) async fn test_input_required_result_list_roots(ctx: &Ctx) -> Result<String, ToolError> {
    let answer = ctx
        .ask_named("client_roots", ask::ClientRequest::ListRoots)
        .await?;
    let count = answer["roots"].as_array().map_or(0, Vec::len);
    Ok(format!("Found {count} root(s)"))
}

/// Asks for a confirmation; the call's state lives in the server between rounds.
#[tool]
pub(crate) async fn test_input_required_result_request_state(
    ctx: &Ctx,
) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let answer = ctx
        .elicit_named("confirm", "Confirm to continue", schema)
        .await?;
    let ok = answer.content.is_some_and(|c| c["ok"] == true);
    Ok(if ok {
        "state-ok: confirmed"
    } else {
        "state-ok: not confirmed"
    }
    .to_owned())
}

/// Asks three things at once: a name, a greeting from the model, the roots.
#[tool]
pub(crate) async fn test_input_required_result_multiple_inputs(
    ctx: &Ctx,
) -> Result<String, ToolError> {
    let (name, greeting, roots) = futures::join!(
        ctx.elicit_named("user_name", "What is your name?", one_string("name")),
        ctx.ask_named(
            "greeting",
            ask::ClientRequest::Sample(ask::sample_prompt("Say hello", 50))
        ),
        ctx.ask_named("client_roots", ask::ClientRequest::ListRoots),
    );
    let (name, greeting, roots) = (name?, greeting?, roots?);
    Ok(format!(
        "{} / {} / {} root(s)",
        name.content.unwrap_or_default()["name"],
        ask::sampled_text(&greeting).unwrap_or_default(),
        roots["roots"].as_array().map_or(0, Vec::len)
    ))
}

/// Asks twice in turn: a name, then a colour.
#[tool]
pub(crate) async fn test_input_required_result_multi_round(ctx: &Ctx) -> Result<String, ToolError> {
    let name = ctx
        .elicit_named("step1", "What is your name?", one_string("name"))
        .await?;
    let color = ctx
        .elicit_named(
            "step2",
            "What is your favourite colour?",
            one_string("color"),
        )
        .await?;
    Ok(format!(
        "{} likes {}",
        name.content.unwrap_or_default()["name"],
        color.content.unwrap_or_default()["color"]
    ))
}

/// Asks once; a retry with an altered state is refused.
#[tool]
pub(crate) async fn test_input_required_result_tampered_state(
    ctx: &Ctx,
) -> Result<String, ToolError> {
    let answer = ctx
        .elicit_named("user_name", "What is your name?", one_string("name"))
        .await?;
    Ok(format!(
        "Hello, {}!",
        answer.content.unwrap_or_default()["name"]
    ))
}

/// Asks only what the client can answer: the user when it can elicit, its model
/// otherwise.
#[tool]
pub(crate) async fn test_input_required_result_capabilities(
    ctx: &Ctx,
) -> Result<String, ToolError> {
    match ctx
        .elicit_named("user_input", "What is your name?", one_string("name"))
        .await
    {
        Ok(answer) => Ok(format!(
            "Hello, {}!",
            answer.content.unwrap_or_default()["name"]
        )),
        Err(err) if err.code() == "CLIENT_CANNOT_ANSWER" => {
            let answer = ctx
                .ask_named(
                    "sample_input",
                    ask::ClientRequest::Sample(ask::sample_prompt("Pick a name", 20)),
                )
                .await?;
            Ok(format!(
                "Hello, {}!",
                ask::sampled_text(&answer).unwrap_or_default()
            ))
        }
        Err(err) => Err(err),
    }
}

/// The name of the tool `test_trigger_tool_change` adds and removes.
pub(crate) const DYNAMIC: &str = "test_dynamic_tool";

/// Adds a tool to the registry, or removes it when it is there: the tool list
/// changes, and open subscriptions hear of it.
#[tool]
pub(crate) fn test_trigger_tool_change() -> Result<String, ToolError> {
    let registry = Registry::global();
    if registry.unregister(DYNAMIC) {
        return Ok(format!("removed {DYNAMIC}"));
    }
    let tool = ToolFunc::builder(DYNAMIC)
        .description("Added by test_trigger_tool_change.")
        .handler_sync(|_ctx, _args| Ok(json!("dynamic")))
        .build()?;
    registry.register(tool)?;
    Ok(format!("added {DYNAMIC}"))
}

/// The name of the prompt `test_trigger_prompt_change` adds and removes.
pub(crate) const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Adds a prompt to the registry, or removes it when it is there: the prompt list
/// changes, and open subscriptions hear of it.
#[tool]
pub(crate) fn test_trigger_prompt_change() -> Result<String, ToolError> {
    let registry = Registry::global();
    if registry.unregister_prompt(DYNAMIC_PROMPT) {
        return Ok(format!("removed {DYNAMIC_PROMPT}"));
    }
    let prompt = PromptFunc::builder(DYNAMIC_PROMPT)
        .description("Added by test_trigger_prompt_change.")
        .handler_sync(|_, _| Ok("A prompt that comes and goes."))
        .build()?;
    registry.register_prompt(prompt)?;
    Ok(format!("added {DYNAMIC_PROMPT}"))
}

/// The URI of the resource `test_trigger_resource_change` adds and removes.
pub(crate) const DYNAMIC_RESOURCE: &str = "test://dynamic-resource";

/// Adds a resource to the registry, or removes it when it is there: the resource
/// list changes, and open subscriptions hear of it.
#[tool]
pub(crate) fn test_trigger_resource_change() -> Result<String, ToolError> {
    let registry = Registry::global();
    if registry.unregister_resource(DYNAMIC_RESOURCE) {
        return Ok(format!("removed {DYNAMIC_RESOURCE}"));
    }
    let resource = ResourceFunc::builder(DYNAMIC_RESOURCE, "dynamic-resource")
        .description("Added by test_trigger_resource_change.")
        .mime_type("text/plain")
        .handler_sync(|_, _| Ok("A resource that comes and goes."))
        .build()?;
    registry.register_resource(resource)?;
    Ok(format!("added {DYNAMIC_RESOURCE}"))
}

/// What the SSE polling scenario calls: answers after a short while. The result
/// comes on the call's own stream (a tool cannot end its transport's stream
/// early), so a client that reconnected with `Last-Event-ID` would get it from
/// the session's event cache.
#[tool]
pub(crate) async fn test_reconnection() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed.".to_owned()
}

/// A tool whose input schema uses JSON Schema 2020-12 keywords, passed as written.
pub(crate) fn json_schema_2020_12_tool() -> Result<ToolFunc, ToolError> {
    ToolFunc::builder("json_schema_2020_12_tool")
        .description("Takes a contact whose schema uses JSON Schema 2020-12 keywords.")
        .params_schema(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        }))
        .handler_sync(|_ctx, args| Ok(json!(format!("contact: {args}"))))
        .build()
}

/// Echoes `region`, which a 2026-07-28 client also sends as the
/// `Mcp-Param-Region` header (SEP-2243): the server checks that the two agree.
#[tool]
pub(crate) fn test_header_param(
    /// Where to look.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
) -> String {
    format!("region: {region}")
}

// The tasks extension (SEP-2663): `background` tools, which a client that takes
// tasks reads with `tasks/get`.

/// Greets `name`; never a task.
#[tool]
pub(crate) fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Works for `seconds` (at most 60), then says it is done; a task for a client
/// that takes tasks, once it runs past 100 ms.
#[tool(timeout = "100ms", background)]
pub(crate) async fn slow_compute(ctx: &Ctx, seconds: f64, label: String) -> String {
    let seconds = seconds.clamp(0.0, 60.0);
    ctx.progress(0.0, Some(seconds), Some(&format!("{label}: working")));
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    format!("slow_compute {label} done after {seconds}s")
}

/// Fails after a second, always as a task: the failure is the task's result, with
/// `isError: true`.
#[tool(timeout = "100ms", background = "only")]
pub(crate) async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::failed("failing_job failed, as it always does"))
}

/// Panics after a moment, always as a task: the task fails with a protocol error.
#[tool(timeout = "100ms", background = "only")]
pub(crate) async fn protocol_error_job() -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    panic!("protocol_error_job panics, as it always does")
}

/// Asks before deleting `filename`, from inside its task.
#[tool(timeout = "0s", background)]
pub(crate) async fn confirm_delete(ctx: &Ctx, filename: String) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"]
    });
    let answer = ctx
        .elicit_named("confirm", format!("Delete {filename}?"), schema)
        .await?;
    let confirmed = answer.action == ask::ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
    Ok(if confirmed {
        format!("Deleted {filename}")
    } else {
        format!("Kept {filename}")
    })
}

/// Asks two questions at once, from inside its task.
#[tool(timeout = "0s", background)]
pub(crate) async fn multi_input(ctx: &Ctx) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}}
    });
    let (first, second) = tokio::join!(
        ctx.elicit_named("first", "First input?", schema.clone()),
        ctx.elicit_named("second", "Second input?", schema.clone()),
    );
    let name = |answer: ask::Elicitation| {
        answer
            .content
            .and_then(|c| c.get("name").and_then(|n| n.as_str().map(str::to_owned)))
            .unwrap_or_default()
    };
    Ok(format!("Got {} and {}", name(first?), name(second?)))
}

/// Asks for a name in a round of its `tools/call`, then greets it in a task.
#[tool(timeout = "1s", background = "only")]
pub(crate) async fn test_tool_with_task(ctx: &Ctx) -> Result<String, ToolError> {
    let answer = ctx
        .elicit_named("user_name", "What is your name?", one_string("name"))
        .await?;
    let name = answer
        .content
        .and_then(|c| c.get("name").and_then(|n| n.as_str().map(str::to_owned)))
        .unwrap_or_else(|| "stranger".to_owned());
    Ok(format!("Hello, {name}!"))
}

/// The global registry with every conformance tool: the `#[tool]`s are there
/// already; the builder tools are added.
pub(crate) fn registry() -> Result<Registry, ToolError> {
    let registry = Registry::global().clone();
    if !registry.has("json_schema_2020_12_tool") {
        registry.register(json_schema_2020_12_tool()?)?;
    }
    if registry.get_prompt("test_simple_prompt").is_none() {
        for prompt in prompts()? {
            registry.register_prompt(prompt)?;
        }
        for resource in resources()? {
            registry.register_resource(resource)?;
        }
    }
    Ok(registry)
}

/// The prompts the suite gets, by the names its scenarios use.
fn prompts() -> Result<Vec<PromptFunc>, ToolError> {
    Ok(vec![
        PromptFunc::builder("test_simple_prompt")
            .description("A simple prompt without arguments.")
            .handler_sync(|_, _| Ok("This is a simple prompt for testing."))
            .build()?,
        PromptFunc::builder("test_prompt_with_arguments")
            .description("A prompt with two arguments.")
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true)
            .complete(
                "arg1",
                Completer::new(|r: &CompletionRequest| {
                    Completion::matching(["paris", "park", "party", "test", "testing"], &r.value)
                }),
            )
            .handler_sync(|_, args| {
                let arg = |name: &str| args[name].as_str().unwrap_or_default().to_owned();
                Ok(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                ))
            })
            .build()?,
        PromptFunc::builder("test_prompt_with_embedded_resource")
            .description("A prompt that embeds a resource.")
            .argument("resourceUri", "URI of the resource to embed", true)
            .handler_sync(|_, args| {
                let uri = args["resourceUri"].as_str().unwrap_or_default();
                let resource =
                    content::Resource::from_text(uri, "Embedded resource content for testing.")
                        .with_mime_type("text/plain");
                Ok(vec![
                    PromptMessage::user(resource),
                    PromptMessage::user("Please process the embedded resource above."),
                ])
            })
            .build()?,
        PromptFunc::builder("test_prompt_with_image")
            .description("A prompt with an image.")
            .handler_sync(|_, _| {
                Ok(vec![
                    PromptMessage::user(content::Block::image(PNG, "image/png")),
                    PromptMessage::user("Please analyze the image above."),
                ])
            })
            .build()?,
        PromptFunc::builder("test_input_required_result_prompt")
            .description("A prompt that asks its client for context first.")
            .handler(|ctx, _| async move {
                let answer = ctx
                    .elicit_named(
                        "user_context",
                        "What context should the prompt use?",
                        one_string("context"),
                    )
                    .await?;
                let content = answer.content.unwrap_or_default();
                Ok(format!(
                    "Use this context: {}",
                    content["context"].as_str().unwrap_or("none")
                ))
            })
            .build()?,
    ])
}

/// The resources the suite reads, at the URIs its scenarios use.
fn resources() -> Result<Vec<ResourceFunc>, ToolError> {
    Ok(vec![
        ResourceFunc::builder("test://static-text", "static-text")
            .description("A static text resource.")
            .mime_type("text/plain")
            .handler_sync(|_, _| Ok("This is the content of the static text resource."))
            .build()?,
        ResourceFunc::builder("test://static-binary", "static-binary")
            .description("A static binary resource (a PNG).")
            .mime_type("image/png")
            .handler_sync(|_, _| Ok(PNG.to_vec()))
            .build()?,
        ResourceFunc::builder("test://watched-resource", "watched-resource")
            .description("A resource clients subscribe to.")
            .mime_type("text/plain")
            .handler_sync(|_, _| Ok("Watched resource content."))
            .build()?,
        ResourceFunc::builder("test://template/{id}/data", "template-data")
            .description("Data for one id.")
            .mime_type("application/json")
            .handler_sync(|_, params| {
                let id = params["id"].as_str().unwrap_or_default();
                Ok(
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                )
            })
            .build()?,
    ])
}
