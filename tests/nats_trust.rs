//! The NATS trust boundary against a real nats-server: bearer tokens checked by the
//! worker on every request, replies only to inboxes, catalogue events that carry
//! no definitions, control messages only from the call's own requester, durable
//! calls owned by their submitter and claimed with compare-and-set, a default
//! deadline, a caller that has gone, and ids refused when submitted.

#[path = "support/nats.rs"]
mod nats_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::nats::async_nats;
use toolfunc::nats::{Client, DurableSettings, Worker};
use toolfunc::{Registry, ToolFunc};

use nats_server::NatsServer;

async fn raw(server: &NatsServer) -> async_nats::Client {
    async_nats::connect(server.url()).await.unwrap()
}

/// Waits until `check` holds (at most 20 s).
async fn eventually(what: &str, check: impl Fn() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 20 s");
}

fn echo() -> ToolFunc {
    ToolFunc::builder("echo")
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap()
}

/// A tool that notes its call id and runs for `ms` milliseconds (or until
/// cancelled), answering `"done"`.
fn nap(ids: &Arc<Mutex<Vec<String>>>, ms: u64) -> ToolFunc {
    let ids = Arc::clone(ids);
    ToolFunc::builder("nap")
        .handler(move |ctx, _args| {
            ids.lock()
                .unwrap()
                .push(ctx.call_id().unwrap_or_default().to_owned());
            async move {
                let token = ctx.cancellation_token();
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!("done")),
                    () = token.cancelled() => Ok(json!("cancelled")),
                }
            }
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_reply_subject_outside_the_inbox_prefix_is_dropped_and_counted() {
    let server = NatsServer::start();
    let registry = Registry::new();
    registry.register(echo()).unwrap();
    let worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    // A request whose answer would land on someone else's subject.
    let mut elsewhere = nats.subscribe("victim.>").await.unwrap();
    nats.publish_with_reply("toolfunc.call.echo", "victim.feed", r#"{"x":1}"#.into())
        .await
        .unwrap();
    nats.flush().await.unwrap();
    // A request from an inbox is answered as before.
    let answer = nats
        .request("toolfunc.call.echo", r#"{"x":2}"#.into())
        .await
        .unwrap();
    assert_eq!(&answer.payload[..], br#"{"x":2}"#);
    let stray = tokio::time::timeout(Duration::from_millis(500), elsewhere.next()).await;
    assert!(stray.is_err(), "the worker answered to `victim.feed`");
    eventually("the dropped request to be counted", || {
        worker.dropped_replies() == 1
    })
    .await;
}

#[tokio::test]
async fn a_forged_event_carrying_definitions_is_not_trusted() {
    let server = NatsServer::start();
    let registry = Registry::new();
    registry.register(echo()).unwrap();
    let _worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    assert_eq!(client.names(), ["echo"]);
    let forged = json!({
        "worker": "anyone",
        "tools": {
            "evil": {"name": "evil", "description": "runs where the forger says",
                     "params": {"type": "object", "properties": {}}},
            "echo": {"name": "echo", "description": "replaced",
                     "params": {"type": "object", "properties": {}}},
        },
    });
    let nats = raw(&server).await;
    nats.publish("toolfunc.events", forged.to_string().into())
        .await
        .unwrap();
    nats.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        client.names(),
        ["echo"],
        "the forged definitions were taken"
    );
    assert_ne!(
        client
            .get("echo")
            .unwrap()
            .definition()
            .description
            .as_deref(),
        Some("replaced")
    );
    // A genuine change still reaches the client, through discovery.
    let late = Registry::new();
    late.register(
        ToolFunc::builder("late")
            .handler_sync(|_ctx, _args| Ok(json!("late")))
            .build()
            .unwrap(),
    )
    .unwrap();
    let _second = Worker::builder(late).connect(&server.url()).await.unwrap();
    eventually("the client to learn of `late`", || client.has("late")).await;
    assert_eq!(client.run("late", json!({})).await.unwrap(), json!("late"));
}

#[tokio::test]
async fn a_cancel_from_another_requester_is_ignored() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 1500)).unwrap();
    let worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.run("nap", json!({})).await }
    });
    eventually("the call to start", || !ids.lock().unwrap().is_empty()).await;
    let id = ids.lock().unwrap()[0].clone();
    // Someone else names the call by its id, on both control subjects.
    let nats = raw(&server).await;
    for subject in [
        "toolfunc.ctl".to_owned(),
        format!("toolfunc.ctl.{}", worker.id()),
    ] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Tf-Call-Id", id.as_str());
        headers.insert("Tf-Cancel", "not yours");
        headers.insert("Tf-Control-Key", "a guess");
        nats.publish_with_headers(subject, headers, "".into())
            .await
            .unwrap();
    }
    nats.flush().await.unwrap();
    assert_eq!(call.await.unwrap().unwrap(), json!("done"));
    // The requester's own cancel still works.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.run("nap", json!({})).await }
    });
    eventually("the second call to start", || {
        ids.lock().unwrap().len() == 2
    })
    .await;
    call.abort();
    eventually("the requester's cancel to stop the call", || {
        worker.in_flight() == 0
    })
    .await;
}

#[tokio::test]
async fn every_call_has_a_default_deadline() {
    let server = NatsServer::start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    {
        let seen = Arc::clone(&seen);
        registry
            .register(
                ToolFunc::builder("slow")
                    .handler(move |ctx, _args| {
                        seen.lock().unwrap().push(ctx.deadline());
                        async move {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                            Ok(json!("late"))
                        }
                    })
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::builder()
        .timeout(Duration::from_millis(400))
        .connect(&server.url())
        .await
        .unwrap();
    let err = client.run("slow", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    assert!(
        seen.lock().unwrap()[0].is_some(),
        "the worker's call has a deadline"
    );
    eventually("the call to end on the worker", || worker.in_flight() == 0).await;
    // The default client has one too.
    let plain = Client::connect(&server.url()).await.unwrap();
    let call = tokio::spawn(async move { plain.run("slow", json!({})).await });
    eventually("the second call to start", || {
        seen.lock().unwrap().len() == 2
    })
    .await;
    assert!(seen.lock().unwrap()[1].is_some());
    call.abort();
}

#[tokio::test]
async fn a_caller_that_has_gone_is_noticed_and_its_call_cancelled() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 30_000)).unwrap();
    let worker = Worker::builder(registry)
        .connect(&server.url())
        .await
        .unwrap();
    // A raw caller asks for heartbeats, then its connection goes away.
    let nats = raw(&server).await;
    let inbox = nats.new_inbox();
    let replies = nats.subscribe(inbox.clone()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Heartbeat", "100");
    nats.publish_with_reply_and_headers("toolfunc.call.nap", inbox, headers, "{}".into())
        .await
        .unwrap();
    nats.flush().await.unwrap();
    eventually("the call to start", || worker.in_flight() == 1).await;
    drop(replies);
    drop(nats);
    eventually("the worker to cancel the abandoned call", || {
        worker.in_flight() == 0
    })
    .await;
}

/// A durable worker whose `count` tool counts its runs and runs at most one call at
/// a time, the first one waiting for `gate`.
#[tokio::test]
async fn a_forged_record_does_not_stop_a_run() {
    let server = NatsServer::start();
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(tokio::sync::Notify::new());
    let registry = Registry::new();
    {
        let runs = Arc::clone(&runs);
        let gate = Arc::clone(&gate);
        registry
            .register(
                ToolFunc::builder("count")
                    .handler(move |_ctx, args| {
                        let n = runs.fetch_add(1, Ordering::SeqCst);
                        let gate = Arc::clone(&gate);
                        async move {
                            if args["hold"] == json!(true) {
                                gate.notified().await;
                            }
                            Ok(json!({"run": n}))
                        }
                    })
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let _worker = Worker::builder(registry)
        .durable(DurableSettings::new().per_worker(1))
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let first = client.submit("count", json!({"hold": true})).await.unwrap();
    eventually("the first call to run", || runs.load(Ordering::SeqCst) == 1).await;
    let second = client.submit("count", json!({})).await.unwrap();
    // While the second waits, a record says it is done.
    let js = async_nats::jetstream::new(raw(&server).await);
    let bucket = js.get_key_value("toolfunc_results").await.unwrap();
    for status in ["working", "completed"] {
        let forged = json!({
            "id": second, "tool": "count", "status": status, "result": "forged",
            "worker": "forger", "attempt": 1, "lease": u64::MAX,
        });
        bucket
            .put(&second, forged.to_string().into())
            .await
            .unwrap();
        let forged = json!({"id": first, "status": status, "result": "forged"});
        bucket.put(&first, forged.to_string().into()).await.unwrap();
    }
    gate.notify_one();
    eventually("the second call to run", || {
        runs.load(Ordering::SeqCst) == 2
    })
    .await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&second))
        .await
        .expect("the second call ran")
        .unwrap();
    assert_eq!(outcome, json!({"run": 1}));
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&first))
        .await
        .expect("the first call finished")
        .unwrap();
    assert_eq!(outcome, json!({"run": 0}));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Starts a durable worker on a runtime of its own, in a thread of its own, so a
/// tool that blocks its thread makes the whole worker slow (no sign of life for a
/// while) but not dead. Returns when the worker serves.
fn slow_worker(url: String, registry: Registry, ack_wait: Duration) -> std::thread::JoinHandle<()> {
    let (ready, started) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let worker = Worker::builder(registry)
                .durable(DurableSettings::new().ack_wait(ack_wait).per_worker(1))
                .connect(&url)
                .await
                .unwrap();
            ready.send(()).unwrap();
            // Serve for the test's length.
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(worker);
        });
    });
    started.recv().unwrap();
    thread
}

/// A durable tool that answers `name`, after blocking its thread for `block` on
/// its first run; counts the runs going on at once and the most seen.
fn blocking(
    name: &'static str,
    block: Duration,
    running: &Arc<AtomicUsize>,
    most: &Arc<AtomicUsize>,
    runs: &Arc<AtomicUsize>,
) -> Registry {
    let (running, most, runs) = (Arc::clone(running), Arc::clone(most), Arc::clone(runs));
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("job")
                .handler_sync(move |_ctx, _args| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    runs.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(block);
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(json!(name))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_worker_cannot_make_a_durable_call_run_twice_at_once() {
    let server = NatsServer::start();
    let ack_wait = Duration::from_secs(1);
    let (running, most, runs) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    // The first worker blocks for longer than JetStream waits for a sign of life,
    // but less than its claim lasts.
    let slow = blocking("slow", ack_wait * 3 / 2, &running, &most, &runs);
    let _a = slow_worker(server.url(), slow, ack_wait);
    let client = Client::connect(&server.url()).await.unwrap();
    let id = client.submit("job", json!({})).await.unwrap();
    eventually("the slow worker to take the call", || {
        runs.load(Ordering::SeqCst) == 1
    })
    .await;
    let quick = blocking("quick", Duration::ZERO, &running, &most, &runs);
    let _b = Worker::builder(quick)
        .durable(DurableSettings::new().ack_wait(ack_wait))
        .connect(&server.url())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&id))
        .await
        .expect("the call finished")
        .unwrap();
    assert_eq!(outcome, json!("slow"));
    tokio::time::sleep(ack_wait * 2).await;
    assert_eq!(most.load(Ordering::SeqCst), 1, "the call ran twice at once");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the call ran twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_finished_outcome_of_a_durable_call_wins() {
    let server = NatsServer::start();
    let ack_wait = Duration::from_secs(1);
    let (running, most, runs) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    // The first worker blocks past its claim: another takes the call over,
    // finishes first, and its outcome stays.
    let slow = blocking("slow", ack_wait * 5, &running, &most, &runs);
    let a = slow_worker(server.url(), slow, ack_wait);
    let client = Client::connect(&server.url()).await.unwrap();
    let id = client.submit("job", json!({})).await.unwrap();
    eventually("the slow worker to take the call", || {
        runs.load(Ordering::SeqCst) == 1
    })
    .await;
    let quick = blocking("quick", Duration::ZERO, &running, &most, &runs);
    let _b = Worker::builder(quick)
        .durable(DurableSettings::new().ack_wait(ack_wait))
        .connect(&server.url())
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&id))
        .await
        .expect("the call finished")
        .unwrap();
    assert_eq!(outcome, json!("quick"));
    // The slow run ends later; the outcome it would write does not replace the first.
    eventually("the slow run to end", || {
        running.load(Ordering::SeqCst) == 0
    })
    .await;
    tokio::time::sleep(ack_wait * 2).await;
    match client.poll(&id).await.unwrap() {
        toolfunc::ledger::TaskPoll::Done(Ok(value)) => assert_eq!(value, json!("quick")),
        poll => panic!("expected the first outcome, got {poll:?}"),
    }
    drop(a);
}

#[tokio::test]
async fn a_durable_id_the_worker_cannot_use_is_refused_when_submitted() {
    let server = NatsServer::start();
    let registry = Registry::new();
    registry.register(echo()).unwrap();
    let _worker = Worker::builder(registry)
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    let code = |message: &async_nats::Message| {
        message
            .headers
            .as_ref()
            .and_then(|h| h.get("Tf-Error-Code"))
            .map(|v| v.as_str().to_owned())
    };
    for bad in ["two words", "a*b", "ünï", ".dot", "x>"] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Tf-Call-Id", bad);
        let answer = nats
            .request_with_headers("toolfunc.submit.echo", headers, "{}".into())
            .await
            .unwrap();
        assert_eq!(code(&answer).as_deref(), Some("BAD_ID"), "{bad}");
    }
    // A usable id is queued, and a raw submitter can tell it from an unknown one.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Call-Id", "raw-1");
    let answer = nats
        .request_with_headers("toolfunc.submit.echo", headers, r#"{"x":1}"#.into())
        .await
        .unwrap();
    assert_eq!(code(&answer), None);
    let queued: Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(
        (queued["id"].as_str(), queued["status"].as_str()),
        (Some("raw-1"), Some("queued"))
    );
    let unknown = nats
        .request("toolfunc.outcome", r#"{"id":"raw-2"}"#.into())
        .await
        .unwrap();
    assert_eq!(code(&unknown).as_deref(), Some("NOT_FOUND"));
    let mut done = Value::Null;
    for _ in 0..200 {
        let read = nats
            .request("toolfunc.outcome", r#"{"id":"raw-1"}"#.into())
            .await
            .unwrap();
        assert_eq!(code(&read), None);
        done = serde_json::from_slice(&read.payload).unwrap();
        if done["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(done["result"], json!({"x": 1}));
    // Garbage is answered with a clean error, never a crash.
    for garbage in [
        &b"\xff\xfe"[..],
        b"[1]",
        br#"{"id": 5}"#,
        br#"{"id": "a b"}"#,
        b"",
    ] {
        let read = nats
            .request("toolfunc.outcome", garbage.to_vec().into())
            .await
            .unwrap();
        assert_eq!(code(&read).as_deref(), Some("NOT_FOUND"), "{garbage:?}");
    }
    let refused = nats
        .request("toolfunc.submit.echo", "[1]".into())
        .await
        .unwrap();
    assert_eq!(code(&refused).as_deref(), Some("ARGUMENTS"));
    // The same id twice is refused, not run again.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Call-Id", "raw-1");
    let again = nats
        .request_with_headers("toolfunc.submit.echo", headers, "{}".into())
        .await
        .unwrap();
    assert_eq!(code(&again).as_deref(), Some("DUPLICATE"));
}

/// A header the worker would keep for a call's life (`Tf-Call-Id`, `Tf-Caller`,
/// `Tf-Control-Key`) longer than the bound (256 bytes unless set) is refused
/// `INVALID_HEADER` before anything is kept or run: calls, discovery, durable
/// submits and outcome reads alike. A bound set higher takes it.
#[tokio::test]
async fn an_oversized_kept_header_is_refused_before_anything_is_kept() {
    let server = NatsServer::start();
    let registry = Registry::new();
    registry.register(echo()).unwrap();
    let worker = Worker::builder(registry.clone())
        .durable(DurableSettings::new())
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    let huge = "x".repeat(900 * 1024);
    for header in ["Tf-Call-Id", "Tf-Caller", "Tf-Control-Key"] {
        for subject in [
            "toolfunc.call.echo",
            "toolfunc.tools",
            "toolfunc.submit.echo",
            "toolfunc.outcome",
        ] {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(header, huge.as_str());
            let answer = nats
                .request_with_headers(subject, headers, "{}".into())
                .await
                .unwrap();
            let code = answer
                .headers
                .as_ref()
                .and_then(|h| h.get("Tf-Error-Code"))
                .map(|v| v.as_str().to_owned());
            assert_eq!(
                code.as_deref(),
                Some("INVALID_HEADER"),
                "{header} on {subject}"
            );
        }
    }
    // At the bound it is taken.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Caller", "c".repeat(256).as_str());
    let answer = nats
        .request_with_headers("toolfunc.call.echo", headers, r#"{"a":1}"#.into())
        .await
        .unwrap();
    assert!(
        answer
            .headers
            .as_ref()
            .and_then(|h| h.get("Tf-Error-Code"))
            .is_none()
    );
    worker.stop(Duration::from_secs(1)).await;
    // A worker with a larger bound takes a longer label.
    let _wide = Worker::builder(registry)
        .max_header(4096)
        .connect(&server.url())
        .await
        .unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Tf-Caller", "c".repeat(2048).as_str());
    let mut answer = None;
    // Its endpoints come up as it starts.
    for _ in 0..100 {
        match nats
            .request_with_headers("toolfunc.call.echo", headers.clone(), r#"{"a":1}"#.into())
            .await
        {
            Ok(got) => {
                answer = Some(got);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let answer = answer.expect("the wide worker answers");
    assert!(
        answer
            .headers
            .as_ref()
            .and_then(|h| h.get("Tf-Error-Code"))
            .is_none()
    );
}

/// One caller gets at most its share of a worker's slots: past it (2 here) its
/// next call is `BUSY` (429) at once, while another caller's runs. Callers are
/// told apart by `Tf-Caller` without an authenticator.
#[tokio::test]
async fn one_caller_gets_at_most_its_share_of_a_workers_slots() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 5_000)).unwrap();
    registry.register(echo()).unwrap();
    let worker = Worker::builder(registry)
        .max_in_flight_per_caller(2)
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    let as_caller = |caller: &str| {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Tf-Caller", caller);
        headers
    };
    // Two long calls to an inbox nobody reads.
    for _ in 0..2 {
        nats.publish_with_reply_and_headers(
            "toolfunc.call.nap",
            nats.new_inbox(),
            as_caller("greedy"),
            "{}".into(),
        )
        .await
        .unwrap();
    }
    eventually("both calls to run", || worker.in_flight() == 2).await;
    let answer = nats
        .request_with_headers("toolfunc.call.echo", as_caller("greedy"), "{}".into())
        .await
        .unwrap();
    let code = answer.headers.as_ref().and_then(|h| h.get("Tf-Error-Code"));
    assert_eq!(code.map(async_nats::HeaderValue::as_str), Some("BUSY"));
    let answer = nats
        .request_with_headers(
            "toolfunc.call.echo",
            as_caller("other"),
            r#"{"a":1}"#.into(),
        )
        .await
        .unwrap();
    assert!(
        answer
            .headers
            .as_ref()
            .and_then(|h| h.get("Tf-Error-Code"))
            .is_none()
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&answer.payload).unwrap(),
        json!({"a": 1})
    );
}

/// A call that names no deadline (a client other than toolfunc's, no
/// `Tf-Timeout`) gets the worker's: it is cancelled and answered `TIMEOUT`, and
/// its slot is free again.
#[tokio::test]
async fn a_call_naming_no_deadline_gets_the_workers() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 30_000)).unwrap();
    let worker = Worker::builder(registry)
        .default_deadline(Duration::from_millis(300))
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    let started = std::time::Instant::now();
    let answer = nats
        .request("toolfunc.call.nap", "{}".into())
        .await
        .unwrap();
    let code = answer.headers.as_ref().and_then(|h| h.get("Tf-Error-Code"));
    assert_eq!(code.map(async_nats::HeaderValue::as_str), Some("TIMEOUT"));
    assert!(started.elapsed() < Duration::from_secs(10));
    eventually("the slot to be free", || worker.in_flight() == 0).await;
}

/// A caller that asked for no heartbeats is noticed when it goes all the same: the
/// worker asks a subject beside its reply subject whether anyone listens (a
/// multiplexing client hears and drops it), and cancels the call when no one does.
#[tokio::test]
async fn a_caller_without_heartbeats_that_has_gone_is_noticed() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 30_000)).unwrap();
    let worker = Worker::builder(registry)
        .probe_every(Some(Duration::from_millis(200)))
        .connect(&server.url())
        .await
        .unwrap();
    let caller = raw(&server).await;
    // A client that multiplexes its requests over one wildcard subscription.
    let mut inbox = caller.subscribe("_INBOX.probed.*").await.unwrap();
    caller
        .publish_with_reply("toolfunc.call.nap", "_INBOX.probed.call1", "{}".into())
        .await
        .unwrap();
    caller.flush().await.unwrap();
    eventually("the call to run", || worker.in_flight() == 1).await;
    // While it listens, the call runs on (the probes reach it and are dropped).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        worker.in_flight(),
        1,
        "a caller that listens was taken for gone"
    );
    let probe = tokio::time::timeout(Duration::from_secs(2), inbox.next())
        .await
        .expect("a probe")
        .expect("a message");
    assert_eq!(probe.subject.as_str(), "_INBOX.probed.tf-probe");
    // Gone: the call is cancelled.
    drop(inbox);
    drop(caller);
    eventually("the call of a gone caller to end", || {
        worker.in_flight() == 0
    })
    .await;
}

/// One owner's durable calls take at most its share of a worker's durable slots
/// (1 of 2 here): another owner's call, submitted after three long ones, runs
/// while the first of them still does, not after.
#[tokio::test]
async fn one_owners_durable_calls_leave_room_for_others() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 4_000)).unwrap();
    registry.register(echo()).unwrap();
    let _worker = Worker::builder(registry)
        .durable(DurableSettings::new().per_worker(2).per_owner(1))
        .connect(&server.url())
        .await
        .unwrap();
    let nats = raw(&server).await;
    let as_caller = |caller: &str| {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Tf-Caller", caller);
        headers
    };
    let submit = |tool: &'static str, caller: &'static str| {
        let nats = nats.clone();
        let headers = as_caller(caller);
        async move {
            let answer = nats
                .request_with_headers(format!("toolfunc.submit.{tool}"), headers, "{}".into())
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&answer.payload).unwrap()["id"]
                .as_str()
                .expect("an id")
                .to_owned()
        }
    };
    for _ in 0..3 {
        submit("nap", "greedy").await;
    }
    eventually("a long call to start", || !ids.lock().unwrap().is_empty()).await;
    let polite = submit("echo", "polite").await;
    let done = loop {
        let body = json!({"id": polite}).to_string();
        let answer = nats
            .request_with_headers("toolfunc.outcome", as_caller("polite"), body.into())
            .await
            .unwrap();
        let record: Value = serde_json::from_slice(&answer.payload).unwrap();
        if record["status"] == "completed" {
            break record;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["result"], json!({}));
    assert_eq!(
        ids.lock().unwrap().len(),
        1,
        "the other owner waited for the long calls"
    );
}

/// A durable call runs at most the maximum run time: past it its outcome is
/// `TIMEOUT`.
#[tokio::test]
async fn a_durable_call_runs_at_most_its_maximum_time() {
    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 30_000)).unwrap();
    let _worker = Worker::builder(registry)
        .durable(DurableSettings::new().max_run_time(Duration::from_millis(300)))
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let id = client.submit("nap", json!({})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&id))
        .await
        .expect("an outcome");
    assert_eq!(outcome.unwrap_err().code(), "TIMEOUT");
}

/// A durable call's owner cancels it: a running one is cancelled where it runs,
/// a queued one ends `CANCELLED` without running; another owner cannot (its
/// cancel is `NOT_FOUND`, as an unknown id is).
#[tokio::test]
async fn an_owner_cancels_its_durable_call_and_no_one_else_can() {
    use toolfunc::Identity;
    use toolfunc::auth::ApiKeys;

    let server = NatsServer::start();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry.register(nap(&ids, 30_000)).unwrap();
    let _worker = Worker::builder(registry)
        .authenticate(
            ApiKeys::new()
                .key("ann-key", Identity::new("ann"))
                .key("bob-key", Identity::new("bob")),
        )
        .durable(DurableSettings::new().per_worker(1))
        .connect(&server.url())
        .await
        .unwrap();
    let client = |token: &str| {
        let url = server.url();
        let token = token.to_owned();
        async move { Client::builder().token(token).connect(&url).await.unwrap() }
    };
    let (ann, bob) = (client("ann-key").await, client("bob-key").await);
    let running = ann.submit("nap", json!({})).await.unwrap();
    eventually("the first call to run", || ids.lock().unwrap().len() == 1).await;
    let queued = ann.submit("nap", json!({})).await.unwrap();
    // Not Bob's to cancel.
    assert_eq!(bob.cancel(&running).await.unwrap_err().code(), "NOT_FOUND");
    // Ann cancels the queued one first, then the running one.
    assert_eq!(ann.cancel(&queued).await.unwrap()["status"], "cancelling");
    assert_eq!(ann.cancel(&running).await.unwrap()["status"], "cancelling");
    // The running call's tool saw its cancellation token (and answers so).
    let outcome = tokio::time::timeout(Duration::from_secs(20), ann.wait(&running))
        .await
        .expect("an outcome in time");
    assert_eq!(outcome.unwrap(), json!("cancelled"));
    let outcome = tokio::time::timeout(Duration::from_secs(20), ann.wait(&queued))
        .await
        .expect("an outcome in time");
    assert_eq!(outcome.unwrap_err().code(), "CANCELLED");
    assert_eq!(ids.lock().unwrap().len(), 1, "the queued call never ran");
    // An ended call is answered as it stands.
    assert_eq!(ann.cancel(&queued).await.unwrap()["status"], "failed");
}

/// With a key the fleet shares, an outcome read answers only what a worker
/// sealed: a completed record forged into the bucket (its result, its owner) is
/// `NOT_FOUND`, never a call's outcome; a real outcome reads as before.
#[tokio::test]
async fn with_a_fleet_key_a_forged_outcome_is_never_read() {
    let server = NatsServer::start();
    let registry = Registry::new();
    registry.register(echo()).unwrap();
    let _worker = Worker::builder(registry)
        .durable(DurableSettings::new().seal_key("a fleet secret of at least 32 bytes!!"))
        .connect(&server.url())
        .await
        .unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let id = client.submit("echo", json!({"paid": 10})).await.unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.wait(&id))
        .await
        .expect("an outcome")
        .unwrap();
    assert_eq!(outcome, json!({"paid": 10}));
    // Rewritten in the bucket: a bigger result, sealed with a made-up seal.
    let js = async_nats::jetstream::new(raw(&server).await);
    let bucket = js.get_key_value("toolfunc_results").await.unwrap();
    let entry = bucket.get(&id).await.unwrap().expect("the record");
    let mut record: Value = serde_json::from_slice(&entry).unwrap();
    record["result"] = json!({"paid": 1000});
    bucket.put(&id, record.to_string().into()).await.unwrap();
    assert_eq!(client.poll(&id).await.unwrap_err().code(), "NOT_FOUND");
    // And a record no worker ever wrote.
    let forged = json!({"id": "forged-1", "tool": "echo", "status": "completed", "result": 1});
    bucket
        .put("forged-1", forged.to_string().into())
        .await
        .unwrap();
    assert_eq!(
        client.poll("forged-1").await.unwrap_err().code(),
        "NOT_FOUND"
    );
}
