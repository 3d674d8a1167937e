//! Registry events: tools added, removed and cleared; calls started and finished with
//! their tool, call id, duration and status; per registry; never slowing calls down.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::{sleep, timeout};
use toolfunc::{
    CallOptions, CallStatus, RegisterOptions, Registry, RegistryEvent, Subscription,
    SubscriptionError, ToolCall, ToolError, ToolFunc,
};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// How long `sleepy` sleeps: the lower bound of its reported duration.
const NAP: Duration = Duration::from_millis(20);

/// A sync tool that answers `null`.
fn plain(name: &str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .expect("the tool builds")
}

/// The tools of the call tests, in a fresh registry.
fn call_tools() -> Registry {
    let registry = Registry::new();
    let tools = [
        ToolFunc::builder("sleepy")
            .alias("sleepy_alias")
            .handler(|_ctx, _args| async {
                sleep(NAP).await;
                Ok(json!("rested"))
            })
            .build(),
        ToolFunc::builder("boom")
            .handler(|_ctx, _args| async { Err(ToolError::custom("BOOM", 500, "exploded")) })
            .build(),
        ToolFunc::builder("strict")
            .params_schema(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }))
            .handler_sync(|_ctx, args| Ok(args))
            .build(),
        ToolFunc::builder("outer")
            .handler(|ctx, _args| async move { ctx.run("sleepy", Value::Null).await })
            .build(),
    ];
    for tool in tools {
        registry.register(tool.expect("the tool builds")).unwrap();
    }
    registry
}

/// A tool that tells `started` when it runs, then never finishes.
fn stuck(name: &str, started: &Arc<Notify>) -> ToolFunc {
    let started = Arc::clone(started);
    ToolFunc::builder(name)
        .handler(move |_ctx, _args| {
            let started = Arc::clone(&started);
            async move {
                started.notify_one();
                std::future::pending::<()>().await;
                Ok(Value::Null)
            }
        })
        .build()
        .expect("the tool builds")
}

/// Every event already waiting.
fn drain(events: &mut Subscription) -> Vec<RegistryEvent> {
    let mut out = Vec::new();
    while let Some(event) = events.try_recv() {
        out.push(event.expect("the subscriber keeps up"));
    }
    out
}

async fn next(events: &mut Subscription) -> RegistryEvent {
    timeout(LIMIT, events.recv())
        .await
        .expect("an event arrives")
        .expect("the subscriber keeps up")
}

fn added(name: &str) -> RegistryEvent {
    RegistryEvent::Added { name: name.into() }
}

fn removed(name: &str, replaced: bool) -> RegistryEvent {
    RegistryEvent::Removed {
        name: name.into(),
        replaced,
    }
}

fn started(tool: &str, call_id: Option<&str>) -> RegistryEvent {
    RegistryEvent::CallStarted {
        tool: tool.into(),
        call_id: call_id.map(Into::into),
    }
}

/// The parts of a `CallFinished` event, or a failure for anything else.
fn finished(event: &RegistryEvent) -> (&str, Option<&str>, Duration, &CallStatus) {
    match event {
        RegistryEvent::CallFinished {
            tool,
            call_id,
            duration,
            status,
        } => (tool, call_id.as_deref(), *duration, status),
        other => panic!("expected CallFinished, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------
// Registration events.

#[tokio::test]
async fn added_removed_and_cleared() {
    let registry = Registry::new();
    let mut events = registry.subscribe();

    registry.register(plain("a")).unwrap();
    assert_eq!(drain(&mut events), [added("a")]);
    // Counted registrations place and remove nothing.
    registry.register(plain("a")).unwrap();
    assert!(registry.unregister("a"));
    assert_eq!(drain(&mut events), []);
    assert!(registry.unregister("a"));
    assert_eq!(drain(&mut events), [removed("a", false)]);
    assert!(!registry.unregister("a"));
    assert_eq!(drain(&mut events), []);

    // A dependency is placed before its dependent.
    let main = ToolFunc::builder("main")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .depends("d", plain("dep"))
        .build()
        .unwrap();
    registry.register(main).unwrap();
    assert_eq!(drain(&mut events), [added("dep"), added("main")]);
    registry
        .register_with(plain("main"), RegisterOptions::new().allow_override(true))
        .unwrap();
    // The replaced tool's dependency is released with it.
    assert_eq!(
        drain(&mut events),
        [removed("main", true), added("main"), removed("dep", false)]
    );

    let mut present = registry.names();
    timeout(LIMIT, registry.clear()).await.unwrap().unwrap();
    // Each tool's removal, then the clear itself.
    let mut removed_names = Vec::new();
    loop {
        match next(&mut events).await {
            RegistryEvent::Cleared => break,
            RegistryEvent::Removed {
                name,
                replaced: false,
            } => removed_names.push(name),
            other => panic!("unexpected event during clear: {other:?}"),
        }
    }
    removed_names.sort();
    present.sort();
    assert_eq!(removed_names, present);
    assert_eq!(drain(&mut events), []);
}

#[tokio::test]
async fn a_refused_registration_announces_nothing_lasting() {
    let registry = Registry::new();
    registry.register(plain("taken")).unwrap();
    let mut events = registry.subscribe();
    let clash = ToolFunc::builder("other")
        .alias("taken")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap();
    assert_eq!(registry.register(clash).unwrap_err().code(), "CONFLICT");
    assert_eq!(drain(&mut events), []);
}

// ---------------------------------------------------------------------------------
// Call events.

#[tokio::test]
async fn a_call_reports_its_tool_id_duration_and_ok() {
    let registry = call_tools();
    let mut events = registry.subscribe();
    let result = timeout(
        LIMIT,
        registry.execute(ToolCall::new("call-1", "sleepy_alias", Value::Null)),
    )
    .await
    .unwrap();
    assert_eq!(result.output().unwrap(), "rested");

    let seen = drain(&mut events);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[0],
        started("sleepy", Some("call-1")),
        "the tool's own name"
    );
    let (tool, call_id, duration, status) = finished(&seen[1]);
    assert_eq!(
        (tool, call_id, status),
        ("sleepy", Some("call-1"), &CallStatus::Ok)
    );
    assert!(duration >= NAP, "{duration:?}");
    assert!(duration < LIMIT, "{duration:?}");
}

#[tokio::test]
async fn failures_report_their_code() {
    let registry = call_tools();
    let mut events = registry.subscribe();

    let result = registry.execute(ToolCall::new("call-2", "boom", Value::Null));
    let result = timeout(LIMIT, result).await.unwrap();
    assert_eq!(result.output().unwrap_err().code(), "BOOM");
    let seen = drain(&mut events);
    assert_eq!(seen[0], started("boom", Some("call-2")));
    let (_, call_id, _, status) = finished(&seen[1]);
    assert_eq!(call_id, Some("call-2"));
    assert_eq!(status, &CallStatus::Error("BOOM".into()));

    // Arguments refused before the handler ran: a sync call, no call id.
    let err = registry.run_sync("strict", json!({"n": "x"})).unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    let seen = drain(&mut events);
    assert_eq!(seen[0], started("strict", None));
    let (tool, call_id, _, status) = finished(&seen[1]);
    assert_eq!((tool, call_id), ("strict", None));
    assert_eq!(status, &CallStatus::Error("ARGUMENTS".into()));

    // A timeout is an error too.
    let hasty = registry.with(CallOptions::new().timeout(Duration::from_millis(1)));
    let err = timeout(LIMIT, hasty.run("sleepy", Value::Null))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    let seen = drain(&mut events);
    assert_eq!(finished(&seen[1]).3, &CallStatus::Error("TIMEOUT".into()));
}

#[tokio::test]
async fn an_aborted_call_reports_cancelled() {
    let registry = Registry::new();
    let running = Arc::new(Notify::new());
    registry.register(stuck("stuck", &running)).unwrap();
    let mut events = registry.subscribe();

    let handle = registry.spawn("stuck", Value::Null);
    timeout(LIMIT, running.notified())
        .await
        .expect("the call starts");
    handle.abort("enough");
    let err = timeout(LIMIT, handle).await.unwrap().unwrap_err();
    assert_eq!(err.code(), "CANCELLED");

    assert_eq!(next(&mut events).await, started("stuck", None));
    let event = next(&mut events).await;
    let (tool, _, _, status) = finished(&event);
    assert_eq!((tool, status), ("stuck", &CallStatus::Cancelled));
}

#[tokio::test]
async fn a_dropped_call_reports_cancelled() {
    let registry = Registry::new();
    let running = Arc::new(Notify::new());
    registry.register(stuck("stuck", &running)).unwrap();
    let mut events = registry.subscribe();
    let call = registry.run("stuck", Value::Null);
    let gave_up = timeout(Duration::from_millis(50), call).await;
    assert!(gave_up.is_err(), "the call never finishes on its own");
    let seen = drain(&mut events);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(finished(&seen[1]).3, &CallStatus::Cancelled);
}

#[tokio::test]
async fn nested_calls_are_reported_with_the_outer_call_id() {
    let registry = call_tools();
    let mut events = registry.subscribe();
    let result = registry.execute(ToolCall::new("call-3", "outer", Value::Null));
    let result = timeout(LIMIT, result).await.unwrap();
    assert_eq!(result.output().unwrap(), "rested");
    let seen = drain(&mut events);
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[0], started("outer", Some("call-3")));
    assert_eq!(seen[1], started("sleepy", Some("call-3")));
    assert_eq!(finished(&seen[2]).0, "sleepy");
    assert_eq!(finished(&seen[3]).0, "outer");
    assert!(finished(&seen[3]).2 >= finished(&seen[2]).2);
}

// ---------------------------------------------------------------------------------
// Whose subscribers.

#[tokio::test]
async fn a_child_registrys_events_go_to_its_own_subscribers() {
    let parent = call_tools();
    let child = parent.isolate();
    let mut parent_events = parent.subscribe();
    let mut child_events = child.subscribe();

    // A call through the child, of a tool the parent holds.
    let result = child.execute(ToolCall::new("child-call", "sleepy", Value::Null));
    timeout(LIMIT, result).await.unwrap().output().unwrap();
    let seen = drain(&mut child_events);
    assert_eq!(seen[0], started("sleepy", Some("child-call")));
    assert_eq!(finished(&seen[1]).3, &CallStatus::Ok);
    assert_eq!(
        drain(&mut parent_events),
        [],
        "the parent's subscribers see nothing"
    );

    // Registrations are announced where they happen.
    child.register(plain("child_only")).unwrap();
    parent.register(plain("parent_only")).unwrap();
    assert_eq!(drain(&mut child_events), [added("child_only")]);
    assert_eq!(drain(&mut parent_events), [added("parent_only")]);

    // A call through the parent goes to the parent's subscribers only.
    parent.run_sync("parent_only", Value::Null).unwrap();
    assert_eq!(drain(&mut parent_events)[0], started("parent_only", None));
    assert_eq!(drain(&mut child_events), []);
}

// ---------------------------------------------------------------------------------
// Subscribers never slow calls down.

#[tokio::test]
async fn a_subscriber_that_never_reads_lags_and_calls_go_on() {
    const CALLS: usize = 5_000;
    let registry = Registry::new();
    registry.register(plain("quick")).unwrap();
    let mut events = registry.subscribe();
    timeout(LIMIT, async {
        for _ in 0..CALLS {
            registry.run("quick", Value::Null).await.unwrap();
        }
    })
    .await
    .expect("calls are not held up by the subscriber");

    let first = timeout(LIMIT, events.recv()).await.unwrap();
    assert!(
        matches!(first, Err(SubscriptionError::Lagged(n)) if n > 0),
        "{first:?}"
    );
    // Then the newest events follow.
    let newest = next(&mut events).await;
    assert!(
        matches!(&newest, RegistryEvent::CallStarted { tool, .. } | RegistryEvent::CallFinished { tool, .. } if tool == "quick"),
        "{newest:?}"
    );
}

#[tokio::test]
async fn calls_need_no_subscriber() {
    let registry = call_tools();
    registry.run_sync("strict", json!({"n": 1})).unwrap();
    let out = timeout(LIMIT, registry.run("sleepy", Value::Null))
        .await
        .unwrap();
    assert_eq!(out.unwrap(), "rested");

    // A subscriber that went away leaves calls unaffected too.
    drop(registry.subscribe());
    let out = timeout(LIMIT, registry.run("outer", Value::Null))
        .await
        .unwrap();
    assert_eq!(out.unwrap(), "rested");
    registry.register(plain("later")).unwrap();
    assert!(registry.unregister("later"));
}

#[tokio::test]
async fn a_tool_change_subscriber_hears_of_the_catalog_only() {
    let registry = Registry::new();
    let mut changes = registry.subscribe_tool_changes();
    registry.register(plain("a")).unwrap();
    registry.run("a", json!({})).await.unwrap();
    registry.unregister("a");
    registry.register(plain("b")).unwrap();
    registry.clear().await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let event = timeout(LIMIT, changes.recv()).await.unwrap().unwrap();
        seen.push(event);
    }
    assert!(
        matches!(&seen[0], RegistryEvent::Added { name } if name == "a"),
        "{seen:?}"
    );
    assert!(
        matches!(&seen[1], RegistryEvent::Removed { name, .. } if name == "a"),
        "{seen:?}"
    );
    assert!(
        matches!(&seen[2], RegistryEvent::Added { name } if name == "b"),
        "{seen:?}"
    );
    // `clear` tells each removal, then that the registry was cleared; never a call.
    let rest: Vec<RegistryEvent> = std::iter::once(seen.remove(3))
        .chain(std::iter::from_fn(|| {
            changes.try_recv().and_then(Result::ok)
        }))
        .collect();
    assert!(
        rest.iter()
            .all(|e| matches!(e, RegistryEvent::Removed { .. } | RegistryEvent::Cleared)),
        "{rest:?}"
    );
    assert!(
        matches!(rest.last(), Some(RegistryEvent::Cleared)),
        "{rest:?}"
    );
}
