//! Execution-control overhead: a call carrying a context and a timeout against a plain
//! call, nested runners (no deep copies), and the stream callbacks adaptor against the
//! bare stream, a `#[tool(local)]` call (sent to the local executor, or run in place
//! with `run_local`) against a plain async one, and a tracked call
//! (the ledger) against an untracked spawn.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use toolfunc::stream::callbacks;
use toolfunc::{CallOptions, Registry, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Adds two numbers, asynchronously.
#[tool]
#[allow(clippy::unused_async)] // measures the async call path itself
async fn add_async(a: f64, b: f64) -> f64 {
    a + b
}

/// Adds two numbers on the local executor (a `local` tool's call path).
#[tool(local)]
#[allow(clippy::unused_async)] // measures the local call path itself
async fn add_local(a: f64, b: f64) -> f64 {
    a + b
}

#[derive(Clone)]
struct TraceId(#[allow(dead_code)] String);

fn context(c: &mut Criterion) {
    let args = json!({"a": 1, "b": 2});
    let registry = Registry::global();
    let with_ctx = registry.with(
        CallOptions::new()
            .insert(TraceId("trace-1".into()))
            .caller("bench")
            .timeout(Duration::from_secs(30)),
    );
    let mut group = c.benchmark_group("context");
    group.bench_function("sync/plain", |b| {
        b.iter(|| {
            registry
                .run(black_box("add"), black_box(args.clone()))
                .now_or_never()
                .expect("a sync tool completes on the first poll")
        });
    });
    group.bench_function("sync/context_timeout", |b| {
        b.iter(|| {
            with_ctx
                .run(black_box("add"), black_box(args.clone()))
                .now_or_never()
                .expect("a sync tool completes on the first poll")
        });
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a bench runtime");
    group.bench_function("async/plain", |b| {
        b.to_async(&runtime)
            .iter(|| registry.run(black_box("add_async"), black_box(args.clone())));
    });
    // The same call sent to the local executor's thread and answered back.
    group.bench_function("async/local", |b| {
        b.to_async(&runtime)
            .iter(|| registry.run(black_box("add_local"), black_box(args.clone())));
    });
    // The local call run in place, on the caller's thread (`run_local`).
    group.bench_function("async/local_in_place", |b| {
        b.to_async(&runtime)
            .iter(|| registry.run_local(black_box("add_local"), black_box(args.clone())));
    });
    // `run_local` of a plain async tool: what polling in place adds by itself.
    group.bench_function("async/plain_in_place", |b| {
        b.to_async(&runtime)
            .iter(|| registry.run_local(black_box("add_async"), black_box(args.clone())));
    });
    // A tracked call (started in a ledger, read back by id) against the same call
    // spawned and awaited untracked.
    let ledger = toolfunc::ledger::Ledger::new(registry);
    group.bench_function("spawn/untracked", |b| {
        b.to_async(&runtime)
            .iter(|| registry.spawn(black_box("add_async"), black_box(args.clone())));
    });
    group.bench_function("spawn/tracked", |b| {
        b.to_async(&runtime).iter(|| async {
            let id = ledger
                .start(black_box("add_async"), black_box(args.clone()))
                .expect("room in the ledger");
            let value = ledger.wait(&id).await;
            ledger.remove(&id);
            value
        });
    });
    group.bench_function("async/context_timeout", |b| {
        b.to_async(&runtime)
            .iter(|| with_ctx.run(black_box("add_async"), black_box(args.clone())));
    });

    // A runner ten layers deep: each call shares the layers, it copies none.
    let mut deep = registry.with(CallOptions::new().insert(TraceId("outer".into())));
    for i in 0..9 {
        deep = deep.with(CallOptions::new().caller(format!("layer-{i}")));
    }
    group.bench_function("sync/ten_layers", |b| {
        b.iter(|| {
            deep.run(black_box("add"), black_box(args.clone()))
                .now_or_never()
                .expect("a sync tool completes on the first poll")
        });
    });
    group.finish();
}

const ITEMS: u64 = 10_000;

/// Items the optimiser cannot see through (`black_box` on each), as a real producer's
/// would be; otherwise the bare loop folds into arithmetic and any adaptor looks huge.
fn items() -> impl futures::Stream<Item = Result<Value, String>> {
    futures::stream::iter(0..ITEMS).map(|n| Ok(black_box(Value::from(n))))
}

fn sum(stream: impl futures::Stream<Item = Result<Value, String>>) -> u64 {
    futures::executor::block_on(stream.fold(0, |acc, item| async move {
        acc + black_box(item).ok().and_then(|v| v.as_u64()).unwrap_or(0)
    }))
}

fn streams(c: &mut Criterion) {
    let mut group = c.benchmark_group("stream_10000");
    group.bench_function("bare", |b| b.iter(|| sum(black_box(items()))));
    group.bench_function("callbacks_close_only", |b| {
        b.iter(|| {
            sum(callbacks(black_box(items())).on_close(|end| {
                black_box(end);
            }))
        });
    });
    group.bench_function("callbacks_all_hooks", |b| {
        b.iter(|| {
            sum(callbacks(black_box(items()))
                .on_start(|| ())
                .on_item(|v| v)
                .on_final(|| ())
                .on_error(|_| ())
                .on_cancel(|| ())
                .on_close(|end| {
                    black_box(end);
                }))
        });
    });
    group.finish();
}

criterion_group!(benches, context, streams);
criterion_main!(benches);
