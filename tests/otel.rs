//! One trace across surfaces, exported through OpenTelemetry (feature `otel`) to the
//! SDK's in-memory exporter: a call's span is the child of its caller's, whether the
//! caller's context came as an HTTP `traceparent` header, an MCP request's
//! `_meta.traceparent`, or a NATS header; a remote call made from inside a tool
//! carries it on; spans are named and filled as OpenTelemetry's semantic
//! conventions say.
#![cfg(feature = "otel")]

#[path = "support/mcp.rs"]
mod mcp_support;
#[path = "support/nats.rs"]
mod nats_server;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use serde_json::{Value, json};
use toolfunc::http::{Api, Server};
use toolfunc::{Registry, ToolError, ToolFunc, otel};
use tracing::Instrument;

use mcp_support::Pipe;
use nats_server::NatsServer;

/// The exporter every test's spans go to (one global subscriber per process), and
/// the guard that flushes it.
fn exporter() -> &'static (InMemorySpanExporter, otel::Guard) {
    static OTEL: OnceLock<(InMemorySpanExporter, otel::Guard)> = OnceLock::new();
    OTEL.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let guard = otel::Builder::new("toolfunc-tests")
            .exporter(exporter.clone())
            .install()
            .expect("no other subscriber in this test binary");
        (exporter, guard)
    })
}

/// A fresh remote caller's `traceparent`: its trace id and span id.
fn remote_parent() -> (String, TraceId, SpanId) {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let trace = format!("4bf92f3577b34da6a3ce929d{n:08x}");
    let span = format!("00f067aa{n:08x}");
    (
        format!("00-{trace}-{span}-01"),
        TraceId::from_hex(&trace).expect("hex"),
        SpanId::from_hex(&span).expect("hex"),
    )
}

/// The spans of `trace` once every name in `names` is among them (10 s at most).
async fn spans_of(trace: TraceId, names: &[&str]) -> Vec<SpanData> {
    let (exporter, guard) = exporter();
    for _ in 0..200 {
        guard.flush().expect("flushes");
        let spans: Vec<SpanData> = exporter
            .get_finished_spans()
            .expect("readable")
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect();
        if names
            .iter()
            .all(|name| spans.iter().any(|s| s.name == *name))
        {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let seen: Vec<_> = exporter
        .get_finished_spans()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .map(|s| s.name.to_string())
        .collect();
    panic!("spans {names:?} of trace {trace} did not all end within 10 s; saw {seen:?}");
}

/// The OpenTelemetry span context of `span`.
fn context_of(span: &tracing::Span) -> opentelemetry::trace::SpanContext {
    use opentelemetry::trace::TraceContextExt;
    use toolfunc::otel::crates::tracing_opentelemetry::OpenTelemetrySpanExt;
    span.context().span().span_context().clone()
}

/// The one span named `name` whose parent is `parent`.
fn child<'a>(spans: &'a [SpanData], parent: SpanId, name: &str) -> &'a SpanData {
    let found: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent && s.name == name)
        .collect();
    let names: Vec<_> = spans
        .iter()
        .map(|s| {
            (
                s.name.to_string(),
                s.parent_span_id,
                s.span_context.span_id(),
            )
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one `{name}` span under {parent}; the spans: {names:#?}"
    );
    found[0]
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn add() -> ToolFunc {
    ToolFunc::builder("add")
        .description("Adds two numbers.")
        .handler_sync(|_, args| {
            let number = |key: &str| args[key].as_f64().unwrap_or(0.0);
            Ok(json!(number("a") + number("b")))
        })
        .build()
        .expect("a valid tool")
}

fn fail() -> ToolFunc {
    ToolFunc::builder("fail")
        .description("Always fails.")
        .handler_sync(|_, _| Err(ToolError::custom("NO_LUCK", 409, "not this time")))
        .build()
        .expect("a valid tool")
}

fn registry(tools: Vec<ToolFunc>) -> Registry {
    let registry = Registry::new();
    for tool in tools {
        registry.register(tool).expect("a fresh registry");
    }
    registry
}

async fn serve(registry: Registry) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    let server = Server::new().mount(Api::new(registry)).expect("mounts");
    tokio::spawn(server.serve(listener));
    format!("http://{addr}/api")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_call_is_a_child_of_its_traceparent() {
    exporter();
    let url = serve(registry(vec![add(), fail()])).await;
    let http = reqwest::Client::new();
    let (parent, trace, remote) = remote_parent();
    let answer = http
        .post(format!("{url}/add"))
        .header("traceparent", &parent)
        .header("tracestate", "congo=t61rcWkgMzE")
        .header("content-type", "application/json")
        .body(json!({"a": 1, "b": 2}).to_string())
        .send()
        .await
        .expect("answers");
    assert_eq!(answer.status(), 200);

    let spans = spans_of(trace, &["POST /api/add", "execute_tool add"]).await;
    let server = child(&spans, remote, "POST /api/add");
    assert_eq!(server.span_kind, SpanKind::Server);
    assert_eq!(
        attribute(server, "http.request.method").as_deref(),
        Some("POST")
    );
    assert_eq!(attribute(server, "http.route").as_deref(), Some("/api/add"));
    assert_eq!(
        attribute(server, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        server.span_context.trace_state().header(),
        "congo=t61rcWkgMzE"
    );
    let tool = child(&spans, server.span_context.span_id(), "execute_tool add");
    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(
        attribute(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attribute(tool, "gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(tool.status, Status::Unset);

    // A failure: the tool's error code is the span's `error.type`, its status Error.
    let (parent, trace, remote) = remote_parent();
    let answer = http
        .post(format!("{url}/fail"))
        .header("traceparent", &parent)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("answers");
    assert_eq!(answer.status(), 409);
    let spans = spans_of(trace, &["POST /api/fail", "execute_tool fail"]).await;
    let server = child(&spans, remote, "POST /api/fail");
    assert_eq!(
        attribute(server, "http.response.status_code").as_deref(),
        Some("409")
    );
    assert_eq!(attribute(server, "error.type").as_deref(), Some("NO_LUCK"));
    let tool = child(&spans, server.span_context.span_id(), "execute_tool fail");
    assert_eq!(attribute(tool, "error.type").as_deref(), Some("NO_LUCK"));
    assert!(
        matches!(tool.status, Status::Error { .. }),
        "{:?}",
        tool.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_traceparent_starts_a_trace_of_its_own() {
    exporter();
    let url = serve(registry(vec![add()])).await;
    let answer = reqwest::Client::new()
        .post(format!("{url}/add"))
        .header("traceparent", "00-not-a-trace-context")
        .header("content-type", "application/json")
        .body(json!({"a": 1, "b": 2}).to_string())
        .send()
        .await
        .expect("answers");
    assert_eq!(answer.status(), 200);
    assert_eq!(
        serde_json::from_str::<Value>(&answer.text().await.expect("a body")).expect("JSON"),
        json!(3.0),
        "the call runs as if the header had not come"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_is_a_child_of_its_meta_traceparent() {
    exporter();
    let (mut pipe, _) = Pipe::connect(toolfunc::mcp::Server::new(registry(vec![add()]))).await;
    let (parent, trace, remote) = remote_parent();
    let answer = pipe
        .request(
            "tools/call",
            json!({
                "name": "add",
                "arguments": {"a": 1, "b": 2},
                "_meta": {"traceparent": parent, "tracestate": "congo=t61rcWkgMzE"}
            }),
        )
        .await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");

    let spans = spans_of(trace, &["tools/call add", "execute_tool add"]).await;
    let mcp = child(&spans, remote, "tools/call add");
    assert_eq!(mcp.span_kind, SpanKind::Server);
    assert_eq!(
        attribute(mcp, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attribute(mcp, "gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(
        attribute(mcp, "jsonrpc.request.id").as_deref(),
        Some(answer["id"].to_string().as_str())
    );
    let tool = child(&spans, mcp.span_context.span_id(), "execute_tool add");
    assert_eq!(
        attribute(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );

    // A `_meta` trace context that is not one is ignored: the call runs.
    for meta in [
        json!({"traceparent": 42}),
        json!({"traceparent": "00-zz-01", "tracestate": ["a"]}),
        json!({"traceparent": "x".repeat(10_000), "baggage": "k=v"}),
    ] {
        let answer = pipe
            .request(
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}),
            )
            .await;
        assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    }
    pipe.close().await;
}

/// client → HTTP server → tool → nested NATS call → worker → tool: one trace, each
/// span the child of the one before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_goes_from_a_client_over_http_and_nats_to_a_worker() {
    exporter();
    let nats = NatsServer::start();
    let _worker = toolfunc::nats::Worker::builder(registry(vec![add()]))
        .connect(&nats.url())
        .await
        .expect("the worker starts");
    let workers = nats_server::client_finding(&nats.url(), &["add"]).await;
    let relay = ToolFunc::builder("relay")
        .description("Adds on a worker.")
        .handler(move |_ctx, args| {
            let workers = workers.clone();
            async move { workers.run("add", args).await }
        })
        .build()
        .expect("a valid tool");
    let url = serve(registry(vec![relay])).await;
    let client = toolfunc::http::Client::connect(&url)
        .await
        .expect("the HTTP client connects");

    let root = tracing::info_span!("client request");
    let answer = client
        .run("relay", json!({"a": 2, "b": 3}))
        .instrument(root.clone())
        .await
        .expect("the call runs");
    assert_eq!(answer, json!(5.0));
    let root_id = context_of(&root);
    drop(root);
    let trace = root_id.trace_id();

    let spans = spans_of(
        trace,
        &[
            "client request",
            "POST",
            "POST /api/relay",
            "execute_tool relay",
            "send toolfunc.call.add",
            "process toolfunc.call.add",
            "execute_tool add",
        ],
    )
    .await;
    let local = child(&spans, root_id.span_id(), "execute_tool relay");
    let request = child(&spans, local.span_context.span_id(), "POST");
    assert_eq!(request.span_kind, SpanKind::Client);
    let server = child(&spans, request.span_context.span_id(), "POST /api/relay");
    assert_eq!(server.span_kind, SpanKind::Server);
    let relay = child(&spans, server.span_context.span_id(), "execute_tool relay");
    let proxy = child(&spans, relay.span_context.span_id(), "execute_tool add");
    let send = child(
        &spans,
        proxy.span_context.span_id(),
        "send toolfunc.call.add",
    );
    assert_eq!(send.span_kind, SpanKind::Client);
    assert_eq!(attribute(send, "messaging.system").as_deref(), Some("nats"));
    assert_eq!(
        attribute(send, "messaging.destination.name").as_deref(),
        Some("toolfunc.call.add")
    );
    let process = child(
        &spans,
        send.span_context.span_id(),
        "process toolfunc.call.add",
    );
    assert_eq!(process.span_kind, SpanKind::Server);
    let tool = child(&spans, process.span_context.span_id(), "execute_tool add");
    assert_eq!(attribute(tool, "gen_ai.tool.name").as_deref(), Some("add"));
    assert!(
        spans.iter().all(|s| s.span_context.trace_id() == trace),
        "one trace"
    );
}

/// A durable call runs whenever a worker takes it: its run is still the child of
/// the submitter's span, through the stored trace context; a call that fails marks
/// the sender's and the worker's spans as failed, with the error's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_call_runs_in_its_submitters_trace_and_failures_are_recorded() {
    exporter();
    let nats = NatsServer::start();
    let refuses = ToolFunc::builder("refuses")
        .description("Always fails.")
        .handler_sync(|_, _| Err(ToolError::custom("NOPE", 409, "not today")))
        .build()
        .expect("a valid tool");
    let _worker = toolfunc::nats::Worker::builder(registry(vec![add(), refuses]))
        .durable(toolfunc::nats::DurableSettings::new())
        .connect(&nats.url())
        .await
        .expect("the worker starts");
    let workers = nats_server::client_finding(&nats.url(), &["add", "refuses"]).await;

    let root = tracing::info_span!("submitter");
    let id = workers
        .submit("add", json!({"a": 1, "b": 2}))
        .instrument(root.clone())
        .await
        .expect("stored");
    let outcome = tokio::time::timeout(Duration::from_secs(10), workers.wait(&id))
        .await
        .expect("the durable call finished");
    assert!(outcome.is_ok(), "{outcome:?}");
    let root_id = context_of(&root);
    drop(root);
    let spans = spans_of(
        root_id.trace_id(),
        &[
            "submitter",
            "send toolfunc.submit.add",
            "process toolfunc.task.add",
            "execute_tool add",
        ],
    )
    .await;
    let send = child(&spans, root_id.span_id(), "send toolfunc.submit.add");
    let process = child(
        &spans,
        send.span_context.span_id(),
        "process toolfunc.task.add",
    );
    assert_eq!(process.span_kind, SpanKind::Server);
    child(&spans, process.span_context.span_id(), "execute_tool add");

    let root = tracing::info_span!("caller");
    let err = workers
        .run("refuses", json!({}))
        .instrument(root.clone())
        .await
        .expect_err("the tool fails");
    assert_eq!(err.code(), "NOPE");
    let root_id = context_of(&root);
    drop(root);
    let spans = spans_of(
        root_id.trace_id(),
        &[
            "caller",
            "send toolfunc.call.refuses",
            "process toolfunc.call.refuses",
        ],
    )
    .await;
    for name in [
        "send toolfunc.call.refuses",
        "process toolfunc.call.refuses",
    ] {
        let span = spans.iter().find(|s| s.name == name).expect("the span");
        assert!(
            matches!(span.status, Status::Error { .. }),
            "{name}: {:?}",
            span.status
        );
        assert_eq!(attribute(span, "error.type").as_deref(), Some("NOPE"));
    }
}

/// A sessionless call that asks its client runs over two requests: the request
/// that resumes it with the answers links to the span of the request whose round
/// parked it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_round_links_to_the_round_that_asked() {
    exporter();
    let ask = ToolFunc::builder("ask_name")
        .description("Asks the user's name.")
        .handler(|ctx: toolfunc::Ctx, _args: Value| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            let answer = ctx.elicit("What is your name?", schema).await?;
            Ok(json!({"name": answer.content.unwrap_or_default()["name"].clone()}))
        })
        .build()
        .expect("a valid tool");
    let mut pipe = Pipe::spawn(toolfunc::mcp::Server::new(registry(vec![ask])));
    let (first_parent, first_trace, first_remote) = remote_parent();
    let caps = json!({"elicitation": {}});
    let first = pipe
        .request_modern(
            "tools/call",
            json!({"name": "ask_name", "arguments": {}, "_meta": {
                "traceparent": first_parent,
                "io.modelcontextprotocol/clientCapabilities": caps,
            }}),
        )
        .await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"]
        .as_str()
        .expect("a state")
        .to_owned();
    let (second_parent, second_trace, second_remote) = remote_parent();
    let second = pipe
        .request_modern(
            "tools/call",
            json!({"name": "ask_name", "arguments": {},
            "requestState": state,
            "inputResponses": {"elicitation_1": {"action": "accept", "content": {"name": "Ada"}}},
            "_meta": {
                "traceparent": second_parent,
                "io.modelcontextprotocol/clientCapabilities": caps,
            }}),
        )
        .await;
    assert_eq!(
        second["result"]["structuredContent"]["name"], "Ada",
        "{second}"
    );
    let asked = spans_of(first_trace, &["tools/call ask_name"]).await;
    let asked = child(&asked, first_remote, "tools/call ask_name");
    let resumed = spans_of(second_trace, &["tools/call ask_name"]).await;
    let resumed = child(&resumed, second_remote, "tools/call ask_name");
    assert!(
        resumed.links.iter().any(|link| link.span_context.trace_id()
            == asked.span_context.trace_id()
            && link.span_context.span_id() == asked.span_context.span_id()),
        "the resuming request's span links to the asking one's: {:?}",
        resumed.links
    );
    pipe.close().await;
}
