//! Per-tool and per-act OAuth scopes: declared with `#[tool(scopes = ..)]`, on a
//! `#[tool_service]` and its methods, or `ToolBuilder::scopes`; a caller with a
//! verified identity sees in every listing (HTTP discovery, the OpenAPI document,
//! MCP `tools/list`, `llm` exports) only what its scopes allow, and a call by name
//! that needs a scope it lacks is refused with 403 `insufficient_scope` naming the
//! scopes to ask for. Without an authenticator nothing is judged by scopes.

#[path = "support/http.rs"]
mod http;
#[path = "support/mcp.rs"]
mod mcp;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolfunc::auth::{ApiKeys, AuthError, Authenticator, Endpoints};
use toolfunc::http::Api;
use toolfunc::llm::{Target, run_tool_calls, tools_for};
use toolfunc::mcp::Server;
use toolfunc::{CallOptions, Identity, Registry, ToolFunc, tool, tool_service};

/// Reads a note.
#[tool]
fn notes_read(id: u32) -> String {
    format!("note {id}")
}

/// Deletes every note.
#[tool(scopes = ["notes:admin"])]
fn notes_purge() -> u32 {
    0
}

/// Files, to list with `files:read` and to write with `files:write` too.
#[derive(Default)]
struct Files;

/// Files.
#[tool_service(name = "files", scopes = "files:read")]
impl Files {
    /// Lists the files.
    fn names(&self) -> Vec<String> {
        vec!["a.txt".to_owned()]
    }

    /// Writes a file.
    #[tool(scopes = "files:write")]
    fn write(&self, name: String) -> String {
        format!("wrote {name}")
    }
}

fn keys() -> ApiKeys {
    ApiKeys::new()
        .key("guest-key", Identity::new("guest"))
        .key(
            "reader-key",
            Identity::new("reader").with_scopes(["files:read"]),
        )
        .key(
            "writer-key",
            Identity::new("writer").with_scopes(["files:read", "files:write", "notes:admin"]),
        )
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

#[test]
fn scopes_are_part_of_the_definitions() {
    let registry = Registry::global();
    let purge = registry.get("notes_purge").expect("registered");
    assert_eq!(purge.definition().scopes, ["notes:admin"]);
    let files = registry.get("files").expect("registered");
    let def = files.definition();
    assert_eq!(def.scopes, ["files:read"]);
    let write = def.acts.iter().find(|a| a.name == "$write").expect("act");
    assert_eq!(write.scopes, ["files:write"]);
    assert!(
        def.acts
            .iter()
            .find(|a| a.name == "$names")
            .expect("act")
            .scopes
            .is_empty()
    );
    // Round trip through JSON, as remote clients read it.
    let wire = serde_json::to_value(def).expect("serialises");
    assert_eq!(wire["scopes"], json!(["files:read"]));
    assert_eq!(wire["acts"][1]["scopes"], json!(["files:write"]));

    // At run time, a scope is checked like the macro checks it.
    let err = ToolFunc::builder("bad")
        .scopes(["two words"])
        .handler_sync(|_, _| Ok(Value::Null))
        .build()
        .expect_err("not a scope");
    assert_eq!(err.code(), "DEFINITION");
    assert!(
        err.to_string()
            .contains("`two words` is not an OAuth scope"),
        "{err}"
    );
}

#[tokio::test]
async fn http_discovery_and_openapi_show_each_caller_what_its_scopes_allow() {
    let addr = http::start(Api::new(Registry::global()).authenticate(keys())).await;
    let discover = |key: &'static str| async move {
        let auth = bearer(key);
        http::call(addr, "GET", "/api", &[("authorization", &auth)], None)
            .await
            .ok()
    };
    let guest = discover("guest-key").await;
    assert!(guest.get("notes_read").is_some(), "{guest}");
    assert!(guest.get("notes_purge").is_none(), "{guest}");
    assert!(guest.get("files").is_none(), "{guest}");

    let reader = discover("reader-key").await;
    assert_eq!(reader["files"]["methods"], json!(["$names"]), "{reader}");
    assert_eq!(reader["files"]["acts"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        reader["files"]["params"]["properties"]["act"]["enum"],
        json!(["$names"])
    );
    assert!(reader.get("notes_purge").is_none());

    let writer = discover("writer-key").await;
    assert_eq!(writer["files"]["methods"], json!(["$names", "$write"]));
    assert!(writer.get("notes_purge").is_some());

    // The OpenAPI document follows each caller too, and says what each needs.
    let document = |key: &'static str| async move {
        let auth = bearer(key);
        http::call(
            addr,
            "GET",
            "/api/openapi.json",
            &[("authorization", &auth)],
            None,
        )
        .await
        .ok()
    };
    let guest = document("guest-key").await;
    assert!(guest["paths"].get("/api/notes_purge").is_none());
    assert!(guest["paths"].get("/api/notes_read").is_some());
    let writer = document("writer-key").await;
    assert_eq!(
        writer["paths"]["/api/notes_purge"]["post"]["security"],
        json!([{"oauth2": ["notes:admin"]}])
    );
    assert_eq!(
        writer["paths"]["/api/notes_read"]["post"]["security"],
        json!([{"oauth2": []}])
    );
    assert_eq!(
        writer["components"]["securitySchemes"]["oauth2"]["type"],
        "http"
    );
    assert_eq!(writer["security"], json!([{"oauth2": []}]));
    let acts = writer["paths"]["/api/files"]["post"]["x-toolfunc-acts"]
        .as_array()
        .expect("acts");
    let write = acts.iter().find(|a| a["act"] == "$write").expect("$write");
    assert_eq!(
        write["security"],
        json!([{"oauth2": ["files:read", "files:write"]}])
    );

    // The metadata lists every scope the tools declare.
    let metadata = http::get(addr, "/.well-known/oauth-protected-resource/api").await;
    assert_eq!(
        metadata.ok()["scopes_supported"],
        json!(["files:read", "files:write", "notes:admin"])
    );
}

#[tokio::test]
async fn an_http_call_without_its_scopes_gets_403_and_the_scopes_to_ask_for() {
    let addr = http::start(Api::new(Registry::global()).authenticate(keys())).await;
    let call = |key: &'static str, path: &'static str, body: &'static str| async move {
        let auth = bearer(key);
        let headers = [
            ("authorization", auth.as_str()),
            ("content-type", "application/json"),
        ];
        http::call(addr, "POST", path, &headers, Some(body)).await
    };
    // A tool's own scope: refused by name (not hidden as unknown), with the
    // step-up challenge.
    let refused = call("guest-key", "/api/notes_purge", "{}").await;
    let body = refused.error(403, "INSUFFICIENT_SCOPE");
    assert_eq!(body["data"]["scope"], "notes:admin", "{body}");
    let challenge = refused.header("www-authenticate").expect("a challenge");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"notes:admin\""), "{challenge}");
    assert!(
        challenge.contains("resource_metadata=\"http://127.0.0.1"),
        "{challenge}"
    );

    // An act's scope, on top of its service's: every scope the call needs is named.
    let refused = call(
        "reader-key",
        "/api/files",
        r#"{"act": "$write", "name": "x"}"#,
    )
    .await;
    let body = refused.error(403, "INSUFFICIENT_SCOPE");
    assert_eq!(body["data"]["scope"], "files:read files:write");
    let challenge = refused.header("www-authenticate").expect("a challenge");
    assert!(
        challenge.contains("scope=\"files:read files:write\""),
        "{challenge}"
    );
    // The same act named in the header, or the REST-less spelling without `$`.
    let auth = bearer("reader-key");
    let refused = http::call(
        addr,
        "POST",
        "/api/files",
        &[
            ("authorization", &auth),
            ("rpc-act", "write"),
            ("content-type", "application/json"),
        ],
        Some(r#"{"name": "x"}"#),
    )
    .await;
    refused.error(403, "INSUFFICIENT_SCOPE");

    // With the scopes, the same calls run.
    assert_eq!(
        call("reader-key", "/api/files", r#"{"act": "$names"}"#)
            .await
            .ok(),
        json!(["a.txt"])
    );
    assert_eq!(
        call(
            "writer-key",
            "/api/files",
            r#"{"act": "$write", "name": "x"}"#
        )
        .await
        .ok(),
        "wrote x"
    );
    assert_eq!(call("writer-key", "/api/notes_purge", "{}").await.ok(), 0);
    assert_eq!(
        call("guest-key", "/api/notes_read", r#"{"id": 3}"#)
            .await
            .ok(),
        "note 3"
    );
}

#[tokio::test]
async fn without_an_authenticator_nothing_is_judged_by_scopes() {
    let addr = http::start(Api::new(Registry::global())).await;
    let listed = http::call(addr, "GET", "/api", &[], None).await.ok();
    assert!(listed.get("notes_purge").is_some());
    assert_eq!(listed["files"]["methods"], json!(["$names", "$write"]));
    let ran = http::post(addr, "/api/notes_purge", "{}").await;
    assert_eq!(ran.ok(), 0);
    // In process too: the program's own calls are trusted.
    assert_eq!(
        Registry::global()
            .run("notes_purge", json!({}))
            .await
            .expect("runs"),
        0
    );
}

/// A token checker that knows its authorization server's endpoints.
struct WithEndpoints;

impl Authenticator for WithEndpoints {
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        Box::pin(async move {
            match credential {
                Some("t") => Ok(Identity::new("someone")),
                _ => Err(AuthError::Missing),
            }
        })
    }

    fn authorization_servers(&self) -> Vec<String> {
        vec!["https://as.example.com".to_owned()]
    }

    fn endpoints(&self) -> Option<Endpoints> {
        Some(Endpoints::new(
            "https://as.example.com/authorize",
            "https://as.example.com/token",
        ))
    }
}

#[test]
fn the_openapi_document_declares_the_oauth_flow_and_every_scope() {
    let doc = Api::new(Registry::global())
        .authenticate(WithEndpoints)
        .openapi_document();
    let scheme = &doc["components"]["securitySchemes"]["oauth2"];
    assert_eq!(scheme["type"], "oauth2");
    let flow = &scheme["flows"]["authorizationCode"];
    assert_eq!(flow["authorizationUrl"], "https://as.example.com/authorize");
    assert_eq!(flow["tokenUrl"], "https://as.example.com/token");
    let scopes: Vec<&String> = flow["scopes"].as_object().expect("scopes").keys().collect();
    assert_eq!(scopes, ["files:read", "files:write", "notes:admin"]);
    // Every status a protected operation answers is listed.
    let responses = &doc["paths"]["/api/notes_purge"]["post"]["responses"];
    assert!(responses.get("401").is_some() && responses.get("403").is_some());
}

fn mcp_call(name: &str, arguments: &Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

#[tokio::test]
async fn mcp_lists_what_the_scopes_allow_and_refuses_a_call_with_403() {
    let url = mcp::serve_http(
        Server::new(Registry::global())
            .authenticate(keys())
            .router(),
    )
    .await;
    let client = reqwest::Client::new();
    let list = |key: &'static str| {
        let client = client.clone();
        let url = url.clone();
        async move {
            let answer = mcp::Answer::read(
                mcp::modern_request(&client, &url, 1, "tools/list", json!({}))
                    .header("Authorization", bearer(key)),
                mcp::LIMIT,
            )
            .await;
            let tools = answer.response(1)["result"]["tools"].clone();
            let names: Vec<String> = tools
                .as_array()
                .expect("tools")
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            names
        }
    };
    assert_eq!(list("guest-key").await, ["notes_read"]);
    assert_eq!(list("reader-key").await, ["files_names", "notes_read"]);
    assert_eq!(
        list("writer-key").await,
        ["files_names", "files_write", "notes_purge", "notes_read"]
    );

    // A call by name that needs a scope the token lacks: HTTP 403 with the step-up
    // challenge, and a JSON-RPC error answering the request's id.
    let params = mcp_call("files_write", &json!({"name": "x"}));
    let response = mcp::modern_request(&client, &url, 7, "tools/call", params.clone())
        .header("Authorization", bearer("reader-key"))
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 403);
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .expect("a challenge")
        .to_owned();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("scope=\"files:read files:write\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/mcp"),
        "{challenge}"
    );
    let body: Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["data"]["code"], "INSUFFICIENT_SCOPE");

    let answer = mcp::Answer::read(
        mcp::modern_request(&client, &url, 8, "tools/call", params)
            .header("Authorization", bearer("writer-key")),
        mcp::LIMIT,
    )
    .await;
    let result = answer.response(8);
    assert_eq!(
        result["result"]["content"][0]["text"], "wrote x",
        "{result}"
    );
}

#[tokio::test]
async fn llm_exports_and_tool_calls_follow_the_identity_of_the_runner() {
    let registry = Registry::global();
    let reader =
        registry.with(CallOptions::new().identity(Identity::new("r").with_scopes(["files:read"])));
    let exported = tools_for(&reader, Target::Anthropic).expect("exported");
    let names: Vec<&str> = exported
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["files_names", "notes_read"]);
    // The deferred export (the provider searches the catalogue) follows it too.
    let deferred = toolfunc::llm::tools_deferred_for(
        &reader,
        Target::Anthropic,
        &toolfunc::llm::Deferral::new(),
    )
    .expect("exported");
    let names: Vec<&str> = deferred
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["defer_loading"] == true)
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["files_names", "notes_read"]);

    // A model naming a function the identity may not call gets the refusal as the
    // tool's result; the others run.
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "files_write", "input": {"name": "x"}},
        {"type": "tool_use", "id": "b", "name": "files_names", "input": {}},
    ]});
    let results = run_tool_calls(reader, Target::Anthropic, &message)
        .await
        .expect("answered");
    let content = results["content"].as_array().expect("results");
    assert_eq!(content[0]["is_error"], true, "{results}");
    assert!(
        content[0]["content"]
            .to_string()
            .contains("`files:read files:write`"),
        "{results}"
    );
    assert!(
        content[1].get("is_error").is_none_or(|e| e == false),
        "{results}"
    );
}
