//! The MCP streamable HTTP endpoint as an OAuth 2.1 resource server: a request
//! without a valid bearer token gets 401 and a challenge naming the
//! protected-resource metadata; a verified identity reaches the tool, in sessions
//! and in sessionless requests; a session belongs to the subject that opened it.

#[path = "support/mcp.rs"]
mod support;

use serde_json::{Value, json};
use support::{Answer, LIMIT, modern_request, serve_http};
use toolfunc::auth::ApiKeys;
use toolfunc::mcp::Server;
use toolfunc::{Ctx, Identity, Registry, ToolFunc};

/// `whoami` answers the verified subject it sees.
fn registry() -> Registry {
    let registry = Registry::new();
    let whoami = ToolFunc::builder("whoami")
        .params_schema(json!({"type": "object", "properties": {}}))
        .handler_sync(|ctx: &Ctx, _args| {
            Ok(json!(ctx.identity().map(|who| who.subject().to_owned())))
        })
        .build()
        .expect("whoami");
    registry.register(whoami).expect("register");
    registry
}

fn keys() -> ApiKeys {
    ApiKeys::new()
        .key("key-a", Identity::new("alice"))
        .key("key-b", Identity::new("bob"))
}

fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    request
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"}}})
}

fn call_whoami(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "whoami", "arguments": {}}})
}

#[tokio::test]
async fn without_a_valid_token_the_endpoint_answers_401_with_a_challenge() {
    let url = serve_http(Server::new(registry()).authenticate(keys()).router()).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let client = reqwest::Client::new();
    for token in [None, Some("key-z")] {
        let response = post(&client, &url, token, None, &initialize())
            .send()
            .await
            .expect("answered");
        assert_eq!(response.status(), 401);
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .expect("a challenge")
            .to_owned();
        assert!(
            challenge.starts_with(&format!(
                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
            )),
            "{challenge}"
        );
        assert_eq!(
            challenge.contains("invalid_token"),
            token.is_some(),
            "{challenge}"
        );
        let body: Value = serde_json::from_str(&response.text().await.expect("a body"))
            .expect("a JSON-RPC error");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    // The metadata names the resource.
    let metadata = client
        .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .expect("answered")
        .text()
        .await
        .expect("a body");
    let metadata: Value = serde_json::from_str(&metadata).expect("JSON");
    assert_eq!(metadata["resource"], url);
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
}

#[tokio::test]
async fn the_identity_reaches_the_tool_and_a_session_is_its_openers() {
    let url = serve_http(Server::new(registry()).authenticate(keys()).router()).await;
    let client = reqwest::Client::new();
    let opened = Answer::read(
        post(&client, &url, Some("key-a"), None, &initialize()),
        LIMIT,
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let session = opened.session.clone().expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let sent = post(&client, &url, Some("key-a"), Some(&session), &initialized)
        .send()
        .await
        .expect("answered");
    assert!(sent.status().is_success());

    let answer = Answer::read(
        post(
            &client,
            &url,
            Some("key-a"),
            Some(&session),
            &call_whoami(2),
        ),
        LIMIT,
    )
    .await;
    let result = answer.response(2);
    assert_eq!(result["result"]["content"][0]["text"], "alice", "{result}");

    // Bob, with a valid token of his own, cannot use Alice's session.
    let answer = Answer::read(
        post(
            &client,
            &url,
            Some("key-b"),
            Some(&session),
            &call_whoami(3),
        ),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    // Nor can anyone without a token.
    let answer = Answer::read(
        post(&client, &url, None, Some(&session), &call_whoami(4)),
        LIMIT,
    )
    .await;
    assert_eq!(answer.status, 401, "{}", answer.body);

    // A sessionless (2026-07-28) request carries its own token.
    let request = modern_request(
        &client,
        &url,
        5,
        "tools/call",
        json!({"name": "whoami", "arguments": {}}),
    )
    .header("Authorization", "Bearer key-b");
    let answer = Answer::read(request, LIMIT).await;
    let result = answer.response(5);
    assert_eq!(result["result"]["content"][0]["text"], "bob", "{result}");
}
