//! Lifecycle hooks: `setup` when a tool is placed (an async one leaves it pending),
//! `dispose` once when it is physically removed, re-armed by the next registration;
//! `unregister_async` and `clear` report teardown failures; per-call cleanups are
//! unaffected.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::{sleep, timeout};
use toolfunc::{
    RegisterOptions, Registry, RegistryEvent, ToolBuilder, ToolError, ToolFunc, UnregisterOptions,
};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// How many times each hook ran.
#[derive(Clone, Default)]
struct Hooks {
    setups: Arc<AtomicUsize>,
    disposes: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    cleanups: Arc<AtomicUsize>,
}

impl Hooks {
    fn counts(&self) -> (usize, usize) {
        (
            self.setups.load(Ordering::SeqCst),
            self.disposes.load(Ordering::SeqCst),
        )
    }

    /// A sync tool whose hooks and calls count themselves.
    fn tool(&self, name: &str) -> ToolFunc {
        self.builder(name).build().expect("the tool builds")
    }

    fn builder(&self, name: &str) -> ToolBuilder {
        let (setups, disposes) = (Arc::clone(&self.setups), Arc::clone(&self.disposes));
        let (calls, cleanups) = (Arc::clone(&self.calls), Arc::clone(&self.cleanups));
        ToolFunc::builder(name)
            .handler_sync(move |ctx, args: Value| {
                calls.fetch_add(1, Ordering::SeqCst);
                let cleanups = Arc::clone(&cleanups);
                ctx.on_cleanup(move || {
                    cleanups.fetch_add(1, Ordering::SeqCst);
                });
                if args["fail"] == true {
                    return Err(ToolError::failed("asked to fail"));
                }
                Ok(json!("ran"))
            })
            .setup(move || {
                setups.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .dispose(move || {
                disposes.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
    }
}

type Log = Arc<Mutex<Vec<String>>>;

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A tool whose `dispose` writes its name into `log`, then fails when `fails`.
fn logged(name: &str, log: &Log, fails: bool) -> ToolBuilder {
    let (log, own) = (Arc::clone(log), name.to_owned());
    ToolFunc::builder(name)
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .dispose(move || {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(own.clone());
            if fails {
                Err(ToolError::custom("DISPOSE_FAILED", 500, own.clone()))
            } else {
                Ok(())
            }
        })
}

/// A tool whose async setup waits for `gate`, then succeeds or fails.
fn gated_setup(name: &str, gate: &Arc<Notify>, setups: &Arc<AtomicUsize>, fails: bool) -> ToolFunc {
    let (gate, setups) = (Arc::clone(gate), Arc::clone(setups));
    ToolFunc::builder(name)
        .handler_sync(|_ctx, _args| Ok(json!("ready")))
        .setup_async(move || {
            let (gate, setups) = (Arc::clone(&gate), Arc::clone(&setups));
            async move {
                setups.fetch_add(1, Ordering::SeqCst);
                gate.notified().await;
                if fails {
                    Err(ToolError::custom("SETUP_BROKE", 503, "no connection"))
                } else {
                    Ok(())
                }
            }
        })
        .build()
        .expect("the tool builds")
}

async fn bounded<T, F: Future<Output = T>>(future: F) -> T {
    timeout(LIMIT, future).await.expect("finishes in time")
}

/// Waits until `counter` reaches `value` (a teardown started on the runtime).
async fn reaches(counter: &AtomicUsize, value: usize) {
    bounded(async {
        while counter.load(Ordering::SeqCst) < value {
            sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(counter.load(Ordering::SeqCst), value);
}

// ---------------------------------------------------------------------------------
// setup.

#[test]
fn sync_setup_runs_at_registration() {
    let hooks = Hooks::default();
    let tool = hooks.tool("db");
    assert_eq!(hooks.counts(), (0, 0), "building runs nothing");
    let registry = Registry::new();
    assert!(registry.register(tool).unwrap());
    assert_eq!(hooks.counts(), (1, 0));
    // A counted registration does not set up again.
    assert!(!registry.register(hooks.tool("db")).unwrap());
    assert_eq!(hooks.counts(), (1, 0));
    assert_eq!(registry.run_sync("db", Value::Null).unwrap(), "ran");
}

#[tokio::test]
async fn a_failing_setup_refuses_the_registration() {
    let registry = Registry::new();
    let disposes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&disposes);
    let tool = ToolFunc::builder("broken")
        .alias("broken_alias")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .setup(|| Err(ToolError::custom("SETUP_FAILED", 500, "cannot connect")))
        .dispose(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .build()
        .unwrap();
    let err = registry.register(tool).unwrap_err();
    assert_eq!(err.code(), "SETUP_FAILED");
    assert_eq!(err.to_string(), "cannot connect");
    assert!(!registry.has("broken"));
    assert!(!registry.has("broken_alias"));
    assert!(registry.names().is_empty());
    assert_eq!(
        registry
            .run("broken", Value::Null)
            .await
            .unwrap_err()
            .code(),
        "NOT_FOUND"
    );
    assert_eq!(disposes.load(Ordering::SeqCst), 0, "nothing was set up");
}

#[test]
fn a_failing_setup_gives_back_the_dependencies() {
    let registry = Registry::new();
    let dep = Hooks::default();
    let tool = ToolFunc::builder("needs_dep")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .depends("d", dep.tool("dep"))
        .setup(|| Err(ToolError::failed("no")))
        .build()
        .unwrap();
    assert_eq!(registry.register(tool).unwrap_err().code(), "FAILED");
    assert!(!registry.has("dep"));
    assert_eq!(
        dep.counts(),
        (1, 1),
        "the dependency was set up, then disposed"
    );
}

#[tokio::test]
async fn an_async_setup_leaves_the_tool_pending() {
    let registry = Registry::new();
    let (gate, setups) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    assert!(
        registry
            .register(gated_setup("slow", &gate, &setups, false))
            .unwrap()
    );
    assert!(registry.has("slow"), "a pending tool is registered");

    let err = registry.run_sync("slow", Value::Null).unwrap_err();
    assert!(
        matches!(&err, ToolError::NotReady { name } if name == "slow"),
        "{err:?}"
    );
    assert_eq!(err.code(), "NOT_READY");

    let waiting = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.run("slow", Value::Null).await })
    };
    let ready = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.ready("slow").await })
    };
    let all_ready = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.all_ready().await })
    };
    sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished() && !ready.is_finished() && !all_ready.is_finished());

    gate.notify_one();
    assert_eq!(bounded(waiting).await.unwrap().unwrap(), "ready");
    bounded(ready).await.unwrap().unwrap();
    bounded(all_ready).await.unwrap().unwrap();
    assert_eq!(registry.run_sync("slow", Value::Null).unwrap(), "ready");
    assert_eq!(setups.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_failed_async_setup_fails_ready_and_calls() {
    let registry = Registry::new();
    let (gate, setups) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    registry
        .register(gated_setup("doomed", &gate, &setups, true))
        .unwrap();
    let waiting = {
        let registry = registry.clone();
        tokio::spawn(async move { registry.run("doomed", Value::Null).await })
    };
    gate.notify_one();
    let err = bounded(waiting).await.unwrap().unwrap_err();
    assert_eq!(err.code(), "SETUP_BROKE");

    assert_eq!(
        bounded(registry.ready("doomed")).await.unwrap_err().code(),
        "SETUP_BROKE"
    );
    assert_eq!(
        bounded(registry.all_ready()).await.unwrap_err().code(),
        "SETUP_BROKE"
    );
    assert_eq!(
        bounded(registry.run("doomed", Value::Null))
            .await
            .unwrap_err()
            .code(),
        "SETUP_BROKE"
    );
    assert_eq!(
        registry.run_sync("doomed", Value::Null).unwrap_err().code(),
        "SETUP_BROKE"
    );
}

#[tokio::test]
async fn ready_of_an_unknown_tool_is_not_found_and_of_a_plain_one_is_immediate() {
    let registry = Registry::new();
    assert_eq!(
        bounded(registry.ready("ghost")).await.unwrap_err().code(),
        "NOT_FOUND"
    );
    registry.register(Hooks::default().tool("plain")).unwrap();
    bounded(registry.ready("plain")).await.unwrap();
    bounded(registry.all_ready()).await.unwrap();
    bounded(Registry::new().all_ready()).await.unwrap();
}

#[tokio::test]
async fn all_ready_waits_for_inherited_tools_and_reports_every_failure() {
    let parent = Registry::new();
    let (gate, setups) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let other_gate = Arc::new(Notify::new());
    parent
        .register(gated_setup("bad_one", &gate, &setups, true))
        .unwrap();
    let child = parent.isolate();
    child
        .register(gated_setup("bad_two", &other_gate, &setups, true))
        .unwrap();
    let all = {
        let child = child.clone();
        tokio::spawn(async move { child.all_ready().await })
    };
    gate.notify_one();
    other_gate.notify_one();
    let err = bounded(all).await.unwrap().unwrap_err();
    assert!(
        matches!(&err, ToolError::Aggregate { errors } if errors.len() == 2),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------
// dispose.

#[test]
fn dispose_runs_once_on_physical_removal_and_setup_rearms() {
    let registry = Registry::new();
    let hooks = Hooks::default();
    registry.register(hooks.tool("db")).unwrap();
    registry.register(hooks.tool("db")).unwrap();
    assert!(registry.unregister("db"));
    assert_eq!(
        hooks.counts(),
        (1, 0),
        "a counted unregister disposes nothing"
    );
    assert!(registry.unregister("db"));
    assert_eq!(hooks.counts(), (1, 1));
    assert!(!registry.unregister("db"));
    assert_eq!(hooks.counts(), (1, 1), "never twice");

    // Register again: set up again, and disposed again in turn.
    registry.register(hooks.tool("db")).unwrap();
    assert_eq!(hooks.counts(), (2, 1));
    assert!(registry.unregister_with("db", UnregisterOptions::new().force()));
    assert_eq!(hooks.counts(), (2, 2));
}

#[test]
fn a_replacement_disposes_the_old_tool_and_sets_up_the_new_one() {
    let registry = Registry::new();
    let (old, new) = (Hooks::default(), Hooks::default());
    registry.register(old.tool("svc")).unwrap();
    registry
        .register_with(new.tool("svc"), RegisterOptions::new().allow_override(true))
        .unwrap();
    assert_eq!(old.counts(), (1, 1));
    assert_eq!(new.counts(), (1, 0));
}

#[test]
fn a_replacement_whose_setup_fails_keeps_the_old_tool() {
    let registry = Registry::new();
    let old = Hooks::default();
    registry.register(old.tool("svc")).unwrap();
    let broken = ToolFunc::builder("svc")
        .handler_sync(|_ctx, _args| Ok(json!("new")))
        .setup(|| Err(ToolError::custom("SETUP_FAILED", 500, "cannot connect")))
        .build()
        .unwrap();
    let err = registry
        .register_with(broken, RegisterOptions::new().allow_override(true))
        .unwrap_err();
    assert_eq!(err.code(), "SETUP_FAILED");
    // Replacement is atomic: refused, the old tool stays, set up and undisposed.
    assert_eq!(registry.run_sync("svc", Value::Null).unwrap(), "ran");
    assert_eq!(old.counts(), (1, 0));
}

#[tokio::test]
async fn an_async_dispose_started_by_unregister_runs_on_the_runtime() {
    let registry = Registry::new();
    let disposes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&disposes);
    let tool = ToolFunc::builder("async_dispose")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .dispose_async(move || {
            let counter = Arc::clone(&counter);
            async move {
                sleep(Duration::from_millis(10)).await;
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    registry.register(tool).unwrap();
    assert!(registry.unregister("async_dispose"));
    assert!(!registry.has("async_dispose"));
    reaches(&disposes, 1).await;
}

#[tokio::test]
async fn unregister_async_waits_for_dispose_and_returns_its_error() {
    let registry = Registry::new();
    let log = Log::default();
    registry
        .register(logged("ok", &log, false).build().unwrap())
        .unwrap();
    registry
        .register(logged("bad", &log, true).build().unwrap())
        .unwrap();
    registry
        .register(logged("bad", &log, true).build().unwrap())
        .unwrap();

    assert!(
        bounded(registry.unregister_async("ok", UnregisterOptions::new()))
            .await
            .unwrap()
    );
    assert_eq!(entries(&log), ["ok"]);
    // Counted: nothing to dispose yet.
    assert!(
        bounded(registry.unregister_async("bad", UnregisterOptions::new()))
            .await
            .unwrap()
    );
    assert_eq!(entries(&log), ["ok"]);
    let err = bounded(registry.unregister_async("bad", UnregisterOptions::new()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "DISPOSE_FAILED");
    assert!(!registry.has("bad"), "removed even though dispose failed");
    assert_eq!(entries(&log), ["ok", "bad"]);
    assert!(
        !bounded(registry.unregister_async("bad", UnregisterOptions::new()))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn unregister_async_reports_the_dependencies_failures_too() {
    let registry = Registry::new();
    let log = Log::default();
    let main = logged("main", &log, true)
        .depends("d", logged("dep", &log, true).build().unwrap())
        .build()
        .unwrap();
    registry.register(main).unwrap();
    let err = bounded(registry.unregister_async("main", UnregisterOptions::new()))
        .await
        .unwrap_err();
    let ToolError::Aggregate { errors } = &err else {
        panic!("expected AGGREGATE, got {err:?}");
    };
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(messages, ["main", "dep"]);
    assert_eq!(entries(&log), ["main", "dep"]);
    assert!(registry.names().is_empty());
}

// ---------------------------------------------------------------------------------
// clear.

#[tokio::test]
async fn clear_disposes_dependents_before_their_dependencies() {
    let registry = Registry::new();
    let log = Log::default();
    let base = logged("base", &log, false).build().unwrap();
    let middle = logged("middle", &log, false)
        .depends("b", base)
        .build()
        .unwrap();
    registry.register(middle).unwrap();
    let top = logged("top", &log, false)
        .depends_on("m", "middle")
        .build()
        .unwrap();
    registry.register(top).unwrap();
    registry
        .register(logged("alone", &log, false).build().unwrap())
        .unwrap();

    let mut events = registry.subscribe();
    let held = registry.names().len();
    bounded(registry.clear()).await.unwrap();
    assert!(registry.names().is_empty());
    let order = entries(&log);
    assert_eq!(order.len(), 4, "each disposed once: {order:?}");
    let at = |name: &str| order.iter().position(|n| n == name).unwrap();
    assert!(at("top") < at("middle"), "{order:?}");
    assert!(at("middle") < at("base"), "{order:?}");
    // One `Removed` per tool, then `Cleared`.
    for _ in 0..held {
        assert!(matches!(
            bounded(events.recv()).await.unwrap(),
            RegistryEvent::Removed {
                replaced: false,
                ..
            }
        ));
    }
    assert_eq!(
        bounded(events.recv()).await.unwrap(),
        RegistryEvent::Cleared
    );
}

#[tokio::test]
async fn clear_reports_all_failures_together() {
    let registry = Registry::new();
    let log = Log::default();
    for (name, fails) in [("one", true), ("two", false), ("three", true)] {
        registry
            .register(logged(name, &log, fails).build().unwrap())
            .unwrap();
    }
    let err = bounded(registry.clear()).await.unwrap_err();
    assert_eq!(err.code(), "AGGREGATE");
    let ToolError::Aggregate { errors } = &err else {
        panic!("expected AGGREGATE, got {err:?}");
    };
    assert_eq!(errors.len(), 2);
    let mut failed: Vec<String> = errors.iter().map(ToString::to_string).collect();
    failed.sort();
    assert_eq!(failed, ["one", "three"]);
    assert!(errors.iter().all(|e| e.code() == "DISPOSE_FAILED"));
    assert_eq!(entries(&log).len(), 3, "every dispose ran despite failures");
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn clear_leaves_the_parent_alone_and_rearms() {
    let parent = Registry::new();
    let (in_parent, in_child) = (Hooks::default(), Hooks::default());
    parent.register(in_parent.tool("kept")).unwrap();
    let child = parent.isolate();
    child.register(in_child.tool("local")).unwrap();
    bounded(child.clear()).await.unwrap();
    assert_eq!(in_child.counts(), (1, 1));
    assert_eq!(in_parent.counts(), (1, 0));
    assert!(child.has("kept") && !child.has("local"));
    child.register(in_child.tool("local")).unwrap();
    assert_eq!(in_child.counts(), (2, 1));
}

// ---------------------------------------------------------------------------------
// Per-call cleanups next to the registration hooks.

#[tokio::test]
async fn per_call_cleanups_run_once_per_call() {
    let registry = Registry::new();
    let hooks = Hooks::default();
    registry.register(hooks.tool("scoped")).unwrap();
    registry.run_sync("scoped", Value::Null).unwrap();
    bounded(registry.run("scoped", Value::Null)).await.unwrap();
    let err = bounded(registry.run("scoped", json!({"fail": true})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "FAILED");
    bounded(registry.spawn("scoped", Value::Null))
        .await
        .unwrap();
    assert_eq!(hooks.calls.load(Ordering::SeqCst), 4);
    assert_eq!(hooks.cleanups.load(Ordering::SeqCst), 4);
    assert_eq!(hooks.counts(), (1, 0), "calls neither set up nor dispose");
    registry.unregister("scoped");
    assert_eq!(hooks.counts(), (1, 1));
    assert_eq!(hooks.cleanups.load(Ordering::SeqCst), 4);
}
