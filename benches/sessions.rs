//! Memory held by idle MCP streamable-HTTP sessions: sessions opened (`initialize`
//! and `notifications/initialized`) and left alone, then what the process holds
//! divided by their number; then whether it all goes when they expire, and what
//! `initialize` requests that never close their sessions can make the process hold.
//!
//! `cargo bench --bench sessions` prints, nothing is timed:
//!
//! * `running`: heap and resident set per idle session whose SDK session runs (its
//!   requests carry an `Origin`, which is never answered at rest, and it ends before
//!   it would be parked): what every idle session held before sessions could rest;
//! * `rest`: heap bytes per initialised session right after the burst: a plain
//!   `initialize` opens a session at rest, with no SDK session;
//! * `idle`: heap bytes per idle initialised session at rest, with a park time
//!   of 500 ms (under the 3 s idle lifetime) and of 30 s (the default, over it:
//!   sessions rest all the same), counted by a counting allocator
//!   around the global one (exact, server and client in one process; the client
//!   holds nothing per session but the ids, which are subtracted), and the growth of
//!   the process's resident set (`VmRSS`, what an operator sees) per session (it
//!   stays near the burst's peak: the allocator keeps the pages it was given, and
//!   the next burst reuses them);
//! * `expire`: the sessions' idle lifetime passes, the server's open sessions fall to
//!   0, an old session id gets 404, the heap is back where it was; a second burst of
//!   the same size, and its peak (heap and `VmHWM`) against the first one's;
//! * `flood`: `INITS` `initialize` requests (default 100,000) that never send
//!   `DELETE`, against a server with the default cap and lifetimes, and the highest
//!   the process went (heap and `VmHWM`) against the bound the documentation gives:
//!   base + cap × bytes per session.
//!
//! `SESSIONS` (default 1,000) sets the burst size (and the cap of the first server).

#[path = "../tests/support/counting.rs"]
mod counting;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolfunc::mcp::Server;
use toolfunc::{Registry, ToolFunc};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

use counting::{held, peak, reset_peak};

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`); 0 where there is none.
fn status(field: &str) -> isize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .map_or(0, |kb: isize| kb * 1024)
}

/// Lowers `VmHWM` to the current resident set (Linux: write 5 to `clear_refs`).
fn reset_hwm() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// 50 tools with descriptions and schemas: listed once, shared by every session.
fn registry() -> Registry {
    let registry = Registry::new();
    for i in 0..50 {
        let tool = ToolFunc::builder(format!("tool_{i}"))
            .description("Adds two numbers and says what it did, at some length.")
            .handler_sync(|_, args| Ok(args))
            .build()
            .expect("a valid bench tool");
        registry.register(tool).expect("unique bench names");
    }
    registry
}

const VERSION: &str = "2025-11-25";

struct Http {
    client: reqwest::Client,
    url: String,
    /// An `Origin` header on every request: a request from a page is never
    /// answered at rest, so its session runs the SDK's session.
    origin: Option<&'static str>,
}

impl Http {
    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(origin) = self.origin {
            request = request.header("Origin", origin);
        }
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", VERSION);
        }
        request.send().await.expect("the server answers")
    }

    /// `initialize` alone: its status and session id.
    async fn open(&self) -> (u16, Option<String>) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "sessions-bench", "version": "0.0.1"},
        }});
        let response = self.post(None, &init).await;
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let _ = response.bytes().await;
        (status, session)
    }

    /// A whole handshake; the session id.
    async fn initialize(&self) -> String {
        let (status, session) = self.open().await;
        assert_eq!(status, 200, "initialize refused");
        let session = session.expect("an mcp-session-id header");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = self.post(Some(&session), &initialized).await;
        assert_eq!(response.status().as_u16(), 202);
        let _ = response.bytes().await;
        session
    }

    /// The status of a `tools/list` in `session`.
    async fn list(&self, session: &str) -> u16 {
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let response = self.post(Some(session), &list).await;
        let status = response.status().as_u16();
        let _ = response.bytes().await;
        status
    }
}

async fn serve(server: Server) -> Http {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(toolfunc::mcp::serve(listener, server.router()));
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(64)
        .build()
        .expect("a client");
    Http {
        client,
        url: format!("http://{addr}{}", toolfunc::mcp::PATH),
        origin: None,
    }
}

/// Opens `count` sessions, 32 at a time; their ids.
async fn burst(http: &Http, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let n = (count - ids.len()).min(32);
        ids.extend(futures::future::join_all((0..n).map(|_| http.initialize())).await);
    }
    ids
}

/// Lets the sessions' tasks settle.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Waits until `server` has no session open, at most `limit`.
async fn until_closed(server: &Server, limit: Duration) -> bool {
    let start = Instant::now();
    while server.open_sessions() > 0 {
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

#[allow(clippy::cast_precision_loss)] // a figure to print
fn kib(bytes: isize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
fn main() {
    let sessions = env("SESSIONS", 1000);
    let inits = env("INITS", 100_000);
    let idle = Duration::from_secs(3);
    let park = Duration::from_millis(500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        // running: every session keeps its SDK session (channels, tasks,
        // handler), as every idle session did before sessions could rest: its
        // requests come from a page (an `Origin`), which is never answered at
        // rest, and it would end before it is parked.
        let server = Server::new(registry())
            .max_sessions(sessions)
            .max_sessions_per_caller(sessions)
            .session_idle_lifetime(idle)
            .session_park_after(idle);
        let mut http = serve(server.clone()).await;
        http.origin = Some("http://localhost");
        let warm = burst(&http, 64).await;
        drop(warm);
        assert!(
            until_closed(&server, idle * 3).await,
            "warm-up sessions expire"
        );
        settle().await;
        let (heap0, rss0) = (held(), status("VmRSS"));
        let ids = burst(&http, sessions).await;
        settle().await;
        let id_bytes: isize = ids
            .iter()
            .map(|id| id.capacity().cast_signed())
            .sum::<isize>()
            + (ids.capacity() * size_of::<String>()).cast_signed();
        let (heap1, rss1) = (held() - id_bytes, status("VmRSS"));
        let n = sessions.cast_signed();
        println!(
            "running: {sessions} initialised sessions, parking off: {} B of heap a session, \
             resident set +{} B a session",
            (heap1 - heap0) / n,
            (rss1 - rss0) / n,
        );
        drop(ids);
        assert!(
            until_closed(&server, idle * 3).await,
            "running sessions expire"
        );

        // idle and expire: sessions at rest from their plain `initialize`, with a
        // park time under the idle lifetime, and with the default park time (30 s)
        // over it: they rest all the same.
        at_rest(sessions, idle, park).await;
        at_rest(sessions, idle, toolfunc::mcp::DEFAULT_SESSION_PARK_AFTER).await;

        // flood: the defaults (but one client may take every place), and
        // initialize requests that never close anything.
        let server =
            Server::new(registry()).max_sessions_per_caller(toolfunc::mcp::DEFAULT_MAX_SESSIONS);
        let http = serve(server.clone()).await;
        let warm = burst(&http, 8).await;
        drop(warm);
        settle().await;
        let (base_heap, base_rss) = (held(), status("VmRSS"));
        reset_peak();
        reset_hwm();
        let mut opened = 0;
        let mut refused = 0;
        let mut sent = 0;
        while sent < inits {
            let n = (inits - sent).min(32);
            let answers = futures::future::join_all((0..n).map(|_| http.open())).await;
            for (status, _) in answers {
                match status {
                    200 => opened += 1,
                    503 => refused += 1,
                    other => panic!("initialize answered {other}"),
                }
            }
            sent += n;
        }
        settle().await;
        let (peak3, hwm3) = (peak(), status("VmHWM"));
        let cap = toolfunc::mcp::DEFAULT_MAX_SESSIONS.cast_signed();
        println!(
            "flood: {inits} initialize without DELETE (cap {cap}): {opened} opened, {refused} \
             refused (503); open sessions {}; peak heap {} over the base ({} a place), \
             VmHWM {} over the base resident set",
            server.open_sessions(),
            kib(peak3 - base_heap),
            kib((peak3 - base_heap) / cap),
            kib(hwm3 - base_rss),
        );
    });
}

/// Sessions at rest (from their plain `initialize`; parked after `park` of quiet
/// had an SDK session run) and left idle until they expire, then a second burst:
/// the `idle`, `rest` and `expire` lines, labelled with `park`.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
async fn at_rest(sessions: usize, idle: Duration, park: Duration) {
    let server = Server::new(registry())
        .max_sessions(sessions)
        .max_sessions_per_caller(sessions)
        .session_idle_lifetime(idle)
        .session_park_after(park);
    let http = serve(server.clone()).await;
    // Long enough for a running session to be parked, within the idle lifetime.
    let quiet = (park * 4).min(idle / 2);
    // Warm up: the client's connections, the server's lazily made parts.
    let warm = burst(&http, 64).await;
    assert_eq!(http.list(&warm[0]).await, 200);
    assert!(
        until_closed(&server, idle * 3).await,
        "warm-up sessions expire"
    );
    settle().await;

    // idle
    let (heap0, rss0) = (held(), status("VmRSS"));
    reset_peak();
    reset_hwm();
    let ids = burst(&http, sessions).await;
    // At rest from their plain `initialize`: no SDK session was started.
    let id_bytes: isize = ids
        .iter()
        .map(|id| id.capacity().cast_signed())
        .sum::<isize>()
        + (ids.capacity() * size_of::<String>()).cast_signed();
    println!(
        "rest (park after {park:?}): {sessions} initialised sessions, at once: {} B of heap a session",
        (held() - id_bytes - heap0) / sessions.cast_signed()
    );
    tokio::time::sleep(quiet).await;
    let id_bytes: isize = ids
        .iter()
        .map(|id| id.capacity().cast_signed())
        .sum::<isize>()
        + (ids.capacity() * size_of::<String>()).cast_signed();
    let (heap1, rss1) = (held() - id_bytes, status("VmRSS"));
    let (peak1, hwm1) = (peak(), status("VmHWM"));
    let n = sessions.cast_signed();
    let per_heap = (heap1 - heap0) / n;
    let per_rss = (rss1 - rss0) / n;
    println!(
        "idle (park after {park:?}): {sessions} initialised sessions, after {quiet:?} of quiet: {per_heap} B of heap a session ({} in all), \
         resident set +{per_rss} B a session ({} in all); open sessions: {}",
        kib(heap1 - heap0),
        kib(rss1 - rss0),
        server.open_sessions()
    );
    let old = ids[0].clone();
    drop(ids);

    // expire
    let closed = until_closed(&server, idle * 3).await;
    settle().await;
    let status_old = http.list(&old).await;
    let heap2 = held();
    println!(
        "expire (park after {park:?}): after the idle lifetime ({idle:?}): all closed: {closed}, open sessions: {}, \
         an old id gets {status_old}, heap {} against before the burst",
        server.open_sessions(),
        kib(heap2 - heap0),
    );
    reset_peak();
    reset_hwm();
    let ids = burst(&http, sessions).await;
    tokio::time::sleep(quiet).await;
    let (peak2, hwm2) = (peak(), status("VmHWM"));
    println!(
        "expire (park after {park:?}): second burst of {sessions}: peak heap {} vs {} (ratio {:.3}), \
         VmHWM {} vs {} (ratio {:.3})",
        kib(peak2),
        kib(peak1),
        peak2 as f64 / peak1 as f64,
        kib(hwm2),
        kib(hwm1),
        hwm2 as f64 / hwm1 as f64,
    );
    drop(ids);
    assert!(
        until_closed(&server, idle * 3).await,
        "second burst expires"
    );
}
