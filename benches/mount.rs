//! What mounting costs: the time to mount an OpenAPI document of 10,000
//! operations (read from a file; schemas made at their first read), and what a
//! mounted tool's call adds over calling its source by hand, in the same run.
//!
//! `cargo bench --bench mount`:
//!
//! * `mount/openapi_10000`: `Mount::into_registry` of a generated document of
//!   10,000 operations (path, query and body parameters, a `$ref` each) into a
//!   new registry;
//! * `call/openapi_mounted` vs `call/openapi_by_hand`: one `GET /pets/{id}` of a
//!   local axum service through the mounted `pets_getPet`, and with reqwest by
//!   hand (the same client settings, the answer read as JSON);
//! * `call/mcp_mounted` vs `call/mcp_by_hand`: one `tools/call` of a toolfunc
//!   MCP server's `add` (streamable HTTP, in this process) through the mounted
//!   `up_add` (rmcp's client, sessionless), and as a sessionless JSON-RPC POST
//!   by hand.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolfunc::mount::Mount;
use toolfunc::{Registry, ToolFunc};

/// A document of `count` operations.
fn document(count: usize) -> Value {
    let mut paths = serde_json::Map::new();
    for i in 0..count {
        paths.insert(
            format!("/things{i}/{{id}}"),
            json!({
                "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "post": {
                    "operationId": format!("update_thing_{i}"),
                    "summary": format!("Updates a thing of kind {i}."),
                    "tags": ["things"],
                    "parameters": [{"name": "dry_run", "in": "query", "schema": {"type": "boolean"}}],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
                    "responses": {"200": {"description": "the thing"}}
                }
            }),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "things", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/v1"}],
        "paths": paths,
        "components": {"schemas": {"Thing": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}}}
    })
}

fn petstore() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "pets", "version": "1"},
        "paths": {"/pets/{id}": {"get": {"operationId": "getPet",
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "a pet"}}}}}
    })
}

fn mount_time(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let file =
        std::env::temp_dir().join(format!("toolfunc-bench-mount-{}.json", std::process::id()));
    std::fs::write(&file, document(10_000).to_string()).expect("a temporary file");
    let source = format!("openapi+file:{}", file.display());
    let mut group = c.benchmark_group("mount");
    group.sample_size(10);
    group.bench_function("openapi_10000", |b| {
        b.to_async(&runtime).iter(|| async {
            let registry = Registry::new();
            let mounted = Mount::new("big", source.as_str())
                .into_registry(&registry)
                .await
                .expect("the document mounts");
            assert_eq!(mounted.names().len(), 10_000);
            black_box(registry)
        });
    });
    group.finish();
    std::fs::remove_file(&file).ok();
}

fn calls(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (pets, mcp, registry) = runtime.block_on(async {
        // The OpenAPI service.
        let app = axum::Router::new()
            .route(
                "/openapi.json",
                axum::routing::get(|| async { axum::Json(petstore()) }),
            )
            .route(
                "/pets/{id}",
                axum::routing::get(|axum::extract::Path(id): axum::extract::Path<String>| async move {
                    axum::Json(json!({"id": id, "name": "Rex"}))
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let pets = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        // The MCP server.
        let source = Registry::new();
        source
            .register(
                ToolFunc::builder("add")
                    .params_schema(json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}))
                    .handler_sync(|_ctx, args| Ok(json!(args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0))))
                    .build()
                    .expect("a tool"),
            )
            .expect("a name");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let mcp = format!("http://{}/mcp", listener.local_addr().expect("an address"));
        tokio::spawn(toolfunc::mcp::Server::new(source).serve_http(listener));
        let registry = Registry::new();
        registry.mount("pets", format!("openapi+{pets}/openapi.json")).await.expect("pets mount");
        registry.mount("up", format!("mcp+{mcp}")).await.expect("MCP mount");
        (pets, mcp, registry)
    });
    let http = reqwest::Client::new();
    let mut group = c.benchmark_group("call");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("openapi_mounted", |b| {
        b.to_async(&runtime).iter(|| async {
            black_box(
                registry
                    .run("pets_getPet", json!({"id": "7"}))
                    .await
                    .expect("a pet"),
            )
        });
    });
    group.bench_function("openapi_by_hand", |b| {
        b.to_async(&runtime).iter(|| async {
            let answer = http
                .get(format!("{pets}/pets/7"))
                .send()
                .await
                .expect("an answer");
            black_box(answer.json::<Value>().await.expect("a pet"))
        });
    });
    group.bench_function("mcp_mounted", |b| {
        b.to_async(&runtime).iter(|| async {
            black_box(
                registry
                    .run("up_add", json!({"a": 1, "b": 2}))
                    .await
                    .expect("a sum"),
            )
        });
    });
    group.bench_function("mcp_by_hand", |b| {
        b.to_async(&runtime).iter(|| async {
            let answer = http
                .post(mcp.as_str())
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "add")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "add", "arguments": {"a": 1, "b": 2},
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                              "io.modelcontextprotocol/clientCapabilities": {}}}}))
                .send()
                .await
                .expect("an answer");
            black_box(answer.json::<Value>().await.expect("a result"))
        });
    });
    group.finish();
}

criterion_group!(benches, mount_time, calls);
criterion_main!(benches);
