//! An HTTP API as an OAuth 2.1 resource server: every request needs a bearer token
//! the authenticator verifies; a refusal is a 401 with a challenge that names the
//! protected-resource metadata (RFC 9728), served beside the API; the verified
//! identity reaches the tool and the auth hook.

#[path = "support/http.rs"]
mod http;
#[path = "support/tokens.rs"]
mod tokens;

use serde_json::{Value, json};
use tokens::{Key, claims, jwks};
use toolfunc::auth::ApiKeys;
use toolfunc::auth::jwt::Jwt;
use toolfunc::http::Api;
use toolfunc::{Ctx, Identity, Registry, ToolError, ToolFunc};

const ISSUER: &str = "https://as.example.com";
const AUDIENCE: &str = "https://tools.example.com/api";
const METADATA: &str = "https://tools.example.com/.well-known/oauth-protected-resource/api";

/// `whoami` answers the verified identity it sees.
fn registry() -> Registry {
    let registry = Registry::new();
    let whoami = ToolFunc::builder("whoami")
        .params_schema(json!({"type": "object", "properties": {}}))
        .handler_sync(|ctx: &Ctx, _args| {
            Ok(match ctx.identity() {
                Some(who) => json!({"sub": who.subject(), "scopes": who.scopes()}),
                None => Value::Null,
            })
        })
        .build()
        .expect("whoami");
    registry.register(whoami).expect("register");
    registry
}

type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, bool);

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn a_valid_token_reaches_the_tool_and_anything_else_gets_a_challenge() {
    let key = Key::new("k1");
    let auth = Jwt::with_keys(ISSUER, AUDIENCE, &jwks(&[&key])).expect("keys");
    let addr = http::start(Api::new(registry()).authenticate(auth).docs(true)).await;
    let token = key.sign(&claims(ISSUER, AUDIENCE, "user-7", "files:read"));
    let auth_header = bearer(&token);

    // With the token: discovery, the OpenAPI document and calls.
    let headers = [("authorization", auth_header.as_str())];
    let reply = http::call(addr, "POST", "/api/whoami", &headers, Some("{}")).await;
    assert_eq!(
        reply.ok(),
        json!({"sub": "user-7", "scopes": ["files:read"]})
    );
    assert_eq!(
        http::call(addr, "GET", "/api", &headers, None).await.status,
        200
    );
    let doc = http::call(addr, "GET", "/api/openapi.json", &headers, None).await;
    assert_eq!(doc.status, 200);

    // Without it, or with a bad one: 401 and the challenge, before anything else
    // (an unknown tool says nothing about which tools exist).
    let expired = {
        let mut c = claims(ISSUER, AUDIENCE, "user-7", "");
        c["exp"] = json!(tokens::now() - 3600);
        bearer(&key.sign(&c))
    };
    let foreign = bearer(&key.sign(&claims(ISSUER, "https://other.example.com", "u", "")));
    // (method, path, headers, whether the token given is invalid)
    let cases: Vec<Case<'_>> = vec![
        ("POST", "/api/whoami", vec![], false),
        ("GET", "/api", vec![], false),
        ("GET", "/api/openapi.json", vec![], false),
        ("POST", "/api/no-such-tool", vec![], false),
        ("GET", "/api/rpcTask/abc", vec![], false),
        (
            "POST",
            "/api/whoami",
            vec![("authorization", "Bearer not-a-jwt")],
            true,
        ),
        (
            "POST",
            "/api/whoami",
            vec![("authorization", expired.as_str())],
            true,
        ),
        (
            "POST",
            "/api/whoami",
            vec![("authorization", foreign.as_str())],
            true,
        ),
        (
            "POST",
            "/api/whoami",
            vec![("authorization", "Basic dXNlcjpwYXNz")],
            true,
        ),
        (
            "POST",
            "/api/whoami",
            vec![("authorization", "Bearer ")],
            true,
        ),
    ];
    for (method, path, headers, invalid) in cases {
        let body = (method == "POST").then_some("{}");
        let reply = http::call(addr, method, path, &headers, body).await;
        reply.error(401, "UNAUTHENTICATED");
        let challenge = reply.header("www-authenticate").expect("a challenge");
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA}\"")),
            "{method} {path}: {challenge}"
        );
        assert_eq!(
            challenge.contains("error=\"invalid_token\""),
            invalid,
            "{method} {path} {headers:?}: {challenge}"
        );
    }

    // A token in the query string is refused even when it is valid.
    let path = format!("/api/whoami?access_token={token}");
    let reply = http::call(addr, "POST", &path, &[], Some("{}")).await;
    reply.error(401, "UNAUTHENTICATED");
    let reply = http::call(addr, "POST", &path, &headers, Some("{}")).await;
    reply.error(401, "UNAUTHENTICATED");

    // The try-it page itself is static and opens without a token.
    assert_eq!(http::get(addr, "/api/docs").await.status, 200);
}

#[tokio::test]
async fn the_protected_resource_metadata_names_the_issuer() {
    let key = Key::new("k1");
    let auth = Jwt::with_keys(ISSUER, AUDIENCE, &jwks(&[&key])).expect("keys");
    let addr = http::start(Api::new(registry()).authenticate(auth)).await;
    let reply = http::get(addr, "/.well-known/oauth-protected-resource/api").await;
    assert_eq!(
        reply.ok(),
        json!({
            "resource": AUDIENCE,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
        })
    );
    // Without an authenticator there is no metadata.
    let addr = http::start(Api::new(registry())).await;
    assert_eq!(
        http::get(addr, "/.well-known/oauth-protected-resource/api")
            .await
            .status,
        404
    );
}

/// With an audience that is an origin alone (as the README's example server sets
/// it), every 401 of `/api` and `/mcp` names
/// `<origin>/.well-known/oauth-protected-resource`, and that URL answers the
/// metadata with the audience as its resource; so it does for an audience of
/// another path. Served together, the API and MCP share it; each router alone
/// serves it too.
#[tokio::test]
async fn the_metadata_every_challenge_names_exists_for_any_audience() {
    for (audience, path) in [
        (
            "http://127.0.0.1:3000",
            "/.well-known/oauth-protected-resource",
        ),
        (
            "http://127.0.0.1:3000/",
            "/.well-known/oauth-protected-resource",
        ),
        (
            "https://tools.example.com/v1/tools",
            "/.well-known/oauth-protected-resource/v1/tools",
        ),
        (
            "https://tools.example.com/api",
            "/.well-known/oauth-protected-resource/api",
        ),
    ] {
        let key = Key::new("k1");
        let jwt = || Jwt::with_keys(ISSUER, audience, &jwks(&[&key])).expect("keys");
        let mcp = toolfunc::mcp::Server::new(registry()).authenticate(jwt());
        let server = toolfunc::http::Server::new()
            .mount(Api::new(registry()).authenticate(jwt()))
            .expect("mount")
            .merge(mcp.router());
        let addr = http::start_server(server).await;
        let named = |reply: &http::Reply| {
            let challenge = reply
                .header("www-authenticate")
                .unwrap_or_default()
                .to_owned();
            challenge
                .split("resource_metadata=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("no metadata in {challenge:?}"))
                .to_owned()
        };
        let mcp_refusal = http::call(
            addr,
            "POST",
            "/mcp",
            &[("accept", "application/json, text/event-stream")],
            Some(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        )
        .await;
        for refusal in [
            http::get(addr, "/api").await,
            http::post(addr, "/api/whoami", "{}").await,
            mcp_refusal,
        ] {
            assert_eq!(refusal.status, 401, "{audience}");
            let url = named(&refusal);
            let origin = audience.trim_end_matches('/');
            let origin = origin
                .find("://")
                .and_then(|at| {
                    origin[at + 3..]
                        .find('/')
                        .map(|slash| &origin[..at + 3 + slash])
                })
                .unwrap_or(origin);
            assert_eq!(url, format!("{origin}{path}"), "{audience}");
            let metadata = http::get(addr, path).await;
            assert_eq!(metadata.status, 200, "{audience}: {path}");
            assert_eq!(metadata.json()["resource"], audience, "{audience}");
            assert_eq!(metadata.json()["authorization_servers"], json!([ISSUER]));
        }
        // Each router alone serves it too.
        let api_alone = http::start(Api::new(registry()).authenticate(jwt())).await;
        assert_eq!(http::get(api_alone, path).await.status, 200, "{audience}");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let mcp_alone = listener.local_addr().expect("addr");
        let mcp = toolfunc::mcp::Server::new(registry()).authenticate(jwt());
        tokio::spawn(mcp.serve_http(listener));
        let reply = http::get(mcp_alone, path).await;
        assert_eq!(reply.status, 200, "{audience}");
        assert_eq!(reply.json()["resource"], audience);
    }
}

#[tokio::test]
async fn api_keys_guard_an_api_and_the_hook_sees_the_identity() {
    let keys = ApiKeys::new()
        .key("key-a", Identity::new("alice"))
        .key("key-b", Identity::new("bob"));
    let api = Api::new(registry())
        .authenticate(keys)
        .resource("http://127.0.0.1/api")
        .auth(|req| match req.identity.map(Identity::subject) {
            Some("bob") if req.tool.is_some() => {
                Err(ToolError::custom("FORBIDDEN", 403, "bob may only look"))
            }
            Some(_) => Ok(()),
            None => Err(ToolError::custom("UNAUTHENTICATED", 401, "no identity")),
        });
    let addr = http::start(api).await;
    let alice = [("authorization", "Bearer key-a")];
    let bob = [("authorization", "bearer key-b")];
    let reply = http::call(addr, "POST", "/api/whoami", &alice, Some("{}")).await;
    assert_eq!(reply.ok()["sub"], "alice");
    http::call(addr, "POST", "/api/whoami", &bob, Some("{}"))
        .await
        .error(403, "FORBIDDEN");
    assert_eq!(
        http::call(addr, "GET", "/api", &bob, None).await.status,
        200
    );
    let reply = http::call(
        addr,
        "POST",
        "/api/whoami",
        &[("authorization", "Bearer key-c")],
        Some("{}"),
    )
    .await;
    reply.error(401, "UNAUTHENTICATED");
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/api\", \
             error=\"invalid_token\", error_description=\"the bearer token is not valid: unknown key\""
        )
    );
}

#[tokio::test]
async fn an_inbound_token_is_never_passed_on_to_another_service() {
    // Service B records the `Authorization` header of every request it gets.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&seen);
    let b = Registry::new();
    let echo = ToolFunc::builder("echo_b")
        .handler_sync(|_ctx, _args| Ok(json!("from b")))
        .build()
        .expect("echo_b");
    b.register(echo).expect("register");
    let b_addr = http::start(Api::new(b).auth(move |req| {
        let header = req
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        record.lock().expect("record").push(header);
        Ok(())
    }))
    .await;
    let remote = toolfunc::http::Client::connect(&format!("http://{b_addr}/api"))
        .await
        .expect("B answers");

    // Service A, behind an authenticator (and a layer, so the request's headers
    // ride on its calls), runs B's tool from one of its own.
    let a = Registry::new().layer(toolfunc::layer::visibility(|_tool, _viewer| true));
    a.register(remote.registry().get("echo_b").expect("B's tool"))
        .expect("register");
    let relay = ToolFunc::builder("relay")
        .handler(|ctx: Ctx, _args| async move { ctx.run("echo_b", json!({})).await })
        .build()
        .expect("relay");
    a.register(relay).expect("register");
    let a_addr = http::start(
        Api::new(a).authenticate(ApiKeys::new().key("a-secret", Identity::new("user-1"))),
    )
    .await;
    let auth = bearer("a-secret");
    let reply = http::call(
        a_addr,
        "POST",
        "/api/relay",
        &[
            ("authorization", &auth),
            ("content-type", "application/json"),
        ],
        Some("{}"),
    )
    .await;
    assert_eq!(reply.ok(), json!("from b"));
    let seen = seen.lock().expect("seen");
    assert!(!seen.is_empty(), "B was called");
    assert!(seen.iter().all(Option::is_none), "B saw: {seen:?}");
}
