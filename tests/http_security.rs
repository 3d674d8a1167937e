//! The HTTP server under attack: every way to reach an act past the auth hook, a
//! stream collected without bound, connections that never finish or never close,
//! cross-site requests and DNS rebinding. Each case is the attack as a client
//! would send it, over a real socket.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/http.rs"]
mod http_support;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio::time::{Instant, timeout};
use toolfunc::http::{Api, Server};
use toolfunc::{CallOptions, CollectLimit, Registry, ToolError, ToolFunc};

use http_support::{Conn, LIMIT, call, get, post, start, start_server};

/// The demo catalog with its own user store.
fn catalog() -> Registry {
    demo::catalog()
}

type Seen = Arc<Mutex<Vec<(Option<String>, Option<String>)>>>;

/// An API whose hook refuses `$promote` of `users` (and records what it saw).
fn no_promotions(registry: Registry, seen: &Seen) -> Api {
    let seen = Arc::clone(seen);
    Api::new(registry).auth(move |req| {
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((req.tool.map(str::to_owned), req.act.map(str::to_owned)));
        if req.tool == Some("users") && req.act == Some("$promote") {
            return Err(ToolError::custom("FORBIDDEN", 403, "no promotions"));
        }
        Ok(())
    })
}

async fn role_of(addr: SocketAddr, id: u32) -> Option<String> {
    let user = get(addr, &format!("/api/users/{id}")).await.ok();
    user["role"].as_str().map(str::to_owned)
}

/// A request: method, path, headers, body.
type Attempt<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, Option<&'a str>);

#[tokio::test]
async fn no_spelling_of_an_act_gets_past_the_auth_hook() {
    let seen = Seen::default();
    let addr = start(no_promotions(catalog(), &seen)).await;
    let json = [("content-type", "application/json")];
    // The canonical spelling is refused, of course.
    post(addr, "/api/users", r#"{"act":"$promote","id":"1"}"#)
        .await
        .error(403, "FORBIDDEN");
    // Every other way a client can name the same method.
    let attempts: Vec<Attempt<'_>> = vec![
        (
            "POST",
            "/api/users",
            json.to_vec(),
            Some(r#"{"act":"promote","id":"1"}"#),
        ),
        (
            "POST",
            "/api/users/1",
            vec![("rpc-act", "promote")],
            Some("{}"),
        ),
        (
            "POST",
            "/api/users/1",
            vec![("rpc-act", "$promote")],
            Some("{}"),
        ),
        ("GET", "/api/users/1?act=promote", vec![], None),
        ("GET", "/api/users/1?act=%24promote", vec![], None),
        ("DELETE", "/api/users/1?act=promote", vec![], None),
        ("PROMOTE", "/api/users/1", json.to_vec(), Some("{}")),
        // `rpc-fn` naming the service on another tool's path.
        (
            "POST",
            "/api/add",
            vec![("rpc-fn", "users"), ("rpc-act", "promote")],
            Some(r#"{"id":"1"}"#),
        ),
        (
            "POST",
            "/api/greeter/1",
            vec![("rpc-fn", "users")],
            Some(r#"{"act":"promote"}"#),
        ),
    ];
    for (method, path, headers, body) in attempts {
        let reply = call(addr, method, path, &headers, body).await;
        assert!(
            [400, 403, 405].contains(&reply.status),
            "{method} {path} {headers:?} was not refused: {} {}",
            reply.status,
            reply.text()
        );
        assert_eq!(
            role_of(addr, 1).await,
            None,
            "{method} {path} {headers:?} promoted user 1"
        );
    }
    // The hook saw the canonical act each time it was asked about `users`.
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    for (tool, act) in &seen {
        if let Some(act) = act {
            assert!(
                act == "$promote" || ["get", "list"].contains(&act.as_str()),
                "the hook saw the raw act {act:?} of {tool:?}"
            );
        }
    }
    // A caller the hook lets through still reaches the method by either spelling.
    let open = start(Api::new(catalog())).await;
    let reply = post(open, "/api/users", r#"{"act":"promote","id":"2"}"#).await;
    assert_eq!(reply.ok()["role"], "admin");
}

#[tokio::test]
async fn only_rest_verbs_are_verb_acts_and_odd_methods_run_nothing() {
    let hits = Arc::new(AtomicUsize::new(0));
    let registry = catalog();
    let counted = Arc::clone(&hits);
    registry
        .register(
            ToolFunc::builder("counter")
                .handler_sync(move |_, _| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("ran"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let addr = start(Api::new(registry)).await;
    for method in ["CONNECT", "TRACE", "PROMOTE", "LIST", "PROPFIND"] {
        let reply = call(addr, method, "/api/counter", &[], Some("{}")).await;
        assert_eq!(reply.status, 405, "{method}: {}", reply.text());
        assert!(reply.header("allow").is_some_and(|a| a.contains("POST")));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "an odd method ran a tool");
}

#[tokio::test]
async fn get_runs_only_read_only_acts() {
    let addr = start(Api::new(catalog())).await;
    // `GET /api/users/2?act=delete` must not delete user 2.
    let reply = get(addr, "/api/users/2?act=delete").await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("POST"));
    assert_eq!(get(addr, "/api/users/2").await.ok()["name"], "Bob");
    // A tool not marked read-only is not run by GET either.
    get(addr, "/api/fail")
        .await
        .error(405, "METHOD_NOT_ALLOWED");
    // Read-only tools and REST reads are.
    assert_eq!(get(addr, "/api/add?a=1&b=2").await.ok(), json!(3.0));
    assert_eq!(
        get(addr, "/api/users").await.ok().as_array().unwrap().len(),
        2
    );
    // A deployment that wants the old behaviour says so.
    let open = start(Api::new(catalog()).writes_over_get(true)).await;
    let reply = get(open, "/api/users/2?act=delete").await;
    assert_eq!(reply.ok(), json!({"deleted": "2"}));
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let addr = start(Api::new(catalog())).await;
    let host = |h: &'static str| vec![("host", h)];
    // DNS rebinding: the page's own name in `Host`.
    for h in [
        "evil.example",
        "evil.example:3000",
        "127.0.0.1.evil.example",
    ] {
        let reply = raw(addr, "GET", "/api", &host(h), None).await;
        reply.error(403, "HOST_NOT_ALLOWED");
    }
    for h in ["localhost", "LocalHost:3000", "127.0.0.1:80", "[::1]:8080"] {
        let reply = raw(addr, "GET", "/api", &host(h), None).await;
        assert_eq!(reply.status, 200, "{h}: {}", reply.text());
    }
    // A page of another site, even one served from localhost.
    for origin in ["https://evil.example", "http://localhost:9999", "null"] {
        let reply = call(
            addr,
            "POST",
            "/api/add",
            &[("origin", origin)],
            Some(r#"{"a":1,"b":2}"#),
        )
        .await;
        reply.error(403, "ORIGIN_NOT_ALLOWED");
    }
    // The server's own pages, and listed origins, are fine.
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("origin", "http://127.0.0.1")],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(3.0));
    let listed = start(
        Api::new(catalog())
            .allowed_hosts(["api.example.com"])
            .allowed_origins(["https://app.example.com"]),
    )
    .await;
    let reply = raw(
        listed,
        "POST",
        "/api/add",
        &[
            ("host", "api.example.com"),
            ("origin", "https://app.example.com"),
            ("content-type", "application/json"),
        ],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(3.0));
    get(listed, "/api").await.error(403, "HOST_NOT_ALLOWED");
}

/// CORS only for the origins an API names: their preflights are answered with the
/// wire's methods and headers, their answers carry `Access-Control-Allow-Origin`
/// and expose `req-id` and `rpc-retry-after`; another origin's preflight gets no
/// CORS header (the browser refuses its page) and its calls stay refused, and
/// requests without an origin are as before.
#[tokio::test]
async fn cors_is_answered_for_the_named_origins_only() {
    let page = "http://127.0.0.1:8080";
    let addr = start(Api::new(catalog()).cors_origins([page])).await;
    let preflight = |origin: &'static str| async move {
        let headers = [
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type, req-id"),
        ];
        call(addr, "OPTIONS", "/api/add", &headers, None).await
    };
    let granted = preflight(page).await;
    assert_eq!(granted.status, 204, "{}", granted.text());
    assert_eq!(granted.header("access-control-allow-origin"), Some(page));
    let allowed = granted.header("access-control-allow-headers").unwrap_or("");
    assert!(
        [
            "content-type",
            "req-id",
            "authorization",
            "rpc-fn",
            "traceparent"
        ]
        .iter()
        .all(|h| allowed.contains(h)),
        "{allowed}"
    );
    let methods = granted.header("access-control-allow-methods").unwrap_or("");
    assert!(
        methods.contains("POST") && methods.contains("DELETE"),
        "{methods}"
    );
    assert_eq!(granted.header("vary"), Some("origin"));

    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("origin", page), ("content-type", "application/json")],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.header("access-control-allow-origin"), Some(page));
    let exposed = reply.header("access-control-expose-headers").unwrap_or("");
    assert!(
        exposed.contains("req-id") && exposed.contains("rpc-retry-after"),
        "{exposed}"
    );
    assert_eq!(reply.ok(), json!(3.0));
    // An error answers the page too, so it can read the code.
    let reply = call(addr, "GET", "/api/nope", &[("origin", page)], None).await;
    assert_eq!(reply.header("access-control-allow-origin"), Some(page));
    reply.error(404, "NOT_FOUND");

    // Another origin: no CORS header on its preflight, and its calls refused.
    let other = preflight("http://127.0.0.1:9999").await;
    assert_eq!(other.header("access-control-allow-origin"), None);
    assert_eq!(other.header("access-control-allow-headers"), None);
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[
            ("origin", "http://127.0.0.1:9999"),
            ("content-type", "application/json"),
        ],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.header("access-control-allow-origin"), None);
    reply.error(403, "ORIGIN_NOT_ALLOWED");
    // A program (no origin) gets no CORS header.
    let reply = post(addr, "/api/add", r#"{"a":1,"b":2}"#).await;
    assert_eq!(reply.header("access-control-allow-origin"), None);
    assert_eq!(reply.ok(), json!(3.0));
    // Without `cors_origins`, no preflight is granted.
    let plain = start(Api::new(catalog()).allowed_origins([page])).await;
    let reply = call(
        plain,
        "OPTIONS",
        "/api/add",
        &[("origin", page), ("access-control-request-method", "POST")],
        None,
    )
    .await;
    assert_eq!(reply.header("access-control-allow-origin"), None);
}

/// One request with exactly these headers (the test client's `host` replaced).
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> http_support::Reply {
    let mut head = format!("{method} {path} HTTP/1.1\r\nconnection: close\r\n");
    for (name, value) in headers {
        let _ = write!(head, "{name}: {value}\r\n");
    }
    if let Some(body) = body {
        let _ = write!(head, "content-length: {}\r\n", body.len());
    }
    head.push_str("\r\n");
    head.push_str(body.unwrap_or_default());
    let mut conn = Conn::open(addr).await;
    conn.send(head.as_bytes()).await;
    conn.response(false).await
}

// ---------------------------------------------------------------------------
// Collecting a stream.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_countdown_is_capped_not_collected_into_memory() {
    let addr = start(Api::new(catalog())).await;
    // 20 bytes that used to grow the process until it aborted.
    let reply = timeout(
        LIMIT * 3,
        post(addr, "/api/countdown", r#"{"count":3000000}"#),
    )
    .await
    .expect("the call did not end");
    let body = reply.error(413, "RESULT_TOO_LARGE");
    assert_eq!(body["data"]["limit"], "items");
    assert_eq!(body["data"]["max"], 100_000);
    // A smaller cap, set on the API.
    let small = start(Api::new(catalog()).collect_limit(CollectLimit::new(10, 1 << 20))).await;
    post(small, "/api/countdown", r#"{"count":11}"#)
        .await
        .error(413, "RESULT_TOO_LARGE");
    assert_eq!(
        post(small, "/api/countdown", r#"{"count":3}"#).await.ok(),
        json!([{"tick": 3}, {"tick": 2}, {"tick": 1}])
    );
    // Asking for a stream is not capped: the reader sets the pace.
    let mut stream =
        Registry::global().run_stream("countdown", json!({"count": 200_000, "stream": true}));
    let mut n = 0;
    while let Some(item) = stream.next().await {
        item.unwrap();
        n += 1;
    }
    assert_eq!(n, 200_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collecting_yields_to_other_calls_and_honours_deadlines() {
    let registry = catalog();
    let unlimited = CallOptions::new().collect_limit(CollectLimit::unlimited());
    // Two endless, always-ready streams on both workers of the runtime.
    let endless = ToolFunc::builder("endless")
        .stream_handler(|_, _| async {
            Ok(futures::stream::repeat(json!(1)).map(Ok::<_, ToolError>))
        })
        .build()
        .unwrap();
    registry.register(endless).unwrap();
    let timeout_options = || {
        CallOptions::new()
            .collect_limit(CollectLimit::unlimited())
            .timeout(Duration::from_millis(300))
    };
    let a = registry.with(timeout_options()).spawn("endless", json!({}));
    let b = registry.with(timeout_options()).spawn("endless", json!({}));
    // Other calls still run meanwhile.
    let started = Instant::now();
    let quick = timeout(
        LIMIT,
        registry.with(unlimited).run("add", json!({"a": 1, "b": 2})),
    )
    .await
    .expect("a call starved behind two collecting streams");
    assert_eq!(quick.unwrap(), json!(3.0));
    // And the deadline strikes between items.
    let a = timeout(LIMIT, a)
        .await
        .expect("the deadline did not stop a");
    let b = timeout(LIMIT, b)
        .await
        .expect("the deadline did not stop b");
    assert_eq!(a.unwrap_err().code(), "TIMEOUT");
    assert_eq!(b.unwrap_err().code(), "TIMEOUT");
    assert!(started.elapsed() < LIMIT);
    // Cancellation too.
    let token = toolfunc::CancellationToken::new();
    let call = registry
        .with(
            CallOptions::new()
                .collect_limit(CollectLimit::unlimited())
                .cancel_on(token.clone()),
        )
        .spawn("endless", json!({}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    let result = timeout(LIMIT, call).await.expect("cancel did not stop it");
    assert_eq!(result.unwrap_err().code(), "CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnect_or_rpc_timeout_stops_collecting() {
    let registry = catalog();
    let items = Arc::new(AtomicUsize::new(0));
    let produced = Arc::clone(&items);
    // It declares `stream`, so a call without `"stream": true` is collected.
    let endless = ToolFunc::builder("endless")
        .params_schema(json!({"type": "object", "properties": {"stream": {"type": "boolean"}}}))
        .stream_handler(move |_, _| {
            let produced = Arc::clone(&produced);
            async move {
                Ok(futures::stream::repeat_with(move || {
                    produced.fetch_add(1, Ordering::Relaxed);
                    Ok::<_, ToolError>(json!(1))
                }))
            }
        })
        .build()
        .unwrap();
    registry.register(endless).unwrap();
    let addr = start(Api::new(registry).collect_limit(CollectLimit::unlimited())).await;
    // rpc-timeout.
    let reply = timeout(
        LIMIT,
        call(
            addr,
            "POST",
            "/api/endless",
            &[("rpc-timeout", "200")],
            Some("{}"),
        ),
    )
    .await
    .expect("rpc-timeout did not end the call");
    reply.error(408, "TIMEOUT");
    // A client that goes away.
    let mut conn = Conn::open(addr).await;
    conn.send(&http_support::request(
        "POST",
        "/api/endless",
        &[],
        Some(b"{}"),
    ))
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(conn);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = items.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        items.load(Ordering::Relaxed),
        after,
        "the producer kept running after the client left"
    );
}

// ---------------------------------------------------------------------------
// Connections.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn half_sent_headers_and_idle_connections_are_closed() {
    let addr = start_server(
        Server::new()
            .mount(Api::new(catalog()))
            .unwrap()
            .header_timeout(Duration::from_millis(300))
            .idle_timeout(Duration::from_millis(400)),
    )
    .await;
    // Slowloris: a request head that never ends.
    let mut slow = Conn::open(addr).await;
    slow.send(b"POST /api/add HTTP/1.1\r\nhost: 127.0.0.1\r\nx-a: 1\r\n")
        .await;
    // An idle connection that never sends anything.
    let mut idle = Conn::open(addr).await;
    // A body sent half-way.
    let mut half = Conn::open(addr).await;
    half.send(
        b"POST /api/add HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"a\":",
    )
    .await;
    for (what, conn) in [
        ("slow", &mut slow),
        ("idle", &mut idle),
        ("half", &mut half),
    ] {
        let closed = timeout(LIMIT, async {
            // Whatever the server says first (a 408, or nothing), it then closes.
            while conn.fill().await {}
        })
        .await;
        assert!(closed.is_ok(), "the {what} connection was never closed");
    }
    // Keep-alive between requests closes after the header timeout too, cleanly.
    let mut kept = Conn::open(addr).await;
    kept.send(&http_support::request("GET", "/api/users", &[], None))
        .await;
    assert_eq!(kept.response(false).await.status, 200);
    let closed = timeout(LIMIT, async { while kept.fill().await {} }).await;
    assert!(closed.is_ok(), "a kept-alive connection stayed open");
}

/// A body trickled one byte at a time, never quiet long enough for the idle
/// timeout, is cut off at the body timeout: the call gets 408 `TIMEOUT` and the
/// connection closes. The MCP endpoint is held to the same deadline.
#[tokio::test]
async fn a_trickled_body_is_cut_off_at_the_body_timeout() {
    let server = Server::new()
        .mount(Api::new(catalog()))
        .unwrap()
        .merge(toolfunc::mcp::Server::new(catalog()).router())
        .idle_timeout(Duration::from_millis(600))
        .body_timeout(Duration::from_millis(900));
    let addr = start_server(server).await;
    for path in ["/api/add", "/mcp"] {
        let mut conn = Conn::open(addr).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: 400\r\n\r\n{{"
        );
        conn.send(head.as_bytes()).await;
        let started = Instant::now();
        // One byte every 200 ms: busy enough for the idle timeout, far too slow
        // for the body's deadline.
        let mut closed = false;
        while started.elapsed() < Duration::from_secs(6) {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if !conn.try_send(b" ").await || conn.closes_within(Duration::from_millis(20)).await {
                closed = true;
                break;
            }
        }
        assert!(closed, "{path}: the trickle was not cut off");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{path}: cut off only after {:?}",
            started.elapsed()
        );
    }
    // The API answers 408 before closing.
    let mut conn = Conn::open(addr).await;
    conn.send(
        b"POST /api/add HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n{",
    )
    .await;
    let reply = timeout(LIMIT, async {
        let sender = async {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if !conn.try_send(b" ").await {
                    break;
                }
            }
        };
        let _ = timeout(Duration::from_millis(1500), sender).await;
        conn.response(false).await
    })
    .await
    .expect("an answer");
    assert_eq!(reply.status, 408);
    assert_eq!(reply.json()["errorCode"], "TIMEOUT");
}

#[tokio::test]
async fn the_connection_cap_holds_and_the_server_stays_reachable() {
    let addr = start_server(
        Server::new()
            .mount(Api::new(catalog()))
            .unwrap()
            .max_connections(8)
            .header_timeout(Duration::from_millis(500)),
    )
    .await;
    // Twenty idle sockets: at most eight are served at once, and each is closed
    // by the header timeout, so a real request gets through soon after.
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(Conn::open(addr).await);
    }
    let reply = timeout(LIMIT, get(addr, "/api/users"))
        .await
        .expect("the server stayed unreachable behind idle sockets");
    assert_eq!(reply.status, 200);
    drop(idle);
}

#[tokio::test]
async fn a_long_call_is_not_cut_by_the_idle_timeout() {
    let addr = start_server(
        Server::new()
            .mount(Api::new(catalog()))
            .unwrap()
            .idle_timeout(Duration::from_millis(200)),
    )
    .await;
    let reply = post(addr, "/api/sleep", r#"{"ms":700}"#).await;
    assert_eq!(reply.ok(), json!({"slept": 700}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_refused_unread_is_answered_to_a_client_still_sending_it() {
    let addr = start(Api::new(catalog()).body_limit(1024)).await;
    let head = "POST /api/add HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n";
    // Refused by its Content-Length, before a byte of it is read: every time, the
    // client sends its 2 MiB and reads the 413 and its body, not a reset.
    for round in 0..50 {
        let reply = http_support::answer_while_sending(addr, head, 2 * 1024 * 1024)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        reply.error(413, "PAYLOAD_TOO_LARGE");
    }
    // Refused before the body is needed (no such tool): the same.
    let head =
        "POST /api/nothing HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n";
    for round in 0..10 {
        let reply = http_support::answer_while_sending(addr, head, 2 * 1024 * 1024)
            .await
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        reply.error(404, "NOT_FOUND");
    }
    // The server still answers.
    assert_eq!(
        post(addr, "/api/add", r#"{"a":1,"b":2}"#).await.ok(),
        json!(3.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_body_left_unread_holds_its_connection_after_the_answer() {
    let addr = start_server(
        Server::new()
            .mount(Api::new(catalog()))
            .unwrap()
            .max_connections(1)
            .header_timeout(Duration::from_secs(30)),
    )
    .await;
    // A body read in full, on a connection the client then keeps open: the server
    // closes at once, and its one place is free for the next client.
    let body = br#"{"a":1,"b":2}"#;
    let mut first = Conn::open(addr).await;
    first
        .send(&http_support::request(
            "POST",
            "/api/add",
            &[("connection", "close")],
            Some(body),
        ))
        .await;
    assert_eq!(first.response(false).await.ok(), json!(3.0));
    let next = timeout(LIMIT, post(addr, "/api/add", r#"{"a":2,"b":2}"#))
        .await
        .expect("the connection of a body read in full held the only place");
    assert_eq!(next.ok(), json!(4.0));
    drop(first);
}

/// A request answered before its body was read (here a 401 of an authenticated API
/// and MCP endpoint) ends its connection: the answer says `connection: close`, or
/// else the connection must take the next request. A client that pooled a
/// connection the server was closing would see its next request cut off.
#[tokio::test]
async fn an_answer_given_before_the_body_was_read_says_the_connection_closes() {
    let keys = || toolfunc::auth::ApiKeys::new().key("k-1", toolfunc::Identity::new("ann"));
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("echo")
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let api = Api::new(registry.clone()).authenticate(keys());
    let mcp = toolfunc::mcp::Server::new(registry).authenticate(keys());
    let server = Server::new().mount(api).unwrap().merge(mcp.router());
    let addr = start_server(server).await;
    let body = format!("{{\"pad\":\"{}\"}}", "x".repeat(256 * 1024));
    for path in ["/api/echo", "/mcp"] {
        let mut conn = Conn::open(addr).await;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        conn.send(head.as_bytes()).await;
        // Only the start of the body: the server answers without waiting for it.
        conn.send(&body.as_bytes()[..1024]).await;
        let refused = conn.response(false).await;
        assert_eq!(refused.status, 401, "{path}");
        let closes = refused
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        assert!(
            closes,
            "{path}: a 401 given before the body was read keeps the connection open: {:?}",
            refused.headers
        );
    }
}
