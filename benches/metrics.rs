//! What recording metrics costs: the `add` call over HTTP through an API whose
//! registry has a `layer::Metrics` (served at `/metrics`) vs the same API on the
//! same tools without it, both served in this process over loopback and driven by
//! the same keep-alive client; and the same pair in process (`run_sync`), where
//! nothing else hides the layer's cost.
//!
//! `cargo bench --bench metrics`. Cost = `metrics_on` time / `metrics_off` time.
//! Both registries are children of the global one, so they differ only by the layer.
//!
//! `metrics ab ROUNDS CALLS` times HTTP `add` calls in interleaved rounds (CALLS
//! calls with metrics off and CALLS on, each first every other round, ROUNDS
//! times, one current-thread runtime) and prints the median time of a call of each and their ratio: on a
//! busy machine, rounds side by side see the same load where criterion's groups,
//! one after the other, do not.
//!
//! `metrics count http|run on|off CALLS` makes the calls untimed, on one
//! current-thread runtime, for `valgrind --tool=callgrind` (less the count of 0
//! calls, divided by CALLS): instruction counts repeat where times on a busy
//! machine do not.

use std::hint::black_box;
use std::net::SocketAddr;

use axum::body::Bytes;
use axum::http::header;
use criterion::{Criterion, criterion_group};
use futures::future::join_all;
use serde_json::json;
use toolfunc::http::Api;
use toolfunc::layer::Metrics;
use toolfunc::{Registry, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// The registry with the metrics layer (`on`) or without.
fn registry(on: bool) -> (Registry, Option<Metrics>) {
    let registry = Registry::global().isolate();
    if on {
        let metrics = Metrics::new();
        (registry.layer(metrics.clone()), Some(metrics))
    } else {
        (registry, None)
    }
}

/// Serves the API of `registry(on)`; its `add` URL.
async fn serve(on: bool) -> String {
    let (registry, metrics) = registry(on);
    let mut api = Api::new(registry);
    if let Some(metrics) = metrics {
        api = api.metrics(metrics);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr: SocketAddr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move { axum::serve(listener, api.router()).await });
    format!("http://{addr}/api/add")
}

async fn call(client: &reqwest::Client, url: &str) -> Bytes {
    let response = client
        .post(url)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Bytes::from_static(b"{\"a\":1,\"b\":2}"))
        .send()
        .await
        .expect("the server answers");
    assert!(response.status().is_success());
    response.bytes().await.expect("a body")
}

fn metrics(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let (off, on) = runtime.block_on(async { (serve(false).await, serve(true).await) });
    let client = reqwest::Client::new();
    let mut group = c.benchmark_group("metrics_http_add");
    // In the same run, one after the other.
    for (name, url) in [("metrics_off", &off), ("metrics_on", &on)] {
        group.bench_function(format!("{name}/one"), |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(call(&client, url).await) });
        });
        group.bench_function(format!("{name}/batch64"), |b| {
            b.to_async(&runtime)
                .iter(|| join_all((0..64).map(|_| call(&client, url))));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("metrics_run_sync_add");
    // `pass_through`: a layer that does nothing, to tell the layer's own cost
    // from the recording's.
    for (name, on) in [
        ("metrics_off", Some(false)),
        ("pass_through", None),
        ("metrics_on", Some(true)),
    ] {
        let (registry, _metrics) = match on {
            Some(on) => registry(on),
            None => (
                Registry::global()
                    .isolate()
                    .layer(toolfunc::layer::before(|_| Ok(()))),
                None,
            ),
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    registry
                        .run_sync("add", json!({"a": 1, "b": 2}))
                        .expect("a sum"),
                )
            });
        });
    }
    group.finish();
}

/// Makes `calls` calls of `add` (`http` or in process), with metrics `on` or not,
/// untimed.
fn count(surface: &str, on: bool, calls: usize) {
    if surface == "run" {
        let (registry, _metrics) = registry(on);
        for _ in 0..calls {
            black_box(
                registry
                    .run_sync("add", json!({"a": 1, "b": 2}))
                    .expect("a sum"),
            );
        }
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let url = serve(on).await;
        let client = reqwest::Client::new();
        for _ in 0..calls {
            black_box(call(&client, &url).await);
        }
    });
}

/// Interleaved rounds of `calls` HTTP calls with metrics off and on; prints the
/// median time of a call of each, and on / off.
fn ab(rounds: usize, calls: u32) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let (off, on) = (serve(false).await, serve(true).await);
        let client = reqwest::Client::new();
        let (mut offs, mut ons) = (Vec::new(), Vec::new());
        for round in 0..=rounds {
            // Each goes first every other round.
            let mut pair = [(&off, &mut offs), (&on, &mut ons)];
            if round % 2 == 1 {
                pair.reverse();
            }
            for (url, times) in pair {
                let started = std::time::Instant::now();
                for _ in 0..calls {
                    black_box(call(&client, url).await);
                }
                // Round 0 warms up.
                if round > 0 {
                    times.push(started.elapsed().as_secs_f64() / f64::from(calls));
                }
            }
        }
        let median = |times: &mut Vec<f64>| {
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        let (off, on) = (median(&mut offs), median(&mut ons));
        println!(
            "http add, median of {rounds} rounds of {calls} calls: off {:.1} µs, on {:.1} µs, on / off {:.3}",
            off * 1e6,
            on * 1e6,
            on / off
        );
    });
}

criterion_group!(benches, metrics);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, rounds, calls] = args.as_slice()
        && mode == "ab"
    {
        ab(
            rounds.parse().expect("a number of rounds"),
            calls.parse().expect("a number of calls"),
        );
        return;
    }
    if let [mode, surface, on, calls] = args.as_slice()
        && mode == "count"
    {
        count(
            surface,
            on == "on",
            calls.parse().expect("a number of calls"),
        );
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
