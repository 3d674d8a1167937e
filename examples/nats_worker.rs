//! A NATS worker serving the demo catalog: `cargo run --example nats_worker`.
//!
//! Start `nats-server` first, then as many workers as you like (each in its own
//! terminal or in the background): they join one queue group and share the calls.
//! `--url nats://HOST:PORT` (or `NATS_URL`) says where the server is, `--prefix`
//! the subject prefix (`toolfunc`), `--durable` takes durable calls too (start
//! `nats-server -js`; `--ack-wait MS` says how long a silent worker keeps one).
//! Besides the demo tools it serves `work`, which says which worker process ran it.
//!
//! Logging in to nats-server: `--user NAME --password PASS`, `--creds FILE` or
//! `--token TOKEN` (as `interop/nats/roles.conf` wants: `--user worker`). With
//! `--auth-issuer URL --auth-audience URI` every request must carry a bearer JWT of
//! that issuer for that audience (`Worker::authenticate` with `auth::jwt::Jwt`), as
//! the HTTP example does; `--inbox-per-subject` then answers each verified caller
//! only in its own inbox.

mod demo;
mod nats_login;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::auth::jwt::Jwt;
use toolfunc::nats::DurableSettings;
use toolfunc::{Registry, tool};

/// Works for `ms` milliseconds (at most 10 s) and says which worker process did it.
/// Safe to run twice: a client retries it on another worker if this one is lost.
#[tool(annotations(read_only, idempotent))]
async fn work(
    /// How long to work, in milliseconds.
    ms: u64,
) -> Value {
    tokio::time::sleep(Duration::from_millis(ms.min(10_000))).await;
    json!({"worker": std::process::id(), "ms": ms})
}

fn usage() -> ! {
    eprintln!(
        "usage: nats_worker [--url nats://127.0.0.1:4222] [--prefix toolfunc] [--durable [--ack-wait MS]] \
         {} [--auth-issuer URL --auth-audience URI [--inbox-per-subject]]",
        nats_login::Login::USAGE
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let mut prefix = "toolfunc".to_owned();
    let mut durable = None;
    let mut login = nats_login::Login::default();
    let (mut issuer, mut audience, mut per_subject) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match login.take(&arg, &mut args) {
            Some(true) => continue,
            Some(false) => usage(),
            None => {}
        }
        match arg.as_str() {
            "--auth-issuer" => issuer = Some(args.next().unwrap_or_else(|| usage())),
            "--auth-audience" => audience = Some(args.next().unwrap_or_else(|| usage())),
            "--inbox-per-subject" => per_subject = true,
            "--url" => url = args.next().unwrap_or_else(|| usage()),
            "--prefix" => prefix = args.next().unwrap_or_else(|| usage()),
            "--durable" => durable = Some(DurableSettings::new()),
            "--ack-wait" => {
                let ms = args
                    .next()
                    .and_then(|ms| ms.parse().ok())
                    .unwrap_or_else(|| usage());
                durable = Some(DurableSettings::new().ack_wait(Duration::from_millis(ms)));
            }
            _ => usage(),
        }
    }
    let mut builder = toolfunc::nats::Worker::builder(Registry::global()).prefix(&prefix);
    if let Some(settings) = durable {
        builder = builder.durable(settings);
    }
    match (issuer, audience) {
        (None, None) => {}
        (Some(issuer), Some(audience)) => match Jwt::discover(&issuer, &audience).await {
            Ok(jwt) => builder = builder.authenticate(jwt).inbox_per_subject(per_subject),
            Err(err) => {
                eprintln!("cannot use the issuer {issuer}: {err}");
                std::process::exit(1);
            }
        },
        _ => usage(),
    }
    let nats = match login.connect(&url).await {
        Ok(nats) => nats,
        Err(err) => {
            eprintln!("{err} (is nats-server running there?)");
            std::process::exit(1);
        }
    };
    let worker = match builder.start(nats).await {
        Ok(worker) => worker,
        Err(err) => {
            eprintln!("cannot start the worker: {err} (is nats-server running at {url}?)");
            std::process::exit(1);
        }
    };
    println!(
        "toolfunc NATS worker {} (pid {}) serving {} tools on {url} under `{prefix}.call.<tool>`",
        worker.id(),
        std::process::id(),
        worker.tools().len()
    );
    println!();
    println!("  cargo run --example nats_client                 # calls them from Rust");
    println!("  nats req {prefix}.call.add '{{\"a\":1,\"b\":2}}'        # from the NATS CLI: 3.0");
    println!("  nats req {prefix}.call.work '{{\"ms\":100}}'           # which worker ran it");
    println!("  nats micro info toolfunc                        # $SRV discovery and stats");
    let _ = tokio::signal::ctrl_c().await;
    worker.stop(Duration::from_secs(5)).await;
}
