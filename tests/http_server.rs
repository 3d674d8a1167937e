//! The HTTP server over real sockets: discovery, calls, service acts, REST verbs,
//! casting, bad input, body limits, OPTIONS/HEAD, headers, timeouts, errors, NDJSON
//! streams, client disconnects, backpressure, the auth hook and several prefixes.
//!
//! Requests are written by hand over `TcpStream` (HTTP/1.1), so malformed input
//! reaches the server exactly as sent.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/http.rs"]
mod http_support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep, timeout};
use toolfunc::http::{Api, Server};
use toolfunc::{Ctx, Registry, ToolError, ToolFunc, tool_service};

use http_support::{Conn, LIMIT, call, encode, get, post, request, start, start_server};

// ---------------------------------------------------------------------------
// Servers and tools.
// ---------------------------------------------------------------------------

/// The demo catalog (the global registry) plus `extra`, under `/api`.
async fn start_demo(extra: Vec<ToolFunc>) -> SocketAddr {
    let registry = Registry::global().isolate();
    for tool in extra {
        registry.register(tool).expect("register");
    }
    start(Api::new(registry)).await
}

/// The demo catalog with a `users` store of its own (Alice = 1, Bob = 2).
fn own_users() -> Registry {
    let registry = Registry::global().isolate();
    registry
        .register_service(demo::Users::default())
        .expect("users");
    registry
}

/// A tool that counts its runs and answers `"ran"`.
fn counter(name: &str, hits: &Arc<AtomicUsize>) -> ToolFunc {
    let hits = Arc::clone(hits);
    ToolFunc::builder(name)
        .handler_sync(move |_, _| {
            hits.fetch_add(1, Ordering::SeqCst);
            Ok(json!("ran"))
        })
        .build()
        .expect("counter")
}

/// A tool that answers its arguments, with typed parameters to cast against.
fn echo() -> ToolFunc {
    ToolFunc::builder("echo")
        .params_schema(json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "n": {"type": "number"},
                "flag": {"type": "boolean"},
                "s": {"type": "string"},
                "any": {}
            }
        }))
        .annotations(toolfunc::Annotations::new().read_only(true))
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("echo")
}

/// Waits (at most `LIMIT`) until `done` holds.
async fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {LIMIT:?}");
        sleep(Duration::from_millis(10)).await;
    }
}

/// What a long-running tool reports: it started, its token fired, its cleanup ran,
/// its stream was dropped, how many items it produced.
#[derive(Clone, Default)]
struct Probe {
    started: Arc<Notify>,
    fired: Arc<AtomicBool>,
    cleaned: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
    produced: Arc<AtomicUsize>,
}

impl Probe {
    /// Registers a cleanup and watches the call's token.
    fn arm(&self, ctx: &Ctx) {
        let cleaned = Arc::clone(&self.cleaned);
        ctx.on_cleanup(move || cleaned.store(true, Ordering::SeqCst));
        let token = ctx.cancellation_token();
        let fired = Arc::clone(&self.fired);
        tokio::spawn(async move {
            token.cancelled().await;
            fired.store(true, Ordering::SeqCst);
        });
    }

    fn is(flag: &AtomicBool) -> bool {
        flag.load(Ordering::SeqCst)
    }

    fn produced(&self) -> usize {
        self.produced.load(Ordering::SeqCst)
    }

    async fn wait_started(&self) {
        timeout(LIMIT, self.started.notified())
            .await
            .expect("the tool did not start");
    }
}

/// Lives inside a tool's stream: counts the items and notes the stream's drop.
struct InStream(Probe);

impl InStream {
    fn produce(&self) {
        self.0.produced.fetch_add(1, Ordering::SeqCst);
        self.0.started.notify_one();
    }
}

impl Drop for InStream {
    fn drop(&mut self) {
        self.0.dropped.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// Discovery.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn discovery_lists_every_api_tool_without_code() {
    let addr = start(Api::new(Registry::global())).await;
    let names = [
        "add",
        "countdown",
        "fail",
        "greeter",
        "report",
        "sleep",
        "users",
    ];
    for path in ["/api", "/api/", "/api?x=1", "/api/?p=%7B%7D"] {
        let listing = get(addr, path).await.ok();
        let tools = listing.as_object().expect("an object keyed by name");
        let mut keys: Vec<&str> = tools.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, names, "{path}");
        for (name, entry) in tools {
            assert_eq!(entry["name"], *name, "{path}");
            assert_eq!(entry["isApi"], true, "{path} {name}");
            assert!(entry.get("func").is_none(), "{path} {name} carries code");
        }
        assert_eq!(tools["users"]["action"], "res");
        assert_eq!(
            tools["users"]["methods"],
            json!(["get", "post", "put", "delete", "list", "$promote"])
        );
        assert_eq!(tools["greeter"]["methods"], json!(["$hello", "$mul"]));
        assert!(tools["greeter"].get("action").is_none());
        assert_eq!(tools["countdown"]["stream"], true);
        assert_eq!(tools["add"]["params"]["properties"]["a"]["type"], "number");
    }
    // The 1.x client's discovery: trailing slash plus `rpc-act: get`.
    let reply = call(
        addr,
        "GET",
        "/api/",
        &[("rpc-act", "get"), ("content-type", "application/json")],
        None,
    )
    .await;
    assert_eq!(
        reply.ok().as_object().map(serde_json::Map::len),
        Some(names.len())
    );
}

/// A large catalogue's discovery (written on several cores) lists every tool once,
/// in name order, each entry whole.
#[tokio::test]
async fn a_large_discovery_lists_every_tool_once() {
    let registry = Registry::new();
    for i in 0..3000 {
        let tool = ToolFunc::builder(format!("tool_{i:04}"))
            .description("One of many.")
            .params_schema_with(move || {
                json!({"type": "object", "properties": {"n": {"type": "integer", "const": i}}})
            })
            .handler_sync(|_, args| Ok(args))
            .build()
            .expect("a tool");
        registry.register(tool).expect("a unique name");
    }
    let addr = start(Api::new(registry)).await;
    let reply = get(addr, "/api").await;
    let text = reply.text();
    let listing: Value = serde_json::from_str(&text).expect("one JSON object");
    let tools = listing.as_object().expect("an object");
    assert_eq!(tools.len(), 3000);
    for (i, (name, entry)) in tools.iter().enumerate() {
        assert_eq!(*name, format!("tool_{i:04}"));
        assert_eq!(entry["name"], *name);
        assert_eq!(entry["isApi"], true);
        assert_eq!(entry["params"]["properties"]["n"]["const"], i);
    }
    // Written in name order, as the object's keys are read back.
    let first = text.find("\"tool_0000\"").expect("the first");
    let last = text.find("\"tool_2999\"").expect("the last");
    assert!(first < last);
}

/// Discovery, kept between registry changes, shows each change at once: a tool
/// registered after the first listing is in the next, one removed is gone.
#[tokio::test]
async fn discovery_follows_registry_changes() {
    let registry = Registry::new();
    registry.register(echo()).expect("echo");
    let addr = start(Api::new(registry.clone())).await;
    let names = |listing: Value| {
        let mut keys: Vec<String> = listing
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect();
        keys.sort_unstable();
        keys
    };
    assert_eq!(names(get(addr, "/api").await.ok()), ["echo"]);
    let late = ToolFunc::builder("late")
        .handler_sync(|_, args| Ok(args))
        .build()
        .expect("a tool");
    registry.register(late).expect("late");
    assert_eq!(names(get(addr, "/api").await.ok()), ["echo", "late"]);
    assert!(registry.unregister("echo"));
    assert_eq!(names(get(addr, "/api").await.ok()), ["late"]);
}

#[tokio::test]
async fn discovery_answers_only_get() {
    let addr = start_demo(Vec::new()).await;
    // Without a content type too: the method is checked before the body.
    for (method, path, body) in [
        ("POST", "/api", Some("{}")),
        ("POST", "/api/", Some("{}")),
        ("PUT", "/api", None),
        ("PATCH", "/api", Some("{}")),
        ("DELETE", "/api", None),
        ("HEAD", "/api", None),
    ] {
        let reply = call(addr, method, path, &[], body).await;
        assert_eq!(reply.status, 405, "{method} {path}: {}", reply.text());
        assert_eq!(
            reply.header("allow"),
            Some("GET, OPTIONS"),
            "{method} {path}"
        );
        if method != "HEAD" {
            reply.error(405, "METHOD_NOT_ALLOWED");
        }
    }
    let mut conn = Conn::open(addr).await;
    conn.send(&request("PUT", "/api", &[("connection", "close")], None))
        .await;
    conn.response(false).await.error(405, "METHOD_NOT_ALLOWED");
    // `rpc-fn` names a tool: then the path is no discovery.
    let reply = call(
        addr,
        "POST",
        "/api",
        &[("rpc-fn", "add")],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(3.0));
}

#[tokio::test]
async fn a_hidden_tool_is_neither_listed_nor_callable() {
    let hits = Arc::new(AtomicUsize::new(0));
    let hidden = ToolFunc::builder("hidden")
        .alias("secret")
        .api(false)
        .handler_sync({
            let hits = Arc::clone(&hits);
            move |_, _| {
                hits.fetch_add(1, Ordering::SeqCst);
                Ok(json!("leaked"))
            }
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![hidden]).await;
    let listing = get(addr, "/api").await.ok();
    assert!(listing.get("hidden").is_none());
    assert!(listing.get("secret").is_none());
    assert!(listing.get("add").is_some());

    let unknown = post(addr, "/api/nope", "{}").await;
    let unknown_body = unknown.error(404, "NOT_FOUND");
    assert_eq!(unknown_body["data"], json!({"what": "nope"}));
    for (method, path, headers) in [
        ("POST", "/api/hidden", vec![]),
        ("GET", "/api/hidden", vec![]),
        ("POST", "/api/anything", vec![("rpc-fn", "hidden")]),
    ] {
        let reply = call(addr, method, path, &headers, Some("{}")).await;
        let body = reply.error(404, "NOT_FOUND");
        // The same answer as for an unknown tool, but for the name.
        let as_unknown = body.to_string().replace("hidden", "nope");
        assert_eq!(as_unknown, unknown_body.to_string(), "{method} {path}");
        assert_eq!(reply.headers.len(), unknown.headers.len());
    }
    post(addr, "/api/secret", "{}")
        .await
        .error(404, "NOT_FOUND");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the hidden tool ran");
}

// ---------------------------------------------------------------------------
// Calls.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn calls_read_the_json_body_whatever_its_content_type() {
    let addr = start_demo(Vec::new()).await;
    assert_eq!(
        post(addr, "/api/add", r#"{"a":1,"b":2}"#).await.ok(),
        json!(3.0)
    );
    // The alias.
    assert_eq!(
        post(addr, "/api/plus", r#"{"a":1,"b":2}"#).await.ok(),
        json!(3.0)
    );
    // JSON in any of its spellings.
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/vnd.api+json",
    ] {
        let reply = call(
            addr,
            "POST",
            "/api/add",
            &[("content-type", content_type)],
            Some(r#"{"a":2,"b":5}"#),
        )
        .await;
        assert_eq!(reply.ok(), json!(7.0), "{content_type}");
    }
    // `rpc-fn` names the tool (the 1.x client sends it with the path).
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("rpc-fn", "add"), ("req-id", "r1")],
        Some(r#"{"a":1,"b":1}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(2.0));
    // ... by any of its names, but never another tool's path.
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("rpc-fn", "plus")],
        Some(r#"{"a":1,"b":4}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(5.0));
    let reply = call(
        addr,
        "POST",
        "/api/greeter",
        &[("rpc-fn", "plus")],
        Some(r#"{"a":1,"b":4}"#),
    )
    .await;
    let body = reply.error(400, "ARGUMENTS");
    assert!(body["error"].as_str().unwrap().contains("rpc-fn"), "{body}");
}

#[tokio::test]
async fn bodies_must_say_they_are_json_or_come_from_a_program() {
    let hits = Arc::new(AtomicUsize::new(0));
    let addr = start_demo(vec![counter("counter", &hits)]).await;
    // What a cross-site form or `fetch(.., {mode: "no-cors"})` can send.
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut headers = vec![("connection", "close")];
        if let Some(ct) = content_type {
            headers.push(("content-type", ct));
        }
        let mut conn = Conn::open(addr).await;
        let mut bytes = request("POST", "/api/counter", &headers, None);
        if content_type.is_some() {
            // A body without the test client's JSON content type.
            bytes = request("POST", "/api/counter", &headers, Some(br#"{"a":1}"#));
        }
        conn.send(&bytes).await;
        let reply = conn.response(false).await;
        reply.error(415, "UNSUPPORTED_MEDIA_TYPE");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused call ran");
    // A header a page cannot send without asking first marks a program.
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("content-type", "text/plain"), ("rpc-fn", "add")],
        Some(r#"{"a":2,"b":5}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(7.0));
    // And the check can be turned off.
    let registry = Registry::global().isolate();
    let addr = start(Api::new(registry).json_only(false)).await;
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("content-type", "text/plain")],
        Some(r#"{"a":2,"b":5}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(7.0));
}

#[tokio::test]
async fn get_and_delete_read_the_query() {
    let registry = own_users();
    registry.register(echo()).expect("echo");
    let addr = start(Api::new(registry)).await;
    let args = r#"{"a": 1, "b": 2}"#;
    for space in ["%20", "+"] {
        let path = format!("/api/add?p={}", encode(args, space));
        assert_eq!(get(addr, &path).await.ok(), json!(3.0), "{path}");
    }
    // `+` is a space inside string values too.
    let path = format!("/api/echo?p={}", encode(r#"{"s": "Ann Lee"}"#, "+"));
    assert_eq!(get(addr, &path).await.ok(), json!({"s": "Ann Lee"}));
    // DELETE reads it as well (the arguments of a REST `delete` besides the id,
    // which is on its path).
    let path = format!("/api/users/2?p={}", encode("{}", "+"));
    let reply = call(addr, "DELETE", &path, &[], None).await;
    assert_eq!(reply.ok(), json!({"deleted": "2"}));
    // `delete` is not on `<res>`: no client sends it there.
    let path = format!("/api/users?p={}", encode(r#"{"id": "3"}"#, "+"));
    call(addr, "DELETE", &path, &[], None)
        .await
        .error(405, "METHOD_NOT_ALLOWED");
    // GET runs only what is read-only; no act of `greeter` is marked so.
    let hello = r#"{"act": "$hello", "name": "Ann Lee"}"#;
    let path = format!("/api/greeter?p={}", encode(hello, "+"));
    let reply = get(addr, &path).await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("POST, OPTIONS"));
    // Plain query parameters, cast to the parameters' types.
    assert_eq!(get(addr, "/api/add?a=1&b=2").await.ok(), json!(3.0));
    assert_eq!(get(addr, "/api/plus?a=1.5&b=-2").await.ok(), json!(-0.5));
    // A GET body is ignored.
    let reply = call(
        addr,
        "GET",
        "/api/add?a=1&b=1",
        &[],
        Some(r#"{"a":100,"b":100}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(2.0));
}

#[tokio::test]
async fn path_ids_and_query_values_are_cast_by_the_schema() {
    let addr = start_demo(vec![echo()]).await;
    let out = get(addr, "/api/echo/42?n=1.5&flag=true&s=7&any=8")
        .await
        .ok();
    assert_eq!(
        out,
        json!({"id": 42, "n": 1.5, "flag": true, "s": "7", "any": "8"})
    );
    let out = get(addr, "/api/echo?id=-3&flag=0").await.ok();
    assert_eq!(out, json!({"id": -3, "flag": false}));
    // `p` wins over a plain parameter of the same name.
    let path = format!("/api/echo?p={}&n=5", encode(r#"{"n":2}"#, "%20"));
    assert_eq!(get(addr, &path).await.ok(), json!({"n": 2}));
    // A value that does not cast stays a string, and the tool's checks report it.
    let body = get(addr, "/api/echo/abc").await.error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/id");
    assert_eq!(body["name"], "echo");
    let body = get(addr, "/api/echo?n=many").await.error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/n");
    // A string id of a REST resource is never cast, so the tool itself answers.
    let body = get(addr, "/api/users/abc")
        .await
        .error(404, "USER_NOT_FOUND");
    assert_eq!(body["data"], json!({"what": "abc"}));
}

#[tokio::test]
async fn an_empty_body_is_an_empty_object() {
    let hits = Arc::new(AtomicUsize::new(0));
    let addr = start_demo(vec![echo(), counter("counter", &hits)]).await;
    let json = [("content-type", "application/json")];
    for body in [None, Some(""), Some("  \r\n\t ")] {
        let reply = call(addr, "POST", "/api/echo", &json, body).await;
        assert_eq!(reply.ok(), json!({}), "{body:?}");
        let reply = call(addr, "POST", "/api/add", &json, body).await;
        let err = reply.error(400, "ARGUMENTS");
        assert_eq!(err["name"], "add");
        assert_eq!(err["data"], json!({"path": "/a"}), "{body:?}");
    }
    assert_eq!(post(addr, "/api/counter", "").await.ok(), "ran");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// Service acts.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn service_acts_come_from_the_body_or_the_header() {
    let addr = start_demo(Vec::new()).await;
    // 0.1.1 style: act in the body.
    let reply = post(addr, "/api/greeter", r#"{"name":"Ann","act":"$hello"}"#).await;
    assert_eq!(reply.ok(), "hello Ann");
    // 1.x style: rpc-fn and rpc-act headers, act not in the body.
    let reply = call(
        addr,
        "POST",
        "/api/greeter",
        &[
            ("rpc-fn", "greeter"),
            ("rpc-act", "$hello"),
            ("req-id", "7"),
        ],
        Some(r#"{"name":"Bo"}"#),
    )
    .await;
    assert_eq!(reply.ok(), "hello Bo");
    // Without the `$`.
    let reply = post(addr, "/api/greeter", r#"{"act":"mul","a":6,"b":7}"#).await;
    assert_eq!(reply.ok(), json!(42.0));
    // The header wins over the body.
    let reply = call(
        addr,
        "POST",
        "/api/greeter",
        &[("rpc-act", "mul")],
        Some(r#"{"act":"$hello","name":"x","a":2,"b":3}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(6.0));
    // The act's arguments are checked.
    let body = post(addr, "/api/greeter", r#"{"act":"$mul","a":"six","b":1}"#)
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/a");
}

#[tokio::test]
async fn unknown_or_missing_acts_are_not_found() {
    let addr = start_demo(Vec::new()).await;
    let body = post(addr, "/api/greeter", r#"{"act":"$nope"}"#)
        .await
        .error(404, "UNKNOWN_ACT");
    assert_eq!(body["name"], "greeter");
    assert_eq!(body["data"]["what"], "$nope");
    // Only declared methods: no object internals, no REST verbs on a plain service.
    for act in ["toJSON", "constructor", "get", "$"] {
        let reply = call(
            addr,
            "POST",
            "/api/greeter",
            &[("rpc-act", act)],
            Some("{}"),
        )
        .await;
        let body = reply.error(404, "UNKNOWN_ACT");
        assert_eq!(body["data"]["what"], act);
    }
    // No act at all: 400, saying what to send.
    let body = post(addr, "/api/greeter", r#"{"name":"Ann"}"#)
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/act");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("$hello") && message.contains("$mul"),
        "{message}"
    );
    // GET runs none of its acts: the method is refused before the act is asked for.
    let reply = get(addr, "/api/greeter").await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("POST, OPTIONS"));
}

// ---------------------------------------------------------------------------
// REST resources.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn rest_reads() {
    let addr = start(Api::new(own_users())).await;
    let alice = json!({"id": "1", "name": "Alice"});
    assert_eq!(
        get(addr, "/api/users").await.ok(),
        json!([alice, {"id": "2", "name": "Bob"}])
    );
    // The 1.x list: `?p={}` plus `rpc-act: list`.
    let reply = call(
        addr,
        "GET",
        "/api/users?p=%7B%7D",
        &[("rpc-act", "list")],
        None,
    )
    .await;
    assert_eq!(reply.ok().as_array().map(Vec::len), Some(2));
    for path in [
        "/api/users/1",
        "/api/users/1/",
        "/api/users/1/extra",
        "/api/users/%31",
    ] {
        assert_eq!(get(addr, path).await.ok(), alice, "{path}");
    }
    // The 1.x get: the id in `rpc-res-id`.
    let reply = call(
        addr,
        "GET",
        "/api/users?p=%7B%7D",
        &[("rpc-fn", "users"), ("rpc-act", "get"), ("rpc-res-id", "1")],
        None,
    )
    .await;
    assert_eq!(reply.ok(), alice);
    // `rpc-res-id` wins over the path and the body; the path wins over the body.
    let reply = call(addr, "GET", "/api/users/2", &[("rpc-res-id", "1")], None).await;
    assert_eq!(reply.ok(), alice);
    // An act that does not fit the method and path is refused at `/act`: a verb
    // runs by its own method (or the clients' forms of a `put`), so POST does not
    // run `get`, and PUT does not run `post`.
    let by_body = r#"{"act":"get","id":"2"}"#;
    for path in ["/api/users", "/api/users/1"] {
        let reply = call(addr, "POST", path, &[], Some(by_body)).await;
        let body = reply.error(400, "ARGUMENTS");
        assert_eq!(body["data"]["path"], "/act", "{path}: {body}");
    }
    let reply = call(
        addr,
        "PUT",
        "/api/users",
        &[],
        Some(r#"{"act":"post","val":{"name":"Eve"}}"#),
    )
    .await;
    reply.error(400, "ARGUMENTS");
    // POST on an item runs only a `put` it names: without one, 405.
    let reply = call(
        addr,
        "POST",
        "/api/users/1",
        &[],
        Some(r#"{"val":{"name":"Eve"}}"#),
    )
    .await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(
        reply.header("allow"),
        Some("GET, POST, PUT, DELETE, OPTIONS")
    );

    let body = get(addr, "/api/users/99")
        .await
        .error(404, "USER_NOT_FOUND");
    assert_eq!(
        body,
        json!({"name": "users", "code": 404, "errorCode": "USER_NOT_FOUND",
               "data": {"what": "99"}, "error": "Could not find 99."})
    );
    // A percent-encoded id is decoded once, after the path is split: `%2F` stays in the id.
    for (path, id) in [
        ("/api/users/a%2Fb", "a/b"),
        ("/api/users/a%20b", "a b"),
        ("/api/users/a+b", "a+b"),
    ] {
        let body = get(addr, path).await.error(404, "USER_NOT_FOUND");
        assert_eq!(body["data"]["what"], id, "{path}");
    }
}

#[tokio::test]
async fn rest_writes() {
    let registry = own_users();
    let addr = start(Api::new(registry)).await;
    // post
    let created = post(addr, "/api/users", r#"{"val":{"name":"Carol"}}"#)
        .await
        .ok();
    assert_eq!(created, json!({"id": "3", "name": "Carol"}));
    // put with the id in the path
    let reply = call(
        addr,
        "PUT",
        "/api/users/3",
        &[],
        Some(r#"{"val":{"role":"dev"}}"#),
    )
    .await;
    assert_eq!(
        reply.ok(),
        json!({"id": "3", "name": "Carol", "role": "dev"})
    );
    // put with the id in the body (the 0.1.1 client)
    let reply = call(
        addr,
        "PUT",
        "/api/users",
        &[],
        Some(r#"{"id":"2","val":{"name":"Robert"}}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!({"id": "2", "name": "Robert"}));
    // put as the 1.x client sends it: POST with rpc-act and rpc-res-id; it updates.
    let reply = call(
        addr,
        "POST",
        "/api/users/1",
        &[("rpc-fn", "users"), ("rpc-act", "put"), ("rpc-res-id", "1")],
        Some(r#"{"val":{"name":"Alicia"}}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!({"id": "1", "name": "Alicia"}));
    // A put of a missing user.
    let reply = call(addr, "PUT", "/api/users/42", &[], Some(r#"{"val":{}}"#)).await;
    assert_eq!(reply.error(404, "USER_NOT_FOUND")["data"]["what"], "42");
    // $promote, id in the body (0.1.1) and in the header (1.x).
    let promoted = post(addr, "/api/users", r#"{"id":"2","act":"$promote"}"#)
        .await
        .ok();
    assert_eq!(
        promoted,
        json!({"id": "2", "name": "Robert", "role": "admin"})
    );
    let reply = call(
        addr,
        "POST",
        "/api/users",
        &[("rpc-act", "$promote")],
        Some(r#"{"id":"1"}"#),
    )
    .await;
    assert_eq!(reply.ok()["role"], "admin");
    // delete
    let reply = call(addr, "DELETE", "/api/users/3", &[], None).await;
    assert_eq!(reply.ok(), json!({"deleted": "3"}));
    let reply = call(addr, "DELETE", "/api/users/3", &[], None).await;
    reply.error(404, "USER_NOT_FOUND");
    // Nothing was created by the updates.
    assert_eq!(
        get(addr, "/api/users").await.ok(),
        json!([
            {"id": "1", "name": "Alicia", "role": "admin"},
            {"id": "2", "name": "Robert", "role": "admin"}
        ])
    );
}

#[tokio::test]
async fn a_path_outside_every_api_says_where_the_apis_are() {
    let addr = start_demo(Vec::new()).await;
    for path in ["/", "/favicon.ico", "/apix/add"] {
        let reply = get(addr, path).await;
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.json()["apis"], json!(["/api"]), "{path}");
    }
}

#[tokio::test]
async fn a_verb_without_a_method_is_method_not_allowed() {
    let addr = start(Api::new(own_users())).await;
    let reply = call(
        addr,
        "PATCH",
        "/api/users/1",
        &[],
        Some(r#"{"val":{"x":1}}"#),
    )
    .await;
    let body = reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(body["name"], "users");
    assert_eq!(
        reply.header("allow"),
        Some("GET, POST, PUT, DELETE, OPTIONS")
    );
    // An unknown act on the resource, in the body or the header.
    let body = post(addr, "/api/users", r#"{"act":"$demote","id":"1"}"#)
        .await
        .error(404, "UNKNOWN_ACT");
    assert_eq!(body["data"]["what"], "$demote");
    // The PATCH changed nothing.
    assert_eq!(
        get(addr, "/api/users/1").await.ok(),
        json!({"id": "1", "name": "Alice"})
    );
}

// ---------------------------------------------------------------------------
// Bad input.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn bodies_that_are_not_json_objects_are_400() {
    let addr = start_demo(Vec::new()).await;
    for (body, path) in [
        ("{\"a\":1,", ""),
        ("{a:1}", ""),
        ("not json", ""),
        ("[1,2]", ""),
        ("5", ""),
        ("\"a string\"", ""),
        ("null", ""),
        ("true", ""),
        ("{\"a\":1} trailing", ""),
    ] {
        let err = post(addr, "/api/add", body).await.error(400, "ARGUMENTS");
        assert_eq!(err["name"], "add", "{body}");
        assert_eq!(err["data"], json!({"path": path}), "{body}");
    }
    // Wrong argument types, with the JSON Pointer of the culprit.
    let err = post(addr, "/api/add", r#"{"a":"x","b":1}"#)
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(err["data"]["path"], "/a");
    let err = post(addr, "/api/add", r#"{"a":1,"b":[2]}"#)
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(err["data"]["path"], "/b");
    // Malformed `p`.
    for p in ["%7Ba", "%5B1%5D", "5", "%22x%22"] {
        let err = get(addr, &format!("/api/add?p={p}"))
            .await
            .error(400, "ARGUMENTS");
        assert_eq!(err["data"], json!({"path": "/p"}), "p={p}");
    }
    // Invalid UTF-8 in the (percent-encoded) path: id or tool name.
    for path in ["/api/users/%FF", "/api/users/%C3%28", "/api/%FF"] {
        let err = get(addr, path).await.error(400, "ARGUMENTS");
        assert!(err.get("name").is_none(), "{path}: {err}");
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_413() {
    let hits = Arc::new(AtomicUsize::new(0));
    let registry = Registry::global().isolate();
    registry.register(counter("counter", &hits)).unwrap();
    let addr = start(Api::new(registry).body_limit(64)).await;

    // Exactly at the limit: accepted.
    let at_limit = format!("{:<64}", r#"{"a":1,"b":2}"#);
    assert_eq!(at_limit.len(), 64);
    assert_eq!(post(addr, "/api/add", &at_limit).await.ok(), json!(3.0));

    // Over it, with a Content-Length.
    let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(200));
    let reply = post(addr, "/api/counter", &big).await;
    let body = reply.error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(body["name"], "counter");

    // Over it, chunked (no length announced).
    let chunked = |body: &str| {
        let mut bytes = request(
            "POST",
            "/api/counter",
            &[
                ("transfer-encoding", "chunked"),
                ("connection", "close"),
                ("content-type", "application/json"),
            ],
            None,
        );
        for piece in body.as_bytes().chunks(20) {
            bytes.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            bytes.extend_from_slice(piece);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
        bytes
    };
    let mut conn = Conn::open(addr).await;
    conn.send(&chunked(&big)).await;
    let reply = conn.response(false).await;
    assert_eq!(reply.error(413, "PAYLOAD_TOO_LARGE")["name"], "counter");
    // Announced too large with `Expect: 100-continue`: refused before the body is sent.
    let mut conn = Conn::open(addr).await;
    conn.send(
        b"POST /api/counter HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nexpect: 100-continue\r\ncontent-length: 1000\r\n\r\n",
    )
    .await;
    conn.response(false).await.error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused call ran");

    // A small chunked body is fine.
    let mut conn = Conn::open(addr).await;
    conn.send(&chunked(r#"{"x": "short enough"}"#)).await;
    assert_eq!(conn.response(false).await.ok(), "ran");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------
// OPTIONS, HEAD, headers, timeouts, errors.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn options_and_head_run_nothing() {
    let hits = Arc::new(AtomicUsize::new(0));
    let addr = start_demo(vec![counter("counter", &hits)]).await;
    for path in ["/api/counter", "/api/counter/1", "/api"] {
        let reply = call(addr, "OPTIONS", path, &[], Some(r#"{"a":1}"#)).await;
        assert_eq!(reply.status, 204, "OPTIONS {path}");
        assert!(reply.body.is_empty());
        assert!(reply.header("allow").is_some_and(|a| a.contains("OPTIONS")));
        let reply = call(addr, "HEAD", path, &[], None).await;
        assert_eq!(reply.status, 405, "HEAD {path}");
        assert!(reply.header("allow").is_some_and(|a| !a.contains("HEAD")));
    }
    // Nothing is there to answer for.
    for method in ["OPTIONS", "HEAD"] {
        let reply = call(addr, method, "/api/nope", &[], None).await;
        assert_eq!(reply.status, 404, "{method} /api/nope");
    }
    let reply = call(
        addr,
        "HEAD",
        "/api/counter?p=%7B%7D",
        &[("rpc-fn", "counter")],
        None,
    )
    .await;
    assert_eq!(reply.status, 405);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "OPTIONS or HEAD ran the tool"
    );
    // The tool does run for a real call.
    assert_eq!(post(addr, "/api/counter", "{}").await.ok(), "ran");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// The methods each path answers (`Allow`), as the OpenAPI document lists them:
/// on a REST resource, its verbs on their own paths and the wire's clients' forms
/// of `put` (the 0.1.1 client's `PUT <res>` with the id in the body, the 1.x
/// client's `POST <res>/<id>` with `rpc-act`).
const ALLOWED: [(&str, &str); 9] = [
    ("/api", "GET, OPTIONS"),
    ("/api/openapi.json", "GET, OPTIONS"),
    ("/api/add", "GET, POST, OPTIONS"),
    ("/api/plus", "GET, POST, OPTIONS"),
    ("/api/counter", "POST, OPTIONS"),
    ("/api/greeter", "POST, OPTIONS"),
    ("/api/users", "GET, POST, PUT, OPTIONS"),
    ("/api/users/1", "GET, POST, PUT, DELETE, OPTIONS"),
    ("/api/rpcTask/x", "GET, POST, OPTIONS"),
];

#[tokio::test]
async fn options_lists_the_methods_of_its_path() {
    let hits = Arc::new(AtomicUsize::new(0));
    let registry = own_users();
    registry
        .register(counter("counter", &hits))
        .expect("counter");
    let addr = start(Api::new(registry)).await;
    for (path, allow) in ALLOWED {
        let reply = call(addr, "OPTIONS", path, &[], None).await;
        assert_eq!(reply.status, 204, "OPTIONS {path}: {}", reply.text());
        assert_eq!(reply.header("allow"), Some(allow), "OPTIONS {path}");
    }
    // With `Api::writes_over_get`, GET runs every tool.
    let addr = start(Api::new(own_users()).writes_over_get(true)).await;
    let reply = call(addr, "OPTIONS", "/api/greeter", &[], None).await;
    assert_eq!(reply.header("allow"), Some("GET, POST, OPTIONS"));
}

#[tokio::test]
async fn a_method_a_path_does_not_answer_is_405_before_anything_else() {
    let hits = Arc::new(AtomicUsize::new(0));
    let registry = own_users();
    registry
        .register(counter("counter", &hits))
        .expect("counter");
    let addr = start(Api::new(registry)).await;
    let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE", "PROMOTE"];
    for (path, allow) in ALLOWED {
        for method in methods.iter().filter(|m| !allow.contains(*m)) {
            // No content type, no body: 405 comes first, and the tool never runs.
            let mut conn = Conn::open(addr).await;
            let head = request(method, path, &[("connection", "close")], None);
            conn.send(&head).await;
            let reply = conn.response(false).await;
            let body = reply.error(405, "METHOD_NOT_ALLOWED");
            assert_eq!(reply.header("allow"), Some(allow), "{method} {path}");
            let message = body["error"].as_str().unwrap_or_default();
            assert!(message.contains(allow), "{method} {path}: {message}");
        }
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "a refused method ran a tool"
    );
    // The REST forms of both client generations still reach their methods.
    let reply = call(
        addr,
        "PUT",
        "/api/users",
        &[],
        Some(r#"{"id":"1","val":{"name":"Alicia"}}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!({"id": "1", "name": "Alicia"}));
    let reply = call(
        addr,
        "POST",
        "/api/users/2",
        &[("rpc-act", "put"), ("rpc-res-id", "2")],
        Some(r#"{"val":{"name":"Robert"}}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!({"id": "2", "name": "Robert"}));
    // An allowed method still says when its body is not JSON.
    let mut conn = Conn::open(addr).await;
    let bytes = request(
        "POST",
        "/api/counter",
        &[("connection", "close"), ("content-type", "text/plain")],
        Some(b"{}"),
    );
    conn.send(&bytes).await;
    conn.response(false)
        .await
        .error(415, "UNSUPPORTED_MEDIA_TYPE");
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_method_is_refused_only_once_the_auth_hook_let_the_caller_through() {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Seen::default();
    let addr = start(guarded(&hits, &seen)).await;
    // Without credentials nothing says which tools exist or what they answer.
    for (method, path) in [
        ("PUT", "/api/counter"),
        ("OPTIONS", "/api/counter"),
        ("OPTIONS", "/api/nope"),
        ("PUT", "/api"),
    ] {
        let reply = call(addr, method, path, &[], None).await;
        reply.error(401, "UNAUTHORIZED");
        assert_eq!(reply.header("allow"), None, "{method} {path}");
    }
    let token = [("authorization", "Bearer t")];
    let reply = call(addr, "PUT", "/api/counter", &token, None).await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("POST, OPTIONS"));
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn req_id_is_echoed() {
    let addr = start_demo(Vec::new()).await;
    let id = [("req-id", "abc-123")];
    let cases = [
        ("POST", "/api/add", Some(r#"{"a":1,"b":2}"#), 200),
        ("POST", "/api/fail", Some("{}"), 500),
        ("POST", "/api/nope", Some("{}"), 404),
        ("POST", "/api/add", Some("{"), 400),
        ("GET", "/api", None, 200),
        ("POST", "/api", Some("{}"), 405),
        ("OPTIONS", "/api/add", None, 204),
        ("GET", "/api/users/%FF", None, 400),
    ];
    for (method, path, body, status) in cases {
        let reply = call(addr, method, path, &id, body).await;
        assert_eq!(reply.status, status, "{method} {path}");
        assert_eq!(reply.header("req-id"), Some("abc-123"), "{method} {path}");
    }
    // Without one, each answer carries a fresh id, as the JavaScript servers do.
    let first = post(addr, "/api/add", r#"{"a":1,"b":2}"#).await;
    let second = post(addr, "/api/add", r#"{"a":1,"b":2}"#).await;
    let (first, second) = (first.header("req-id"), second.header("req-id"));
    assert!(first.is_some_and(|id| !id.is_empty()), "{first:?}");
    assert_ne!(first, second);
    // The id a proxy in front set is echoed too, beside `req-id`.
    let reply = call(
        addr,
        "POST",
        "/api/nope",
        &[
            ("x-request-id", "edge-7"),
            ("content-type", "application/json"),
        ],
        Some("{}"),
    )
    .await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.header("x-request-id"), Some("edge-7"));
    assert!(reply.header("req-id").is_some());
}

#[tokio::test]
async fn rpc_timeout_bounds_the_call() {
    let addr = start_demo(Vec::new()).await;
    // A sleep far longer than LIMIT: only the timeout can end it in time.
    let reply = call(
        addr,
        "POST",
        "/api/sleep",
        &[("rpc-timeout", "50")],
        Some(r#"{"ms":600000}"#),
    )
    .await;
    let body = reply.error(408, "TIMEOUT");
    assert_eq!(body["name"], "sleep");
    // A timeout that is not a whole number of milliseconds is refused before the
    // call runs, rather than quietly running it without a deadline.
    // Past 64 bits (the `maximum` the OpenAPI document gives), or with a sign, it is
    // as malformed.
    for bad in [
        "soon",
        "-1",
        "1.5",
        "1e3",
        "",
        "+50",
        "18446744073709551616",
        "99999999999999999999999",
    ] {
        let reply = call(
            addr,
            "POST",
            "/api/sleep",
            &[("rpc-timeout", bad)],
            Some(r#"{"ms":600000}"#),
        )
        .await;
        let body = reply.error(400, "INVALID_HEADER");
        assert!(
            body["error"].as_str().unwrap().contains("rpc-timeout"),
            "{body}"
        );
    }
    // One too long for the clock is no deadline, not an overflow.
    let reply = call(
        addr,
        "POST",
        "/api/sleep",
        &[("rpc-timeout", &u64::MAX.to_string())],
        Some(r#"{"ms":1}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!({"slept": 1}));
    // `0` is no timeout, as the JavaScript servers read it (`header || tool`).
    let reply = call(
        addr,
        "POST",
        "/api/add",
        &[("rpc-timeout", "0")],
        Some(r#"{"a":1,"b":2}"#),
    )
    .await;
    assert_eq!(reply.ok(), json!(3.0));
}

#[tokio::test]
async fn client_id_headers_become_the_caller() {
    let whoami = ToolFunc::builder("whoami")
        .handler_sync(|ctx, _| Ok(json!(ctx.caller())))
        .build()
        .unwrap();
    let addr = start_demo(vec![whoami]).await;
    assert_eq!(post(addr, "/api/whoami", "{}").await.ok(), Value::Null);
    for header in ["rpc-client-id", "x-client-id"] {
        let reply = call(addr, "POST", "/api/whoami", &[(header, "client-9")], None).await;
        assert_eq!(reply.ok(), "client-9", "{header}");
    }
}

#[tokio::test]
async fn tool_errors_keep_their_status_and_code() {
    let panics = ToolFunc::builder("panics")
        .handler_sync(|_, _| panic!("kaboom"))
        .build()
        .unwrap();
    let teapot = ToolFunc::builder("teapot")
        .handler_sync(|_, _| {
            Err(ToolError::custom("TEAPOT", 418, "short and stout").with_data(json!({"cups": 2})))
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![panics, teapot]).await;
    let body = post(addr, "/api/fail", "{}").await.error(500, "FAILED");
    assert_eq!(body["error"], "boom");
    assert_eq!(body["name"], "fail");
    let body = post(addr, "/api/teapot", "{}").await.error(418, "TEAPOT");
    assert_eq!(
        body,
        json!({"name": "teapot", "code": 418, "errorCode": "TEAPOT",
               "data": {"cups": 2}, "error": "short and stout"})
    );
    post(addr, "/api/panics", "{}").await.error(500, "PANICKED");
    // The server is still up.
    assert_eq!(
        post(addr, "/api/add", r#"{"a":1,"b":2}"#).await.ok(),
        json!(3.0)
    );
}

// ---------------------------------------------------------------------------
// Streams.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_stream_is_ndjson_when_asked_for() {
    let addr = start_demo(Vec::new()).await;
    let reply = post(addr, "/api/countdown", r#"{"count":3,"stream":true}"#).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(reply.text(), "{\"tick\":3}\n{\"tick\":2}\n{\"tick\":1}\n");
    // Not asked for: one JSON array.
    for body in [r#"{"count":3}"#, r#"{"count":3,"stream":false}"#] {
        let reply = post(addr, "/api/countdown", body).await;
        assert_eq!(
            reply.ok(),
            json!([{"tick": 3}, {"tick": 2}, {"tick": 1}]),
            "{body}"
        );
    }
    // Asked for in `p`.
    let path = format!(
        "/api/countdown?p={}",
        encode(r#"{"count":2,"stream":true}"#, "%20")
    );
    let reply = get(addr, &path).await;
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(reply.text(), "{\"tick\":2}\n{\"tick\":1}\n");
    // An empty stream is an empty body.
    let reply = post(addr, "/api/countdown", r#"{"count":0,"stream":true}"#).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "");
}

#[tokio::test]
async fn a_stream_error_after_an_item_ends_the_body_with_an_error_line() {
    let flaky = ToolFunc::builder("flaky")
        .stream_handler(|_, _| async {
            Ok(futures::stream::iter([
                Ok(json!({"n": 1})),
                Err(ToolError::custom("BROKEN", 502, "the source broke")
                    .with_data(json!({"at": 2}))),
                Ok(json!({"n": 3})),
            ]))
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![flaky]).await;
    let reply = post(addr, "/api/flaky", "{}").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
    let text = reply.text();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert!(text.ends_with('\n'));
    assert_eq!(
        lines,
        [
            json!({"n": 1}),
            json!({"name": "flaky", "code": 502, "errorCode": "BROKEN",
                   "data": {"at": 2}, "error": "the source broke"})
        ]
    );
}

#[tokio::test]
async fn a_stream_failing_before_its_first_item_is_a_plain_error() {
    let down = ToolFunc::builder("down")
        .stream_handler(|_, _| async {
            Ok(futures::stream::iter([
                Err(ToolError::custom("UPSTREAM_DOWN", 503, "down")),
                Ok(json!(1)),
            ]))
        })
        .build()
        .unwrap();
    let refuses = ToolFunc::builder("refuses")
        .stream_handler(|_, _| async {
            Err::<futures::stream::Empty<Result<Value, ToolError>>, _>(ToolError::failed(
                "no stream today",
            ))
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![down, refuses]).await;
    let body = post(addr, "/api/down", "{}")
        .await
        .error(503, "UPSTREAM_DOWN");
    assert_eq!(body["name"], "down");
    let body = post(addr, "/api/refuses", "{}").await.error(500, "FAILED");
    assert_eq!(body["error"], "no stream today");
    // A countdown with bad arguments fails before streaming too.
    post(addr, "/api/countdown", r#"{"count":"x","stream":true}"#)
        .await
        .error(400, "ARGUMENTS");
}

#[tokio::test]
async fn a_timeout_mid_stream_ends_the_body_with_a_timeout_line() {
    let stalls = ToolFunc::builder("stalls")
        .stream_handler(|_, _| async {
            Ok(futures::stream::iter([Ok(json!("first"))]).chain(futures::stream::pending()))
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![stalls]).await;
    let reply = call(
        addr,
        "POST",
        "/api/stalls",
        &[("rpc-timeout", "1000")],
        Some("{}"),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let text = reply.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "\"first\"");
    let last: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(
        (&last["code"], &last["errorCode"], &last["name"]),
        (&json!(408), &json!("TIMEOUT"), &json!("stalls"))
    );
}

/// A service (not `Default`, so not in the global registry) with a streaming act.
struct Feed {
    step: u64,
}

#[tool_service(name = "feed")]
impl Feed {
    /// `n` ticks, `step` apart.
    fn ticks(self: Arc<Self>, n: u64) -> impl futures::Stream<Item = u64> {
        futures::stream::iter((1..=n).map(move |i| i * self.step))
    }

    /// The sum of `n` ticks.
    fn total(&self, n: u64) -> u64 {
        (1..=n).map(|i| i * self.step).sum()
    }
}

#[tokio::test]
async fn a_streaming_act_streams() {
    let registry = Registry::global().isolate();
    registry.register_service(Feed { step: 10 }).unwrap();
    let addr = start(Api::new(registry)).await;
    for (headers, body) in [
        (vec![], r#"{"act":"$ticks","n":3}"#),
        (vec![], r#"{"act":"ticks","n":3}"#),
        (vec![("rpc-act", "$ticks")], r#"{"n":3}"#),
    ] {
        let reply = call(addr, "POST", "/api/feed", &headers, Some(body)).await;
        assert_eq!(reply.status, 200, "{body}");
        assert_eq!(
            reply.header("content-type"),
            Some("application/x-ndjson"),
            "{body}"
        );
        assert_eq!(reply.text(), "10\n20\n30\n", "{body}");
    }
    let reply = post(addr, "/api/feed", r#"{"act":"$total","n":3}"#).await;
    assert_eq!(reply.ok(), 60);
}

// ---------------------------------------------------------------------------
// Disconnects and backpressure.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_disconnect_cancels_a_running_call() {
    let probe = Probe::default();
    let hang = ToolFunc::builder("hang")
        .handler({
            let probe = probe.clone();
            move |ctx, _| {
                let probe = probe.clone();
                async move {
                    probe.arm(&ctx);
                    probe.started.notify_one();
                    sleep(Duration::from_secs(3600)).await;
                    Ok(Value::Null)
                }
            }
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![hang]).await;
    let mut conn = Conn::open(addr).await;
    conn.send(&request("POST", "/api/hang", &[], Some(b"{}")))
        .await;
    probe.wait_started().await;
    assert!(!Probe::is(&probe.fired) && !Probe::is(&probe.cleaned));
    drop(conn);
    wait_until("the call's token fires after the disconnect", || {
        Probe::is(&probe.fired)
    })
    .await;
    wait_until("the call's cleanup runs after the disconnect", || {
        Probe::is(&probe.cleaned)
    })
    .await;
}

#[tokio::test]
async fn a_disconnect_cancels_a_stream() {
    let probe = Probe::default();
    let ticker = ToolFunc::builder("ticker")
        .stream_handler({
            let probe = probe.clone();
            move |ctx, _| {
                let probe = probe.clone();
                async move {
                    probe.arm(&ctx);
                    let inside = InStream(probe);
                    Ok(futures::stream::iter([Ok(json!({"n": 1}))])
                        .chain(futures::stream::pending())
                        .map(move |item| {
                            inside.produce();
                            item
                        }))
                }
            }
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![ticker]).await;
    let mut conn = Conn::open(addr).await;
    conn.send(&request("POST", "/api/ticker", &[], Some(b"{}")))
        .await;
    let (status, headers) = conn.head().await;
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-type".into(), "application/x-ndjson".into())));
    assert_eq!(conn.chunk().await.as_deref(), Some(&b"{\"n\":1}\n"[..]));
    assert!(!Probe::is(&probe.dropped));
    drop(conn);
    wait_until("the stream is dropped after the disconnect", || {
        Probe::is(&probe.dropped)
    })
    .await;
    wait_until("the stream's cleanup runs after the disconnect", || {
        Probe::is(&probe.cleaned)
    })
    .await;
    wait_until("the stream's token fires after the disconnect", || {
        Probe::is(&probe.fired)
    })
    .await;
}

#[tokio::test]
async fn a_slow_reader_slows_the_producer() {
    const TOTAL: usize = 1000;
    const ITEM: usize = 64 * 1024;
    let probe = Probe::default();
    let flood = ToolFunc::builder("flood")
        .stream_handler({
            let probe = probe.clone();
            move |_, _| {
                let inside = InStream(probe.clone());
                async move {
                    let pad = "x".repeat(ITEM);
                    Ok(futures::stream::iter(0..TOTAL).map(move |i| {
                        inside.produce();
                        Ok(json!({"i": i, "pad": pad}))
                    }))
                }
            }
        })
        .build()
        .unwrap();
    let addr = start_demo(vec![flood]).await;
    let mut conn = Conn::open_small(addr).await;
    conn.send(&request("POST", "/api/flood", &[], Some(b"{}")))
        .await;
    probe.wait_started().await;
    // Read nothing until the producer stops (all buffers full), at most LIMIT.
    let deadline = Instant::now() + LIMIT;
    let mut last = probe.produced();
    loop {
        sleep(Duration::from_millis(300)).await;
        let now = probe.produced();
        if now == last || Instant::now() > deadline {
            break;
        }
        last = now;
    }
    let parked = probe.produced();
    assert!(
        parked < TOTAL / 2,
        "the producer ran ahead of a reader that reads nothing: {parked} of {TOTAL} items"
    );
    // Reading lets it go on.
    let (status, _) = conn.head().await;
    assert_eq!(status, 200);
    let mut read = 0;
    while read < 64 * ITEM {
        read += conn.chunk().await.expect("more items").len();
    }
    wait_until("the producer resumes once the client reads", || {
        probe.produced() > parked
    })
    .await;
    drop(conn);
    wait_until("the stream is dropped after the disconnect", || {
        Probe::is(&probe.dropped)
    })
    .await;
    assert!(probe.produced() < TOTAL);
}

// ---------------------------------------------------------------------------
// The auth hook.
// ---------------------------------------------------------------------------

type Seen = Arc<Mutex<Vec<(String, Option<String>, Option<String>)>>>;

/// An API over the demo catalog plus `counter`, refusing requests without an
/// `authorization` header (401) and calls of `fail` (403); `seen` records what the
/// hook saw.
fn guarded(hits: &Arc<AtomicUsize>, seen: &Seen) -> Api {
    let registry = Registry::global().isolate();
    registry.register(counter("counter", hits)).unwrap();
    let seen = Arc::clone(seen);
    Api::new(registry).auth(move |req| {
        seen.lock().unwrap_or_else(PoisonError::into_inner).push((
            req.method.to_string(),
            req.tool.map(str::to_owned),
            req.act.map(str::to_owned),
        ));
        if req.headers.get("authorization").is_none() {
            return Err(ToolError::custom(
                "UNAUTHORIZED",
                401,
                "a token is required",
            ));
        }
        if req.tool == Some("fail") {
            return Err(ToolError::custom("FORBIDDEN", 403, "not for you"));
        }
        Ok(())
    })
}

fn take(seen: &Seen) -> Vec<(String, Option<String>, Option<String>)> {
    std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner))
}

#[tokio::test]
async fn the_auth_hook_guards_calls_and_discovery() {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Seen::default();
    let addr = start(guarded(&hits, &seen)).await;
    let token = [("authorization", "Bearer t")];
    let owned = |m: &str, t: Option<&str>, a: Option<&str>| {
        (m.to_owned(), t.map(str::to_owned), a.map(str::to_owned))
    };

    // Discovery goes through the hook, with no tool.
    let body = get(addr, "/api").await.error(401, "UNAUTHORIZED");
    assert_eq!(
        body,
        json!({"code": 401, "errorCode": "UNAUTHORIZED", "error": "a token is required"})
    );
    assert_eq!(take(&seen), [owned("GET", None, None)]);
    let listing = call(addr, "GET", "/api", &token, None).await.ok();
    assert!(listing.get("counter").is_some());
    assert_eq!(take(&seen), [owned("GET", None, None)]);

    // A refused call does not run.
    let body = post(addr, "/api/counter", "{}")
        .await
        .error(401, "UNAUTHORIZED");
    assert_eq!(body["name"], "counter");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused call ran");
    let reply = call(addr, "POST", "/api/counter", &token, Some("{}")).await;
    assert_eq!(reply.ok(), "ran");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        take(&seen),
        [
            owned("POST", Some("counter"), None),
            owned("POST", Some("counter"), None)
        ]
    );

    // 403 for one tool, whatever name it is called by.
    let body = call(addr, "POST", "/api/fail", &token, Some("{}"))
        .await
        .error(403, "FORBIDDEN");
    assert_eq!(body["error"], "not for you");
    assert_eq!(take(&seen), [owned("POST", Some("fail"), None)]);

    // The hook sees the resolved name and the act.
    call(addr, "POST", "/api/plus", &token, Some(r#"{"a":1,"b":1}"#))
        .await
        .ok();
    call(addr, "GET", "/api/users/1", &token, None).await.ok();
    call(addr, "GET", "/api/users", &token, None).await.ok();
    let reply = call(
        addr,
        "POST",
        "/api/greeter",
        &token,
        Some(r#"{"act":"$hello","name":"A"}"#),
    )
    .await;
    assert_eq!(reply.ok(), "hello A");
    assert_eq!(
        take(&seen),
        [
            owned("POST", Some("add"), None),
            owned("GET", Some("users"), Some("get")),
            owned("GET", Some("users"), Some("list")),
            owned("POST", Some("greeter"), Some("$hello")),
        ]
    );
}

#[tokio::test]
async fn the_auth_hook_sees_requests_for_unknown_tools_and_bad_bodies() {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = Seen::default();
    let addr = start(guarded(&hits, &seen)).await;
    // Without credentials, nothing about the catalog or the arguments leaks out.
    post(addr, "/api/no_such_tool", "{}")
        .await
        .error(401, "UNAUTHORIZED");
    post(addr, "/api/add", "{not json")
        .await
        .error(401, "UNAUTHORIZED");
    post(addr, "/api/greeter", r#"{"act":"$hello"}"#)
        .await
        .error(401, "UNAUTHORIZED");
    // An act the service does not have is refused before the hook is asked: the
    // hook only ever sees acts that would run.
    post(addr, "/api/greeter", r#"{"act":"$nope"}"#)
        .await
        .error(404, "UNKNOWN_ACT");
    assert!(
        take(&seen)
            .iter()
            .all(|(_, _, act)| act.as_deref() != Some("$nope")),
        "the hook saw an act that does not exist"
    );
}

// ---------------------------------------------------------------------------
// Several prefixes.
// ---------------------------------------------------------------------------

fn named(name: &str, out: &'static str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(move |_, _| Ok(json!(out)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_prefix_serves_its_own_registry() {
    let public = Registry::new();
    public.register(named("alpha", "from api")).unwrap();
    let admin = Registry::new();
    admin.register(named("beta", "from admin")).unwrap();
    let server = Server::new()
        .mount(Api::new(public))
        .unwrap()
        .mount(Api::new(admin).prefix("admin/"))
        .unwrap();
    let addr = start_server(server).await;

    let names = |listing: Value| -> Vec<String> {
        listing
            .as_object()
            .expect("a listing")
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(names(get(addr, "/api").await.ok()), ["alpha"]);
    assert_eq!(names(get(addr, "/admin/").await.ok()), ["beta"]);
    assert_eq!(names(get(addr, "/admin").await.ok()), ["beta"]);
    assert_eq!(post(addr, "/api/alpha", "{}").await.ok(), "from api");
    assert_eq!(post(addr, "/admin/beta", "{}").await.ok(), "from admin");
    assert_eq!(
        post(addr, "/api/beta", "{}").await.error(404, "NOT_FOUND")["data"]["what"],
        "beta"
    );
    assert_eq!(
        post(addr, "/admin/alpha", "{}")
            .await
            .error(404, "NOT_FOUND")["data"]["what"],
        "alpha"
    );
}

#[tokio::test]
async fn mounting_a_prefix_twice_is_a_conflict() {
    let server = Server::new().mount(Api::new(Registry::new())).unwrap();
    for prefix in ["/api", "api", "/api/", "//api//"] {
        let err = server
            .clone()
            .mount(Api::new(Registry::new()).prefix(prefix))
            .unwrap_err();
        assert_eq!(err.code(), "CONFLICT", "{prefix}");
        assert_eq!(err.status(), 409);
    }
    let root = Server::new()
        .mount(Api::new(Registry::new()).prefix(""))
        .unwrap();
    assert_eq!(
        root.mount(Api::new(Registry::new()).prefix("/"))
            .unwrap_err()
            .code(),
        "CONFLICT"
    );
}

#[tokio::test]
async fn a_root_prefix_and_another_prefix() {
    let root = Registry::new();
    root.register(named("alpha", "from root")).unwrap();
    let admin = Registry::new();
    admin.register(named("beta", "from admin")).unwrap();
    let server = Server::new()
        .mount(Api::new(root).prefix("/"))
        .unwrap()
        .mount(Api::new(admin).prefix("/admin"))
        .unwrap();
    let addr = start_server(server).await;
    assert_eq!(post(addr, "/alpha", "{}").await.ok(), "from root");
    assert_eq!(post(addr, "/admin/beta", "{}").await.ok(), "from admin");
    assert!(get(addr, "/").await.ok().get("alpha").is_some());
    assert!(get(addr, "/admin").await.ok().get("beta").is_some());
}
