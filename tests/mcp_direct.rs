//! A plain sessionless (2026-07-28) `tools/call` is answered by the server itself,
//! past the SDK's per-request service. Its answer must be the SDK's: the same
//! status, content type and JSON-RPC body as the same request sent with an
//! `Origin` header (which leaves it to the SDK), for results, tool errors, bad
//! arguments and unknown tools; the client's name is the call's caller; and what
//! the direct path does not take (a host not allowed, a round's retry) is still
//! answered as before.

#[path = "support/mcp.rs"]
mod mcp_support;

use mcp_support::{Answer, LIMIT, modern_request, serve_http};
use serde_json::{Value, json};
use toolfunc::mcp::Server;
use toolfunc::{Registry, ToolError, ToolFunc};

/// Three tools: one answering its caller and arguments, one failing, one with a
/// required typed argument.
fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("whoami")
                .description("Answers its caller and arguments.")
                .handler_sync(|ctx, args| Ok(json!({"caller": ctx.caller(), "args": args})))
                .build()
                .expect("a valid tool"),
        )
        .expect("registers");
    registry
        .register(
            ToolFunc::builder("refuses")
                .description("Always fails.")
                .handler_sync(|_, _| Err(ToolError::custom("NOPE", 409, "not today")))
                .build()
                .expect("a valid tool"),
        )
        .expect("registers");
    registry
        .register(
            ToolFunc::builder("square")
                .description("Squares a number.")
                .params_schema(json!({
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"]
                }))
                .handler_sync(|_, args| Ok(json!(args["n"].as_i64().unwrap_or(0).pow(2))))
                .build()
                .expect("a valid tool"),
        )
        .expect("registers");
    registry
}

/// The answer to one call, sent plainly (`through_sdk` false) or with a loopback
/// `Origin`, which the direct path leaves to the SDK.
async fn call(url: &str, params: Value, through_sdk: bool) -> (u16, String, Value) {
    let client = reqwest::Client::new();
    let mut request = modern_request(&client, url, 7, "tools/call", params);
    if through_sdk {
        request = request.header("Origin", "http://localhost:1234");
    }
    let answer = Answer::read(request, LIMIT).await;
    let body = serde_json::from_str(&answer.body).unwrap_or(Value::String(answer.body.clone()));
    (answer.status, answer.content_type, body)
}

#[tokio::test]
async fn plain_calls_are_answered_as_the_sdk_answers_them() {
    let url = serve_http(Server::new(registry()).router()).await;
    for params in [
        json!({"name": "whoami", "arguments": {"x": 1}}),
        json!({"name": "refuses", "arguments": {}}),
        json!({"name": "square", "arguments": {"n": 12}}),
        json!({"name": "square", "arguments": {"n": "twelve"}}),
        json!({"name": "square"}),
        json!({"name": "nowhere", "arguments": {}}),
    ] {
        let direct = call(&url, params.clone(), false).await;
        let sdk = call(&url, params.clone(), true).await;
        assert_eq!(direct, sdk, "{params}");
        assert_eq!(direct.0, 200, "{params}: {direct:?}");
        assert!(direct.1.starts_with("application/json"), "{direct:?}");
        assert_eq!(direct.2["id"], 7);
    }
    let (_, _, whoami) = call(
        &url,
        json!({"name": "whoami", "arguments": {"x": 1}}),
        false,
    )
    .await;
    assert_eq!(
        whoami["result"]["structuredContent"],
        json!({"caller": "raw-test-client", "args": {"x": 1}}),
        "the client's name is the caller: {whoami}"
    );
    let (_, _, square) = call(
        &url,
        json!({"name": "square", "arguments": {"n": 12}}),
        false,
    )
    .await;
    assert_eq!(square["result"]["content"][0]["text"], "144", "{square}");
    let (_, _, refused) = call(&url, json!({"name": "refuses", "arguments": {}}), false).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
}

#[tokio::test]
async fn what_the_direct_path_leaves_is_answered_as_before() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = reqwest::Client::new();
    let params = json!({"name": "whoami", "arguments": {}});
    // A host the server does not allow: refused, as the SDK refuses it.
    let answer = Answer::read(
        modern_request(&client, &url, 1, "tools/call", params.clone())
            .header("Host", "evil.example"),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    // An `Mcp-Name` that does not name the tool: the SDK's header mismatch.
    let answer = Answer::read(
        modern_request(&client, &url, 2, "tools/call", params.clone())
            .header("Mcp-Name", "someone_else"),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    // A progress token goes to the SDK, which answers the call all the same.
    let with_token = json!({"name": "whoami", "arguments": {}, "_meta": {"progressToken": "p1"}});
    let answer = Answer::read(
        modern_request(&client, &url, 3, "tools/call", with_token),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(
        answer.response(3)["result"]["structuredContent"]["caller"],
        "raw-test-client",
        "{}",
        answer.body
    );
}
