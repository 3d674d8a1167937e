//! LLM function calling: exporting 1,000 tools (lowered from scratch, and kept), and
//! executing a 10-call message against 10 direct `run` calls and against the same
//! message read, run and answered by hand.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolfunc::llm::{Target, run_tool_calls, tool, tools};
use toolfunc::{Registry, ToolFunc};

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

fn export(c: &mut Criterion) {
    let registry = registry(1_000);
    let definitions = registry.definitions();
    let mut group = c.benchmark_group("export_1000");
    for target in [Target::OpenAiStrict, Target::Gemini, Target::Mcp] {
        group.bench_function(format!("{target:?}/lowered"), |b| {
            b.iter(|| {
                definitions
                    .iter()
                    .map(|d| tool(black_box(d), target).expect("exportable"))
                    .collect::<Vec<_>>()
            });
        });
        group.bench_function(format!("{target:?}/kept"), |b| {
            b.iter(|| tools(black_box(&registry), target).expect("exportable"));
        });
    }
    group.finish();
}

fn run(c: &mut Criterion) {
    let registry = registry(10);
    let message = json!({
        "role": "assistant",
        "tool_calls": (0..10).map(|i| json!({
            "id": format!("call_{i}"),
            "type": "function",
            "function": {"name": format!("tool_{i}"), "arguments": "{\"city\": \"Oslo\"}"}
        })).collect::<Vec<_>>()
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a bench runtime");
    let mut group = c.benchmark_group("ten_calls");
    group.bench_function("direct_run", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut out = Vec::with_capacity(10);
            for i in 0..10 {
                let name = format!("tool_{i}");
                out.push(registry.run(&name, json!({"city": "Oslo"})).await);
            }
            out
        });
    });
    // The floor for `execute`: the same message read and answered by hand, one call
    // after the other, with no isolation or error mapping.
    group.bench_function("by_hand", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut out = Vec::with_capacity(10);
            for call in black_box(&message)["tool_calls"].as_array().expect("calls") {
                let function = &call["function"];
                let name = function["name"].as_str().expect("a name");
                let arguments = function["arguments"].as_str().expect("arguments");
                let args: serde_json::Value = serde_json::from_str(arguments).expect("JSON");
                let result = registry.run(name, args).await.expect("runs");
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": result.as_str().map_or_else(|| result.to_string(), str::to_owned),
                }));
            }
            serde_json::Value::Array(out)
        });
    });
    group.bench_function("llm_execute", |b| {
        b.to_async(&runtime)
            .iter(|| run_tool_calls(&registry, Target::OpenAi, black_box(&message)));
    });
    group.finish();
}

criterion_group!(benches, export, run);
criterion_main!(benches);
