//! Timeouts: a tool's own (`#[tool(timeout = ..)]`), a caller's (`CallOptions::timeout`),
//! the shorter winning, `TIMEOUT` distinct from `CANCELLED`, `Ctx::deadline`, and
//! nested calls bound by the outer call's deadline.

#[path = "support/calls.rs"]
mod calls;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::time::{sleep, timeout};
use toolfunc::{CallOptions, CancellationToken, Ctx, Registry, ToolCall, ToolError, tool};

use calls::{LIMIT, Probe, bounded, definition, settle, until};

/// How long the sleeping tools sleep: a timeout that works ends them long before.
const NAP: Duration = Duration::from_secs(60);

/// Counts the start, registers a counting cleanup, records the deadline, and watches
/// the call's token from a spawned task (which ends with the call's token or `LIMIT`).
fn arm(ctx: &Ctx) {
    calls::arm(ctx).record_deadline(ctx).watch_token(ctx);
}

/// Sleeps for a minute, ignoring cancellation; its own timeout is 50 ms.
#[tool(timeout = "50ms")]
async fn to_fast(ctx: &Ctx) {
    arm(ctx);
    sleep(NAP).await;
}

/// Sleeps for a minute, ignoring cancellation; its own timeout is 5 s.
#[tool(timeout = "5s")]
async fn to_slow(ctx: &Ctx) {
    arm(ctx);
    sleep(NAP).await;
}

/// Sleeps for a minute, ignoring cancellation; no timeout of its own.
#[tool]
async fn to_untimed(ctx: &Ctx) {
    arm(ctx);
    sleep(NAP).await;
}

/// Never finishes; nothing else (for many cheap calls).
#[tool]
async fn to_hang() {
    std::future::pending::<()>().await;
}

/// A timeout given as a number of milliseconds.
#[tool(timeout = 250)]
fn to_numeric() {}

/// A timeout given in minutes.
#[tool(timeout = "2m")]
fn to_minutes() {}

/// Reports whether it has a deadline and how far off it is.
#[tool]
async fn to_deadline(ctx: &Ctx) -> Value {
    arm(ctx);
    tokio::task::yield_now().await;
    deadline_report(ctx)
}

/// Reports its deadline, from a sync handler with a timeout of its own.
#[tool(timeout = "1s")]
fn to_deadline_sync_timed(ctx: &Ctx) -> Value {
    arm(ctx);
    deadline_report(ctx)
}

/// Reports its deadline, from a sync handler without a timeout of its own.
#[tool]
fn to_deadline_sync(ctx: &Ctx) -> Value {
    arm(ctx);
    deadline_report(ctx)
}

fn deadline_report(ctx: &Ctx) -> Value {
    let remaining = ctx
        .deadline()
        .map(|d| d.saturating_duration_since(Instant::now()));
    json!({
        "has_deadline": remaining.is_some(),
        "remaining_ms": remaining.map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX)),
    })
}

/// Has a 300 ms timeout and runs `to_deadline` nested: plainly, with a longer
/// timeout, and with a shorter one.
#[tool(timeout = "300ms")]
async fn to_outer_deadlines(ctx: &Ctx) -> Result<Value, ToolError> {
    arm(ctx);
    let plain = ctx.run("to_deadline", json!({})).await?;
    let longer = ctx
        .with(CallOptions::new().timeout(NAP))
        .run("to_deadline_sync", json!({}))
        .await?;
    Ok(json!({"plain": plain, "longer": longer}))
}

/// Has a 100 ms timeout and runs a nested call that would sleep for a minute, asking
/// for a longer timeout.
#[tool(timeout = "100ms")]
async fn to_outer_sleeps(ctx: &Ctx) -> Result<Value, ToolError> {
    arm(ctx);
    ctx.with(CallOptions::new().timeout(NAP))
        .run("to_slow", json!({}))
        .await
}

/// Runs a nested call with a 50 ms timeout and reports how it ended.
#[tool(timeout = "10s")]
async fn to_outer_catches(ctx: &Ctx) -> Value {
    arm(ctx);
    let nested = ctx
        .with(CallOptions::new().timeout(Duration::from_millis(50)))
        .run("to_untimed", json!({}))
        .await;
    match nested {
        Ok(out) => json!({"ok": out}),
        Err(ToolError::Timeout { after_ms }) => json!({"code": "TIMEOUT", "after_ms": after_ms}),
        Err(other) => json!({"code": other.code()}),
    }
}

/// Sleeps its thread for 100 ms although its timeout is 10 ms: sync handlers are not
/// interrupted, and their late value is a `TIMEOUT`.
#[tool(timeout = "10ms")]
fn to_sync_overrun(ctx: &Ctx) -> &'static str {
    arm(ctx);
    std::thread::sleep(Duration::from_millis(100));
    "ran to the end"
}

fn assert_timeout(err: &ToolError, after_ms: Option<u64>) {
    assert!(
        matches!(err, ToolError::Timeout { after_ms: a } if *a == after_ms),
        "expected TIMEOUT after {after_ms:?} ms, got {err:?}"
    );
    assert_eq!((err.code(), err.status()), ("TIMEOUT", 408));
}

// ---------------------------------------------------------------------------------
// A tool's own timeout.

#[test]
fn the_definition_carries_the_timeout_in_milliseconds() {
    let fast = Registry::global().get("to_fast").unwrap();
    assert_eq!(fast.definition().timeout, Some(50));
    assert_eq!(fast.timeout(), Some(Duration::from_millis(50)));
    assert_eq!(definition("to_fast")["timeout"], 50);
    assert_eq!(definition("to_slow")["timeout"], 5_000);
    assert_eq!(definition("to_numeric")["timeout"], 250);
    assert_eq!(definition("to_minutes")["timeout"], 120_000);
    // No timeout, no key.
    assert!(definition("to_untimed").get("timeout").is_none());
    assert_eq!(
        Registry::global().get("to_untimed").unwrap().timeout(),
        None
    );
}

#[tokio::test]
async fn a_tool_timeout_ends_a_sleeping_call_with_timeout() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let err = bounded(runner.run("to_fast", json!({}))).await.unwrap_err();
    assert_timeout(&err, Some(50));
    assert_eq!(err.data(), Some(json!({"afterMs": 50})));
    assert_eq!(err.to_string(), "call timed out after 50 ms");
    // The call's token was cancelled and its cleanup ran, once.
    assert_eq!(probe.cleanups(), 1);
    until("the watcher saw the token", || probe.token_fired() == 1).await;
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

// ---------------------------------------------------------------------------------
// A caller's timeout.

#[tokio::test]
async fn a_call_timeout_ends_a_call_with_timeout() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options().timeout(Duration::from_millis(50)));
    assert_timeout(
        &bounded(runner.run("to_untimed", json!({})))
            .await
            .unwrap_err(),
        Some(50),
    );
    let result = bounded(runner.execute(ToolCall::new("c1", "to_untimed", json!({})))).await;
    assert_eq!(result.id(), "c1");
    assert_timeout(result.output().unwrap_err(), Some(50));
    assert_eq!(probe.cleanups(), 2);
    until("both watchers saw their token", || probe.token_fired() == 2).await;

    // Without the timeout the same tool is still running after a while.
    let plain = Registry::global().with(probe.options());
    let still_running = timeout(
        Duration::from_millis(200),
        plain.run("to_untimed", json!({})),
    )
    .await;
    assert!(still_running.is_err());
}

#[tokio::test]
async fn a_spawned_call_times_out_too() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options().timeout(Duration::from_millis(50)));
    let err = bounded(runner.spawn("to_untimed", json!({})))
        .await
        .unwrap_err();
    assert_timeout(&err, Some(50));
    until("the cleanup ran", || probe.cleanups() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_calls_that_time_out_always_report_timeout() {
    const CALLS: usize = 300;
    let runner = Registry::global().with(CallOptions::new().timeout(Duration::from_millis(1)));
    let handles: Vec<_> = (0..CALLS)
        .map(|_| runner.spawn("to_hang", json!({})))
        .collect();
    let results = timeout(LIMIT, futures::future::join_all(handles))
        .await
        .expect("every call ends");
    let codes: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().unwrap_err().code().to_owned())
        .collect();
    let cancelled = codes.iter().filter(|c| *c == "CANCELLED").count();
    assert_eq!(
        cancelled, 0,
        "{cancelled} of {CALLS} timed-out spawned calls said CANCELLED"
    );
    assert!(codes.iter().all(|c| c == "TIMEOUT"), "{codes:?}");
}

// ---------------------------------------------------------------------------------
// The shorter timeout wins.

#[tokio::test]
async fn the_shorter_of_the_tool_and_call_timeouts_wins() {
    let probe = Probe::default();
    let long = Duration::from_secs(5);
    let short = Duration::from_millis(80);
    let registry = Registry::global();
    let cases = [
        // The tool's 50 ms beats the caller's 5 s.
        ("to_fast", registry.with(probe.options().timeout(long)), 50),
        // The caller's 80 ms beats the tool's 5 s.
        ("to_slow", registry.with(probe.options().timeout(short)), 80),
        // Chained runners: the shorter wins whichever layer sets it.
        (
            "to_untimed",
            registry
                .with(probe.options().timeout(long))
                .with(CallOptions::new().timeout(short)),
            80,
        ),
        (
            "to_untimed",
            registry
                .with(probe.options().timeout(short))
                .with(CallOptions::new().timeout(long)),
            80,
        ),
        // One `CallOptions` given two timeouts keeps the shorter.
        (
            "to_untimed",
            registry.with(probe.options().timeout(short).timeout(long)),
            80,
        ),
        // Everything together.
        (
            "to_slow",
            registry
                .with(probe.options().timeout(long))
                .with(CallOptions::new().timeout(Duration::from_millis(60))),
            60,
        ),
    ];
    for (i, (name, runner, after_ms)) in cases.into_iter().enumerate() {
        let err = bounded(runner.run(name, json!({}))).await.unwrap_err();
        assert!(
            matches!(err, ToolError::Timeout { after_ms: Some(ms) } if ms == after_ms),
            "case {i} ({name}): expected TIMEOUT after {after_ms} ms, got {err:?}"
        );
    }
}

// ---------------------------------------------------------------------------------
// TIMEOUT is not CANCELLED.

#[tokio::test]
async fn timeout_and_cancelled_are_distinct() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let runner = Registry::global().with(probe.options().cancel_on(caller.clone()));

    // A caller token that never fires does not turn a timeout into a cancellation.
    let err = bounded(runner.run("to_fast", json!({}))).await.unwrap_err();
    assert_timeout(&err, Some(50));
    assert!(!matches!(err, ToolError::Cancelled { .. }));
    assert!(
        !caller.is_cancelled(),
        "a timeout leaves the caller's token alone"
    );

    // A caller token that fires before the timeout is a cancellation.
    let (result, ()) = bounded(async {
        tokio::join!(runner.run("to_slow", json!({})), async {
            until("the tool started", || probe.started() == 2).await;
            caller.cancel();
        })
    })
    .await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, ToolError::Cancelled { reason: None }),
        "{err:?}"
    );
    assert_eq!((err.code(), err.status()), ("CANCELLED", 499));
    assert_ne!(err.code(), "TIMEOUT");
    assert_eq!(probe.cleanups(), 2);
}

// ---------------------------------------------------------------------------------
// The deadline a tool sees.

#[tokio::test]
async fn ctx_deadline_is_set_inside_a_call_with_a_timeout() {
    let probe = Probe::default();
    let registry = Registry::global();

    let out = bounded(registry.with(probe.options()).run("to_deadline", json!({})))
        .await
        .unwrap();
    assert_eq!(out["has_deadline"], false, "no timeout, no deadline");

    let out = bounded(
        registry
            .with(probe.options().timeout(Duration::from_secs(2)))
            .run("to_deadline", json!({})),
    )
    .await
    .unwrap();
    assert_eq!(out["has_deadline"], true);
    assert!(out["remaining_ms"].as_u64().unwrap() <= 2_000, "{out}");

    let out = registry
        .with(probe.options())
        .run_sync("to_deadline_sync", json!({}))
        .unwrap();
    assert_eq!(out["has_deadline"], false);
}

#[tokio::test]
async fn a_sync_tool_with_a_timeout_sees_its_deadline() {
    // A sync handler cannot be interrupted, which is why it needs its deadline to stop
    // on its own; `Ctx::deadline` promises one "when it has a timeout".
    let probe = Probe::default();
    let registry = Registry::global();
    let own = registry
        .with(probe.options())
        .run_sync("to_deadline_sync_timed", json!({}))
        .unwrap();
    let own_async = bounded(
        registry
            .with(probe.options())
            .run("to_deadline_sync_timed", json!({})),
    )
    .await
    .unwrap();
    let callers = registry
        .with(probe.options().timeout(Duration::from_secs(2)))
        .run_sync("to_deadline_sync", json!({}))
        .unwrap();
    assert_eq!(
        (
            &own["has_deadline"],
            &own_async["has_deadline"],
            &callers["has_deadline"]
        ),
        (&json!(true), &json!(true), &json!(true)),
        "tool timeout via run_sync: {own}; via run: {own_async}; caller timeout: {callers}"
    );
}

#[tokio::test]
async fn a_sync_tool_past_its_timeout_runs_to_its_end_and_is_a_timeout() {
    // A sync body cannot be interrupted: it runs to its end, its cleanups run, and
    // the late value is dropped for `TIMEOUT`.
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let err = runner.run_sync("to_sync_overrun", json!({})).unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    let err = bounded(runner.run("to_sync_overrun", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT");
    assert_eq!(probe.cleanups(), 2);
}

// ---------------------------------------------------------------------------------
// Nested calls and the outer deadline.

#[tokio::test]
async fn a_nested_call_cannot_outlive_the_outer_deadline() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let out = bounded(runner.run("to_outer_deadlines", json!({})))
        .await
        .unwrap();
    assert_eq!(out["plain"]["has_deadline"], true, "{out}");
    assert_eq!(out["longer"]["has_deadline"], true, "{out}");
    let outer = probe
        .deadline_of("to_outer_deadlines")
        .expect("the outer call has a deadline");
    let plain = probe.deadline_of("to_deadline").expect("inherited");
    let longer = probe.deadline_of("to_deadline_sync").expect("inherited");
    assert!(
        plain <= outer,
        "the plain nested call ends by the outer deadline"
    );
    assert!(
        longer <= outer,
        "a longer nested timeout does not extend the outer deadline"
    );
    for part in ["plain", "longer"] {
        assert!(out[part]["remaining_ms"].as_u64().unwrap() <= 300, "{out}");
    }
}

#[tokio::test]
async fn a_nested_call_is_stopped_at_the_outer_deadline() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    // The nested tool sleeps for a minute under a 5 s timeout of its own and asks for
    // a minute more; the outer call's 100 ms stops both.
    let err = bounded(runner.run("to_outer_sleeps", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err:?}");
    assert_eq!(probe.started(), 2);
    until("both cleanups ran", || probe.cleanups() == 2).await;
    until("the nested token fired", || probe.token_fired() >= 1).await;
    let nested = probe.deadline_of("to_slow").expect("inherited");
    let outer = probe.deadline_of("to_outer_sleeps").expect("its own");
    assert!(nested <= outer);
}

#[tokio::test]
async fn an_outer_call_ended_by_its_deadline_cancels_its_own_token() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let err = bounded(runner.run("to_outer_sleeps", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TIMEOUT", "{err:?}");
    // The outer call ran out of its own 100 ms: work it started with its token must
    // stop, as `Ctx::cancellation_token` promises for a call that times out.
    until("both tokens fired", || probe.token_fired() == 2).await;
    assert_timeout(&err, Some(100));
}

#[tokio::test]
async fn a_nested_timeout_applies_to_the_nested_call_only() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let out = bounded(runner.run("to_outer_catches", json!({})))
        .await
        .unwrap();
    assert_eq!(out, json!({"code": "TIMEOUT", "after_ms": 50}));
    until("both cleanups ran", || probe.cleanups() == 2).await;
    // Only the nested call's token fired; the outer call ended normally.
    until("the nested token fired", || probe.token_fired() == 1).await;
    settle().await;
    assert_eq!(probe.token_fired(), 1);
}
