//! `toolfunc::nats` against a real nats-server: discovery, calls, errors with codes
//! and paths, services and REST acts, streaming with backpressure and cancel,
//! deadlines, tools registered at run time across two workers, hidden tools, and
//! bad input answered with clean errors.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/nats.rs"]
mod nats_server;
#[path = "support/sight.rs"]
mod sight;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::nats::async_nats;
use toolfunc::nats::{Client, Worker};
use toolfunc::{CallOptions, Registry, ToolError, ToolFunc, Transport};

use demo::{GreeterClient, UsersClient};
use nats_server::NatsServer;

async fn worker(server: &NatsServer, registry: Registry) -> Worker {
    Worker::builder(registry)
        .connect(&server.url())
        .await
        .expect("the worker starts")
}

async fn raw(server: &NatsServer) -> async_nats::Client {
    async_nats::connect(server.url()).await.unwrap()
}

/// Waits until `check` holds (at most 10 s).
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 10 s");
}

#[tokio::test]
async fn remote_tools_run_by_name_with_their_errors() {
    let server = NatsServer::start();
    let _worker = worker(&server, demo::catalog()).await;
    let client = Client::connect(&server.url()).await.unwrap();
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
    assert_eq!(
        client.get("add").unwrap().definition().params["properties"]["a"]["type"],
        "number"
    );
    assert!(client.has("plus") && !client.has("nope"));
    assert_eq!(client.definitions().len(), 7);
    // The client converts into its registry: what takes a registry takes a client.
    assert!(Registry::from(&client).ptr_eq(client.registry()));
    assert_eq!(
        client.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(
        client.run("plus", json!({"a": 2, "b": 2})).await.unwrap(),
        json!(4.0)
    );
    // Service acts and REST verbs, in their wire form.
    assert_eq!(
        client
            .run("greeter", json!({"act": "$hello", "name": "Ann"}))
            .await
            .unwrap(),
        json!("hello Ann")
    );
    let alice = client
        .run("users", json!({"act": "get", "id": "1"}))
        .await
        .unwrap();
    assert_eq!(alice["name"], "Alice");
    // Errors keep their code, status, data and JSON path.
    let err = client
        .run("users", json!({"act": "get", "id": "99"}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("USER_NOT_FOUND", 404));
    assert_eq!(err.data().unwrap()["what"], "99");
    let err = client
        .run("add", json!({"a": "one", "b": 2}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/a");
    assert_eq!(
        client.run("fail", json!({})).await.unwrap_err().code(),
        "FAILED"
    );
    let err = client.run("nope", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert!(matches!(err, ToolError::NotFound { .. }));
    // Typed service clients work over the NATS transport.
    let users = UsersClient::new(client.clone());
    assert_eq!(users.get("2".into()).await.unwrap().name, "Bob");
    let greeter = GreeterClient::new(client.clone());
    assert!((greeter.mul(3.0, 4.0).await.unwrap() - 12.0).abs() < f64::EPSILON);
    // `toolfunc::connect` takes a nats:// URL too.
    let transport = toolfunc::connect(&server.url()).await.unwrap();
    assert_eq!(
        transport.run("add", json!({"a": 5, "b": 5})).await.unwrap(),
        json!(10.0)
    );
}

#[tokio::test]
async fn any_nats_client_finds_and_calls_the_tools() {
    let server = NatsServer::start();
    let worker = worker(&server, demo::catalog()).await;
    let nats = raw(&server).await;
    // The service answers the standard discovery subjects.
    let info = nats.request("$SRV.INFO.toolfunc", "".into()).await.unwrap();
    let info: Value = serde_json::from_slice(&info.payload).unwrap();
    assert_eq!(info["id"], worker.id());
    let subjects: Vec<&str> = info["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["subject"].as_str())
        .collect();
    assert!(subjects.contains(&"toolfunc.call.add"), "{subjects:?}");
    assert!(subjects.contains(&"toolfunc.tools"), "{subjects:?}");
    // The definitions, and a plain request/reply call.
    let tools = nats.request("toolfunc.tools", "".into()).await.unwrap();
    let tools: Value = serde_json::from_slice(&tools.payload).unwrap();
    assert_eq!(tools["add"]["params"]["required"], json!(["a", "b"]));
    let sum = nats
        .request("toolfunc.call.add", r#"{"a":1,"b":2}"#.into())
        .await
        .unwrap();
    assert_eq!(&sum.payload[..], b"3.0");
    // Without `Tf-Stream`, a streaming tool answers its items in one array.
    let ticks = nats
        .request("toolfunc.call.countdown", r#"{"count":3}"#.into())
        .await
        .unwrap();
    let ticks: Value = serde_json::from_slice(&ticks.payload).unwrap();
    assert_eq!(ticks, json!([{"tick": 3}, {"tick": 2}, {"tick": 1}]));
    // Errors carry the standard service headers and the whole error.
    let err = nats
        .request("toolfunc.call.add", r#"{"a":"x","b":2}"#.into())
        .await
        .unwrap();
    let headers = err.headers.unwrap();
    assert_eq!(
        headers.get("Nats-Service-Error-Code").unwrap().as_str(),
        "400"
    );
    assert_eq!(headers.get("Tf-Error-Code").unwrap().as_str(), "ARGUMENTS");
    let whole: Value = serde_json::from_str(headers.get("Tf-Error").unwrap().as_str()).unwrap();
    assert_eq!(whole["data"]["path"], "/a");
    // Per-endpoint stats count the calls and the error.
    let stats = nats
        .request("$SRV.STATS.toolfunc", "".into())
        .await
        .unwrap();
    let stats: Value = serde_json::from_slice(&stats.payload).unwrap();
    let add = stats["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subject"] == "toolfunc.call.add")
        .unwrap()
        .clone();
    assert_eq!(
        (add["num_requests"].as_u64(), add["num_errors"].as_u64()),
        (Some(2), Some(1))
    );
}

#[tokio::test]
async fn bad_input_gets_clean_errors() {
    let server = NatsServer::with_config("max_payload: 8192");
    let registry = demo::catalog();
    registry
        .register(
            ToolFunc::builder("big")
                .handler_sync(|_ctx, _args| Ok(Value::from("x".repeat(20_000))))
                .build()
                .unwrap(),
        )
        .unwrap();
    let _worker = worker(&server, registry).await;
    let nats = raw(&server).await;
    let code = |message: &async_nats::Message| {
        message
            .headers
            .as_ref()
            .and_then(|h| h.get("Tf-Error-Code"))
            .map(|v| v.as_str().to_owned())
    };
    for garbage in [&b"{not json"[..], b"[1,2]", b"\xff\xfe", b"42"] {
        let answer = nats
            .request("toolfunc.call.add", garbage.to_vec().into())
            .await
            .unwrap();
        assert_eq!(code(&answer).as_deref(), Some("ARGUMENTS"), "{garbage:?}");
    }
    // A malformed header is named.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Timeout", "soon");
    let answer = nats
        .request_with_headers("toolfunc.call.add", headers, r#"{"a":1,"b":1}"#.into())
        .await
        .unwrap();
    assert_eq!(code(&answer).as_deref(), Some("INVALID_HEADER"));
    // A subject no worker serves: no responders.
    let err = nats
        .request("toolfunc.call.nope", "{}".into())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), async_nats::RequestErrorKind::NoResponders);
    // Too large, both ways: the client refuses to send, the worker to answer.
    let client = Client::connect(&server.url()).await.unwrap();
    let err = client
        .run("add", json!({"a": 1, "b": 2, "pad": "x".repeat(10_000)}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("TOO_LARGE", 413));
    let err = client.run("big", json!({})).await.unwrap_err();
    assert_eq!((err.code(), err.status()), ("TOO_LARGE", 413));
    // A non-object argument is refused before it is sent.
    let err = Transport::run(&client, "add", json!([1, 2]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    // The worker still serves.
    assert_eq!(
        client.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
}

#[tokio::test]
async fn hidden_tools_are_not_reachable() {
    let server = NatsServer::start();
    let registry = Registry::new();
    for (name, api) in [("open", true), ("secret", false)] {
        registry
            .register(
                ToolFunc::builder(name)
                    .handler_sync(|_ctx, _args| Ok(json!("ran")))
                    .api(api)
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let _worker = Worker::builder(registry)
        .durable(toolfunc::nats::DurableSettings::new().max_deliver(2))
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    assert_eq!(client.names(), ["open"]);
    // Not as a durable call either.
    let id = client.submit("secret", json!({})).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), client.wait(&id))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(
        client.run("secret", json!({})).await.unwrap_err().code(),
        "NOT_FOUND"
    );
    let nats = raw(&server).await;
    assert!(
        nats.request("toolfunc.call.secret", "{}".into())
            .await
            .is_err()
    );
    // A name that is no subject (wildcards, spaces, empty tokens) is refused before
    // anything is published, and the client's connection stays good.
    for name in ["any.>", "a*", "two words", "a..b", ""] {
        let err = client.run(name, json!({})).await.unwrap_err();
        assert_eq!(err.code(), "NOT_FOUND", "{name}");
        let mut items = client.run_stream(name, json!({}));
        let err = items.next().await.unwrap().unwrap_err();
        assert_eq!(err.code(), "NOT_FOUND", "{name}");
    }
    assert_eq!(client.run("open", json!({})).await.unwrap(), json!("ran"));
}

/// A tool that says which worker ran it.
fn whoami(worker: &'static str) -> ToolFunc {
    ToolFunc::builder("late")
        .handler_sync(move |_ctx, _args| Ok(json!(worker)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn tools_registered_at_run_time_are_served_across_workers() {
    let server = NatsServer::start();
    let (a, b) = (Registry::new(), Registry::new());
    let worker_a = worker(&server, a.clone()).await;
    let worker_b = worker(&server, b.clone()).await;
    let client = Client::connect(&server.url()).await.unwrap();
    assert!(client.names().is_empty());
    // Registered on A only: the client learns of it, and every call reaches A.
    a.register(whoami("a")).unwrap();
    eventually("the client to learn of `late`", || client.has("late")).await;
    assert_eq!(worker_a.tools(), ["late"]);
    for _ in 0..10 {
        assert_eq!(client.run("late", json!({})).await.unwrap(), json!("a"));
    }
    // On B too: the queue group shares the calls.
    b.register(whoami("b")).unwrap();
    eventually("B to serve `late`", || worker_b.tools() == ["late"]).await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        seen.insert(client.run("late", json!({})).await.unwrap().to_string());
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(seen.len(), 2, "both workers take calls: {seen:?}");
    // Removed from A: B still serves it.
    assert!(a.unregister("late"));
    eventually("A to drop `late`", || worker_a.tools().is_empty()).await;
    for _ in 0..10 {
        assert_eq!(client.run("late", json!({})).await.unwrap(), json!("b"));
    }
    // Removed everywhere: no worker serves it.
    assert!(b.unregister("late"));
    eventually("B to drop `late`", || worker_b.tools().is_empty()).await;
    let err = client.run("late", json!({})).await.unwrap_err();
    assert!(matches!(err.code(), "NO_WORKER" | "NOT_FOUND"), "{err}");
}

#[tokio::test]
async fn streams_are_flow_controlled_and_cancelled_by_their_consumer() {
    let server = NatsServer::start();
    let produced = Arc::new(AtomicUsize::new(0));
    let cleaned = Arc::new(AtomicBool::new(false));
    let registry = Registry::new();
    registry
        .register(endless("numbers", &produced, &cleaned))
        .unwrap();
    registry
        .register(
            ToolFunc::builder("bad_stream")
                .stream_handler(|_ctx, _args| async {
                    Ok(futures::stream::iter([
                        Ok(json!(1)),
                        Err(ToolError::custom("BROKE", 500, "broke")),
                    ]))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let _worker = worker(&server, registry).await;
    let client = Client::builder()
        .stream_window(8)
        .connect(&server.url())
        .await
        .unwrap();
    let mut items = client.run_stream("numbers", json!({}));
    assert_eq!(items.next().await.unwrap().unwrap(), json!(0));
    // The consumer stops reading: the producer stops within the window.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ahead = produced.load(Ordering::SeqCst);
    assert!(
        ahead <= 8 + 2,
        "the producer ran {ahead} items ahead of a window of 8"
    );
    // Reading on grants more.
    for n in 1..100 {
        assert_eq!(items.next().await.unwrap().unwrap(), json!(n));
    }
    // Dropping the consumer stops the producer and runs its cleanup.
    drop(items);
    eventually("the stream's cleanup", || cleaned.load(Ordering::SeqCst)).await;
    let stopped = produced.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(produced.load(Ordering::SeqCst), stopped);
    // A stream that fails ends with its error.
    let got: Vec<_> = client.run_stream("bad_stream", json!({})).collect().await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().unwrap(), &json!(1));
    assert_eq!(got[1].as_ref().unwrap_err().code(), "BROKE");
    // The demo countdown, whole.
    let server_catalog = demo::catalog();
    let _demo = Worker::builder(server_catalog)
        .prefix("demo")
        .connect(&server.url())
        .await
        .unwrap();
    let demo_client = Client::connect(&format!("{}/demo", server.url()))
        .await
        .unwrap();
    let ticks: Vec<Value> = demo_client
        .run_stream("countdown", json!({"count": 3}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(
        ticks,
        [json!({"tick": 3}), json!({"tick": 2}), json!({"tick": 1})]
    );
}

#[tokio::test]
async fn deadlines_and_cancels_reach_the_worker() {
    let server = NatsServer::start();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let deadline = Arc::new(std::sync::Mutex::new(None));
    let registry = Registry::new();
    {
        let cancelled = Arc::clone(&cancelled);
        let deadline = Arc::clone(&deadline);
        registry
            .register(
                ToolFunc::builder("wait")
                    .handler(move |ctx, _args| {
                        let cancelled = Arc::clone(&cancelled);
                        *deadline.lock().unwrap() =
                            Some((ctx.deadline(), ctx.caller().map(str::to_owned)));
                        async move {
                            let token = ctx.cancellation_token();
                            ctx.on_cleanup(move || {
                                if token.is_cancelled() {
                                    cancelled.fetch_add(1, Ordering::SeqCst);
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
    }
    let worker = worker(&server, registry).await;
    let client = Client::connect(&server.url()).await.unwrap();
    // The caller's deadline becomes the worker's.
    let err = client
        .with(
            CallOptions::new()
                .timeout(Duration::from_millis(300))
                .caller("ann"),
        )
        .run("wait", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    let (seen, caller) = deadline.lock().unwrap().clone().unwrap();
    assert!(seen.is_some(), "the worker's call has a deadline");
    assert_eq!(caller.as_deref(), Some("ann"));
    eventually("the timed-out call to end on the worker", || {
        worker.in_flight() == 0
    })
    .await;
    // A caller that gives up cancels the call on the worker.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.run("wait", json!({})).await }
    });
    eventually("the call to start", || worker.in_flight() == 1).await;
    let before = cancelled.load(Ordering::SeqCst);
    call.abort();
    eventually("the worker to cancel the call", || {
        cancelled.load(Ordering::SeqCst) > before
    })
    .await;
    eventually("the worker to finish the call", || worker.in_flight() == 0).await;
}

#[tokio::test]
async fn a_stopped_worker_leaves_the_others_serving() {
    let server = NatsServer::start();
    let first = worker(&server, demo::catalog()).await;
    let second = worker(&server, demo::catalog()).await;
    let client = Client::connect(&server.url()).await.unwrap();
    first.stop(Duration::from_secs(1)).await;
    for _ in 0..20 {
        assert_eq!(
            client.run("add", json!({"a": 1, "b": 1})).await.unwrap(),
            json!(2.0)
        );
    }
    second.stop(Duration::from_secs(1)).await;
    let err = client
        .run("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("NO_WORKER", 503));
    // Unreachable servers are named.
    let err = Client::connect("nats://127.0.0.1:1").await.unwrap_err();
    assert_eq!(err.code(), "UNREACHABLE");
}

#[tokio::test]
async fn durable_calls_are_stored_run_once_and_kept() {
    let server = NatsServer::start();
    let client = Client::connect(&server.url()).await;
    // No worker yet: nothing serves, and durable calls are not set up.
    assert_eq!(client.unwrap_err().code(), "NO_WORKER");
    let registry = demo::catalog();
    let runs = Arc::new(AtomicUsize::new(0));
    {
        let runs = Arc::clone(&runs);
        registry
            .register(
                ToolFunc::builder("count")
                    .handler_sync(move |ctx, _args| {
                        Ok(json!({"run": runs.fetch_add(1, Ordering::SeqCst), "id": ctx.call_id()}))
                    })
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let _worker = Worker::builder(registry)
        .durable(toolfunc::nats::DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let id = client.submit("count", json!({})).await.unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), client.wait(&id))
        .await
        .expect("the durable call finished")
        .unwrap();
    assert_eq!(result["run"], 0);
    assert_eq!(
        result["id"],
        json!(id),
        "the worker's Ctx carries the call id"
    );
    // Polled from another client, the outcome is kept.
    let other = Client::connect(&server.url()).await.unwrap();
    match other.poll(&id).await.unwrap() {
        toolfunc::ledger::TaskPoll::Done(Ok(value)) => assert_eq!(value, result),
        poll => panic!("expected the kept outcome, got {poll:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a durable call ran once");
    // Errors are kept too, with their codes.
    let id = client
        .submit("users", json!({"act": "get", "id": "99"}))
        .await
        .unwrap();
    let err = client.wait(&id).await.unwrap_err();
    assert_eq!(err.code(), "USER_NOT_FOUND");
    let id = client
        .submit("add", json!({"a": "x", "b": 1}))
        .await
        .unwrap();
    assert_eq!(client.wait(&id).await.unwrap_err().code(), "ARGUMENTS");
    // A tool no worker has ends as NOT_FOUND, after every worker gave it back.
    let id = client.submit("nope", json!({})).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), client.wait(&id))
        .await
        .expect("an unknown tool's call ends")
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    // An id no call has.
    assert_eq!(
        client.poll("no-such-id").await.unwrap_err().code(),
        "NOT_FOUND"
    );
}

#[tokio::test]
async fn a_worker_at_its_cap_refuses_and_the_client_tries_again() {
    let server = NatsServer::start();
    let _worker = Worker::builder(demo::catalog())
        .max_in_flight(1)
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::builder()
        .attempts(10)
        .connect(&server.url())
        .await
        .unwrap();
    let busy = tokio::spawn({
        let client = client.clone();
        async move { client.run("sleep", json!({"ms": 400})).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Any NATS client is refused at once while the one slot is taken.
    let nats = raw(&server).await;
    let answer = nats
        .request("toolfunc.call.add", r#"{"a":1,"b":1}"#.into())
        .await
        .unwrap();
    let code = answer.headers.as_ref().and_then(|h| h.get("Tf-Error-Code"));
    assert_eq!(
        code.map(async_nats::HeaderValue::as_str),
        Some("OVERLOADED")
    );
    // A toolfunc client tries again (the refused call ran nowhere) and gets through.
    assert_eq!(
        client.run("add", json!({"a": 1, "b": 1})).await.unwrap(),
        json!(2.0)
    );
    assert_eq!(busy.await.unwrap().unwrap(), json!({"slept": 400}));
}

/// A stream that never ends, counting what it made, noting its cleanup.
fn endless(name: &str, produced: &Arc<AtomicUsize>, cleaned: &Arc<AtomicBool>) -> ToolFunc {
    let produced = Arc::clone(produced);
    let cleaned = Arc::clone(cleaned);
    ToolFunc::builder(name)
        .stream_handler(move |ctx, _args| {
            let produced = Arc::clone(&produced);
            let cleaned = Arc::clone(&cleaned);
            async move {
                ctx.on_cleanup(move || cleaned.store(true, Ordering::SeqCst));
                Ok(futures::stream::iter(0..).map(move |n: u64| {
                    produced.fetch_add(1, Ordering::SeqCst);
                    Ok(json!(n))
                }))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_stream_whose_consumer_vanishes_or_runs_out_of_time_stops() {
    let server = NatsServer::start();
    let produced = Arc::new(AtomicUsize::new(0));
    let cleaned = Arc::new(AtomicBool::new(false));
    let registry = Registry::new();
    registry
        .register(endless("endless", &produced, &cleaned))
        .unwrap();
    let worker = worker(&server, registry).await;
    let nats = raw(&server).await;
    // A consumer that asks for one item and heartbeats, then never says a word.
    let inbox = nats.new_inbox();
    let mut replies = nats.subscribe(inbox.clone()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Stream", "1");
    headers.insert("Tf-Heartbeat", "100");
    nats.publish_with_reply_and_headers("toolfunc.call.endless", inbox, headers, "{}".into())
        .await
        .unwrap();
    let first = replies.next().await.unwrap();
    assert_eq!(
        first.headers.unwrap().get("Tf-Kind").unwrap().as_str(),
        "item"
    );
    eventually("the silent consumer's stream to stop", || {
        worker.in_flight() == 0 && cleaned.load(Ordering::SeqCst)
    })
    .await;
    assert!(produced.load(Ordering::SeqCst) <= 3);
    // One with a deadline and no heartbeat: the deadline ends the wait for credit.
    cleaned.store(false, Ordering::SeqCst);
    let inbox = nats.new_inbox();
    let mut replies = nats.subscribe(inbox.clone()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Stream", "1");
    headers.insert("Tf-Timeout", "300");
    nats.publish_with_reply_and_headers("toolfunc.call.endless", inbox, headers, "{}".into())
        .await
        .unwrap();
    let mut kinds = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_secs(5), replies.next()).await
    {
        let headers = message.headers.unwrap_or_default();
        if let Some(code) = headers.get("Tf-Error-Code") {
            kinds.push(code.as_str().to_owned());
            break;
        }
        kinds.push(
            headers
                .get("Tf-Kind")
                .map(|k| k.as_str().to_owned())
                .unwrap_or_default(),
        );
    }
    assert_eq!(kinds, ["item", "TIMEOUT"]);
    eventually("the timed-out stream's cleanup", || {
        cleaned.load(Ordering::SeqCst)
    })
    .await;
    // A toolfunc consumer that reads slowly keeps its stream alive with keep-alives.
    let client = Client::builder()
        .heartbeat(Duration::from_millis(100))
        .stream_window(1)
        .connect(&server.url())
        .await
        .unwrap();
    let mut items = client.run_stream("endless", json!({}));
    assert!(items.next().await.unwrap().is_ok());
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        items.next().await.unwrap().is_ok(),
        "the stream outlived a slow read"
    );
}

#[tokio::test]
async fn concurrent_remote_calls_from_one_handler_are_cancelled_apart() {
    // Two remote calls made at once from inside one local call share its context
    // (and its call id); each still reaches, and cancels, only its own call.
    let server = NatsServer::start();
    let finished = Arc::new(AtomicUsize::new(0));
    let registry = Registry::new();
    {
        let finished = Arc::clone(&finished);
        registry
            .register(
                ToolFunc::builder("nap")
                    .handler(move |_ctx, args| {
                        let finished = Arc::clone(&finished);
                        async move {
                            let ms = args["ms"].as_u64().unwrap_or(0);
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            finished.fetch_add(1, Ordering::SeqCst);
                            Ok(json!(ms))
                        }
                    })
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let worker = worker(&server, registry).await;
    let client = Client::connect(&server.url()).await.unwrap();
    // The remote tool, registered in a local registry beside a local tool that
    // calls it twice at once.
    let local = Registry::new();
    local.register(client.get("nap").unwrap()).unwrap();
    local
        .register(
            ToolFunc::builder("both")
                .handler(|ctx, _args| async move {
                    let short = ctx.with(CallOptions::new().timeout(Duration::from_millis(100)));
                    let plain = ctx.with(CallOptions::new());
                    let (cut, quick) = tokio::join!(
                        short.run("nap", json!({"ms": 5000})),
                        plain.run("nap", json!({"ms": 300}))
                    );
                    assert_eq!(cut.unwrap_err().code(), "TIMEOUT");
                    quick
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let answer = local
        .execute(toolfunc::ToolCall::new("call-1", "both", json!({})))
        .await
        .into_output()
        .unwrap();
    assert_eq!(answer, json!(300));
    eventually("the worker to be idle", || worker.in_flight() == 0).await;
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the timed-out nap was cancelled, the other ran"
    );
}

#[tokio::test]
async fn a_call_asks_the_layers_once_whether_its_caller_sees_the_tool() {
    let server = NatsServer::start();
    let asked = sight::CountsSight::default();
    let _worker = worker(&server, demo::catalog().layer(asked.clone())).await;
    let client = Client::connect(&server.url()).await.unwrap();
    // Discovery asked about every tool it lists; a call asks once more, on the
    // remote floor, and not again when it runs.
    asked.take();
    let sum = client.run("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(sum, json!(3.0));
    assert_eq!(asked.take(), 1);
}
