//! NATS calls: the `add` call through `toolfunc::nats` against the same call
//! through `toolfunc::http` (client and server in this process, loopback), and
//! NATS throughput with one worker against two. Starts its own `nats-server`.
//!
//! `cargo bench --bench nats`. `one` is one call at a time (latency); `batch64` is
//! 64 calls in flight at once (throughput). `raw_request` is async-nats's own
//! request/reply with the same JSON work, the floor of any NATS call.

#[path = "../tests/support/nats.rs"]
mod nats_server;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use futures::future::join_all;
use serde_json::json;
use toolfunc::nats::async_nats;
use toolfunc::{Registry, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

#[derive(serde::Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

fn nats(c: &mut Criterion) {
    let server = nats_server::NatsServer::start();
    let url = server.url();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (raw, http, one, two, _workers) = runtime.block_on(async {
        // The floor: a bare responder doing the same JSON work.
        let raw = async_nats::connect(&url).await.expect("nats-server");
        let mut requests = raw.subscribe("bench.raw.add").await.expect("subscribe");
        let responder = raw.clone();
        tokio::spawn(async move {
            while let Some(message) = requests.next().await {
                let Some(reply) = message.reply else { continue };
                let args: AddArgs = serde_json::from_slice(&message.payload).expect("args");
                let out = serde_json::to_vec(&add(args.a, args.b)).expect("json");
                let _ = responder.publish(reply, out.into()).await;
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let mounted = toolfunc::http::Server::new()
            .mount(toolfunc::http::Api::new(Registry::global()))
            .expect("one prefix");
        tokio::spawn(mounted.serve(listener));
        let http = toolfunc::http::Client::connect(&format!("http://{addr}/api"))
            .await
            .expect("the HTTP API");
        let mut workers = Vec::new();
        for prefix in ["one", "two", "two"] {
            workers.push(
                toolfunc::nats::Worker::builder(Registry::global())
                    .prefix(prefix)
                    .connect(&url)
                    .await
                    .expect("a worker"),
            );
        }
        let one = toolfunc::nats::Client::connect(&format!("{url}/one"))
            .await
            .expect("the `one` service");
        let two = toolfunc::nats::Client::connect(&format!("{url}/two"))
            .await
            .expect("the `two` service");
        (raw, http, one, two, workers)
    });
    let args = json!({"a": 1, "b": 2});
    let raw_call = || {
        let raw = raw.clone();
        async move {
            let answer = raw
                .request("bench.raw.add", r#"{"a":1,"b":2}"#.into())
                .await
                .expect("an answer");
            black_box(answer.payload)
        }
    };
    let mut group = c.benchmark_group("nats_add");
    group.bench_function("raw_request/one", |b| b.to_async(&runtime).iter(raw_call));
    group.bench_function("raw_request/batch64", |b| {
        b.to_async(&runtime)
            .iter(|| join_all((0..64).map(|_| raw_call())));
    });
    group.bench_function("http/one", |b| {
        b.to_async(&runtime)
            .iter(|| async { black_box(http.run("add", args.clone()).await.expect("3")) });
    });
    group.bench_function("http/batch64", |b| {
        b.to_async(&runtime)
            .iter(|| join_all((0..64).map(|_| http.run("add", args.clone()))));
    });
    for (name, client) in [("nats_1_worker", &one), ("nats_2_workers", &two)] {
        group.bench_function(format!("{name}/one"), |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(client.run("add", args.clone()).await.expect("3")) });
        });
        group.bench_function(format!("{name}/batch64"), |b| {
            b.to_async(&runtime)
                .iter(|| join_all((0..64).map(|_| client.run("add", args.clone()))));
        });
    }
    group.finish();
}

criterion_group!(benches, nats);
criterion_main!(benches);
