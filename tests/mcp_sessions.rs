//! Streamable HTTP sessions that clients open and never close: the cap refuses
//! more (503), idle ones expire (an old id gets 404) and free their places, the
//! count of open sessions goes back to 0 after a burst expires, quiet sessions are
//! parked (their SDK session closed) and come back under the same id on their next
//! request with what they had, and the example server's `--mcp-*` flags set the cap
//! and the idle lifetime.
//!
//! The heap an idle session holds is measured here too, with a counting allocator
//! around the global one: the tests of this file run one at a time so that each
//! sees only its own allocations.

#[path = "support/mcp.rs"]
mod mcp_support;
#[path = "support/process.rs"]
mod process;

#[path = "support/counting.rs"]
mod counting;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;
use toolfunc::mcp::Server;
use toolfunc::{LogLevel, Registry, ToolFunc};

use mcp_support::{Answer, Events, LIMIT, serve_http};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// One test at a time: the heap measurement sees only its own test.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const VERSION: &str = "2025-11-25";

/// Twenty tools with schemas (listed once for every session), one that logs at
/// every level and one that sleeps.
fn registry() -> Registry {
    let registry = Registry::new();
    for i in 0..20 {
        let tool = ToolFunc::builder(format!("echo_{i}"))
            .description("Answers its arguments, as they came.")
            .handler_sync(|_, args| Ok(args))
            .build()
            .expect("a valid tool");
        registry.register(tool).expect("a unique name");
    }
    let chatty = ToolFunc::builder("chatty")
        .handler_sync(|ctx, _| {
            for level in LogLevel::ALL {
                ctx.log(level, format_args!("at {level}"));
            }
            Ok(Value::from("done"))
        })
        .build()
        .expect("a valid tool");
    registry.register(chatty).expect("a unique name");
    let nap = ToolFunc::builder("nap")
        .handler(|_, args| async move {
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(Value::from("rested"))
        })
        .build()
        .expect("a valid tool");
    registry.register(nap).expect("a unique name");
    registry
}

struct Http {
    client: reqwest::Client,
    url: String,
}

impl Http {
    fn new(url: String) -> Self {
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("a client");
        Self { client, url }
    }

    async fn post(&self, session: Option<&str>, message: &Value) -> Answer {
        let mut request = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", VERSION);
        }
        Answer::read(request, LIMIT).await
    }

    /// `initialize` alone.
    async fn open(&self) -> Answer {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "sessions-test", "version": "0.0.1"},
        }});
        self.post(None, &init).await
    }

    /// A whole handshake; the session id.
    async fn initialize(&self) -> String {
        let answer = self.open().await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let session = answer.session.expect("an mcp-session-id header");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = self.post(Some(&session), &initialized).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
        session
    }

    /// The status of a `tools/list` in `session` (checked to list the tools when 200).
    async fn list(&self, session: &str) -> u16 {
        let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
        let answer = self.post(Some(session), &list).await;
        if answer.status == 200 {
            let tools = &answer.response(7)["result"]["tools"];
            assert_eq!(tools.as_array().map(Vec::len), Some(22), "{}", answer.body);
        }
        answer.status
    }

    async fn call(&self, session: &str, id: i64, name: &str, arguments: Value) -> Answer {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        self.post(Some(session), &call).await
    }

    async fn delete(&self, session: &str) -> u16 {
        let request = self
            .client
            .delete(&self.url)
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", VERSION);
        Answer::read(request, LIMIT).await.status
    }

    /// The session's `GET` stream.
    async fn events(&self, session: &str) -> Events {
        Events::open(
            self.client
                .get(&self.url)
                .header("Accept", "text/event-stream")
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", VERSION),
        )
        .await
    }
}

/// Waits until `done` holds, checking every 50 ms; panics with `what` after 20 s.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Opens `count` sessions, eight at a time.
async fn burst(http: &Http, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    while ids.len() < count {
        let n = (count - ids.len()).min(8);
        ids.extend(futures::future::join_all((0..n).map(|_| http.initialize())).await);
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_past_the_cap_get_503_and_expired_ones_free_their_places() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::new(registry())
        .max_sessions(3)
        .session_idle_lifetime(Duration::from_secs(1));
    let http = Http::new(serve_http(server.clone().router()).await);
    let first = burst(&http, 3).await;
    assert_eq!(server.open_sessions(), 3);
    let answer = http.open().await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    let error: Value = serde_json::from_str(&answer.body).expect("a JSON-RPC error");
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(answer.session.is_none());

    // Nobody closes them: after the idle lifetime they are gone.
    until("the idle sessions expire", || server.open_sessions() == 0).await;
    for session in &first {
        assert_eq!(http.list(session).await, 404);
    }
    // And the cap is whole again.
    let second = burst(&http, 3).await;
    for session in &second {
        assert_eq!(http.list(session).await, 200);
    }
    assert_eq!(http.open().await.status, 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_that_expires_leaves_no_session_open() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::new(registry())
        .max_sessions(40)
        .max_sessions_per_caller(40)
        .session_idle_lifetime(Duration::from_secs(1))
        .session_park_after(Duration::from_millis(200));
    let http = Http::new(serve_http(server.clone().router()).await);
    assert_eq!(server.open_sessions(), 0);
    for _ in 0..2 {
        let ids = burst(&http, 40).await;
        assert_eq!(server.open_sessions(), 40);
        assert_eq!(http.open().await.status, 503);
        until("the burst expires", || server.open_sessions() == 0).await;
        assert_eq!(http.list(&ids[0]).await, 404);
        assert_eq!(http.list(&ids[39]).await, 404);
    }
    // Closing is counted too.
    let ids = burst(&http, 2).await;
    assert_eq!(server.open_sessions(), 2);
    assert_eq!(http.delete(&ids[0]).await, 204);
    assert_eq!(server.open_sessions(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_session_comes_back_under_its_id() {
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::new(registry())
        .max_sessions(2)
        .session_park_after(Duration::from_millis(100));
    let http = Http::new(serve_http(server.clone().router()).await);
    let session = http.initialize().await;
    let set = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "error"}});
    let answer = http.post(Some(&session), &set).await;
    assert_eq!(answer.response(2)["result"], json!({}), "{}", answer.body);
    // Parked, then back, again and again, each time with its tools and its level.
    for round in 0..3 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(http.list(&session).await, 200, "round {round}");
        assert_eq!(server.open_sessions(), 1);
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut events = http.events(&session).await;
    let answer = http.call(&session, 3, "chatty", json!({})).await;
    assert_eq!(
        answer.response(3)["result"]["content"][0]["text"],
        "done",
        "{}",
        answer.body
    );
    let mut levels = Vec::new();
    while let Some(message) = events.next(Duration::from_millis(500)).await {
        if message["method"] == "notifications/message" {
            levels.push(message["params"]["level"].clone());
        }
    }
    assert_eq!(
        levels,
        [
            json!("error"),
            json!("critical"),
            json!("alert"),
            json!("emergency")
        ]
    );
    drop(events);
    // A parked session still holds its place, and closing it frees the place.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let other = http.initialize().await;
    assert_eq!(http.open().await.status, 503);
    assert_eq!(http.delete(&session).await, 204);
    assert_eq!(http.list(&session).await, 404);
    assert_eq!(server.open_sessions(), 1);
    assert_eq!(http.list(&other).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_sessions_are_not_parked() {
    let _one = ONE_AT_A_TIME.lock().await;
    let registry = registry();
    let server = Server::new(registry.clone()).session_park_after(Duration::from_millis(50));
    let http = Http::new(serve_http(server.clone().router()).await);
    let session = http.initialize().await;
    // A call much longer than the quiet time answers in its session.
    let answer = http.call(&session, 2, "nap", json!({"ms": 800})).await;
    assert_eq!(
        answer.response(2)["result"]["content"][0]["text"],
        "rested",
        "{}",
        answer.body
    );
    // A GET stream kept open hears of a tool list change long after the quiet time.
    let mut events = http.events(&session).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let tool = ToolFunc::builder("late")
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("a valid tool");
    registry.register(tool).expect("a unique name");
    let mut heard = false;
    while let Some(message) = events.next(Duration::from_secs(3)).await {
        if message["method"] == "notifications/tools/list_changed" {
            heard = true;
            break;
        }
    }
    assert!(heard, "no list_changed on the open GET stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_holds_under_20_kb() {
    const SESSIONS: usize = 300;
    let _one = ONE_AT_A_TIME.lock().await;
    let server = Server::new(registry())
        .max_sessions(SESSIONS)
        .max_sessions_per_caller(SESSIONS)
        .session_park_after(Duration::from_millis(100));
    let http = Http::new(serve_http(server.clone().router()).await);
    // Warm up: the client's connections and what the server makes once.
    let warm = burst(&http, 8).await;
    for session in &warm {
        assert_eq!(http.delete(session).await, 204);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = counting::held();
    let ids = burst(&http, SESSIONS).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let ids_bytes: usize =
        ids.iter().map(String::capacity).sum::<usize>() + ids.capacity() * size_of::<String>();
    let held = counting::held() - before - ids_bytes.cast_signed();
    let per_session = held / SESSIONS.cast_signed();
    assert!(
        per_session <= 20 * 1024,
        "{per_session} B of heap per idle session"
    );
    assert_eq!(server.open_sessions(), SESSIONS);
    // They all still answer.
    assert_eq!(http.list(&ids[0]).await, 200);
    assert_eq!(http.list(&ids[SESSIONS - 1]).await, 200);
}

/// The example server on a free loopback port with `--mcp-max-sessions max` and
/// `--mcp-session-idle idle`, once it says it listens; its address.
async fn start_example_server(max: &str, idle: &str) -> (process::Running, String) {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("bound").port()
    };
    let addr = format!("127.0.0.1:{port}");
    let mut server = process::Running::start(
        Command::new(process::example("server"))
            .args(["--addr", &addr, "--mcp-max-sessions", max])
            .args(["--mcp-session-idle", idle])
            .stderr(std::process::Stdio::piped()),
        "the example server",
    );
    server
        .until_prefix("toolfunc demo server listening", LIMIT)
        .await;
    (server, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_server_takes_the_session_flags() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (_server, addr) = start_example_server("2", "1").await;
    let http = Http::new(format!("http://{addr}/mcp"));
    let first = http.initialize().await;
    let _second = http.initialize().await;
    let answer = http.open().await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    // Idle for more than a second: gone, and the places are free again.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    assert_eq!(http.post(Some(&first), &list).await.status, 404);
    let _third = http.initialize().await;
    let _fourth = http.initialize().await;
    assert_eq!(http.open().await.status, 503);

    // A flag without a number is refused with the usage text, which names them.
    let finished = process::run(
        Command::new(process::example("server")).args(["--mcp-max-sessions", "many"]),
        "the example server with a bad flag",
        LIMIT,
    )
    .await;
    assert!(!finished.status.success());
    assert!(
        finished.stderr.contains("--mcp-session-idle SECONDS")
            && finished.stderr.contains("--mcp-max-sessions N"),
        "{}",
        finished.stderr
    );
}

/// One caller cannot take every place: past its share (3 here), its
/// `initialize` gets 429 with a JSON-RPC `BUSY` error, while another caller still
/// opens sessions, and a place it frees is its own again. Without an
/// authenticator a caller is its client label; with one, its verified subject,
/// whatever label it gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_holds_at_most_its_share_of_sessions() {
    let _one = ONE_AT_A_TIME.lock().await;
    let init = |name: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": name, "version": "0.0.1"},
        }})
    };
    let server = Server::new(registry())
        .max_sessions(50)
        .max_sessions_per_caller(3);
    let http = Http::new(serve_http(server.clone().router()).await);
    let mut mine = Vec::new();
    for _ in 0..3 {
        let answer = http.post(None, &init("greedy")).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        mine.push(answer.session.expect("a session"));
    }
    let refused = http.post(None, &init("greedy")).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    let error = &refused.response(1)["error"];
    assert_eq!(error["code"], -32000, "{}", refused.body);
    assert_eq!(error["data"]["code"], "BUSY", "{}", refused.body);
    // Another caller is not locked out.
    assert_eq!(http.post(None, &init("polite")).await.status, 200);
    // A place freed is the caller's again.
    assert_eq!(http.delete(&mine[0]).await, 204);
    assert_eq!(http.post(None, &init("greedy")).await.status, 200);
    assert_eq!(http.post(None, &init("greedy")).await.status, 429);

    // With an authenticator, the subject counts, whatever the label.
    let keys = toolfunc::auth::ApiKeys::new()
        .key("ann-key", toolfunc::Identity::new("ann"))
        .key("bob-key", toolfunc::Identity::new("bob"));
    let server = Server::new(registry())
        .max_sessions_per_caller(2)
        .authenticate(keys);
    let url = serve_http(server.router()).await;
    let as_who = |token: &str| {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "authorization",
            format!("Bearer {token}").parse().expect("a header"),
        );
        Http {
            client: reqwest::Client::builder()
                .no_proxy()
                .default_headers(headers)
                .build()
                .expect("a client"),
            url: url.clone(),
        }
    };
    let (ann, bob) = (as_who("ann-key"), as_who("bob-key"));
    for label in ["one", "two"] {
        assert_eq!(ann.post(None, &init(label)).await.status, 200);
    }
    assert_eq!(ann.post(None, &init("three")).await.status, 429);
    assert_eq!(bob.post(None, &init("one")).await.status, 200);
}

/// A field of a process's `/proc/<pid>/status`, in bytes.
fn proc_status(pid: u32, field: &str) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .map_or(0, |kb: usize| kb * 1024)
}

/// With an idle lifetime under the park time (`--mcp-session-idle 4`, parked
/// after 30 s by default), sessions still rest from their plain `initialize`:
/// answered as JSON, not SSE, and 2,000 idle ones cost the example server's
/// resident set at most 20 KB each; once they expire, a second burst peaks no
/// higher than 1.10× the first (`VmHWM`, reset before each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_server_rests_sessions_whatever_the_idle_lifetime() {
    const SESSIONS: usize = 2000;
    let _one = ONE_AT_A_TIME.lock().await;
    let (server, addr) = start_example_server("3000", "4").await;
    let pid = server.id().expect("running");
    let http = Http::new(format!("http://{addr}/mcp"));
    let listed = |session: String| {
        let http = &http;
        async move {
            let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
            http.post(Some(&session), &list).await.status
        }
    };
    let answer = http.open().await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(
        answer.content_type.starts_with("application/json"),
        "initialize answered as {}",
        answer.content_type
    );
    // Warm up: the client's connections and what the server makes once; then
    // every session gone.
    let warm = burst(&http, 64).await;
    assert_eq!(listed(warm[0].clone()).await, 200);
    let gone = |pid| async move {
        tokio::time::sleep(Duration::from_secs(6)).await;
        proc_status(pid, "VmRSS")
    };
    let mut peaks = Vec::new();
    let mut rss = gone(pid).await;
    for round in 0..2 {
        let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
        let before = rss;
        let ids = burst(&http, SESSIONS).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = proc_status(pid, "VmRSS");
        let per_session = after.saturating_sub(before) / SESSIONS;
        eprintln!("round {round}: {per_session} B of resident set per idle session");
        assert!(
            per_session <= 20 * 1024,
            "round {round}: {per_session} B of resident set per idle session"
        );
        assert_eq!(listed(ids[SESSIONS - 1].clone()).await, 200);
        peaks.push(proc_status(pid, "VmHWM"));
        rss = gone(pid).await;
        assert_eq!(
            listed(ids[0].clone()).await,
            404,
            "round {round}: not expired"
        );
    }
    #[allow(clippy::cast_precision_loss)] // a ratio to compare
    let ratio = peaks[1] as f64 / peaks[0] as f64;
    eprintln!("second burst's VmHWM: {ratio:.3}x the first's ({peaks:?})");
    assert!(
        ratio <= 1.10,
        "the second burst peaked {ratio:.3}× the first ({peaks:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_opened_and_closed_leave_no_task_behind() {
    let _one = ONE_AT_A_TIME.lock().await;
    // The default handshake deadline (30 s) outlives the test: a timer per session
    // that nobody stops would show as a task still alive.
    let server = Server::new(registry()).max_sessions(1000);
    let http = Http::new(serve_http(server.clone().router()).await);
    let metrics = tokio::runtime::Handle::current().metrics();
    // One session first, so the server's own tasks (its sweeper) are running.
    let warm = burst(&http, 1).await;
    assert_eq!(http.delete(&warm[0]).await, 204);
    until("the first session is gone", || server.open_sessions() == 0).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = metrics.num_alive_tasks();
    for _ in 0..4 {
        for id in burst(&http, 50).await {
            assert_eq!(http.delete(&id).await, 204);
        }
    }
    until("every session is closed", || server.open_sessions() == 0).await;
    // Slack for the connections the client keeps open (a task each), far below
    // one task per session.
    let mut alive = metrics.num_alive_tasks();
    let start = Instant::now();
    while alive > before + 40 && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        alive = metrics.num_alive_tasks();
    }
    assert!(
        alive <= before + 40,
        "{alive} tasks alive after 200 sessions opened and closed, {before} before"
    );
}
