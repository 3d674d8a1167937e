//! A tool asks its caller: elicitation and sampling, answered in process through
//! `CallOptions::on_client_request` and over MCP by the client, with a clear error
//! when the caller cannot answer.

#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::ask::{self, ClientRequest, ElicitAction};
use toolfunc::mcp::Server;
use toolfunc::{CallOptions, Ctx, Registry, ToolError, ToolFunc};

use mcp_support::Pipe;

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("ask_name")
                .handler(|ctx: Ctx, _args: Value| async move {
                    let schema = json!({
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"]
                    });
                    let answer = ctx.elicit("What is your name?", schema).await?;
                    Ok(json!({"action": answer.action, "content": answer.content}))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("ask_model")
                .handler(|ctx: Ctx, _args: Value| async move {
                    let answer = ctx
                        .sample(ask::sample_prompt("What is the capital of France?", 50))
                        .await?;
                    Ok(json!(ask::sampled_text(&answer)))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("ask_nested")
                .handler(
                    |ctx: Ctx, _args: Value| async move { ctx.run("ask_name", json!({})).await },
                )
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

fn answering() -> CallOptions {
    CallOptions::new().on_client_request(|request| async move {
        match request {
            ClientRequest::Elicit { message, schema } => {
                assert_eq!(message, "What is your name?");
                assert_eq!(schema["required"], json!(["name"]));
                Ok(json!({"action": "accept", "content": {"name": "Ann"}}))
            }
            ClientRequest::Sample(params) => {
                assert_eq!(params["maxTokens"], 50);
                Ok(
                    json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
                          "content": {"type": "text", "text": "Paris."}}),
                )
            }
            _ => Err(ToolError::failed("unexpected")),
        }
    })
}

#[tokio::test]
async fn in_process_the_caller_answers() {
    let runner = registry().with(answering());
    assert_eq!(
        runner.run("ask_name", json!({})).await.unwrap(),
        json!({"action": "accept", "content": {"name": "Ann"}})
    );
    assert_eq!(
        runner.run("ask_model", json!({})).await.unwrap(),
        json!("Paris.")
    );
    // Nested calls ask the same caller.
    assert_eq!(
        runner.run("ask_nested", json!({})).await.unwrap()["content"]["name"],
        "Ann"
    );
}

#[tokio::test]
async fn a_caller_that_cannot_answer_is_a_clear_error() {
    let err = registry().run("ask_name", json!({})).await.unwrap_err();
    assert_eq!((err.code(), err.status()), ("CLIENT_CANNOT_ANSWER", 501));
    assert!(err.to_string().contains("on_client_request"), "{err}");
    // An answer of the wrong shape fails the question, not the process.
    let runner = registry()
        .with(CallOptions::new().on_client_request(|_| async { Ok(json!({"yes": true})) }));
    let err = runner.run("ask_name", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert!(err.to_string().contains("action"), "{err}");
    // A declined question has no content.
    let runner = registry().with(CallOptions::new().on_client_request(|_| async {
        Ok(json!({"action": "decline", "content": {"name": "ignored"}}))
    }));
    let value = runner.run("ask_name", json!({})).await.unwrap();
    assert_eq!(value, json!({"action": "decline", "content": null}));
    assert_eq!(
        serde_json::to_value(ElicitAction::Cancel).unwrap(),
        json!("cancel")
    );
}

#[tokio::test]
async fn a_call_stopped_while_waiting_ends() {
    let runner = registry().with(
        CallOptions::new()
            .timeout(Duration::from_millis(50))
            .on_client_request(|_| std::future::pending()),
    );
    let err = runner.run("ask_name", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
}

async fn connect(capabilities: Value) -> Pipe {
    connect_to(registry(), capabilities).await
}

/// A 2025-11-25 session with `registry`'s server, declaring `capabilities`.
async fn connect_to(registry: Registry, capabilities: Value) -> Pipe {
    let mut pipe = Pipe::spawn(Server::new(registry));
    let init = pipe
        .request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "asked", "version": "1"}
            }),
        )
        .await;
    assert!(init.get("error").is_none(), "{init}");
    pipe.notify("notifications/initialized", json!({})).await;
    pipe
}

/// The next request the server sends, skipping notifications.
async fn server_request(pipe: &mut Pipe) -> Value {
    loop {
        let message = pipe
            .try_read(Duration::from_secs(10))
            .await
            .expect("a request from the server");
        if message.get("method").is_some() && message.get("id").is_some() {
            return message;
        }
    }
}

#[tokio::test]
async fn over_mcp_the_client_answers_on_its_session() {
    let mut pipe = connect(json!({"elicitation": {}, "sampling": {}})).await;
    let call = pipe
        .start("tools/call", json!({"name": "ask_name", "arguments": {}}))
        .await;
    let asked = server_request(&mut pipe).await;
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["message"], "What is your name?");
    assert_eq!(
        asked["params"]["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    pipe.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
                      "result": {"action": "accept", "content": {"name": "Bo"}}}))
        .await;
    let answer = pipe.response(call).await;
    assert_eq!(
        answer["result"]["structuredContent"]["content"]["name"], "Bo",
        "{answer}"
    );

    let call = pipe
        .start("tools/call", json!({"name": "ask_model", "arguments": {}}))
        .await;
    let asked = server_request(&mut pipe).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(asked["params"]["maxTokens"], 50);
    pipe.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "role": "assistant", "model": "m", "stopReason": "endTurn",
        "content": {"type": "text", "text": "Paris."}}}))
        .await;
    let answer = pipe.response(call).await;
    assert_eq!(answer["result"]["content"][0]["text"], "Paris.", "{answer}");
}

#[tokio::test]
async fn over_mcp_a_client_without_the_capability_is_not_asked() {
    let mut pipe = connect(json!({})).await;
    let answer = pipe
        .request("tools/call", json!({"name": "ask_name", "arguments": {}}))
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("did not declare"), "{text}");
    // The client declining answers the tool, not an error.
    let mut pipe = connect(json!({"elicitation": {}})).await;
    let call = pipe
        .start("tools/call", json!({"name": "ask_name", "arguments": {}}))
        .await;
    let asked = server_request(&mut pipe).await;
    pipe.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}))
        .await;
    let answer = pipe.response(call).await;
    assert_eq!(
        answer["result"]["structuredContent"]["action"], "decline",
        "{answer}"
    );
}

#[tokio::test]
async fn a_tool_that_needs_sampling_refuses_a_client_without_it_before_running() {
    let registry = registry();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::sync::Arc::clone(&ran);
    registry
        .register(
            ToolFunc::builder("summarise")
                .needs_client("sampling")
                .handler_sync(move |_ctx, _args| {
                    seen.store(true, std::sync::atomic::Ordering::SeqCst);
                    Ok(json!("ran"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut pipe = connect_to(registry, json!({"elicitation": {}})).await;
    let answer = pipe
        .request("tools/call", json!({"name": "summarise", "arguments": {}}))
        .await;
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    // The definition says so, and a name nobody answers is refused at build.
    let err = ToolFunc::builder("x")
        .needs_client("telepathy")
        .handler_sync(|_ctx, _args| Ok(json!(null)))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION");
    assert!(err.to_string().contains("telepathy"), "{err}");
}

/// A sessionless (2026-07-28) `tools/call` with these client capabilities.
fn modern_call(name: &str, capabilities: &Value, extra: Value) -> Value {
    let mut params = json!({
        "name": name,
        "arguments": {},
        "_meta": mcp_support::modern_meta(
            json!({"io.modelcontextprotocol/clientCapabilities": capabilities})
        ),
    });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    params
}

#[tokio::test]
async fn a_sessionless_client_answers_in_rounds() {
    let mut pipe = Pipe::spawn(Server::new(registry()));
    let caps = json!({"elicitation": {}});
    let first = pipe
        .request("tools/call", modern_call("ask_name", &caps, json!({})))
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let asked = &result["inputRequests"]["elicitation_1"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    let state = result["requestState"].as_str().expect("a state").to_owned();

    // An altered state is refused, and so is one of another tool.
    for (tool, bad) in [
        ("ask_name", format!("{state}x")),
        ("ask_name", "made-up".to_owned()),
        ("ask_model", state.clone()),
    ] {
        let retry = pipe
            .request(
                "tools/call",
                modern_call(
                    tool,
                    &caps,
                    json!({"requestState": bad, "inputResponses": {}}),
                ),
            )
            .await;
        assert_eq!(retry["error"]["code"], -32602, "{retry}");
    }

    // A wrong answer is asked again, under a new state.
    let again = pipe
        .request(
            "tools/call",
            modern_call(
                "ask_name",
                &caps,
                json!({"requestState": state, "inputResponses": {"elicitation_1": 12345}}),
            ),
        )
        .await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let state2 = again["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state2, state);
    // The old state is spent.
    let spent = pipe
        .request(
            "tools/call",
            modern_call(
                "ask_name",
                &caps,
                json!({"requestState": state, "inputResponses": {}}),
            ),
        )
        .await;
    assert_eq!(spent["error"]["code"], -32602, "{spent}");

    // The answer: the call goes on to its result.
    let done = pipe
        .request(
            "tools/call",
            modern_call(
                "ask_name",
                &caps,
                json!({"requestState": state2, "inputResponses": {
                    "elicitation_1": {"action": "accept", "content": {"name": "Cy"}}
                }}),
            ),
        )
        .await;
    assert_eq!(
        done["result"]["structuredContent"]["content"]["name"], "Cy",
        "{done}"
    );
}

#[tokio::test]
async fn a_sessionless_client_is_asked_only_what_it_declared() {
    let mut pipe = Pipe::spawn(Server::new(registry()));
    let answer = pipe
        .request(
            "tools/call",
            modern_call("ask_name", &json!({"sampling": {}}), json!({})),
        )
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("elicitation"), "{text}");
    // A tool that asks nothing completes in one round.
    let registry = registry();
    registry
        .register(
            ToolFunc::builder("plain")
                .handler_sync(|_ctx, _args| Ok(json!("plain")))
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut pipe = Pipe::spawn(Server::new(registry));
    let answer = pipe
        .request("tools/call", modern_call("plain", &json!({}), json!({})))
        .await;
    assert_eq!(answer["result"]["content"][0]["text"], "plain", "{answer}");
}

#[tokio::test]
async fn a_tool_that_needs_confirmation_asks_before_its_body_runs() {
    let registry = registry();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&runs);
    registry
        .register(
            ToolFunc::builder("wipe")
                .annotations(toolfunc::Annotations::new().needs_confirmation(true))
                .handler_sync(move |_ctx, _args| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(json!("wiped"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut pipe = connect_to(registry, json!({"elicitation": {}})).await;
    for (confirm, ran) in [(false, 0), (true, 1)] {
        let call = pipe
            .start("tools/call", json!({"name": "wipe", "arguments": {}}))
            .await;
        let asked = server_request(&mut pipe).await;
        assert_eq!(asked["method"], "elicitation/create");
        assert!(
            asked["params"]["message"]
                .as_str()
                .unwrap()
                .contains("wipe"),
            "{asked}"
        );
        pipe.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
                          "result": {"action": "accept", "content": {"confirm": confirm}}}))
            .await;
        let answer = pipe.response(call).await;
        assert_eq!(answer["result"]["isError"], !confirm, "{answer}");
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), ran);
    }
}
