//! Serving the OpenAPI document of 1,000 tools (made once, kept until a registry
//! changes) against serving discovery for the same registry (made per request),
//! both over loopback through `toolfunc::http::Server` with one keep-alive client.
//!
//! `cargo bench --bench openapi`. Discovery time / OpenAPI time is how many times
//! cheaper a cached document request is than a discovery request. With scopes on
//! a tool, each verified caller is shown the document of what its scopes let it
//! see: `openapi_json_scoped` asks for it as two callers in turn, with the same
//! scopes, and is the kept document per set of what callers are shown.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolfunc::auth::ApiKeys;
use toolfunc::http::{Api, Server};
use toolfunc::{Identity, Registry, ToolFunc};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // read through its schema
struct Args {
    /// A city.
    city: String,
    unit: Option<String>,
    days: Option<u32>,
}

fn registry(count: usize) -> Registry {
    let registry = Registry::new();
    for i in 0..count {
        registry
            .register(
                ToolFunc::builder(format!("tool_{i}"))
                    .description("Looks the weather up.")
                    .typed_sync(|_ctx, args: Args| Ok(args.city))
                    .build()
                    .expect("a valid bench tool"),
            )
            .expect("unique bench names");
    }
    registry
}

fn openapi(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let base = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let scoped = registry(1_000);
        scoped
            .register(
                ToolFunc::builder("purge")
                    .scopes(["admin"])
                    .handler_sync(|_ctx, args| Ok(args))
                    .build()
                    .expect("a valid bench tool"),
            )
            .expect("a unique name");
        let keys = ApiKeys::new()
            .key("ann-key", Identity::new("ann"))
            .key("bob-key", Identity::new("bob"));
        let server = Server::new()
            .mount(Api::new(registry(1_000)))
            .expect("one prefix")
            .mount(Api::new(scoped).prefix("/scoped").authenticate(keys))
            .expect("another prefix");
        tokio::spawn(server.serve(listener));
        format!("http://{addr}/api")
    });
    let client = reqwest::Client::new();
    let get = |url: String| {
        let request = client.get(url);
        async move {
            let response = request.send().await.expect("the server answers");
            assert!(response.status().is_success());
            black_box(response.bytes().await.expect("a body"))
        }
    };
    let sizes = runtime.block_on(async {
        let doc = get(format!("{base}/openapi.json")).await.len();
        let discovery = get(base.clone()).await.len();
        (doc, discovery)
    });
    eprintln!(
        "1,000 tools: openapi.json {} bytes, discovery {} bytes",
        sizes.0, sizes.1
    );
    let mut group = c.benchmark_group("serve_1000_tools");
    group.bench_function("openapi_json_cached", |b| {
        b.to_async(&runtime)
            .iter(|| get(format!("{base}/openapi.json")));
    });
    group.bench_function("discovery", |b| {
        b.to_async(&runtime).iter(|| get(base.clone()));
    });
    let scoped = base.replace("/api", "/scoped/openapi.json");
    let turn = std::sync::atomic::AtomicBool::new(false);
    group.bench_function("openapi_json_scoped", |b| {
        b.to_async(&runtime).iter(|| {
            let token = if turn.fetch_xor(true, std::sync::atomic::Ordering::Relaxed) {
                "Bearer ann-key"
            } else {
                "Bearer bob-key"
            };
            let request = client.get(scoped.clone()).header("authorization", token);
            async move {
                let response = request.send().await.expect("the server answers");
                assert!(response.status().is_success());
                black_box(response.bytes().await.expect("a body"))
            }
        });
    });
    group.finish();
}

criterion_group!(benches, openapi);
criterion_main!(benches);
