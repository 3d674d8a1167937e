//! A mount's own credentials: an OAuth 2.0 client-credentials grant whose token
//! goes to an MCP source over streamable HTTP and to an OpenAPI source, asked for
//! again when it expires; a token an inbound caller presented to this server is
//! never passed on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use serde_json::{Value, json};
use toolfunc::auth::{self, ApiKeys, AuthError};
use toolfunc::http::{Api, Server};
use toolfunc::mount::{ClientCredentials, Mount};
use toolfunc::{Identity, Registry, ToolFunc};

/// A token endpoint for the client `hub` (secret `s3cret`): `tok-N`, the Nth it
/// gave, each for 31 s (replaced after 1 s, 30 s before it expires).
async fn token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&asked);
    let app = axum::Router::new().route(
        "/token",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let log = Arc::clone(&log);
            async move {
                let basic = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                // hub:s3cret
                if basic != "Basic aHViOnMzY3JldA=="
                    || !body.contains("grant_type=client_credentials")
                {
                    return (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"error": "invalid_client"})),
                    );
                }
                let mut asked = log.lock().unwrap();
                asked.push(body);
                let token = format!("tok-{}", asked.len());
                (
                    axum::http::StatusCode::OK,
                    axum::Json(
                        json!({"access_token": token, "token_type": "Bearer", "expires_in": 31}),
                    ),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, asked)
}

/// A toolfunc MCP server whose authenticator takes `tok-*` and writes down every
/// credential it was shown.
async fn mcp_source() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let check = auth::from_fn(move |token: Option<String>| {
        log.lock().unwrap().push(token.clone());
        async move {
            match token {
                Some(token) if token.starts_with("tok-") => Ok(Identity::new("hub")),
                Some(_) => Err(AuthError::Invalid("not a token of the hub".into())),
                None => Err(AuthError::Missing),
            }
        }
    });
    let source = Registry::new();
    source
        .register(
            ToolFunc::builder("echo")
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let server = toolfunc::mcp::Server::new(source).authenticate(check);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http(listener));
    (url, seen)
}

#[tokio::test]
async fn a_client_credentials_token_goes_to_the_source_and_the_inbound_one_does_not() {
    let (token_url, asked) = token_endpoint().await;
    let (mcp, seen) = mcp_source().await;
    let registry = Registry::new();
    let grant = ClientCredentials::new(&token_url, "hub", "s3cret")
        .scopes(["mcp:tools"])
        .resource(&mcp);
    Mount::new("up", format!("mcp+{mcp}"))
        .client_credentials(grant)
        .into_registry(&registry)
        .await
        .unwrap();
    let first = asked.lock().unwrap().clone();
    assert_eq!(first.len(), 1);
    assert!(first[0].contains("scope=mcp%3Atools"), "{first:?}");
    assert!(first[0].contains("resource=http"), "{first:?}");

    // Served here behind a key of this server's own.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api = Api::new(registry.clone())
        .authenticate(ApiKeys::new().key("inbound-secret", Identity::new("ann")));
    tokio::spawn(Server::new().mount(api).unwrap().serve(listener));
    let echo: Value = reqwest::Client::new()
        .post(format!("http://{addr}/api/up_echo"))
        .bearer_auth("inbound-secret")
        .json(&json!({"x": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(echo.to_string().contains("\"x\":1"), "{echo}");

    // The token expires (here after 1 s): the next call asks for another.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    registry.run("up_echo", json!({"y": 2})).await.unwrap();
    assert_eq!(asked.lock().unwrap().len(), 2);

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter()
            .all(|token| token.as_deref().is_some_and(|t| t.starts_with("tok-"))),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|token| token.as_deref() == Some("tok-2")),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_refused_grant_fails_the_mount_with_unavailable() {
    let (token_url, _asked) = token_endpoint().await;
    let (mcp, _seen) = mcp_source().await;
    let err = Mount::new("up", format!("mcp+{mcp}"))
        .client_credentials(ClientCredentials::new(&token_url, "hub", "wrong"))
        .into_registry(&Registry::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE", "{err}");
    // Without credentials the source refuses too, and the mount says so.
    let err = Registry::new()
        .mount("up", format!("mcp+{mcp}"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE", "{err}");
}

#[tokio::test]
async fn an_openapi_source_gets_the_grants_token() {
    let (token_url, asked) = token_endpoint().await;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = Arc::clone(&seen);
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/whoami": {"get": {"operationId": "whoami", "responses": {"200": {"description": "who"}}}}}
    });
    let app = axum::Router::new()
        .route(
            "/openapi.json",
            axum::routing::get(move || async move { axum::Json(document) }),
        )
        .route(
            "/whoami",
            axum::routing::get(move |headers: HeaderMap| {
                let log = Arc::clone(&log);
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    log.lock().unwrap().push(auth.clone());
                    axum::Json(json!({"auth": auth}))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let registry = Registry::new();
    Mount::new("svc", format!("openapi+{base}/openapi.json"))
        .client_credentials(ClientCredentials::new(&token_url, "hub", "s3cret"))
        .into_registry(&registry)
        .await
        .unwrap();
    let who = registry.run("svc_whoami", json!({})).await.unwrap();
    assert_eq!(who["auth"], "Bearer tok-1");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert_eq!(seen.lock().unwrap().as_slice(), ["Bearer tok-1"]);
}
