//! A call from outside resolves its name once, on every surface: HTTP (a tool, a
//! service's act, a stream, a background call), MCP (a tool and a
//! `{service}_{method}` function), LLM tool-call messages and NATS. Counted through
//! the registry's debug lookup counter; one test in its own binary, so no other test
//! changes a registry (and so the kept catalogue) while it counts.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/mcp.rs"]
mod mcp_support;
#[path = "support/nats.rs"]
mod nats_support;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::llm::{Target, run_tool_calls};
use toolfunc::mcp::Server;
use toolfunc::{Registry, tool, tool_service};

use mcp_support::Pipe;

/// Adds two numbers.
#[tool(alias = "sum")]
fn plus(a: f64, b: f64) -> f64 {
    a + b
}

/// Counts up to `n`.
#[tool]
fn count(n: u32) -> impl futures::Stream<Item = u32> {
    futures::stream::iter(1..=n)
}

/// Answers after a soft deadline it never passes.
#[tool(background, timeout = "10s")]
async fn slowish() -> &'static str {
    tokio::task::yield_now().await;
    "done"
}

/// A counter service.
#[derive(Default)]
struct Depot;

/// Parcels.
#[tool_service(name = "depot")]
impl Depot {
    /// How many parcels.
    fn check(&self) -> u32 {
        7
    }
}

/// A service never registered (its type is not `Default`).
struct Vault {
    secret: u32,
}

/// Secrets.
#[tool_service(name = "vault")]
impl Vault {
    /// The secret.
    fn open(&self) -> u32 {
        self.secret
    }
}

/// A registry of its own: the tools above and the service.
fn registry() -> Registry {
    let registry = Registry::new();
    for name in ["plus", "count", "slowish"] {
        registry
            .register(Registry::global().get(name).expect("declared"))
            .expect("registered");
    }
    registry.register_service(Depot).expect("registered");
    registry
}

/// The lookups `call` makes in `registry`.
async fn lookups<F: Future>(registry: &Registry, call: impl FnOnce() -> F) -> (u64, F::Output) {
    let before = registry
        .lookups()
        .expect("tests build with debug assertions");
    let out = call().await;
    let after = registry
        .lookups()
        .expect("tests build with debug assertions");
    (after - before, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_call_resolves_its_name_once_on_every_surface() {
    let registry = registry();
    over_http(&registry).await;
    over_mcp(&registry).await;
    in_llm_messages(&registry).await;
    over_nats(&registry).await;
}

/// HTTP: a tool, an alias, a service's act, a stream, a background call, an
/// unknown name.
async fn over_http(registry: &Registry) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        toolfunc::http::Server::new()
            .mount(toolfunc::http::Api::new(registry))
            .unwrap()
            .serve(listener),
    );
    let http = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        http.post(format!("http://{addr}/api/{path}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let (n, reply) = lookups(registry, || post("plus", json!({"a": 1, "b": 2}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&reply.unwrap().text().await.unwrap()).unwrap(),
        json!(3.0)
    );
    assert_eq!(n, 1, "HTTP: a tool");
    let (n, reply) = lookups(registry, || post("sum", json!({"a": 1, "b": 2}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&reply.unwrap().text().await.unwrap()).unwrap(),
        json!(3.0)
    );
    assert_eq!(n, 1, "HTTP: an alias");
    let (n, reply) = lookups(registry, || post("depot", json!({"act": "$check"}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&reply.unwrap().text().await.unwrap()).unwrap(),
        json!(7)
    );
    assert_eq!(n, 1, "HTTP: a service's act");
    let (n, reply) = lookups(registry, || post("count", json!({"n": 3}))).await;
    assert_eq!(reply.unwrap().text().await.unwrap(), "1\n2\n3\n");
    assert_eq!(n, 1, "HTTP: a stream");
    let (n, reply) = lookups(registry, || post("slowish", json!({}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&reply.unwrap().text().await.unwrap()).unwrap(),
        json!("done")
    );
    assert_eq!(n, 1, "HTTP: a background call");
    let (n, reply) = lookups(registry, || post("nothing", json!({}))).await;
    assert_eq!(reply.unwrap().status(), 404);
    assert_eq!(n, 1, "HTTP: an unknown name");
    // A remote caller learns nothing of the program's source (in process, the error
    // says where the unregistered service was declared).
    let reply = post("vault", json!({"act": "$open"})).await.unwrap();
    assert_eq!(reply.status(), 404);
    let text = reply.text().await.unwrap();
    assert!(!text.contains("declared"), "{text}");
    let local = registry
        .run("vault", json!({"act": "$open"}))
        .await
        .unwrap_err();
    assert!(local.to_string().contains("declared"), "{local}");
    let _ = Vault { secret: 0 }.open();
}

/// MCP, once its tool list is made.
async fn over_mcp(registry: &Registry) {
    let (mut pipe, _) = Pipe::connect(Server::new(registry)).await;
    pipe.request("tools/list", json!({})).await;
    for (name, arguments, answer) in [
        ("plus", json!({"a": 1, "b": 2}), "3.0"),
        ("sum", json!({"a": 1, "b": 2}), "3.0"),
        ("depot_check", json!({}), "7"),
        ("count", json!({"n": 2}), "[1,2]"),
    ] {
        let params = json!({"name": name, "arguments": arguments});
        let (n, reply) = lookups(registry, || pipe.request("tools/call", params)).await;
        assert_eq!(reply["result"]["content"][0]["text"], answer, "{reply}");
        assert_eq!(n, 1, "MCP: {name}");
    }
    pipe.close().await;
}

/// LLM tool-call messages: one lookup per call.
async fn in_llm_messages(registry: &Registry) {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "plus", "arguments": "{\"a\": 1, \"b\": 2}"}},
        {"id": "c2", "type": "function",
         "function": {"name": "depot_check", "arguments": "{}"}}
    ]});
    let (n, reply) = lookups(registry, || {
        run_tool_calls(registry, Target::OpenAi, &message)
    })
    .await;
    let reply = reply.unwrap();
    assert_eq!(reply[0]["content"], "3.0");
    assert_eq!(reply[1]["content"], "7");
    assert_eq!(n, 2, "LLM: two calls");
}

/// NATS, once the client knows the worker's tools.
async fn over_nats(registry: &Registry) {
    let server = nats_support::NatsServer::start();
    let worker = toolfunc::nats::Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let client = nats_support::client_finding(&server.url(), &["plus"]).await;
    // The client learns the worker's tools first.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.run("plus", json!({"a": 0, "b": 0})).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the worker never served `plus`"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (n, out) = lookups(registry, || client.run("plus", json!({"a": 1, "b": 2}))).await;
    assert_eq!(out.unwrap(), json!(3.0));
    assert_eq!(n, 1, "NATS: a tool");
    worker.stop(Duration::from_secs(1)).await;
}
