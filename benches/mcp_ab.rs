//! MCP `tools/call` of `add`, toolfunc against the bare rmcp handler, timed in
//! interleaved rounds: on a noisy machine, two criterion runs one after the other
//! drift apart by more than the difference they measure, while rounds that take
//! turns see the same noise.
//!
//! `cargo bench --bench mcp_ab [-- ROUNDS CALLS]` (15 rounds of 1,000 calls by
//! default). Each round times `CALLS` calls of each server, the order alternating
//! round to round; it prints the median time a call over every round, and the
//! median of the rounds' ratios as calls per second relative to the bare handler
//! (bare time / toolfunc time: above 1.0 toolfunc is faster). Both transports: the
//! sessionless (2026-07-28) streamable HTTP request (both servers behind
//! `TCP_NODELAY`, one keep-alive client) and the stdio framing over an in-process
//! pipe, each on one current-thread runtime.
//!
//! `mcp_ab count http|stdio bare|toolfunc CALLS` makes one peer's calls untimed,
//! for `valgrind --tool=callgrind` (less the count of 0 calls, divided by CALLS).

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::json;
use toolfunc::Registry;
use toolfunc::mcp::Server;
use toolfunc::mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use toolfunc::mcp::rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
};

#[path = "support/mcp.rs"]
mod peers;

use peers::{BareAdd, Session, http_call, serve_http};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Times `rounds` rounds of `calls` calls of each peer, taking turns; prints the
/// medians and the ratio.
/// Makes `calls` calls of one peer, untimed: for `valgrind --tool=callgrind`, whose
/// instruction counts (less those of 0 calls) repeat where times do not.
async fn count<P>(
    calls: usize,
    peer: &mut P,
    call: impl for<'a> Fn(&'a mut P) -> BoxFuture<'a, ()>,
) {
    for _ in 0..calls {
        call(peer).await;
    }
}

async fn compare<P>(
    what: &str,
    rounds: usize,
    calls: usize,
    peers: &mut [P; 2],
    call: impl for<'a> Fn(&'a mut P) -> BoxFuture<'a, ()>,
) {
    // Warm both up.
    for peer in peers.iter_mut() {
        for _ in 0..calls / 4 {
            call(peer).await;
        }
    }
    let (mut times, mut ratios) = ([Vec::new(), Vec::new()], Vec::new());
    for round in 0..rounds {
        let mut took = [Duration::ZERO; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for peer in order {
            let start = Instant::now();
            for _ in 0..calls {
                call(&mut peers[peer]).await;
            }
            took[peer] = start.elapsed();
        }
        let per_call = |d: Duration| {
            d.as_secs_f64() * 1e6 / f64::from(u32::try_from(calls).unwrap_or(u32::MAX))
        };
        times[0].push(per_call(took[0]));
        times[1].push(per_call(took[1]));
        ratios.push(took[0].as_secs_f64() / took[1].as_secs_f64());
    }
    let [bare, ours] = times;
    println!(
        "{what}: bare rmcp {:.2} µs, toolfunc {:.2} µs a call; toolfunc calls/s vs bare {:.3}× (rounds {:.3}–{:.3})",
        median(bare),
        median(ours),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
}

/// One sessionless `tools/call` over HTTP, its answer checked.
fn call_http((client, url): &mut (reqwest::Client, String)) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let response = http_call(client, url).send().await.expect("an answer");
        let body = response.bytes().await.expect("a body");
        assert!(
            body.windows(12).any(|w| w == b"\"text\":\"3.0\""),
            "{}",
            String::from_utf8_lossy(&body)
        );
    })
}

/// One `tools/call` on a stdio session, its answer checked.
fn call_stdio(session: &mut Session) -> BoxFuture<'_, ()> {
    Box::pin(async move {
        let params = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
        let answer = session.request("tools/call", params).await;
        assert_eq!(answer["result"]["content"][0]["text"], "3.0", "{answer}");
    })
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    // `count http|stdio bare|toolfunc CALLS`: one peer's calls, for callgrind.
    let counting = (args.first().map(String::as_str) == Some("count")).then(|| {
        let transport = args.get(1).cloned().unwrap_or_default();
        let peer = usize::from(args.get(2).map(String::as_str) == Some("toolfunc"));
        let calls = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1_000);
        (transport, peer, calls)
    });
    let mut given = args.iter().map(|a| a.parse::<usize>());
    let rounds = given.next().and_then(Result::ok).unwrap_or(15);
    let calls = given.next().and_then(Result::ok).unwrap_or(1_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let service = StreamableHttpService::new(
            || Ok(BareAdd),
            std::sync::Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let urls = [
            serve_http(axum::Router::new().nest_service("/mcp", service)).await,
            serve_http(Server::new(Registry::global()).router()).await,
        ];
        let client = reqwest::Client::new();
        let mut servers = urls.map(|url| (client.clone(), url));
        match &counting {
            Some((transport, peer, calls)) if transport == "http" => {
                return count(*calls, &mut servers[*peer], call_http).await;
            }
            Some(_) => {}
            None => compare("HTTP", rounds, calls, &mut servers, call_http).await,
        }

        let [bare, ours] = peers::stdio_sessions().await;
        let mut sessions = [bare, ours];
        match counting {
            Some((_, peer, calls)) => count(calls, &mut sessions[peer], call_stdio).await,
            None => compare("stdio", rounds, calls, &mut sessions, call_stdio).await,
        }
    });
}
