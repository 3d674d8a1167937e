//! Long-running calls over HTTP: a `background` tool still running at its soft
//! deadline answers `202` with the id to poll; `rpcTask` polls and cancels it (the
//! 1.x wire); the toolfunc client follows it to the result, and cancels it when the
//! caller gives up.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/http.rs"]
mod http_support;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::http::{Api, Client};
use toolfunc::ledger::{Ledger, LedgerSettings, TaskStatus};

use http_support::{Reply, call, start};

async fn poll(addr: std::net::SocketAddr, id: &str) -> Reply {
    call(addr, "GET", &format!("/api/rpcTask/{id}"), &[], None).await
}

async fn poll_until_done(addr: std::net::SocketAddr, id: &str) -> Reply {
    for _ in 0..300 {
        let reply = poll(addr, id).await;
        if reply.status != 202 {
            return reply;
        }
        assert_eq!(
            reply.json(),
            json!({"status": 102, "code": 102, "message": "Keep Polling"})
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{id} did not finish");
}

#[tokio::test]
async fn past_its_soft_deadline_a_call_moves_to_the_background() {
    let addr = start(Api::new(demo::catalog())).await;
    // Within the deadline: the answer itself.
    let quick = call(
        addr,
        "POST",
        "/api/report",
        &[("content-type", "application/json")],
        Some(r#"{"ms":10}"#),
    )
    .await;
    assert_eq!(quick.ok(), json!({"ms": 10}));
    // Past it: 202, the id to poll, when to poll.
    let slow = call(
        addr,
        "POST",
        "/api/report",
        &[("content-type", "application/json"), ("req-id", "job-1")],
        Some(r#"{"ms":1500}"#),
    )
    .await;
    assert_eq!(slow.status, 202, "{}", slow.text());
    assert_eq!(slow.header("req-id"), Some("job-1"));
    assert_eq!(slow.header("rpc-retry-after"), Some("1000"));
    assert_eq!(slow.json()["status"], 102);
    let done = poll_until_done(addr, "job-1").await;
    assert_eq!(done.ok(), json!({"ms": 1500}));
    // The id is not taken twice while tracked.
    let again = call(
        addr,
        "POST",
        "/api/report",
        &[("content-type", "application/json"), ("req-id", "job-1")],
        Some(r#"{"ms":10}"#),
    )
    .await;
    again.error(409, "CONFLICT");
}

#[tokio::test]
async fn the_header_forms_of_the_poll_and_a_failed_task() {
    let addr = start(Api::new(demo::catalog())).await;
    let slow = call(
        addr,
        "POST",
        "/api/report",
        &[("content-type", "application/json")],
        Some(r#"{"ms":1200,"fail":true}"#),
    )
    .await;
    assert_eq!(slow.status, 202);
    let id = slow.header("req-id").expect("an id to poll").to_owned();
    // The 1.x client's poll: rpc-fn, rpc-act and rpc-res-id, any path under rpcTask.
    let headers = [
        ("rpc-fn", "rpcTask"),
        ("rpc-act", "get"),
        ("rpc-res-id", id.as_str()),
    ];
    let mut reply = call(addr, "GET", "/api/rpcTask/get", &headers, None).await;
    while reply.status == 202 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        reply = call(addr, "GET", "/api/rpcTask/get", &headers, None).await;
    }
    reply.error(500, "REPORT_FAILED");
}

#[tokio::test]
async fn cancel_unknown_ids_and_idempotence() {
    let ledger = Ledger::new(demo::catalog());
    let registry = demo::catalog();
    let addr = start(Api::new(registry).ledger(ledger.clone())).await;
    let slow = call(
        addr,
        "POST",
        "/api/report",
        &[("content-type", "application/json"), ("req-id", "long")],
        Some(r#"{"ms":60000}"#),
    )
    .await;
    assert_eq!(slow.status, 202);
    assert_eq!(ledger.status("long").unwrap().status, TaskStatus::Working);
    let cancel = |id: &'static str| async move {
        call(
            addr,
            "POST",
            &format!("/api/rpcTask/{id}"),
            &[("content-type", "application/json")],
            Some(r#"{"act":"$cancel"}"#),
        )
        .await
    };
    assert_eq!(cancel("long").await.ok(), json!({"success": true}));
    let done = poll_until_done(addr, "long").await;
    done.error(499, "CANCELLED");
    // Cancelling again is not an error; an unknown id is 404 for both forms.
    assert_eq!(cancel("long").await.ok(), json!({"success": true}));
    cancel("nope").await.error(404, "NOT_FOUND");
    poll(addr, "nope").await.error(404, "NOT_FOUND");
    // A poll that names no task, and an act rpcTask does not have.
    call(addr, "GET", "/api/rpcTask", &[], None)
        .await
        .error(400, "ARGUMENTS");
    call(
        addr,
        "POST",
        "/api/rpcTask/long",
        &[("content-type", "application/json")],
        Some(r#"{"act":"$explode"}"#),
    )
    .await
    .error(400, "ARGUMENTS");
}

#[tokio::test]
async fn the_client_follows_a_background_call_to_its_result() {
    let addr = start(Api::new(demo::catalog())).await;
    let client = Client::connect(&format!("http://{addr}/api"))
        .await
        .unwrap();
    let value: Value = client.run("report", json!({"ms": 1300})).await.unwrap();
    assert_eq!(value, json!({"ms": 1300}));
    let err = client
        .run("report", json!({"ms": 1100, "fail": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "REPORT_FAILED");
}

#[tokio::test]
async fn a_caller_that_gives_up_cancels_the_remote_call() {
    let ledger = Ledger::new(demo::catalog());
    let addr = start(Api::new(demo::catalog()).ledger(ledger.clone())).await;
    let client = Client::connect(&format!("http://{addr}/api"))
        .await
        .unwrap();
    let call = client.run("report", json!({"ms": 60000}));
    // Past the soft deadline and one poll, then the caller stops waiting.
    assert!(
        tokio::time::timeout(Duration::from_millis(2500), call)
            .await
            .is_err()
    );
    let mut status = None;
    for _ in 0..200 {
        status = ledger.list().first().map(|t| t.status);
        if status == Some(TaskStatus::Cancelled) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, Some(TaskStatus::Cancelled));
}

#[tokio::test]
async fn the_document_describes_the_background_and_rpc_task() {
    let doc = Api::new(demo::catalog()).openapi_document();
    let report = &doc["paths"]["/api/report"]["post"]["responses"];
    assert!(report.get("202").is_some(), "{report}");
    assert!(doc["paths"]["/api/rpcTask/{id}"]["get"].is_object());
    assert!(doc["paths"]["/api/rpcTask/{id}"]["post"].is_object());
    // Not listed in discovery.
    let api = Api::new(demo::catalog());
    let addr = start(api).await;
    let discovery = call(addr, "GET", "/api", &[], None).await.ok();
    assert!(discovery.get("rpcTask").is_none());
    assert!(discovery["report"]["background"] == true);
}

#[tokio::test]
async fn only_its_caller_polls_or_cancels_a_background_call() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let hide = Arc::new(AtomicBool::new(false));
    let hiding = hide.clone();
    let registry =
        demo::catalog()
            .isolate()
            .layer(toolfunc::layer::visibility(move |tool, _viewer| {
                !(tool.name == "report" && hiding.load(Ordering::Relaxed))
            }));
    let addr = start(Api::new(&registry)).await;
    let json = ("content-type", "application/json");
    let slow = call(
        addr,
        "POST",
        "/api/report",
        &[json, ("req-id", "alices-job"), ("rpc-client-id", "alice")],
        Some(r#"{"ms":30000}"#),
    )
    .await;
    assert_eq!(slow.status, 202, "{}", slow.text());
    let path = "/api/rpcTask/alices-job";
    // Someone else, or nobody in particular: as if there were no such call.
    for asker in [vec![("rpc-client-id", "bob")], vec![]] {
        call(addr, "GET", path, &asker, None)
            .await
            .error(404, "NOT_FOUND");
        let mut cancelling = asker.clone();
        cancelling.push(("rpc-act", "$cancel"));
        call(addr, "POST", path, &cancelling, None)
            .await
            .error(404, "NOT_FOUND");
    }
    let alice = [("rpc-client-id", "alice")];
    assert_eq!(call(addr, "GET", path, &alice, None).await.status, 202);
    // While a layer hides the tool, its caller cannot read it either.
    hide.store(true, Ordering::Relaxed);
    call(addr, "GET", path, &alice, None)
        .await
        .error(404, "NOT_FOUND");
    hide.store(false, Ordering::Relaxed);
    let cancelled = call(
        addr,
        "POST",
        path,
        &[("rpc-client-id", "alice"), ("rpc-act", "$cancel")],
        None,
    )
    .await;
    assert_eq!(cancelled.ok(), json!({"success": true}));
}

/// A streaming background tool: `n` items, `ms` apart; background past 150 ms.
fn ticking() -> toolfunc::Registry {
    let registry = toolfunc::Registry::new();
    let tool = toolfunc::ToolFunc::builder("ticks")
        .timeout(Duration::from_millis(150))
        .background(true)
        .stream_handler(|_ctx, args: Value| async move {
            let n = args["n"].as_u64().unwrap_or(3);
            let ms = args["ms"].as_u64().unwrap_or(0);
            Ok(futures::stream::unfold(0, move |i| async move {
                if i == n {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Some((Ok(json!({"tick": i})), i + 1))
            }))
        })
        .build()
        .unwrap();
    registry.register(tool).unwrap();
    registry
}

#[tokio::test]
async fn a_stream_past_its_soft_deadline_is_polled_for_its_items() {
    let addr = start(Api::new(ticking())).await;
    let ndjson = [
        ("content-type", "application/json"),
        ("accept", "application/x-ndjson"),
    ];
    // Within the deadline: the items at once, one per line.
    let quick = call(
        addr,
        "POST",
        "/api/ticks",
        &ndjson,
        Some(r#"{"n":2,"stream":true}"#),
    )
    .await;
    assert_eq!(quick.status, 200, "{}", quick.text());
    assert_eq!(quick.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(quick.text(), "{\"tick\":0}\n{\"tick\":1}\n");
    // Past it: 202, then the items from the poll that finds it done.
    let mut headers = ndjson.to_vec();
    headers.push(("req-id", "ticking"));
    let slow = call(
        addr,
        "POST",
        "/api/ticks",
        &headers,
        Some(r#"{"n":3,"ms":100,"stream":true}"#),
    )
    .await;
    assert_eq!(slow.status, 202, "{}", slow.text());
    let done = poll_until_done(addr, "ticking").await;
    assert_eq!(done.status, 200, "{}", done.text());
    assert_eq!(done.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(done.text(), "{\"tick\":0}\n{\"tick\":1}\n{\"tick\":2}\n");
}

#[tokio::test]
async fn the_client_streams_a_background_call_once_it_is_done() {
    use futures::StreamExt;
    let addr = start(Api::new(ticking())).await;
    let client = Client::connect(&format!("http://{addr}/api"))
        .await
        .unwrap();
    let items: Vec<Value> = client
        .run_stream("ticks", json!({"n": 3, "ms": 100}))
        .map(|item| item.unwrap())
        .collect()
        .await;
    assert_eq!(
        items,
        vec![json!({"tick": 0}), json!({"tick": 1}), json!({"tick": 2})]
    );
}

#[tokio::test]
async fn a_req_id_names_a_call_only_for_the_caller_who_sent_it() {
    let addr = start(Api::new(demo::catalog())).await;
    let json = ("content-type", "application/json");
    let alice = call(
        addr,
        "POST",
        "/api/report",
        &[json, ("req-id", "job-7"), ("rpc-client-id", "alice")],
        Some(r#"{"ms":30000}"#),
    )
    .await;
    assert_eq!(alice.status, 202, "{}", alice.text());
    // To Bob, Alice's id is exactly an id nobody used.
    let bob = [("rpc-client-id", "bob")];
    let taken = call(addr, "GET", "/api/rpcTask/job-7", &bob, None).await;
    let unknown = call(addr, "GET", "/api/rpcTask/job-8", &bob, None).await;
    assert_eq!(taken.status, unknown.status);
    assert_eq!(taken.text(), unknown.text().replace("job-8", "job-7"));
    // Bob may send the same req-id: his own call runs, under it, for him.
    for (caller, ms) in [("bob", 1300), ("", 1200)] {
        let mut headers = vec![json, ("req-id", "job-7")];
        if !caller.is_empty() {
            headers.push(("rpc-client-id", caller));
        }
        let own = call(
            addr,
            "POST",
            "/api/report",
            &headers,
            Some(&format!(r#"{{"ms":{ms}}}"#)),
        )
        .await;
        assert_eq!(own.status, 202, "{caller}: {}", own.text());
        assert_eq!(own.header("req-id"), Some("job-7"));
    }
    let path = "/api/rpcTask/job-7";
    for (asker, ms) in [(&bob[..], 1300), (&[][..], 1200)] {
        let mut reply = call(addr, "GET", path, asker, None).await;
        while reply.status == 202 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            reply = call(addr, "GET", path, asker, None).await;
        }
        assert_eq!(reply.ok(), json!({ "ms": ms }));
    }
    // Alice's call was never touched.
    let alice = [("rpc-client-id", "alice")];
    assert_eq!(call(addr, "GET", path, &alice, None).await.status, 202);
    let cancel = [("rpc-client-id", "alice"), ("rpc-act", "$cancel")];
    let cancelled = call(addr, "POST", path, &cancel, None).await;
    assert_eq!(cancelled.ok(), json!({"success": true}));
}

/// Whether `id` is 128 random bits in hex, after an optional `task-`.
fn unguessable(id: &str) -> bool {
    let hex = id.strip_prefix("task-").unwrap_or(id);
    hex.len() == 32 && hex.bytes().all(|c| c.is_ascii_hexdigit())
}

#[tokio::test]
async fn without_a_req_id_the_server_makes_an_unguessable_one() {
    let addr = start(Api::new(demo::catalog())).await;
    let json = ("content-type", "application/json");
    let mut seen = Vec::new();
    for body in [r#"{"ms":10}"#, r#"{"ms":10}"#, r#"{"ms":1500}"#] {
        let reply = call(addr, "POST", "/api/report", &[json], Some(body)).await;
        let id = reply.header("req-id").expect("a req-id").to_owned();
        assert!(unguessable(&id), "{id}");
        assert!(!seen.contains(&id));
        seen.push(id);
    }
}

#[tokio::test]
async fn background_calls_are_bounded_per_caller_and_ids_in_bytes() {
    let registry = demo::catalog();
    let settings = LedgerSettings::default()
        .max_entries_per_caller(1)
        .max_id_bytes(16);
    let ledger = Ledger::with_settings(&registry, settings);
    let addr = start(Api::new(&registry).ledger(ledger)).await;
    let json = ("content-type", "application/json");
    let slow = |caller: &'static str, id: &'static str| async move {
        call(
            addr,
            "POST",
            "/api/report",
            &[json, ("rpc-client-id", caller), ("req-id", id)],
            Some(r#"{"ms":30000}"#),
        )
        .await
    };
    assert_eq!(slow("alice", "a-1").await.status, 202);
    // Alice floods: her next call is refused; Bob still gets in.
    slow("alice", "a-2").await.error(429, "BUSY");
    assert_eq!(slow("bob", "b-1").await.status, 202);
    // A req-id past the cap is refused, with a stable code, and not kept.
    slow("carol", "c-0123456789abcdef")
        .await
        .error(400, "TOO_LONG");
    assert_eq!(slow("carol", "c-1").await.status, 202);
}

#[tokio::test]
async fn behind_an_authenticator_a_background_call_is_its_subjects() {
    use toolfunc::Identity;
    use toolfunc::auth::ApiKeys;
    let keys = ApiKeys::new()
        .key("key-a", Identity::new("alice"))
        .key("key-b", Identity::new("bob"));
    let api = Api::new(demo::catalog())
        .authenticate(keys)
        .resource("http://127.0.0.1/api");
    let addr = start(api).await;
    // Both state the same client id: a label, not who they are.
    let alice = [
        ("authorization", "Bearer key-a"),
        ("rpc-client-id", "app"),
        ("content-type", "application/json"),
        ("req-id", "job"),
    ];
    let bob = [
        ("authorization", "Bearer key-b"),
        ("rpc-client-id", "app"),
        ("content-type", "application/json"),
        ("req-id", "job"),
    ];
    let slow = Some(r#"{"ms":30000}"#);
    assert_eq!(
        call(addr, "POST", "/api/report", &alice, slow).await.status,
        202
    );
    call(addr, "GET", "/api/rpcTask/job", &bob[..2], None)
        .await
        .error(404, "NOT_FOUND");
    // Nor does stating Alice's name make Bob Alice.
    let posing = [
        ("authorization", "Bearer key-b"),
        ("rpc-client-id", "alice"),
    ];
    call(addr, "GET", "/api/rpcTask/job", &posing, None)
        .await
        .error(404, "NOT_FOUND");
    assert_eq!(
        call(addr, "POST", "/api/report", &bob, slow).await.status,
        202
    );
    for who in [&alice[..2], &bob[..2]] {
        assert_eq!(
            call(addr, "GET", "/api/rpcTask/job", who, None)
                .await
                .status,
            202
        );
        let mut cancel = who.to_vec();
        cancel.push(("rpc-act", "$cancel"));
        let cancelled = call(addr, "POST", "/api/rpcTask/job", &cancel, None).await;
        assert_eq!(cancelled.ok(), json!({"success": true}));
    }
}
