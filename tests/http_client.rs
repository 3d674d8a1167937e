//! `toolfunc::http::Client` against a toolfunc server: remote tools run by name like
//! local ones, errors come back as the same variant, typed service clients work over
//! HTTP, and a cancelled or timed-out call aborts its request.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::http::{Api, Client, Server};
use toolfunc::{CallOptions, Registry, ToolError, ToolFunc, Transport};

use demo::{GreeterClient, UsersClient};

async fn start(registry: Registry) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::new().mount(Api::new(registry)).unwrap();
    tokio::spawn(server.serve(listener));
    format!("http://{addr}/api")
}

#[tokio::test]
async fn remote_tools_run_by_name_and_alias() {
    let client = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let mut names = client.names();
    names.sort();
    assert_eq!(
        names,
        [
            "add",
            "countdown",
            "fail",
            "greeter",
            "report",
            "sleep",
            "users"
        ]
    );
    // Definitions arrive whole: schema, description, alias, service methods.
    let add = client.get("add").unwrap();
    assert_eq!(add.definition().params["properties"]["a"]["type"], "number");
    assert_eq!(
        client.get("users").unwrap().definition().action.as_deref(),
        Some("res")
    );
    assert_eq!(
        client.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(
        client.run("plus", json!({"a": 2, "b": 2})).await.unwrap(),
        json!(4.0)
    );
    assert_eq!(
        client
            .run("greeter", json!({"act": "$hello", "name": "Ann"}))
            .await
            .unwrap(),
        "hello Ann"
    );
    assert_eq!(
        client
            .run("greeter", json!({"act": "mul", "a": 6, "b": 7}))
            .await
            .unwrap(),
        json!(42.0)
    );
}

#[tokio::test]
async fn a_client_serves_the_remote_tools_again() {
    let upstream = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    // A gateway: the remote tools, mounted on a server of its own.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api", listener.local_addr().unwrap());
    let gateway = Server::new().mount(Api::new(&upstream)).unwrap();
    tokio::spawn(gateway.serve(listener));

    let client = Client::connect(&url).await.unwrap();
    assert_eq!(client.names(), upstream.names());
    assert_eq!(client.definitions(), upstream.definitions());
    assert_eq!(
        client.run("plus", json!({"a": 2, "b": 3})).await.unwrap(),
        json!(5.0)
    );
    // The upstream server's errors pass through the gateway as they were raised.
    let err = client
        .run("add", json!({"a": "one", "b": 2}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/a"),
        "{err:?}"
    );
    assert!(Registry::from(&upstream).ptr_eq(upstream.registry()));
    assert!(Registry::from(upstream.clone()).ptr_eq(upstream.registry()));
}

#[tokio::test]
async fn rest_verbs_in_wire_form() {
    let client = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let list = client.run("users", json!({"act": "list"})).await.unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let alice = client
        .run("users", json!({"act": "get", "id": "1"}))
        .await
        .unwrap();
    assert_eq!(alice, json!({"id": "1", "name": "Alice"}));
    let carol = client
        .run(
            "users",
            json!({"act": "post", "val": {"name": "Carol Ann"}}),
        )
        .await
        .unwrap();
    let id = carol["id"].as_str().unwrap().to_owned();
    let renamed = client
        .run(
            "users",
            json!({"act": "put", "id": id, "val": {"name": "Caroline"}}),
        )
        .await
        .unwrap();
    assert_eq!(renamed, json!({"id": id, "name": "Caroline"}));
    let promoted = client
        .run("users", json!({"act": "$promote", "id": "2"}))
        .await
        .unwrap();
    assert_eq!(promoted["role"], "admin");
    assert_eq!(
        client
            .run("users", json!({"act": "delete", "id": id}))
            .await
            .unwrap(),
        json!({"deleted": id})
    );
    let err = client
        .run("users", json!({"act": "get", "id": id}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("USER_NOT_FOUND", 404));
    assert_eq!(err.data().unwrap()["what"], json!(id));
}

#[tokio::test]
async fn errors_come_back_as_the_same_variant() {
    let client = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let err = client.run("fail", json!({})).await.unwrap_err();
    assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    assert_eq!(err.to_string(), "boom");
    let err = client
        .run("add", json!({"a": "one", "b": 2}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/a"),
        "{err:?}"
    );
    let err = client
        .run("greeter", json!({"act": "$nope"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::UnknownAct { act, .. } if act == "$nope"),
        "{err:?}"
    );
    // A local miss never reaches the server.
    assert_eq!(
        client.run("nope", json!({})).await.unwrap_err().code(),
        "NOT_FOUND"
    );
}

#[tokio::test]
async fn a_bad_url_raised_by_a_remote_tool_comes_back_as_itself() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("open")
                .handler_sync(|_ctx, _args| {
                    Err(ToolError::BadUrl {
                        url: "ftp://x".into(),
                        reason: "not served here".into(),
                    })
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let client = Client::connect(&start(registry).await).await.unwrap();
    let err = client.run("open", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::BadUrl { url, reason } if url == "ftp://x" && reason == "not served here"),
        "{err:?}"
    );
    assert_eq!(err.status(), 400);
}

#[tokio::test]
async fn streams_arrive_item_by_item() {
    let client = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let items: Vec<Value> = client
        .run_stream("countdown", json!({"count": 3}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        items,
        [json!({"tick": 3}), json!({"tick": 2}), json!({"tick": 1})]
    );
    // `run` collects them.
    assert_eq!(
        client.run("countdown", json!({"count": 2})).await.unwrap(),
        json!([{"tick": 2}, {"tick": 1}])
    );
}

#[tokio::test]
async fn a_failure_mid_stream_is_the_last_item() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("flaky")
                .stream_handler(|_ctx, _args| async {
                    Ok(futures::stream::iter([
                        Ok(json!(1)),
                        Err(ToolError::custom("FLAKY", 502, "lost it")),
                        Ok(json!(2)),
                    ]))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let client = Client::connect(&start(registry).await).await.unwrap();
    let items: Vec<_> = client.run_stream("flaky", json!({})).collect().await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap(), &json!(1));
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(
        (err.code(), err.status(), err.to_string()),
        ("FLAKY", 502, "lost it".into())
    );
}

#[tokio::test]
async fn typed_clients_over_http() {
    let client = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let users = UsersClient::new(client.clone());
    assert_eq!(users.list().await.unwrap().len(), 2);
    assert_eq!(users.get("2".into()).await.unwrap().name, "Bob");
    assert_eq!(
        users.get("9".into()).await.unwrap_err().code(),
        "USER_NOT_FOUND"
    );
    let dan = users
        .post(demo::NewUser {
            name: "Dan".into(),
            role: None,
        })
        .await
        .unwrap();
    assert_eq!(
        users
            .promote(dan.id.clone())
            .await
            .unwrap()
            .role
            .as_deref()
            .unwrap(),
        "admin"
    );
    let greeter = GreeterClient::new(client);
    assert!((greeter.mul(3.0, 4.0).await.unwrap() - 12.0).abs() < f64::EPSILON);
}

#[tokio::test]
async fn timeouts_and_cancellation_abort_the_request() {
    // A tool that notes whether its call was cancelled (the server cancels a call
    // whose client went away).
    let cancelled = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&cancelled);
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("wait")
                .handler(move |ctx, _args| {
                    let seen = Arc::clone(&seen);
                    async move {
                        let token = ctx.cancellation_token();
                        ctx.on_cleanup(move || {
                            if token.is_cancelled() {
                                seen.store(true, Ordering::SeqCst);
                            }
                        });
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        Ok(Value::Null)
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let client = Client::connect(&start(registry).await).await.unwrap();
    let err = client
        .with(CallOptions::new().timeout(Duration::from_millis(100)))
        .run("wait", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    // The request was dropped, so the server cancelled the call.
    for _ in 0..500 {
        if cancelled.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the server-side call was not cancelled after the client gave up");
}

#[tokio::test]
async fn unreachable_servers_and_bad_urls_are_clear_errors() {
    let err = Client::connect("not a url").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::BadUrl { url, .. } if url == "not a url"),
        "{err:?}"
    );
    assert_eq!((err.code(), err.status()), ("BAD_URL", 400));
    // Nothing listens on this port once the listener is gone.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let err = Client::connect(&format!("http://127.0.0.1:{port}/api"))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("UNREACHABLE", 503));
}

#[tokio::test]
async fn transports_are_interchangeable() {
    let local = demo::catalog();
    let remote = Client::connect(&start(demo::catalog()).await)
        .await
        .unwrap();
    let transports: [Arc<dyn Transport>; 2] = [Arc::new(local), Arc::new(remote)];
    for transport in transports {
        let greeter = GreeterClient::from_shared(Arc::clone(&transport));
        assert_eq!(greeter.hello("Bo".into()).await.unwrap(), "hello Bo");
        let items: Vec<_> = transport
            .run_stream("countdown", json!({"count": 2}))
            .collect()
            .await;
        assert_eq!(items.len(), 2);
    }
}

#[tokio::test]
async fn transports_open_by_url_scheme() {
    let url = start(demo::catalog()).await;
    let remote = toolfunc::connect(&url).await.unwrap();
    assert_eq!(
        remote
            .run("greeter", json!({"act": "$hello", "name": "Al"}))
            .await
            .unwrap(),
        "hello Al"
    );
    let local = toolfunc::connect("local://global").await.unwrap();
    assert_eq!(
        local.run("add", json!({"a": 1, "b": 1})).await.unwrap(),
        json!(2.0)
    );
    for bad in ["ftp://host/api", "local://elsewhere", "no scheme"] {
        let err = toolfunc::connect(bad).await.err().unwrap();
        assert_eq!(err.code(), "BAD_URL", "{bad}");
    }
}

/// A server under a deep prefix, as a reverse proxy forwards it: the client takes
/// the base path as part of its URL, and calls, REST ids and streams stay under it.
#[tokio::test]
async fn a_base_path_is_kept_for_every_kind_of_call() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api = Api::new(demo::catalog()).prefix("/edge/v2/tools");
    tokio::spawn(Server::new().mount(api).unwrap().serve(listener));
    let client = Client::connect(&format!("http://{addr}/edge/v2/tools/"))
        .await
        .unwrap();
    assert_eq!(client.url(), format!("http://{addr}/edge/v2/tools"));
    assert_eq!(
        client.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    let users = UsersClient::new(client.clone());
    assert_eq!(users.get("1".into()).await.unwrap().name, "Alice");
    let items: Vec<Value> = client
        .run_stream("countdown", json!({"count": 2}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, [json!({"tick": 2}), json!({"tick": 1})]);
    // The same server does not answer under the bare path.
    let err = Client::connect(&format!("http://{addr}/api"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 404, "{err}");
}

/// A tool that answers the W3C trace context its call came with.
fn trace_echo() -> ToolFunc {
    ToolFunc::builder("trace")
        .description("Answers the trace context of its call.")
        .handler_sync(|ctx, _| {
            Ok(ctx
                .get::<toolfunc::TraceContext>()
                .map_or(Value::Null, |trace| {
                    json!({"traceparent": trace.traceparent(), "tracestate": trace.tracestate()})
                }))
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_nested_call_sends_on_the_trace_context_its_call_came_with() {
    // No OpenTelemetry subscriber in this test binary: the context a request came
    // with is what the calls made inside it send on, unchanged.
    let inner = Registry::new();
    inner.register(trace_echo()).unwrap();
    let inner = Client::connect(&start(inner).await).await.unwrap();
    // The outer server's tools sit over the inner server's, so that a tool calls
    // them through its context: a nested call, which inherits the call's context.
    let relay = ToolFunc::builder("relay")
        .description("Asks the inner server.")
        .handler(|ctx, _args| async move { ctx.run("trace", json!({})).await })
        .build()
        .unwrap();
    let outer = Registry::from(&inner).isolate();
    outer.register(relay).unwrap();
    let url = start(outer).await;
    let http = reqwest::Client::new();
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let ask = |traceparent: &'static str| {
        http.post(format!("{url}/relay"))
            .header("traceparent", traceparent)
            .header("tracestate", "rojo=00f067aa0ba902b7")
            .header("content-type", "application/json")
            .body("{}")
            .send()
    };
    let answer: Value =
        serde_json::from_str(&ask(parent).await.unwrap().text().await.unwrap()).unwrap();
    assert_eq!(
        answer,
        json!({"traceparent": parent, "tracestate": "rojo=00f067aa0ba902b7"})
    );
    // A malformed `traceparent` is not passed on (nor the `tracestate` with it).
    let answer: Value =
        serde_json::from_str(&ask("00-xyz-01").await.unwrap().text().await.unwrap()).unwrap();
    assert_eq!(answer, Value::Null);
}
