//! Calls the workers of `nats_worker` by name: `cargo run --example nats_client`.
//!
//! Loads the tools from any worker, runs a few of them, streams `countdown`, and
//! sends a burst of `work` calls to show the queue group sharing them.
//! `--url nats://HOST:PORT[/prefix]` (or `NATS_URL`) says where.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::json;
use toolfunc::ToolError;
use toolfunc::nats::Client;

#[tokio::main]
async fn main() -> Result<(), ToolError> {
    let url = std::env::args()
        .skip_while(|a| a != "--url")
        .nth(1)
        .or_else(|| std::env::var("NATS_URL").ok())
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    let client = Client::connect(&url).await?;
    let mut names = client.names();
    names.sort();
    println!("tools: {}", names.join(", "));
    println!(
        "add(1, 2) = {}",
        client.run("add", json!({"a": 1, "b": 2})).await?
    );
    println!(
        "greeter.$hello = {}",
        client
            .run("greeter", json!({"act": "$hello", "name": "Ann"}))
            .await?
    );
    match client.run("users", json!({"act": "get", "id": "99"})).await {
        Ok(user) => println!("users.get(99) = {user}"),
        Err(err) => println!("users.get(99) failed: {} ({})", err.code(), err),
    }
    let ticks: Vec<_> = client
        .run_stream("countdown", json!({"count": 3}))
        .collect()
        .await;
    println!("countdown(3) streamed {} items", ticks.len());
    // A burst: the calls spread over the workers.
    let calls = (0..20).map(|_| client.run("work", json!({"ms": 50})));
    let mut by_worker = BTreeMap::new();
    for answer in futures::future::join_all(calls).await {
        let worker = answer?["worker"].to_string();
        *by_worker.entry(worker).or_insert(0) += 1;
    }
    println!("20 `work` calls by worker pid: {by_worker:?}");
    Ok(())
}
