//! Dispatch overhead: running a `#[tool]` through the registry against calling the Rust
//! function directly with the same JSON in and out (the floor), and lookup cost in a
//! registry of 10,000 tools, and the cost of call middleware layers.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use serde_json::{Value, json};
use toolfunc::layer::{self, Call, Layer, Next, ReplyFuture};
use toolfunc::{Registry, ToolError, ToolFunc, tool};

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

/// The borrowed floor: the arguments read in place from a `&Value` the caller keeps.
fn direct_borrowed(args: &Value) -> Value {
    let args = <AddArgs as serde::Deserialize>::deserialize(args).expect("valid");
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
    group.bench_function("direct_borrowed", |b| {
        b.iter(|| direct_borrowed(black_box(&args)));
    });
    group.bench_function("run_borrowed", |b| {
        b.iter(|| {
            registry
                .run(black_box("add"), black_box(&args))
                .now_or_never()
                .expect("a sync tool completes on the first poll")
        });
    });
    group.bench_function("run_sync_borrowed", |b| {
        b.iter(|| registry.run_sync(black_box("add"), black_box(&args)));
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    #[allow(dead_code)] // read by deserialisation only
    customer: String,
    lines: Vec<OrderLine>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct OrderLine {
    #[allow(dead_code)]
    id: u64,
    qty: u32,
}

/// The same arguments checked two ways: against a JSON schema (tools defined at run
/// time) and by deserialising into Rust types (`#[tool]` and typed tools).
fn validation(c: &mut Criterion) {
    let registry = Registry::new();
    let schema = toolfunc::schema::schema_of::<Order>();
    registry
        .register(
            ToolFunc::builder("by_schema")
                .params_schema(schema)
                .handler_sync(|_ctx, args| {
                    Ok(Value::from(args["lines"].as_array().map_or(0, Vec::len)))
                })
                .build()
                .expect("a valid bench tool"),
        )
        .expect("unique bench names");
    registry
        .register(
            ToolFunc::builder("by_type")
                .typed_sync(|_ctx, order: Order| Ok(order.lines.iter().map(|l| l.qty).sum::<u32>()))
                .build()
                .expect("a valid bench tool"),
        )
        .expect("unique bench names");
    let args = json!({
        "customer": "ann",
        "lines": (0..10).map(|i| json!({"id": i, "qty": 1})).collect::<Vec<_>>()
    });
    for name in ["by_schema", "by_type"] {
        let out = registry.run_sync(name, args.clone());
        assert!(
            out.is_ok(),
            "{name} must accept the bench arguments: {out:?}"
        );
    }
    let mut group = c.benchmark_group("validation");
    group.bench_function("schema", |b| {
        b.iter(|| registry.run_sync(black_box("by_schema"), black_box(args.clone())));
    });
    group.bench_function("typed", |b| {
        b.iter(|| registry.run_sync(black_box("by_type"), black_box(args.clone())));
    });
    group.finish();
}

/// A call through a child registry three levels below the one holding the tool, against
/// a call on the holder itself.
fn hierarchy(c: &mut Criterion) {
    let args = json!({"a": 1, "b": 2});
    let root = Registry::global();
    let deep = root.isolate().isolate().isolate();
    let mut group = c.benchmark_group("hierarchy");
    group.bench_function("root", |b| {
        b.iter(|| root.run_sync(black_box("add"), black_box(args.clone())));
    });
    group.bench_function("three_levels_down", |b| {
        b.iter(|| deep.run_sync(black_box("add"), black_box(args.clone())));
    });
    group.finish();
}

/// A pass-through layer: hands every call on untouched.
struct Pass;

impl Layer for Pass {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        next.run(call)
    }
}

/// Call middleware: the same call through a child registry with no layer, with one
/// pass-through layer, and refused by an authorisation layer. Last in the run: once
/// a layer exists in the program, every call looks for layers.
fn layers(c: &mut Criterion) {
    let args = json!({"a": 1, "b": 2});
    let root = Registry::global();
    let plain = root.isolate();
    let one = root.isolate().layer(Pass);
    let refusing = root.isolate().layer(layer::authorize(|_: &Call| {
        Err(ToolError::custom("FORBIDDEN", 403, "no"))
    }));
    let run = |registry: &Registry| {
        registry
            .run(black_box("add"), black_box(args.clone()))
            .now_or_never()
            .expect("a sync tool and a pass-through layer complete on the first poll")
    };
    let mut group = c.benchmark_group("layers");
    group.bench_function("none", |b| b.iter(|| run(&plain)));
    group.bench_function("one_pass_through", |b| b.iter(|| run(&one)));
    group.bench_function("auth_refusing", |b| b.iter(|| run(&refusing)));
    group.bench_function("none_sync", |b| {
        b.iter(|| plain.run_sync(black_box("add"), black_box(args.clone())));
    });
    group.bench_function("one_pass_through_sync", |b| {
        b.iter(|| one.run_sync(black_box("add"), black_box(args.clone())));
    });
    group.finish();
}

criterion_group!(benches, dispatch, lookup, validation, hierarchy, layers);
criterion_main!(benches);
