//! Calls the workers of `nats_worker` by name: `cargo run --example nats_client`.
//!
//! Loads the tools from any worker, runs a few of them, streams `countdown`, and
//! sends a burst of `work` calls to show the queue group sharing them.
//! `--url nats://HOST:PORT[/prefix]` (or `NATS_URL`) says where. Logging in to
//! nats-server: `--user NAME --password PASS`, `--creds FILE` or `--token TOKEN`
//! (under `interop/nats/roles.conf`: `--user alice`, whose answers come to
//! `_INBOX.alice.`); `--bearer TOKEN` is the token the workers check, when they
//! have an authenticator.

mod nats_login;

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::json;
use toolfunc::ToolError;
use toolfunc::nats::Client;

fn usage() -> ! {
    eprintln!(
        "usage: nats_client [--url nats://127.0.0.1:4222] {} [--bearer TOKEN]",
        nats_login::Login::USAGE
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), ToolError> {
    let mut url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let mut login = nats_login::Login::default();
    let mut bearer = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match login.take(&arg, &mut args) {
            Some(true) => continue,
            Some(false) => usage(),
            None => {}
        }
        match arg.as_str() {
            "--url" => url = args.next().unwrap_or_else(|| usage()),
            "--bearer" => bearer = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let nats = login
        .connect(&url)
        .await
        .map_err(|err| ToolError::custom("UNREACHABLE", 503, err))?;
    let mut builder = Client::builder();
    if let Some(token) = bearer {
        builder = builder.token(token);
    }
    let client = builder.attach(nats).await?;
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
