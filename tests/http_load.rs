//! A bounded load run against the server as `Server::serve` starts it: thousands
//! of mixed requests (calls, streams, errors, refusals) on keep-alive connections,
//! with zero unexpected answers and memory that stays flat. The count is fixed;
//! nothing here measures time.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;

use std::time::Duration;

use futures::future::join_all;
use serde_json::{Value, json};
use toolfunc::http::{Api, Server};

/// Resident memory of this process in KiB, where `/proc` tells it.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

async fn round(client: &reqwest::Client, base: &str, n: usize) -> usize {
    let json = "application/json";
    let mut wrong = 0;
    for i in 0..n {
        let (request, want): (reqwest::RequestBuilder, u16) = match i % 6 {
            0 => (
                client
                    .post(format!("{base}/add"))
                    .header("content-type", json)
                    .body(r#"{"a":1,"b":2}"#),
                200,
            ),
            1 => (
                client
                    .post(format!("{base}/countdown"))
                    .header("content-type", json)
                    .body(r#"{"count":20,"stream":true}"#),
                200,
            ),
            2 => (client.get(format!("{base}/users/1")), 200),
            3 => (
                client
                    .post(format!("{base}/fail"))
                    .header("content-type", json)
                    .body("{}"),
                500,
            ),
            4 => (client.get(format!("{base}/users/2?act=delete")), 405),
            _ => (
                client
                    .post(format!("{base}/add"))
                    .header("content-type", "text/plain")
                    .body("{}"),
                415,
            ),
        };
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let body = response.bytes().await;
                if status != want || body.is_err() {
                    wrong += 1;
                }
            }
            Err(_) => wrong += 1,
        }
    }
    wrong
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_mixed_requests_with_no_error_and_flat_memory() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::new()
        .mount(Api::new(demo::catalog()))
        .unwrap()
        .idle_timeout(Duration::from_secs(5));
    tokio::spawn(server.serve(listener));
    let base = format!("http://{addr}/api");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(32)
        .build()
        .unwrap();
    // Warm up: allocator pools, connection pool, caches.
    let warm = join_all((0..32).map(|_| round(&client, &base, 60))).await;
    assert_eq!(
        warm.iter().sum::<usize>(),
        0,
        "unexpected answers while warming up"
    );
    let before = rss_kib();
    for _ in 0..4 {
        let wrong = join_all((0..32).map(|_| round(&client, &base, 60))).await;
        assert_eq!(
            wrong.iter().sum::<usize>(),
            0,
            "unexpected answers under load"
        );
    }
    let after = rss_kib();
    if let (Some(before), Some(after)) = (before, after) {
        // 7,680 requests: a leak of 4 KiB each (30 MiB) fails this.
        assert!(
            after < before + 24 * 1024,
            "memory grew from {before} KiB to {after} KiB over the run"
        );
    }
    // The server still answers normally afterwards.
    let out = client
        .post(format!("{base}/add"))
        .header("content-type", "application/json")
        .body(r#"{"a":2,"b":2}"#)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out, json!(4.0));
}
