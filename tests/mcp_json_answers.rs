//! A sessionless (2026-07-28) request that `mcp::Server::router()` answers with one
//! message comes back as a plain JSON body, as rmcp's production setting answers
//! it: no SSE stream (with its priming event) for one message. A call that says
//! something before its result (progress) still gets the SSE stream, so nothing it
//! says is lost.

#[path = "support/mcp.rs"]
mod mcp_support;

use serde_json::json;
use toolfunc::mcp::Server;
use toolfunc::{Ctx, Registry, ToolError, ToolFunc};

use mcp_support::{Answer, LIMIT, modern_request, serve_http};

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("double")
                .handler(|_, args| async move {
                    let n = args["n"].as_f64().unwrap_or(0.0);
                    Ok::<_, ToolError>(json!(n * 2.0))
                })
                .build()
                .expect("a tool"),
        )
        .expect("registered");
    registry
        .register(
            ToolFunc::builder("steps")
                .handler(|ctx: Ctx, _| async move {
                    ctx.progress(1.0, Some(2.0), Some("half"));
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    Ok::<_, ToolError>(json!("done"))
                })
                .build()
                .expect("a tool"),
        )
        .expect("registered");
    registry
}

#[tokio::test]
async fn a_sessionless_call_with_one_answer_is_answered_as_json() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = reqwest::Client::new();
    let params = json!({"name": "double", "arguments": {"n": 21}});
    let answer = Answer::read(
        modern_request(&client, &url, 7, "tools/call", params),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.content_type.starts_with("application/json"),
        "{}: {}",
        answer.content_type,
        answer.body
    );
    let response = answer.response(7);
    assert_eq!(
        response["result"]["content"][0]["text"], "42.0",
        "{response}"
    );

    let answer = Answer::read(
        modern_request(&client, &url, 8, "tools/list", json!({})),
        LIMIT,
    )
    .await;
    assert!(
        answer.content_type.starts_with("application/json"),
        "{}",
        answer.content_type
    );
    assert!(
        answer.response(8)["result"]["tools"].is_array(),
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn a_sessionless_call_that_reports_progress_still_streams_it() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = reqwest::Client::new();
    let params = json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p"}});
    let answer = Answer::read(
        modern_request(&client, &url, 3, "tools/call", params),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.content_type.starts_with("text/event-stream"),
        "{}",
        answer.content_type
    );
    let messages = answer.messages();
    let progress = messages
        .iter()
        .find(|m| m["method"] == "notifications/progress")
        .unwrap_or_else(|| panic!("no progress in {messages:?}"));
    assert_eq!(progress["params"]["progressToken"], "p");
    let result = &answer.response(3)["result"];
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("done")),
        "{result}"
    );
}
