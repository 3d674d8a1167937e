//! Dispatch overhead: running a `#[tool]` through the registry against calling the Rust
//! function directly with the same JSON in and out (the floor), and lookup cost in a
//! registry of 10,000 tools.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use serde_json::{Value, json};
use toolfunc::{Registry, ToolFunc, tool};

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

fn direct(args: Value) -> Value {
    let args: AddArgs = serde_json::from_value(args).expect("bench arguments are valid");
    serde_json::to_value(add(args.a, args.b)).expect("an f64 serialises")
}

fn dispatch(c: &mut Criterion) {
    let args = json!({"a": 1, "b": 2});
    let registry = Registry::global();
    let mut group = c.benchmark_group("add");
    group.bench_function("direct", |b| b.iter(|| direct(black_box(args.clone()))));
    group.bench_function("run", |b| {
        b.iter(|| {
            registry
                .run(black_box("add"), black_box(args.clone()))
                .now_or_never()
                .expect("a sync tool completes on the first poll")
        });
    });
    group.bench_function("run_sync", |b| {
        b.iter(|| registry.run_sync(black_box("add"), black_box(args.clone())));
    });
    group.finish();
}

fn registry_of(count: usize) -> Registry {
    let registry = Registry::new();
    for i in 0..count {
        let tool = ToolFunc::builder(format!("tool_{i}"))
            .handler_sync(|_ctx, args| Ok(args))
            .build()
            .expect("a valid bench tool");
        registry.register(tool).expect("unique bench names");
    }
    registry
}

fn lookup(c: &mut Criterion) {
    let small = registry_of(1);
    let large = registry_of(10_000);
    let mut group = c.benchmark_group("lookup");
    group.bench_function("1_tool", |b| {
        b.iter(|| small.run_sync(black_box("tool_0"), Value::Null));
    });
    group.bench_function("10000_tools", |b| {
        b.iter(|| large.run_sync(black_box("tool_5000"), Value::Null));
    });
    group.finish();
}

criterion_group!(benches, dispatch, lookup);
criterion_main!(benches);
