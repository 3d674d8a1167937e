//! MCP `tools/call` of `add` through `toolfunc::mcp` against two hand-written rmcp
//! handlers: `bare_rmcp` (reads `{"a","b"}`, answers `a + b` as text, lists
//! nothing) and `listed_rmcp` (the same tool listed with its schemas, answering what
//! toolfunc answers: text and `structuredContent`), all on the SDK's own stdio
//! framing over an in-process pipe, driven by the same client loop (one request
//! line out, lines in until the response).
//!
//! `cargo bench --bench mcp`. Calls per second relative to a floor = floor time /
//! toolfunc time. All run on one current-thread runtime: the figure is the
//! work of a call, not how two worker threads happen to wake each other (on a
//! multi-thread runtime the wake-ups dominate and vary run to run). `list_1000` is `tools/list` of a 1,000-tool registry.
//! `mcp_get_tool` is `ServerHandler::get_tool`, which the SDK's HTTP server asks on
//! every sessionless (2026-07-28) request to check its headers.
//!
//! `mcp_http_add` is the same call as a sessionless (2026-07-28) streamable HTTP
//! request: toolfunc's `Server::router()` against the bare handler behind the SDK's
//! own `StreamableHttpService` with the same (default) config, both served with
//! `TCP_NODELAY` and driven by the same keep-alive client, one request at a time.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolfunc::mcp::Server;
use toolfunc::mcp::rmcp::ServerHandler;
use toolfunc::{Registry, ToolFunc};

#[path = "support/mcp.rs"]
mod peers;

use peers::{AddArgs, BareAdd, ListedAdd, Session, http_call, serve_http};

fn registry(count: usize) -> Registry {
    let registry = Registry::new();
    for i in 0..count {
        registry
            .register(
                ToolFunc::builder(format!("tool_{i}"))
                    .description("Adds two numbers.")
                    .typed_sync(|_ctx, args: AddArgs| Ok(args.a + args.b))
                    .build()
                    .expect("a valid bench tool"),
            )
            .expect("unique bench names");
    }
    registry
}

fn mcp(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (mut bare, mut listed, mut ours, mut big) = runtime.block_on(async {
        let (bare, listed, ours) = (
            peers::stdio_session(BareAdd).await,
            peers::stdio_session(ListedAdd::new()).await,
            peers::stdio_toolfunc().await,
        );
        let big = Session::open(|r, w| {
            tokio::spawn(Server::new(registry(1_000)).serve_io(r, w));
        })
        .await;
        (bare, listed, ours, big)
    });
    let call = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
    let mut group = c.benchmark_group("mcp_add");
    for (name, session) in [
        ("bare_rmcp", &mut bare),
        ("listed_rmcp", &mut listed),
        ("toolfunc", &mut ours),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let answer = session.request("tools/call", call.clone()).await;
                        assert_eq!(answer["result"]["content"][0]["text"], "3.0");
                        black_box(answer);
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
    c.bench_function("mcp_list_1000", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(big.request("tools/list", json!({})).await);
                }
                start.elapsed()
            })
        });
    });
}

fn get_tool(c: &mut Criterion) {
    let global = Server::new(Registry::global());
    let big = Server::new(registry(1_000));
    let mut group = c.benchmark_group("mcp_get_tool");
    group.bench_function("add", |b| {
        b.iter(|| black_box(global.get_tool(black_box("add"))));
    });
    group.bench_function("of_1000", |b| {
        b.iter(|| black_box(big.get_tool(black_box("tool_500"))));
    });
    group.finish();
}

fn http(c: &mut Criterion) {
    use toolfunc::mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use toolfunc::mcp::rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (bare, ours) = runtime.block_on(async {
        let service = StreamableHttpService::new(
            || Ok(BareAdd),
            std::sync::Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let bare = serve_http(axum::Router::new().nest_service("/mcp", service)).await;
        let ours = serve_http(Server::new(Registry::global()).router()).await;
        (bare, ours)
    });
    let client = reqwest::Client::new();
    let mut group = c.benchmark_group("mcp_http_add");
    for (name, url) in [("bare_rmcp", &bare), ("toolfunc", &ours)] {
        // Both answer the call, with the same text.
        let answer = runtime.block_on(async {
            let response = http_call(&client, url).send().await.expect("an answer");
            assert!(
                response.status().is_success(),
                "{name}: {}",
                response.status()
            );
            response.text().await.expect("a body")
        });
        assert!(answer.contains("\"text\":\"3.0\""), "{name}: {answer}");
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let response = http_call(&client, url).send().await.expect("an answer");
                black_box(response.bytes().await.expect("a body"))
            });
        });
    }
    group.finish();
}

criterion_group!(benches, mcp, get_tool, http);
criterion_main!(benches);
