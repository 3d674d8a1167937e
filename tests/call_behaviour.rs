//! How a call behaves at the edges of its life: overrides that fail their setup,
//! calls that arrive during a slow setup, spawned calls aborted before they start,
//! sync tools through the async entry point (cleanups, deadlines), and service
//! method timeouts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use toolfunc::{RegisterOptions, Registry, ToolError, ToolFunc};

fn answering(name: &str, answer: &'static str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(move |_ctx, _args| Ok(json!(answer)))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_override_never_leaves_a_gap() {
    let registry = Registry::new();
    registry.register(answering("svc", "old")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let gaps = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let caller = {
        let (registry, stop, gaps, calls) =
            (registry.clone(), stop.clone(), gaps.clone(), calls.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                calls.fetch_add(1, Ordering::SeqCst);
                match registry.run_sync("svc", json!({})) {
                    Ok(v) if v == "old" => {}
                    other => {
                        gaps.fetch_add(1, Ordering::SeqCst);
                        eprintln!("{other:?}");
                    }
                }
            }
        })
    };
    for _ in 0..50 {
        let failing = ToolFunc::builder("svc")
            .setup(|| {
                std::thread::sleep(Duration::from_millis(2));
                Err(ToolError::failed("no database"))
            })
            .handler_sync(|_ctx, _args| Ok(json!("new")))
            .build()
            .unwrap();
        let refused = registry.register_with(failing, RegisterOptions::new().allow_override(true));
        assert!(refused.is_err());
    }
    stop.store(true, Ordering::SeqCst);
    caller.join().unwrap();
    assert!(calls.load(Ordering::SeqCst) > 0);
    assert_eq!(
        gaps.load(Ordering::SeqCst),
        0,
        "calls saw no tool or another one"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_enters_before_a_sync_setup_finished() {
    let registry = Registry::new();
    let set_up = Arc::new(AtomicBool::new(false));
    let early = Arc::new(AtomicUsize::new(0));
    let tool = {
        let (done, seen) = (set_up.clone(), set_up.clone());
        let early = early.clone();
        ToolFunc::builder("slow")
            .setup(move || {
                std::thread::sleep(Duration::from_millis(200));
                done.store(true, Ordering::SeqCst);
                Ok(())
            })
            .handler_sync(move |_ctx, _args| {
                if !seen.load(Ordering::SeqCst) {
                    early.fetch_add(1, Ordering::SeqCst);
                }
                Ok(Value::Null)
            })
            .build()
            .unwrap()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let caller = {
        let (registry, stop) = (registry.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let _ = registry.run_sync("slow", json!({}));
            }
        })
    };
    registry.register(tool).unwrap();
    registry.run("slow", json!({})).await.unwrap();
    stop.store(true, Ordering::SeqCst);
    caller.join().unwrap();
    assert_eq!(
        early.load(Ordering::SeqCst),
        0,
        "a call ran before its setup finished"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_aborted_before_it_started_never_runs() {
    let registry = Registry::new();
    let entered = Arc::new(AtomicUsize::new(0));
    let count = entered.clone();
    registry
        .register(
            ToolFunc::builder("work")
                .handler(move |_ctx, _args| {
                    count.fetch_add(1, Ordering::SeqCst);
                    async { Ok(json!("done")) }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let handle = registry.spawn("work", json!({}));
    handle.abort("changed my mind");
    let err = handle.await.unwrap_err();
    assert_eq!(err.code(), "CANCELLED");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        entered.load(Ordering::SeqCst),
        0,
        "the handler ran after the abort"
    );
}

#[tokio::test]
async fn a_sync_tool_through_run_waits_for_its_async_cleanups() {
    let registry = Registry::new();
    let cleaned = Arc::new(AtomicBool::new(false));
    let flag = cleaned.clone();
    registry
        .register(
            ToolFunc::builder("tidy")
                .handler_sync(move |ctx, _args| {
                    let flag = flag.clone();
                    ctx.on_cleanup_async(async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        flag.store(true, Ordering::SeqCst);
                        Ok(())
                    });
                    Ok(json!("ok"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(registry.run("tidy", json!({})).await.unwrap(), "ok");
    assert!(
        cleaned.load(Ordering::SeqCst),
        "run resolved before the async cleanup"
    );
}

#[tokio::test]
async fn a_sync_body_failure_and_cleanup_failure_are_one_aggregate() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("both")
                .handler_sync(|ctx, _args| {
                    ctx.on_cleanup_async(async { Err(ToolError::failed("cleanup broke")) });
                    Err(ToolError::failed("body broke"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let err = registry.run("both", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "AGGREGATE", "{err}");
}

#[tokio::test]
async fn a_sync_tool_past_its_deadline_is_a_timeout() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("late")
                .timeout(Duration::from_millis(20))
                .handler_sync(|_ctx, _args| {
                    std::thread::sleep(Duration::from_millis(80));
                    Ok(json!("late value"))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let err = registry.run("late", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    let err = registry.run_sync("late", json!({})).unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
}

#[tokio::test]
async fn stream_items_still_arrive_through_run_stream() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("count")
                .stream_handler(|_ctx, _args| async {
                    Ok(futures::stream::iter([Ok(json!(1)), Ok(json!(2))]))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let items: Vec<_> = registry.run_stream("count", json!({})).collect().await;
    assert_eq!(items.len(), 2);
}

/// A service whose methods have timeouts of their own.
struct Slow {
    token_fired: Arc<AtomicBool>,
}

#[toolfunc::tool_service(name = "slow_service")]
impl Slow {
    /// Waits for its token to fire, and says so.
    #[tool(timeout = "50ms")]
    async fn wait(&self, ctx: &toolfunc::Ctx) -> Result<(), ToolError> {
        let token = ctx.cancellation_token();
        let fired = Arc::clone(&self.token_fired);
        tokio::spawn(async move {
            token.cancelled().await;
            fired.store(true, Ordering::SeqCst);
        });
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    }

    /// Ticks forever.
    #[tool(timeout = "50ms")]
    fn ticks(self: Arc<Self>) -> impl futures::Stream<Item = u64> + Send {
        futures::stream::unfold(0u64, |n| async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Some((n, n + 1))
        })
    }

    /// Blocks its thread past its timeout.
    #[tool(timeout = "20ms")]
    fn block(&self) -> String {
        std::thread::sleep(Duration::from_millis(60));
        "late".to_owned()
    }
}

#[tokio::test]
async fn a_method_timeout_fires_the_token_and_bounds_streams() {
    let fired = Arc::new(AtomicBool::new(false));
    let registry = Registry::new();
    registry
        .register_service(Slow {
            token_fired: Arc::clone(&fired),
        })
        .unwrap();
    let err = registry
        .run("slow_service", json!({"act": "$wait"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err}");
    assert!(err.to_string().contains("50"), "{err}");
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        fired.load(Ordering::SeqCst),
        "the call's token did not fire"
    );
    // A streaming method: the stream ends with `TIMEOUT`.
    let items: Vec<_> = tokio::time::timeout(
        Duration::from_secs(5),
        registry
            .run_stream("slow_service", json!({"act": "$ticks"}))
            .collect::<Vec<_>>(),
    )
    .await
    .expect("the method's timeout ends the stream");
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.code(), "TIMEOUT");
    // A sync method past its timeout.
    let err = registry
        .run_sync("slow_service", json!({"act": "$block"}))
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
}

#[tokio::test]
async fn a_fresh_nested_call_inherits_nothing() {
    use toolfunc::{CallOptions, CancellationToken};
    struct Tag(&'static str);
    let registry = Registry::new();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    registry
        .register(
            ToolFunc::builder("inner")
                .handler(move |ctx, _args| {
                    let record = Arc::clone(&record);
                    async move {
                        let tag = ctx.get::<Tag>().map(|t| t.0);
                        record
                            .lock()
                            .unwrap()
                            .push((tag, ctx.caller().map(str::to_owned)));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok(json!(ctx.is_cancelled()))
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("outer")
                .handler(|ctx, _args| async move {
                    let fresh = ctx.fresh(CallOptions::new());
                    let handle = fresh.spawn("inner", json!({}));
                    let inherited = ctx.run("inner", json!({})).await;
                    Ok(json!({"fresh": handle.await?, "inherited": inherited.is_ok()}))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let stop = CancellationToken::new();
    let runner = registry.with(
        CallOptions::new()
            .insert(Tag("outer"))
            .caller("ann")
            .cancel_on(stop.clone()),
    );
    let out = runner.run("outer", json!({})).await.unwrap();
    assert_eq!(out, json!({"fresh": false, "inherited": true}));
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&(None, None)), "{seen:?}");
    assert!(
        seen.contains(&(Some("outer"), Some("ann".to_owned()))),
        "{seen:?}"
    );
}
