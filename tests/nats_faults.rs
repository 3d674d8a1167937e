//! A worker killed under load: three `nats_worker` processes share calls from one
//! client; one is killed with SIGKILL mid-load. Every idempotent call completes
//! (retried on another worker), every durable call completes (redelivered by
//! JetStream), every other call either completes or fails with `WORKER_LOST`, none
//! outlives its deadline, and the counts add up.

#[path = "support/nats.rs"]
mod nats_server;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use toolfunc::CallOptions;
use toolfunc::nats::Client;

use nats_server::NatsServer;

/// The `nats_worker` example, built by `cargo test` beside the test binaries (and
/// built here when a single test target was asked for).
fn example_worker() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let target = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let worker = target.join("examples/nats_worker");
    if !worker.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "--example", "nats_worker"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the nats_worker example failed");
    }
    worker
}

/// Starts a worker process and waits for its ready line.
async fn start_worker(url: &str) -> Child {
    let mut child = Command::new(example_worker())
        .args(["--url", url, "--ack-wait", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the worker starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("toolfunc NATS worker") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(ready.ok(), Some(true), "the worker printed its ready line");
    // Keep draining what it prints.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

#[derive(Debug, Default)]
struct Counts {
    sent: usize,
    ok: usize,
    lost: usize,
    other: Vec<String>,
    late: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_loses_no_idempotent_call_and_hangs_none() {
    let server = NatsServer::start();
    let url = server.url();
    let mut workers = Vec::new();
    for _ in 0..3 {
        workers.push(start_worker(&url).await);
    }
    let client = Client::builder()
        .heartbeat(Duration::from_millis(100))
        .attempts(5)
        .connect(&url)
        .await
        .unwrap();
    assert!(client.has("work") && client.has("sleep"));
    let deadline = Duration::from_secs(10);
    let runner = client.with(CallOptions::new().timeout(deadline));
    // Durable calls, taken by the workers from JetStream (10 per worker at a time
    // at most, so the victim holds some when it dies).
    let mut durable = Vec::new();
    for _ in 0..60 {
        durable.push(client.submit("sleep", json!({"ms": 300})).await.unwrap());
    }
    // Waves of calls, half idempotent (`work`), half not (`sleep`), each 300 ms.
    let mut calls = Vec::new();
    for wave in 0..6 {
        for i in 0..40 {
            let runner = runner.clone();
            let idempotent = i % 2 == 0;
            calls.push(tokio::spawn(async move {
                let started = Instant::now();
                let result = if idempotent {
                    runner.run("work", json!({"ms": 300})).await
                } else {
                    runner.run("sleep", json!({"ms": 300})).await
                };
                (idempotent, result, started.elapsed())
            }));
        }
        if wave == 2 {
            // Mid-load: SIGKILL one worker while its calls run.
            tokio::time::sleep(Duration::from_millis(150)).await;
            let victim = &mut workers[0];
            victim.start_kill().expect("SIGKILL the worker");
            let _ = victim.wait().await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut idempotent = Counts::default();
    let mut plain = Counts::default();
    for call in calls {
        let (is_idempotent, result, took) = call.await.unwrap();
        let counts = if is_idempotent {
            &mut idempotent
        } else {
            &mut plain
        };
        counts.sent += 1;
        if took > deadline + Duration::from_secs(1) {
            counts.late += 1;
        }
        match result {
            Ok(_) => counts.ok += 1,
            Err(err) if err.code() == "WORKER_LOST" => counts.lost += 1,
            Err(err) => counts.other.push(format!("{}: {err}", err.code())),
        }
    }
    let mut kept = Counts::default();
    for id in &durable {
        kept.sent += 1;
        match tokio::time::timeout(Duration::from_secs(20), client.wait(id)).await {
            Ok(Ok(_)) => kept.ok += 1,
            Ok(Err(err)) => kept.other.push(format!("{}: {err}", err.code())),
            Err(_) => kept.late += 1,
        }
    }
    println!("idempotent `work`: {idempotent:?}");
    println!("plain `sleep`:     {plain:?}");
    println!("durable `sleep`:   {kept:?}");
    assert_eq!(kept.ok, kept.sent, "every durable call completed: {kept:?}");
    assert_eq!(idempotent.sent + plain.sent, 240);
    assert_eq!(
        idempotent.ok, idempotent.sent,
        "every idempotent call completed"
    );
    assert_eq!(
        plain.ok + plain.lost,
        plain.sent,
        "the others completed or were lost"
    );
    assert!(idempotent.other.is_empty() && plain.other.is_empty());
    assert_eq!(
        idempotent.late + plain.late,
        0,
        "no call outlived its deadline"
    );
    assert!(
        plain.lost > 0,
        "the killed worker was running plain calls, which report WORKER_LOST"
    );
}
