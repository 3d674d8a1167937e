//! `#[tool(local)]` and `ToolBuilder::local_handler`: async tools whose futures are
//! not `Send` (an `Rc` or a `RefCell` held across an `.await`) run on the local
//! executor, while callers on any thread run them by name with deadlines,
//! cancellation and cleanups as for any tool.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::{CallOptions, CancellationToken, Ctx, Registry, ToolFunc, tool};

/// Counts the words of `text`, holding an `Rc<RefCell<..>>` across an await.
#[tool(local)]
async fn count_words(text: String) -> usize {
    let words = Rc::new(RefCell::new(Vec::new()));
    for word in text.split_whitespace() {
        words.borrow_mut().push(word.to_owned());
        tokio::task::yield_now().await;
    }
    words.borrow().len()
}

/// Dropped on the local thread when a call it belongs to is given up.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

static SLEPT_DROPPED: AtomicBool = AtomicBool::new(false);
static CLEANUPS: AtomicUsize = AtomicUsize::new(0);

/// Sleeps far past its own timeout, holding an `Rc`.
#[tool(local, timeout = "50ms")]
async fn local_nap(ctx: &Ctx) -> String {
    ctx.on_cleanup(|| {
        CLEANUPS.fetch_add(1, Ordering::SeqCst);
    });
    let flag = Arc::new(AtomicBool::new(false));
    let guard = Rc::new(Dropped(Arc::clone(&flag)));
    tokio::time::sleep(Duration::from_secs(30)).await;
    drop(guard);
    SLEPT_DROPPED.store(flag.load(Ordering::SeqCst), Ordering::SeqCst);
    "woke".to_owned()
}

/// A local tool that panics after an await.
fn boom_tool() -> ToolFunc {
    ToolFunc::builder("local_boom")
        .local_handler(|_, _: Value| async {
            let cell = Rc::new(0);
            tokio::task::yield_now().await;
            assert_eq!(*cell, 1, "local boom");
            Ok(json!(null))
        })
        .build()
        .unwrap()
}

/// A local tool that sleeps for long, holding an `Rc` that sets `dropped` when the
/// call's future is dropped.
fn waiting_tool(dropped: &Arc<AtomicBool>) -> ToolFunc {
    let seen = Arc::clone(dropped);
    ToolFunc::builder("local_wait")
        .local_handler(move |_, _: Value| {
            let guard = Rc::new(Dropped(Arc::clone(&seen)));
            async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(guard);
                Ok(json!("late"))
            }
        })
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_tool_runs_by_name_from_any_thread() {
    let registry = Registry::global();
    assert_eq!(
        registry
            .run("count_words", json!({"text": "one two three"}))
            .await
            .unwrap(),
        json!(3)
    );
    // From another OS thread with a runtime of its own, and spawned.
    let other = std::thread::spawn(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(Registry::global().run("count_words", json!({"text": "a b"})))
    });
    assert_eq!(other.join().unwrap().unwrap(), json!(2));
    let handle = registry.spawn("count_words", json!({"text": "x"}));
    assert_eq!(handle.await.unwrap(), json!(1));
    // Bad arguments are the usual error.
    let err = registry
        .run("count_words", json!({"text": 5}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    // The definition is an ordinary tool's.
    let def = registry.get("count_words").unwrap().definition().clone();
    assert_eq!(def.params["required"], json!(["text"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_tool_times_out_and_is_dropped_on_its_thread() {
    let err = Registry::global()
        .run("local_nap", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    // The local future was dropped (its guard never reached the line after the sleep),
    // and the call's cleanup ran.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!SLEPT_DROPPED.load(Ordering::SeqCst));
    assert_eq!(CLEANUPS.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_local_tool_is_cancelled_like_any_other() {
    let dropped = Arc::new(AtomicBool::new(false));
    let registry = Registry::new();
    registry.register(waiting_tool(&dropped)).unwrap();
    let token = CancellationToken::new();
    let call = registry
        .with(CallOptions::new().cancel_on(token.clone()))
        .spawn("local_wait", json!({}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    let err = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("cancel ends the call")
        .unwrap_err();
    assert_eq!(err.code(), "CANCELLED");
    // The local future is dropped on the local thread soon after.
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the local future was not dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_local_tool_is_panicked() {
    let registry = Registry::new();
    registry.register(boom_tool()).unwrap();
    let err = registry.run("local_boom", json!({})).await.unwrap_err();
    assert_eq!(err.code(), "PANICKED");
    // The executor survives it.
    assert_eq!(
        Registry::global()
            .run("count_words", json!({"text": "still here"}))
            .await
            .unwrap(),
        json!(2)
    );
}

/// Names the thread a call ran on.
fn thread_tool(name: &'static str, nested: Option<&'static str>) -> ToolFunc {
    ToolFunc::builder(name)
        .local_handler(move |ctx: Ctx, _: Value| async move {
            let here = Rc::new(format!("{:?}", std::thread::current().id()));
            tokio::task::yield_now().await;
            let inner = match nested {
                Some(inner) => ctx.run(inner, json!({})).await?,
                None => Value::Null,
            };
            Ok(json!({"thread": *here, "inner": inner}))
        })
        .build()
        .unwrap()
}

fn thread_registry() -> Registry {
    let registry = Registry::new();
    registry.register(thread_tool("where_inner", None)).unwrap();
    registry
        .register(thread_tool("where_outer", Some("where_inner")))
        .unwrap();
    registry
}

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn run_local_runs_local_tools_on_the_callers_thread_nested_calls_too() {
    let registry = thread_registry();
    let me = format!("{:?}", std::thread::current().id());
    let runtime = current_thread_runtime();
    let out = runtime
        .block_on(registry.run_local("where_outer", json!({})))
        .unwrap();
    assert_eq!(out["thread"], json!(me));
    assert_eq!(out["inner"]["thread"], json!(me));
    // `run` sends the same calls to the local executor's thread instead.
    let out = runtime
        .block_on(registry.run("where_outer", json!({})))
        .unwrap();
    assert_ne!(out["thread"], json!(me));
    assert_eq!(out["inner"]["thread"], out["thread"]);
}

#[test]
fn run_local_keeps_options_timeouts_errors_and_cleanups() {
    let runtime = current_thread_runtime();
    let registry = Registry::global();
    // Options reach the call (a runner's run_local).
    let runner = registry.with(CallOptions::new().caller("ann"));
    assert_eq!(
        runtime
            .block_on(runner.run_local("count_words", json!({"text": "a b c"})))
            .unwrap(),
        json!(3)
    );
    // Bad arguments, unknown tools and non-local tools are as under `run`.
    let err = runtime
        .block_on(registry.run_local("count_words", json!({"text": 5})))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    let err = runtime
        .block_on(registry.run_local("no_such_tool", json!({})))
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    let plain = Registry::new();
    plain
        .register(
            ToolFunc::builder("double")
                .handler_sync(|_, args: Value| Ok(json!(args["n"].as_i64().unwrap_or(0) * 2)))
                .build()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        runtime
            .block_on(plain.run_local("double", json!({"n": 4})))
            .unwrap(),
        json!(8)
    );
    // A local tool's own timeout strikes in place too; its future is dropped here
    // and the call's cleanup runs.
    let cleanups = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&cleanups);
    plain
        .register(
            ToolFunc::builder("local_slow")
                .timeout(Duration::from_millis(50))
                .local_handler(move |ctx: Ctx, _: Value| {
                    let counted = Arc::clone(&counted);
                    async move {
                        ctx.on_cleanup(move || {
                            counted.fetch_add(1, Ordering::SeqCst);
                        });
                        let held = Rc::new(());
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(held);
                        Ok(json!("late"))
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let err = runtime
        .block_on(plain.run_local("local_slow", json!({})))
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    assert_eq!(cleanups.load(Ordering::SeqCst), 1);
}

#[test]
fn run_local_panics_and_drops_are_the_callers() {
    let registry = Registry::new();
    registry.register(boom_tool()).unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    registry.register(waiting_tool(&dropped)).unwrap();
    let runtime = current_thread_runtime();
    let err = runtime
        .block_on(registry.run_local("local_boom", json!({})))
        .unwrap_err();
    assert_eq!(err.code(), "PANICKED");
    // A caller that gives up drops the local future at once, on its own thread.
    let gave_up = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_millis(50),
            registry.run_local("local_wait", json!({})),
        )
        .await
    });
    assert!(gave_up.is_err());
    assert!(dropped.load(Ordering::SeqCst), "the local future lives on");
}
