//! A tour of toolfunc: declare tools with `#[tool]`, then discover and run them by name.
//!
//! Run with `cargo run --example quickstart`.

use std::time::Duration;

use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolfunc::{CallOptions, Ctx, Registry, ToolCall, ToolError, tool};

/// Adds two numbers.
#[tool(alias = "plus", tags = ["math"])]
fn add(
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
) -> f64 {
    a + b
}

/// Greets someone, in an optional language.
#[tool(title = "Greeter")]
async fn greet(ctx: &Ctx, name: String, lang: Option<Lang>) -> String {
    tokio::task::yield_now().await; // stands in for real I/O
    let hello = match lang.unwrap_or_default() {
        Lang::En => "Hello",
        Lang::Fr => "Bonjour",
    };
    format!("{hello}, {name}! (call {})", ctx.call_id().unwrap_or("-"))
}

/// A greeting language.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Lang {
    #[default]
    En,
    Fr,
}

/// An order line.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct Line {
    /// Product id.
    id: u64,
    /// How many.
    qty: u32,
}

/// Totals the quantities of an order.
#[tool(summary = "Total an order.")]
fn total(lines: Vec<Line>) -> Result<u32, ToolError> {
    lines
        .iter()
        .try_fold(0u32, |sum, line| sum.checked_add(line.qty))
        .ok_or_else(|| ToolError::failed("total overflows u32"))
}

/// Counts down from `from`, one number every 10 ms, reporting progress.
#[tool]
fn countdown(ctx: Ctx, from: u32) -> impl Stream<Item = u32> {
    futures::stream::unfold(from + 1, move |left| {
        let ctx = ctx.clone();
        async move {
            let next = left.checked_sub(1)?;
            tokio::time::sleep(Duration::from_millis(10)).await;
            ctx.progress(f64::from(from - next), Some(f64::from(from)), None);
            Some((next, next))
        }
    })
}

/// Sleeps, unless stopped first.
#[tool(timeout = "5s")]
async fn sleep(ctx: &Ctx, ms: u64) -> String {
    ctx.on_cleanup(|| println!("  (sleep cleaned up)"));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::global();

    println!("tools: {:?}\n", registry.names());
    for def in registry.definitions() {
        println!("{}", serde_json::to_string(&def)?);
    }

    println!(
        "\nadd(1, 2)            = {}",
        registry.run("add", json!({"a": 1, "b": 2})).await?
    );
    println!(
        "plus(1, 2) [sync]    = {}",
        registry.run_sync("plus", json!({"a": 1, "b": 2}))?
    );
    println!(
        "add with positions   = {}",
        registry.run("add", vec![json!(1), json!(2)]).await?
    );

    let lines = json!({"lines": [{"id": 1, "qty": 2}, {"id": 2, "qty": 3}]});
    println!(
        "total                = {}",
        registry.run("total", lines).await?
    );

    let bad = json!({"lines": [{"id": 1, "qty": 2}, {"id": "two", "qty": 3}]});
    let err = registry.run("total", bad).await.unwrap_err();
    println!(
        "bad total            = {} [{}] {}",
        err.code(),
        err.status(),
        serde_json::to_string(&err)?
    );

    let results = registry
        .execute_batch([
            ToolCall::new("c1", "greet", json!({"name": "Ann", "lang": "fr"})),
            ToolCall::new("c2", "nope", json!({})),
            ToolCall::new("c3", "add", json!({"a": 40, "b": 2})),
        ])
        .await;
    println!("\nbatch (order kept, failures isolated):");
    for result in &results {
        println!("  {}", serde_json::to_string(result)?);
    }

    println!("\nstreaming countdown, with progress:");
    let runner = registry.with(CallOptions::new().on_progress(|p| {
        println!("  progress {}/{}", p.done, p.total.unwrap_or(0.0));
    }));
    let mut items = runner.run_stream("countdown", json!({"from": 3}));
    while let Some(item) = items.next().await {
        println!("  item {}", item?);
    }

    println!("\ntimeouts and cancellation:");
    let quick = registry.with(CallOptions::new().timeout(Duration::from_millis(20)));
    println!(
        "  {}",
        quick.run("sleep", json!({"ms": 1000})).await.unwrap_err()
    );
    let handle = registry.spawn("sleep", json!({"ms": 1000}));
    handle.abort("changed my mind");
    println!("  {}", handle.await.unwrap_err());
    Ok(())
}
