//! Concurrency limits: at most `n` calls of a tool at once, shared by every runner and
//! registry that reaches it; waiting calls can time out or be cancelled without
//! losing or adding a slot; `run_sync` at the limit is `BUSY`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::time::{sleep, timeout};
use toolfunc::{CallOptions, Registry, ToolError, ToolFunc, ToolRef, tool};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// How long a call waiting for a slot is given before it times out.
const SHORT: Duration = Duration::from_millis(50);

/// Counts the calls of a tool: running now, the most at once, started, finished.
#[derive(Clone, Default)]
struct Gauge {
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Gauge {
    fn enter(&self) -> InFlight {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }

    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }

    /// Waits until `n` calls have started.
    async fn started_reaches(&self, n: usize) {
        timeout(LIMIT, async {
            while self.started() < n {
                sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("the calls start");
    }
}

/// One call in flight; leaving counts it out.
struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
        self.0.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// An async tool limited to `limit` calls; each call takes one permit of `gate`
/// (calls block until the test hands permits out).
fn gated(name: &str, limit: usize, gauge: &Gauge, gate: &Arc<Semaphore>) -> ToolFunc {
    let (gauge, gate) = (gauge.clone(), Arc::clone(gate));
    ToolFunc::builder(name)
        .concurrency(limit)
        .handler(move |_ctx, _args| {
            let (gauge, gate) = (gauge.clone(), Arc::clone(&gate));
            async move {
                let _in = gauge.enter();
                gate.acquire().await.expect("the gate stays open").forget();
                Ok(json!("done"))
            }
        })
        .build()
        .expect("the tool builds")
}

/// Settles a call future, bounded.
async fn bounded<T, F: Future<Output = T>>(future: F) -> T {
    timeout(LIMIT, future).await.expect("finishes in time")
}

/// A call that waits for a slot is given `SHORT` and must run out of time.
async fn times_out_waiting(runner: &toolfunc::Runner, name: &str) {
    let err = bounded(runner.run(name, Value::Null)).await.unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err:?}");
}

fn short() -> CallOptions {
    CallOptions::new().timeout(SHORT)
}

// ---------------------------------------------------------------------------------
// The limit.

#[tokio::test]
async fn at_most_the_limit_run_at_once_and_all_finish() {
    let registry = Registry::new();
    let gauge = Gauge::default();
    let tracked = gauge.clone();
    let tool = ToolFunc::builder("pair")
        .concurrency(2)
        .handler(move |_ctx, _args| {
            let gauge = tracked.clone();
            async move {
                let _in = gauge.enter();
                sleep(Duration::from_millis(10)).await;
                Ok(json!("ok"))
            }
        })
        .build()
        .unwrap();
    assert_eq!(tool.concurrency(), Some(2));
    registry.register(tool).unwrap();

    let calls = (0..6).map(|_| registry.run("pair", Value::Null));
    let results = bounded(futures::future::join_all(calls)).await;
    assert!(
        results.iter().all(|r| r.as_ref().is_ok_and(|v| v == "ok")),
        "{results:?}"
    );
    assert_eq!(gauge.max(), 2, "two at once, never more");
    assert_eq!(gauge.finished(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_holds_across_threads() {
    let registry = Registry::new();
    let (gauge, gate) = (Gauge::default(), Arc::new(Semaphore::new(0)));
    registry.register(gated("pair", 2, &gauge, &gate)).unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| registry.spawn("pair", Value::Null))
        .collect();
    gauge.started_reaches(2).await;
    sleep(SHORT).await;
    assert_eq!(gauge.started(), 2, "the others wait for a slot");
    gate.add_permits(6);
    for handle in handles {
        assert_eq!(bounded(handle).await.unwrap(), "done");
    }
    assert_eq!(gauge.max(), 2);
    assert_eq!(gauge.finished(), 6);
}

#[test]
fn a_limit_of_zero_is_a_definition_error() {
    let err = ToolFunc::builder("never")
        .concurrency(0)
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Definition { name, .. } if name == "never"),
        "{err:?}"
    );
    assert_eq!(err.code(), "DEFINITION");
    // Without a limit, none is reported.
    let free = ToolFunc::builder("free")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap();
    assert_eq!(free.concurrency(), None);
}

// ---------------------------------------------------------------------------------
// Waiting for a slot.

#[tokio::test]
async fn waiting_calls_can_time_out_or_be_cancelled_without_touching_the_slots() {
    let registry = Registry::new();
    let (gauge, gate) = (Gauge::default(), Arc::new(Semaphore::new(0)));
    registry
        .register(gated("single", 1, &gauge, &gate))
        .unwrap();
    let holder = registry.spawn("single", Value::Null);
    gauge.started_reaches(1).await;

    // A timeout while waiting.
    times_out_waiting(&registry.with(short()), "single").await;
    // An abort while waiting.
    let waiting = registry.spawn("single", Value::Null);
    sleep(Duration::from_millis(10)).await;
    waiting.abort("no longer needed");
    let err = bounded(waiting).await.unwrap_err();
    assert_eq!(err.code(), "CANCELLED", "{err:?}");
    // A caller that gives up (drops the call's future) while waiting.
    assert!(
        timeout(SHORT, registry.run("single", Value::Null))
            .await
            .is_err()
    );
    assert_eq!(gauge.started(), 1, "none of the waiting calls ran");

    gate.add_permits(1);
    assert_eq!(bounded(holder).await.unwrap(), "done");

    // Still exactly one slot: one call holds it, the next waits and times out ...
    let holder = registry.spawn("single", Value::Null);
    gauge.started_reaches(2).await;
    times_out_waiting(&registry.with(short()), "single").await;
    gate.add_permits(1);
    assert_eq!(bounded(holder).await.unwrap(), "done");
    // ... and it is free again once released.
    gate.add_permits(1);
    assert_eq!(
        bounded(registry.run("single", Value::Null)).await.unwrap(),
        "done"
    );
    assert_eq!((gauge.started(), gauge.max()), (3, 1));
}

#[tokio::test]
async fn the_limit_is_shared_by_runners_children_and_registries() {
    let parent = Registry::new();
    let (gauge, gate) = (Gauge::default(), Arc::new(Semaphore::new(0)));
    let tool: ToolRef = Arc::new(gated("shared", 1, &gauge, &gate)).into();
    parent.register(tool.clone()).unwrap();
    let child = parent.isolate();
    let elsewhere = Registry::new();
    elsewhere.register(tool).unwrap();

    let holder = parent.spawn("shared", Value::Null);
    gauge.started_reaches(1).await;
    times_out_waiting(&parent.with(short()), "shared").await;
    times_out_waiting(
        &parent
            .with(CallOptions::new().caller("other"))
            .with(short()),
        "shared",
    )
    .await;
    times_out_waiting(&child.with(short()), "shared").await;
    times_out_waiting(&elsewhere.with(short()), "shared").await;
    assert_eq!(gauge.started(), 1);

    gate.add_permits(4);
    assert_eq!(bounded(holder).await.unwrap(), "done");
    for registry in [&parent, &child, &elsewhere] {
        assert_eq!(
            bounded(registry.run("shared", Value::Null)).await.unwrap(),
            "done"
        );
    }
    assert_eq!(gauge.max(), 1);
}

#[tokio::test]
async fn a_stream_holds_its_slot_until_it_is_dropped() {
    let registry = Registry::new();
    let tool = ToolFunc::builder("ticks")
        .concurrency(1)
        .stream_handler(|_ctx, _args| async {
            Ok(futures::stream::iter([1, 2, 3]).map(|n| Ok::<_, ToolError>(json!(n))))
        })
        .build()
        .unwrap();
    registry.register(tool).unwrap();
    let mut open = registry.run_stream("ticks", Value::Null);
    assert_eq!(bounded(open.next()).await.unwrap().unwrap(), json!(1));
    times_out_waiting(&registry.with(short()), "ticks").await;
    drop(open);
    assert_eq!(
        bounded(registry.run("ticks", Value::Null)).await.unwrap(),
        json!([1, 2, 3])
    );
}

// ---------------------------------------------------------------------------------
// Sync tools.

/// A sync tool limited to one call that blocks until `release` is set.
fn blocking(name: &str, gauge: &Gauge, release: &Arc<AtomicBool>) -> ToolFunc {
    let (gauge, release) = (gauge.clone(), Arc::clone(release));
    ToolFunc::builder(name)
        .concurrency(1)
        .handler_sync(move |_ctx, _args| {
            let _in = gauge.enter();
            let until = std::time::Instant::now() + LIMIT;
            while !release.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(json!("released"))
        })
        .build()
        .expect("the tool builds")
}

fn wait_until_started(gauge: &Gauge, n: usize) {
    let until = std::time::Instant::now() + LIMIT;
    while gauge.started() < n {
        assert!(std::time::Instant::now() < until, "the call never started");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn run_sync_at_the_limit_is_busy() {
    let registry = Registry::new();
    let (gauge, release) = (Gauge::default(), Arc::new(AtomicBool::new(false)));
    registry
        .register(blocking("sync_one", &gauge, &release))
        .unwrap();
    let holder = {
        let registry = registry.clone();
        std::thread::spawn(move || registry.run_sync("sync_one", Value::Null))
    };
    wait_until_started(&gauge, 1);

    let err = registry.run_sync("sync_one", Value::Null).unwrap_err();
    assert!(
        matches!(&err, ToolError::Busy { name } if name == "sync_one"),
        "{err:?}"
    );
    assert_eq!((err.code(), err.status()), ("BUSY", 429));
    let err = registry
        .run_sync("sync_one", Vec::<Value>::new())
        .unwrap_err();
    assert_eq!(err.code(), "BUSY");
    assert_eq!(gauge.started(), 1, "a busy call does not run");

    release.store(true, Ordering::SeqCst);
    assert_eq!(holder.join().unwrap().unwrap(), "released");
    assert_eq!(
        registry.run_sync("sync_one", Value::Null).unwrap(),
        "released"
    );
}

#[tokio::test]
async fn run_of_a_limited_sync_tool_waits_for_a_slot_and_runs() {
    let registry = Registry::new();
    let (gauge, release) = (Gauge::default(), Arc::new(AtomicBool::new(true)));
    registry
        .register(blocking("sync_async", &gauge, &release))
        .unwrap();
    // No contention at all: the call runs.
    assert_eq!(
        bounded(registry.run("sync_async", Value::Null))
            .await
            .unwrap(),
        "released"
    );
    assert_eq!(
        bounded(registry.spawn("sync_async", Value::Null))
            .await
            .unwrap(),
        "released"
    );
    assert_eq!(gauge.finished(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_of_a_limited_sync_tool_waits_while_run_sync_holds_the_slot() {
    let registry = Registry::new();
    let (gauge, release) = (Gauge::default(), Arc::new(AtomicBool::new(false)));
    registry
        .register(blocking("sync_wait", &gauge, &release))
        .unwrap();
    let holder = {
        let registry = registry.clone();
        std::thread::spawn(move || registry.run_sync("sync_wait", Value::Null))
    };
    let started = gauge.clone();
    tokio::task::spawn_blocking(move || wait_until_started(&started, 1))
        .await
        .unwrap();
    // `run` waits for the slot rather than failing with BUSY.
    times_out_waiting(&registry.with(short()), "sync_wait").await;
    release.store(true, Ordering::SeqCst);
    assert_eq!(
        bounded(registry.run("sync_wait", Value::Null))
            .await
            .unwrap(),
        "released"
    );
    assert_eq!(holder.join().unwrap().unwrap(), "released");
}

// ---------------------------------------------------------------------------------
// `#[tool(concurrency = n)]`.

static MACRO_NOW: AtomicUsize = AtomicUsize::new(0);
static MACRO_MAX: AtomicUsize = AtomicUsize::new(0);

/// One at a time, asynchronously.
#[tool(concurrency = 1)]
async fn conc_one_at_a_time() -> u64 {
    let now = MACRO_NOW.fetch_add(1, Ordering::SeqCst) + 1;
    MACRO_MAX.fetch_max(now, Ordering::SeqCst);
    sleep(Duration::from_millis(5)).await;
    MACRO_NOW.fetch_sub(1, Ordering::SeqCst);
    1
}

/// One at a time, synchronously.
#[tool(concurrency = 1)]
fn conc_sync_one() -> u64 {
    1
}

#[tokio::test]
async fn the_tool_attribute_sets_the_limit() {
    let registry = Registry::global();
    assert_eq!(
        registry.get("conc_one_at_a_time").unwrap().concurrency(),
        Some(1)
    );
    assert_eq!(
        registry.get("conc_sync_one").unwrap().concurrency(),
        Some(1)
    );
    let calls = (0..4).map(|_| registry.run("conc_one_at_a_time", Value::Null));
    let results = bounded(futures::future::join_all(calls)).await;
    assert!(
        results.iter().all(|r| r.as_ref().is_ok_and(|v| v == 1)),
        "{results:?}"
    );
    assert_eq!(MACRO_MAX.load(Ordering::SeqCst), 1);
    assert_eq!(registry.run_sync("conc_sync_one", Value::Null).unwrap(), 1);
    assert_eq!(conc_sync_one(), 1);
}

#[tokio::test]
async fn the_tool_attribute_limit_on_a_sync_function_runs_with_run() {
    let out = bounded(Registry::global().run("conc_sync_one", Value::Null)).await;
    assert_eq!(out.unwrap(), 1);
}
