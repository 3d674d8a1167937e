//! Call middleware (`toolfunc::layer`): layers on registries and runners, in order,
//! on every run method and every surface (in process, HTTP, MCP, LLM messages);
//! refusals before anything runs, argument rewrites, result wrapping, retries,
//! visibility, and the ready-made authorisation, rate, concurrency and tracing
//! layers.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/http.rs"]
mod http_support;
#[path = "support/mcp.rs"]
mod mcp_support;
#[path = "support/sight.rs"]
mod sight;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::layer::{
    self, Call, ConcurrencyLimit, Layer, Next, RateLimit, Reply, ReplyFuture, Trace,
};
use toolfunc::llm::{self, Target};
use toolfunc::{CallOptions, Ctx, Registry, Surface, ToolCall, ToolError, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Deletes everything (hidden from all but `admin`).
#[tool(alias = "nuke")]
fn wipe() -> &'static str {
    "wiped"
}

/// Counts down from `from`.
#[tool]
fn countdown(from: u32) -> impl futures::Stream<Item = u32> + Send {
    futures::stream::iter((1..=from).rev())
}

/// Sleeps `ms` milliseconds, then answers.
#[tool]
async fn nap(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// Adds one through a nested call of `add`.
#[tool]
async fn plus_one(ctx: &Ctx, n: f64) -> Result<Value, ToolError> {
    ctx.run("add", json!({"a": n, "b": 1})).await
}

/// Says who called and from where.
#[tool]
fn whoami(ctx: &Ctx) -> Value {
    json!({"caller": ctx.caller(), "surface": format!("{:?}", ctx.surface())})
}

static FLAKY: AtomicUsize = AtomicUsize::new(0);

/// Fails the first time it is called, then answers `ok`.
#[tool]
fn flaky() -> Result<&'static str, ToolError> {
    if FLAKY.fetch_add(1, Ordering::SeqCst) == 0 {
        Err(ToolError::custom("UNAVAILABLE", 503, "try again"))
    } else {
        Ok("ok")
    }
}

/// Records what each layer saw, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, entry: String) {
        self.0.lock().unwrap().push(entry);
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A layer that writes `name:tool:caller:surface` before the call and `name:done`
/// after it.
struct Named(&'static str, Log);

impl Layer for Named {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        self.1.push(format!(
            "{}:{}:{}:{:?}",
            self.0,
            call.tool(),
            call.caller().unwrap_or("-"),
            call.surface()
        ));
        let (name, log) = (self.0, self.1.clone());
        ReplyFuture::new(async move {
            let reply = next.run(call).await;
            log.push(format!("{name}:done"));
            reply
        })
    }
}

fn forbidden() -> ToolError {
    ToolError::custom("FORBIDDEN", 403, "not yours to run")
}

/// Only `admin` sees and runs `wipe`.
fn guarded() -> Registry {
    Registry::global()
        .isolate()
        .layer(layer::authorize(|call: &Call| {
            if call.tool() == "wipe" && call.caller() != Some("admin") {
                return Err(forbidden());
            }
            Ok(())
        }))
        .layer(layer::visibility(|tool, viewer| {
            tool.name != "wipe" || viewer.caller() == Some("admin")
        }))
}

#[tokio::test]
async fn layers_run_in_order_parents_first_then_the_runner() {
    let log = Log::default();
    let parent = Registry::global()
        .isolate()
        .layer(Named("parent", log.clone()));
    let child = parent.isolate().layer(Named("child", log.clone()));
    let runner = child
        .with(CallOptions::new().caller("ann"))
        .layer(Named("runner", log.clone()));
    assert_eq!(
        runner.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
    assert_eq!(
        log.take(),
        [
            "parent:add:ann:InProcess",
            "child:add:ann:InProcess",
            "runner:add:ann:InProcess",
            "runner:done",
            "child:done",
            "parent:done"
        ]
    );
    // The parent's calls do not pass the child's layers.
    parent.run_sync("add", json!({"a": 1, "b": 2})).unwrap();
    assert_eq!(log.take(), ["parent:add:-:InProcess", "parent:done"]);
}

#[tokio::test]
async fn every_run_method_passes_the_layers() {
    let log = Log::default();
    let registry = Registry::global().isolate().layer(Named("l", log.clone()));
    let args = json!({"a": 1, "b": 2});
    registry.run("add", args.clone()).await.unwrap();
    registry.run_sync("add", args.clone()).unwrap();
    registry.run("add", vec![json!(1), json!(2)]).await.unwrap();
    registry.run_sync("add", vec![json!(1), json!(2)]).unwrap();
    registry.spawn("add", args.clone()).await.unwrap();
    let items: Vec<_> = registry
        .run_stream("countdown", json!({"from": 2}))
        .collect()
        .await;
    assert_eq!(items.len(), 2);
    let result = registry
        .execute(ToolCall::new("c1", "add", args.clone()))
        .await;
    assert!(result.is_ok());
    // A nested call passes them too.
    assert_eq!(
        registry.run("plus_one", json!({"n": 1})).await.unwrap(),
        json!(2.0)
    );
    let seen: Vec<String> = log.take().into_iter().filter(|e| e != "l:done").collect();
    assert_eq!(
        seen,
        [
            "l:add:-:InProcess",
            "l:add:-:InProcess",
            "l:add:-:InProcess",
            "l:add:-:InProcess",
            "l:add:-:InProcess",
            "l:countdown:-:InProcess",
            "l:add:-:InProcess",
            "l:plus_one:-:InProcess",
            "l:add:-:InProcess",
        ]
    );
}

#[tokio::test]
async fn a_refusal_comes_before_admission_argument_check_and_handler() {
    let entered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&entered);
    let registry = Registry::global()
        .isolate()
        .layer(layer::authorize(move |call: &Call| {
            count.fetch_add(1, Ordering::SeqCst);
            if call.caller().is_none() {
                return Err(ToolError::custom("UNAUTHORIZED", 401, "who are you?"));
            }
            Ok(())
        }));
    // Bad arguments, but the refusal is what the caller learns.
    let err = registry
        .run("add", json!({"a": "not a number"}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("UNAUTHORIZED", 401));
    let err = registry.run_sync("add", json!(42)).unwrap_err();
    assert_eq!(err.code(), "UNAUTHORIZED");
    let stream_err = registry
        .run_stream("countdown", json!({"from": 3}))
        .next()
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(stream_err.code(), "UNAUTHORIZED");
    assert_eq!(entered.load(Ordering::SeqCst), 3);
    // Let through, the call is checked and runs as usual.
    let signed = registry.with(CallOptions::new().caller("ann"));
    let err = signed
        .run("add", json!({"a": "x", "b": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(
        signed.run("add", json!({"a": 1, "b": 1})).await.unwrap(),
        json!(2.0)
    );
}

#[tokio::test]
async fn a_layer_rewrites_arguments_and_wraps_values_and_streams() {
    struct Doubler;
    impl Layer for Doubler {
        fn call(&self, mut call: Call, next: Next) -> ReplyFuture {
            if let Some(a) = call.args_mut().get_mut("a") {
                *a = json!(a.as_f64().unwrap_or_default() * 2.0);
            }
            ReplyFuture::new(async move {
                Ok(match next.run(call).await? {
                    Reply::Value(value) => Reply::Value(json!({"wrapped": value})),
                    Reply::Stream(items) => {
                        Reply::Stream(items.map(|item| item.map(|v| json!({"tick": v}))).boxed())
                    }
                })
            })
        }
    }
    let registry = Registry::global().isolate().layer(Doubler);
    assert_eq!(
        registry.run("add", json!({"a": 5, "b": 1})).await.unwrap(),
        json!({"wrapped": 11.0})
    );
    let items: Vec<Value> = registry
        .run_stream("countdown", json!({"from": 2}))
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(items, [json!({"tick": 2}), json!({"tick": 1})]);
    // `run` of a streaming tool: the collected array, wrapped once.
    assert_eq!(
        registry.run("countdown", json!({"from": 2})).await.unwrap(),
        json!({"wrapped": [2, 1]})
    );
}

#[tokio::test]
async fn a_layer_retries_a_failed_call() {
    struct Retry;
    impl Layer for Retry {
        fn call(&self, call: Call, next: Next) -> ReplyFuture {
            ReplyFuture::new(async move {
                let again = call.retry();
                let second = next.clone();
                match next.run(call).await {
                    Err(err) if err.code() == "UNAVAILABLE" => second.run(again).await,
                    other => other,
                }
            })
        }
    }
    let registry = Registry::global().isolate().layer(Retry);
    assert_eq!(registry.run("flaky", json!({})).await.unwrap(), "ok");
    assert_eq!(FLAKY.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_hidden_tool_is_neither_listed_nor_callable() {
    let registry = guarded();
    let guest = registry.with(CallOptions::new().caller("guest"));
    let admin = registry.with(CallOptions::new().caller("admin"));
    let names =
        |defs: Vec<toolfunc::ToolDefinition>| defs.into_iter().map(|d| d.name).collect::<Vec<_>>();
    assert!(!names(guest.definitions()).contains(&"wipe".to_owned()));
    assert!(names(guest.definitions()).contains(&"add".to_owned()));
    assert!(names(admin.definitions()).contains(&"wipe".to_owned()));
    // Every way of calling it answers as for an unknown tool, by the name used.
    for name in ["wipe", "nuke"] {
        let err = guest.run(name, json!({})).await.unwrap_err();
        assert_eq!(err.code(), "NOT_FOUND");
        assert!(err.to_string().contains(name), "{err}");
        assert_eq!(
            guest.run_sync(name, json!({})).unwrap_err().code(),
            "NOT_FOUND"
        );
        let streamed = guest.run_stream(name, json!({})).next().await.unwrap();
        assert_eq!(streamed.unwrap_err().code(), "NOT_FOUND");
        assert_eq!(
            guest.spawn(name, json!({})).await.unwrap_err().code(),
            "NOT_FOUND"
        );
    }
    assert_eq!(admin.run("nuke", json!({})).await.unwrap(), "wiped");
    // LLM exports made for a caller leave it out.
    let exported = llm::tools_for(&guest, Target::OpenAi).unwrap();
    assert!(
        exported
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["function"]["name"] != "wipe")
    );
    let exported = llm::tools_for(&admin, Target::OpenAi).unwrap();
    assert!(
        exported
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "wipe")
    );
}

#[tokio::test]
async fn llm_tool_calls_pass_the_layers_as_their_caller() {
    let log = Log::default();
    let registry = guarded().layer(Named("l", log.clone()));
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "whoami", "arguments": "{}"}},
        {"id": "2", "type": "function", "function": {"name": "wipe", "arguments": "{}"}}
    ]});
    let guest = registry.with(CallOptions::new().caller("guest"));
    let reply = llm::run_tool_calls(&guest, Target::OpenAi, &message)
        .await
        .unwrap();
    let content: Value = serde_json::from_str(reply[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"caller": "guest", "surface": "Llm"}));
    assert!(reply[1]["content"].as_str().unwrap().contains("NOT_FOUND"));
    assert_eq!(log.take(), ["l:whoami:guest:Llm", "l:done"]);
}

#[tokio::test]
async fn a_layer_that_waits_gives_sync_callers_an_error_not_a_hang() {
    struct Waits;
    impl Layer for Waits {
        fn call(&self, call: Call, next: Next) -> ReplyFuture {
            ReplyFuture::new(async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                next.run(call).await
            })
        }
    }
    let registry = Registry::global().isolate().layer(Waits);
    let err = registry
        .run_sync("add", json!({"a": 1, "b": 2}))
        .unwrap_err();
    assert_eq!(err.code(), "ASYNC_ONLY");
    assert_eq!(
        registry.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        json!(3.0)
    );
}

#[tokio::test]
async fn a_panicking_layer_fails_the_call() {
    struct Panics;
    impl Layer for Panics {
        fn call(&self, _: Call, _: Next) -> ReplyFuture {
            panic!("layer bug")
        }
    }
    let registry = Registry::global().isolate().layer(Panics);
    let err = registry
        .run("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PANICKED");
    let err = registry
        .run_sync("add", json!({"a": 1, "b": 2}))
        .unwrap_err();
    assert_eq!(err.code(), "PANICKED");
}

#[tokio::test]
async fn rate_limit_per_caller_with_bounded_memory() {
    let registry = Registry::global().isolate().layer(
        RateLimit::new(2, Duration::from_secs(3600))
            .per_caller()
            .max_callers(2),
    );
    let run = |caller: &str| {
        registry
            .with(CallOptions::new().caller(caller))
            .run_sync("add", json!({"a": 1, "b": 1}))
    };
    assert!(run("a").is_ok());
    assert!(run("a").is_ok());
    let err = run("a").unwrap_err();
    assert_eq!((err.code(), err.status()), ("RATE_LIMITED", 429));
    assert!(err.data().unwrap()["retryAfterMs"].as_u64().unwrap() > 0);
    assert!(run("b").is_ok());
    // Past two tracked callers, made-up ids share one allowance: they cannot
    // escape the limit by changing their name.
    assert!(run("x1").is_ok());
    assert!(run("x2").is_ok());
    assert_eq!(run("x3").unwrap_err().code(), "RATE_LIMITED");
    assert_eq!(run("x4").unwrap_err().code(), "RATE_LIMITED");
}

#[tokio::test]
async fn concurrency_limit_holds_a_slot_until_the_stream_ends() {
    let registry = Registry::global().isolate().layer(ConcurrencyLimit::new(1));
    let mut stream = registry.run_stream("countdown", json!({"from": 3}));
    assert_eq!(stream.next().await.unwrap().unwrap(), json!(3));
    let err = registry
        .run("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "BUSY");
    drop(stream);
    assert!(registry.run("add", json!({"a": 1, "b": 1})).await.is_ok());
    // Two slow calls at once: the second is refused while the first runs.
    let first = registry.spawn("nap", json!({"ms": 300}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        registry
            .run("nap", json!({"ms": 1}))
            .await
            .unwrap_err()
            .code(),
        "BUSY"
    );
    assert_eq!(first.await.unwrap(), json!(300));
    assert!(registry.run("nap", json!({"ms": 1})).await.is_ok());
}

/// A `tracing` subscriber that keeps each event's fields as text.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Events {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut text = format!("span {} ", span.metadata().name());
        span.record(&mut Fields(&mut text));
        self.0.lock().unwrap().push(text);
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut text = format!("{} ", event.metadata().level());
        event.record(&mut Fields(&mut text));
        self.0.lock().unwrap().push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn trace_logs_a_span_and_a_timed_event_per_call() {
    let events = Events::default();
    let registry = Registry::global().isolate().layer(Trace::new());
    tracing::subscriber::with_default(events.clone(), || {
        registry
            .with(CallOptions::new().caller("ann"))
            .run_sync("add", json!({"a": 1, "b": 2}))
            .unwrap();
        let err = registry.run_sync("add", json!({"a": "x"})).unwrap_err();
        assert_eq!(err.code(), "ARGUMENTS");
    });
    let events = events.0.lock().unwrap().clone();
    let span = events
        .iter()
        .find(|e| e.starts_with("span tool_call"))
        .unwrap();
    assert!(
        span.contains("tool=\"add\"") && span.contains("caller=\"ann\""),
        "{span}"
    );
    let ok = events
        .iter()
        .find(|e| e.contains("tool call finished"))
        .unwrap();
    assert!(ok.starts_with("INFO") && ok.contains("elapsed_ms="), "{ok}");
    let failed = events
        .iter()
        .find(|e| e.contains("tool call failed"))
        .unwrap();
    assert!(
        failed.starts_with("WARN") && failed.contains("code=\"ARGUMENTS\""),
        "{failed}"
    );
}

// ---- HTTP -----------------------------------------------------------------------

/// Reads a bearer token from the HTTP headers the surface attached.
fn bearer(call: &Call) -> Option<String> {
    let headers = call.ctx().get::<toolfunc::http::HeaderMap>()?;
    let value = headers.get("authorization")?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(str::to_owned)
}

#[tokio::test]
async fn http_calls_and_discovery_pass_the_layers() {
    let log = Log::default();
    let registry = guarded()
        .layer(layer::authorize(|call: &Call| {
            if call.surface() == Surface::Http && bearer(call).as_deref() != Some("s3cret") {
                return Err(ToolError::custom(
                    "UNAUTHORIZED",
                    401,
                    "a bearer token is required",
                ));
            }
            Ok(())
        }))
        .layer(Named("l", log.clone()));
    let addr = http_support::start(toolfunc::http::Api::new(registry)).await;
    let auth = ("authorization", "Bearer s3cret");
    let json = ("content-type", "application/json");
    // Refused without the token: 401, and nothing ran.
    let refused = http_support::post(addr, "/api/add", r#"{"a":1,"b":2}"#).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["errorCode"], "UNAUTHORIZED");
    assert!(log.take().is_empty());
    let ok = http_support::call(
        addr,
        "POST",
        "/api/whoami",
        &[auth, json, ("x-client-id", "guest")],
        Some("{}"),
    )
    .await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json(), json!({"caller": "guest", "surface": "Http"}));
    assert_eq!(log.take(), ["l:whoami:guest:Http", "l:done"]);
    // Discovery lists what the caller may see.
    let guest = http_support::call(addr, "GET", "/api", &[("x-client-id", "guest")], None).await;
    assert!(guest.json().get("wipe").is_none());
    assert!(guest.json().get("add").is_some());
    let admin = http_support::call(addr, "GET", "/api", &[("x-client-id", "admin")], None).await;
    assert!(admin.json().get("wipe").is_some());
    // So does the OpenAPI document.
    for (caller, sees) in [("guest", false), ("admin", true)] {
        let doc = http_support::call(
            addr,
            "GET",
            "/api/openapi.json",
            &[("x-client-id", caller)],
            None,
        )
        .await
        .json();
        assert!(doc["paths"].get("/api/add").is_some(), "{caller}");
        assert_eq!(doc["paths"].get("/api/wipe").is_some(), sees, "{caller}");
    }
    // A hidden tool is not found, by its name or an alias.
    for path in ["/api/wipe", "/api/nuke"] {
        let hidden = http_support::call(
            addr,
            "POST",
            path,
            &[auth, json, ("x-client-id", "guest")],
            Some("{}"),
        )
        .await;
        assert_eq!(hidden.status, 404, "{path}");
        assert_eq!(hidden.json()["errorCode"], "NOT_FOUND");
    }
    // A malformed header does not skip the layers' judgement: the hidden tool is
    // still not found (no 400 that would say it exists), a visible one gets the
    // header's error.
    for (path, status, code) in [
        ("/api/wipe", 404, "NOT_FOUND"),
        ("/api/add", 400, "INVALID_HEADER"),
    ] {
        let bad = http_support::call(
            addr,
            "POST",
            path,
            &[
                auth,
                json,
                ("x-client-id", "guest"),
                ("rpc-timeout", "soon"),
            ],
            Some(r#"{"a":1,"b":2}"#),
        )
        .await;
        assert_eq!(bad.status, status, "{path}");
        assert_eq!(bad.json()["errorCode"], code, "{path}");
    }
    let wiped = http_support::call(
        addr,
        "POST",
        "/api/wipe",
        &[auth, json, ("x-client-id", "admin")],
        Some("{}"),
    )
    .await;
    assert_eq!(wiped.status, 200);
}

// ---- MCP ------------------------------------------------------------------------

#[tokio::test]
async fn mcp_tools_list_and_calls_pass_the_layers() {
    let log = Log::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let registry = Registry::global()
        .isolate()
        .layer(layer::visibility(|tool, viewer| {
            tool.name != "wipe" || viewer.caller() == Some("admin")
        }))
        .layer(layer::before(move |call: &mut Call| {
            let client = call.ctx().get::<toolfunc::mcp::ClientInfo>().cloned();
            let has_headers = call.ctx().get::<toolfunc::http::HeaderMap>().is_some();
            record.lock().unwrap().push((client, has_headers));
            Ok(())
        }))
        .layer(Named("l", log.clone()));
    let url = mcp_support::serve_http(toolfunc::mcp::Server::new(registry).router()).await;
    let client = reqwest::Client::new();
    let list = mcp_support::Answer::read(
        mcp_support::modern_request(&client, &url, 1, "tools/list", json!({})),
        mcp_support::LIMIT,
    )
    .await;
    let tools = list.response(1)["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"add") && !names.contains(&"wipe"),
        "{names:?}"
    );
    let call = mcp_support::Answer::read(
        mcp_support::modern_request(
            &client,
            &url,
            2,
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        ),
        mcp_support::LIMIT,
    )
    .await;
    let result = &call.response(2)["result"];
    assert_eq!(
        result["structuredContent"],
        json!({"caller": "raw-test-client", "surface": "Mcp"}),
        "{result}"
    );
    assert_eq!(log.take(), ["l:whoami:raw-test-client:Mcp", "l:done"]);
    let (client_info, has_headers) = seen.lock().unwrap()[0].clone();
    assert_eq!(client_info.unwrap().name, "raw-test-client");
    assert!(has_headers);
    let hidden = mcp_support::Answer::read(
        mcp_support::modern_request(
            &client,
            &url,
            3,
            "tools/call",
            json!({"name": "wipe", "arguments": {}}),
        ),
        mcp_support::LIMIT,
    )
    .await;
    let error = &hidden.response(3)["error"];
    assert_eq!(error["data"]["code"], "NOT_FOUND", "{error}");
    assert!(log.take().is_empty());
}

#[tokio::test]
async fn a_refilled_bucket_makes_room_for_a_new_caller() {
    let registry = Registry::global().isolate().layer(
        RateLimit::new(1, Duration::from_millis(50))
            .per_caller()
            .max_callers(1),
    );
    let run = |caller: &str| {
        registry
            .with(CallOptions::new().caller(caller))
            .run_sync("add", json!({"a": 1, "b": 1}))
    };
    assert!(run("a").is_ok());
    assert_eq!(run("a").unwrap_err().code(), "RATE_LIMITED");
    // `a` has refilled: as good as new, it is dropped to make room for `b`, who then
    // has a bucket of its own (not the shared one past the cap).
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(run("b").is_ok());
    assert_eq!(run("b").unwrap_err().code(), "RATE_LIMITED");
    assert!(run("nobody").is_ok(), "the shared allowance is untouched");
}

#[tokio::test]
async fn per_caller_limits_refuse_overlong_callers_and_keep_a_byte_budget() {
    let rate = Registry::global().isolate().layer(
        RateLimit::new(1, Duration::from_secs(3600))
            .per_caller()
            .max_caller_bytes(64)
            .max_bytes(100),
    );
    let run = |caller: String| {
        rate.with(CallOptions::new().caller(caller))
            .run_sync("add", json!({"a": 1, "b": 1}))
    };
    // A caller past the cap is refused with a clear code, and never kept.
    let long = run("x".repeat(65)).unwrap_err();
    assert_eq!((long.code(), long.status()), ("TOO_LONG", 400));
    assert_eq!(long.data().unwrap()["max"], 64);
    // Two 40-byte names fit the 100-byte budget; past it, new names share one
    // allowance, however many of them come.
    assert!(run("a".repeat(40)).is_ok());
    assert!(run("b".repeat(40)).is_ok());
    assert!(run("c".repeat(40)).is_ok());
    assert_eq!(run("d".repeat(40)).unwrap_err().code(), "RATE_LIMITED");
    assert_eq!(run("a".repeat(40)).unwrap_err().code(), "RATE_LIMITED");

    let slots = Registry::global().isolate().layer(
        ConcurrencyLimit::new(1)
            .per_caller()
            .max_caller_bytes(64)
            .max_bytes(100),
    );
    let runner = |caller: String| slots.with(CallOptions::new().caller(caller));
    let long = runner("x".repeat(65))
        .run("nap", json!({"ms": 1}))
        .await
        .unwrap_err();
    assert_eq!((long.code(), long.status()), ("TOO_LONG", 400));
    let a = runner("a".repeat(40)).spawn("nap", json!({"ms": 300}));
    let b = runner("b".repeat(40)).spawn("nap", json!({"ms": 300}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The budget is taken by callers in flight: a third is refused until one ends.
    let c = runner("c".repeat(40));
    assert_eq!(
        c.run("nap", json!({"ms": 1})).await.unwrap_err().code(),
        "BUSY"
    );
    assert_eq!(a.await.unwrap(), json!(300));
    b.await.unwrap();
    assert!(c.run("nap", json!({"ms": 1})).await.is_ok());
}

#[tokio::test]
async fn a_per_caller_limit_before_a_shared_one_gives_each_caller_a_share() {
    let registry = Registry::global()
        .isolate()
        .layer(ConcurrencyLimit::new(1).per_caller())
        .layer(ConcurrencyLimit::new(2));
    let ann = registry.with(CallOptions::new().caller("ann"));
    let bob = registry.with(CallOptions::new().caller("bob"));
    let first = ann.spawn("nap", json!({"ms": 300}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Ann floods: refused at her share, before she takes from everyone's.
    for _ in 0..3 {
        let err = ann.run("nap", json!({"ms": 1})).await.unwrap_err();
        assert_eq!(err.code(), "BUSY");
    }
    assert!(bob.run("nap", json!({"ms": 1})).await.is_ok());
    assert_eq!(first.await.unwrap(), json!(300));
}

#[tokio::test]
async fn each_call_asks_the_layers_once_whether_its_caller_sees_the_tool() {
    let asked = sight::CountsSight::default();
    let registry = Registry::global().isolate().layer(asked.clone());
    let taken = || asked.take();
    // In process.
    assert_eq!(
        registry.run("add", json!({"a": 1, "b": 2})).await.unwrap(),
        3.0
    );
    assert_eq!(taken(), 1, "in process");
    // Over HTTP: found and judged on the remote floor, not again when it runs.
    let addr = http_support::start(toolfunc::http::Api::new(registry.clone())).await;
    let answer = http_support::post(addr, "/api/add", r#"{"a":1,"b":2}"#).await;
    assert_eq!(answer.status, 200);
    assert_eq!(taken(), 1, "HTTP");
    // Over MCP.
    let url = mcp_support::serve_http(toolfunc::mcp::Server::new(registry).router()).await;
    let call = mcp_support::Answer::read(
        mcp_support::modern_request(
            &reqwest::Client::new(),
            &url,
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        ),
        mcp_support::LIMIT,
    )
    .await;
    assert_eq!(call.response(1)["result"]["isError"], false);
    assert_eq!(taken(), 1, "MCP");
}
