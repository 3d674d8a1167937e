//! MCP `tools/call` of `add`, toolfunc against two rmcp handlers written directly on
//! the SDK, timed in interleaved rounds: on a noisy machine, two criterion runs one
//! after the other drift apart by more than the difference they measure, while
//! rounds that take turns see the same noise.
//!
//! The two floors: `bare` lists no tool and answers text only (the least a server
//! can do); `listed` is rmcp's cheapest setup of the same tool with the same answer
//! as toolfunc's (listed with its schemas, `get_tool` from a kept `Tool`, text and
//! `structuredContent`).
//!
//! `cargo bench --bench mcp_ab [-- ROUNDS CALLS]` (15 rounds of 1,000 calls by
//! default). Each round times `CALLS` calls of each server, the order rotating
//! round to round; it prints the median time a call over every round, and the
//! median of the rounds' ratios as calls per second relative to each floor (floor
//! time / toolfunc time: above 1.0 toolfunc is faster). Both transports: the
//! sessionless (2026-07-28) streamable HTTP request (both servers behind
//! `TCP_NODELAY`, one keep-alive client) and the stdio framing over an in-process
//! pipe, each on one current-thread runtime.
//!
//! `mcp_ab count http|stdio bare|listed|toolfunc CALLS` makes one peer's calls untimed,
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

use peers::{BareAdd, ListedAdd, Session, http_call, serve_http};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

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

/// The peers, in the order of their results: the two floors, then toolfunc.
const PEERS: [&str; 3] = ["bare", "listed", "toolfunc"];

/// Times `rounds` rounds of `calls` calls of each peer, taking turns; prints the
/// medians and the ratios.
async fn compare<P>(
    what: &str,
    rounds: usize,
    calls: usize,
    peers: &mut [P; 3],
    call: impl for<'a> Fn(&'a mut P) -> BoxFuture<'a, ()>,
) {
    // Warm them up.
    for peer in peers.iter_mut() {
        count(calls / 4, peer, &call).await;
    }
    let mut times: [Vec<f64>; 3] = Default::default();
    let mut ratios: [Vec<f64>; 2] = Default::default();
    for round in 0..rounds {
        let mut took = [Duration::ZERO; 3];
        for turn in 0..3 {
            let peer = (round + turn) % 3;
            let start = Instant::now();
            count(calls, &mut peers[peer], &call).await;
            took[peer] = start.elapsed();
        }
        let per_call = |d: Duration| {
            d.as_secs_f64() * 1e6 / f64::from(u32::try_from(calls).unwrap_or(u32::MAX))
        };
        for (peer, took) in took.iter().enumerate() {
            times[peer].push(per_call(*took));
        }
        for floor in 0..2 {
            ratios[floor].push(took[floor].as_secs_f64() / took[2].as_secs_f64());
        }
    }
    let [bare, listed, ours] = times.map(median);
    println!(
        "{what}: bare rmcp {bare:.2} µs, listed rmcp {listed:.2} µs, toolfunc {ours:.2} µs a call"
    );
    for (floor, ratios) in ratios.into_iter().enumerate() {
        println!(
            "  toolfunc calls/s vs {}: {:.3}× (rounds {:.3}–{:.3})",
            PEERS[floor],
            median(ratios.clone()),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
        );
    }
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
    // `count http|stdio bare|listed|toolfunc CALLS`: one peer's calls, for callgrind.
    let counting = (args.first().map(String::as_str) == Some("count")).then(|| {
        let transport = args.get(1).cloned().unwrap_or_default();
        let peer = PEERS
            .iter()
            .position(|peer| args.get(2).map(String::as_str) == Some(*peer))
            .unwrap_or(0);
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
        let bare = StreamableHttpService::new(
            || Ok(BareAdd),
            std::sync::Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let listed_add = ListedAdd::new();
        let listed = StreamableHttpService::new(
            move || Ok(listed_add.clone()),
            std::sync::Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let urls = [
            serve_http(axum::Router::new().nest_service("/mcp", bare)).await,
            serve_http(axum::Router::new().nest_service("/mcp", listed)).await,
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

        let mut sessions = [
            peers::stdio_session(BareAdd).await,
            peers::stdio_session(ListedAdd::new()).await,
            peers::stdio_toolfunc().await,
        ];
        match counting {
            Some((_, peer, calls)) => count(calls, &mut sessions[peer], call_stdio).await,
            None => compare("stdio", rounds, calls, &mut sessions, call_stdio).await,
        }
    });
}
