//! Cancellation: `spawn` + `abort`, caller tokens, the tool's own token, dropping a
//! call's future, cleanups on every way out, and no tasks left behind.

#[path = "support/calls.rs"]
mod calls;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::time::{sleep, timeout};
use toolfunc::{CallOptions, CancellationToken, Ctx, Registry, ToolCall, ToolError, tool};

use calls::{LIMIT, Log, Probe, arm, bounded, settle, until};

/// Never finishes and ignores cancellation.
#[tool]
async fn cancel_pending(ctx: &Ctx) {
    arm(ctx);
    std::future::pending::<()>().await;
}

/// Sleeps for an hour and ignores cancellation.
#[tool]
async fn cancel_sleep(ctx: &Ctx) {
    let probe = arm(ctx);
    sleep(Duration::from_secs(3600)).await;
    probe.finished.fetch_add(1, Ordering::SeqCst);
}

/// Never finishes; a task it spawns watches the call's token.
#[tool]
async fn cancel_watch(ctx: &Ctx) {
    arm(ctx).watch_token(ctx);
    std::future::pending::<()>().await;
}

/// Runs `cancel_watch` as a nested call.
#[tool]
async fn cancel_nested(ctx: &Ctx) -> Result<Value, ToolError> {
    arm(ctx);
    ctx.run("cancel_watch", json!({})).await
}

/// Ends the way it is told to: `return`, `error`, `panic`, or `hang` (forever).
#[tool]
async fn cancel_paths(ctx: &Ctx, how: String) -> Result<String, String> {
    let probe = arm(ctx);
    tokio::task::yield_now().await;
    let out = match how.as_str() {
        "return" => Ok("returned".to_owned()),
        "error" => Err("asked to fail".to_owned()),
        "panic" => panic!("asked to panic"),
        _ => std::future::pending().await,
    };
    probe.finished.fetch_add(1, Ordering::SeqCst);
    out
}

/// Ends the way it is told to: `return`, `error` or `panic`, synchronously.
#[tool]
fn cancel_paths_sync(ctx: &Ctx, how: String) -> Result<String, String> {
    let probe = arm(ctx);
    let out = match how.as_str() {
        "return" => Ok("returned".to_owned()),
        "error" => Err("asked to fail".to_owned()),
        _ => panic!("asked to panic"),
    };
    probe.finished.fetch_add(1, Ordering::SeqCst);
    out
}

/// Blocks its thread until the test releases it (or `LIMIT` passes).
#[tool]
fn cancel_sync_blocking(ctx: &Ctx) -> bool {
    let probe = arm(ctx);
    let since = Instant::now();
    while !probe.release.load(Ordering::SeqCst) && since.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(1));
    }
    probe.finished.fetch_add(1, Ordering::SeqCst);
    probe.release.load(Ordering::SeqCst)
}

/// Blocks its thread until its call is cancelled (or `LIMIT` passes), then reports
/// whether its cancellation token says so too.
#[tool]
fn cancel_sync_polls_token(ctx: &Ctx) -> bool {
    let probe = arm(ctx);
    let since = Instant::now();
    while !ctx.is_cancelled() && since.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Give a token that follows the call from elsewhere a moment to catch up.
    let token = ctx.cancellation_token();
    let since = Instant::now();
    while !token.is_cancelled() && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(1));
    }
    probe.finished.fetch_add(1, Ordering::SeqCst);
    token.is_cancelled()
}

/// Registers cleanups around one that panics, and one that registers another.
#[tool]
fn cancel_messy_cleanups(ctx: &Ctx) -> u8 {
    let log = ctx.get::<Log>().cloned().unwrap_or_default();
    let first = log.clone();
    ctx.on_cleanup(move || first.push("first"));
    ctx.on_cleanup(|| panic!("a cleanup panics"));
    let nested = log.clone();
    let again = ctx.clone();
    ctx.on_cleanup(move || {
        nested.push("registers another");
        let late = nested.clone();
        again.on_cleanup(move || late.push("registered while cleaning up"));
    });
    1
}

/// Registers three cleanups and keeps a clone of its context for the test.
#[tool]
fn cancel_order(ctx: &Ctx) -> u8 {
    let log = ctx.get::<Log>().cloned().unwrap_or_default();
    for n in ["first", "second", "third"] {
        let log = log.clone();
        ctx.on_cleanup(move || log.push(n));
    }
    log.keep(ctx);
    log.push("returned");
    3
}

fn assert_cancelled(err: &ToolError, want: Option<&str>) {
    assert!(
        matches!(err, ToolError::Cancelled { reason } if reason.as_deref() == want),
        "expected CANCELLED with reason {want:?}, got {err:?}"
    );
    assert_eq!((err.code(), err.status()), ("CANCELLED", 499));
}

// ---------------------------------------------------------------------------------
// spawn + abort.

#[tokio::test]
async fn abort_ends_a_spawned_call_with_cancelled_and_its_reason() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut handle = runner.spawn("cancel_pending", json!({}));
    let token = handle.cancellation_token();
    until("the tool started", || probe.started() == 1).await;
    assert!(!handle.is_finished());
    assert!(!token.is_cancelled());

    handle.abort("user pressed stop");
    handle.abort("a second reason is ignored");
    let err = bounded(&mut handle).await.unwrap_err();
    assert_cancelled(&err, Some("user pressed stop"));
    assert_eq!(err.data(), Some(json!({"reason": "user pressed stop"})));
    assert_eq!(err.to_string(), "call cancelled: user pressed stop");
    assert!(token.is_cancelled());
    assert!(handle.is_finished());

    until("the cleanup ran", || probe.cleanups() == 1).await;
    settle().await;
    assert_eq!(probe.cleanups(), 1);
    assert_eq!(probe.finished(), 0);
}

#[tokio::test]
async fn a_handler_that_ignores_cancellation_still_ends_promptly_after_abort() {
    for name in ["cancel_pending", "cancel_sleep"] {
        let probe = Probe::default();
        let handle = Registry::global()
            .with(probe.options())
            .spawn(name, json!({}));
        until("the tool started", || probe.started() == 1).await;
        handle.abort("stop");
        // Bounded far below the hour `cancel_sleep` would take.
        let err = bounded(handle).await.unwrap_err();
        assert_cancelled(&err, Some("stop"));
        until("the cleanup ran", || probe.cleanups() == 1).await;
        assert_eq!(probe.finished(), 0, "{name} was not run to its end");
    }
}

#[tokio::test]
async fn a_spawned_call_can_be_awaited_for_its_result() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let out = bounded(runner.spawn("cancel_paths", json!({"how": "return"})))
        .await
        .unwrap();
    assert_eq!(out, "returned");
    let out = bounded(runner.spawn("cancel_paths_sync", json!({"how": "return"})))
        .await
        .unwrap();
    assert_eq!(out, "returned");
    let err = bounded(runner.spawn("no_such_tool", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    until("both cleanups ran", || probe.cleanups() == 2).await;
}

#[test]
fn spawn_outside_a_runtime_fails() {
    let probe = Probe::default();
    let handle = Registry::global()
        .with(probe.options())
        .spawn("cancel_paths", json!({"how": "return"}));
    assert!(handle.is_finished());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let err = runtime.block_on(bounded(handle)).unwrap_err();
    assert_eq!(err.code(), "FAILED", "{err:?}");
    assert_eq!(probe.started(), 0);
}

#[tokio::test]
async fn dropping_a_call_handle_leaves_the_call_running() {
    let probe = Probe::default();
    let handle = Registry::global()
        .with(probe.options())
        .spawn("cancel_watch", json!({}));
    let token = handle.cancellation_token();
    drop(handle);
    until("the tool started", || probe.started() == 1).await;
    settle().await;
    assert!(!token.is_cancelled());
    assert_eq!((probe.cleanups(), probe.token_fired()), (0, 0));
    // The token stops it.
    token.cancel();
    until("the cleanup ran", || probe.cleanups() == 1).await;
    until("the watcher saw it", || probe.token_fired() == 1).await;
}

// ---------------------------------------------------------------------------------
// Caller tokens.

#[tokio::test]
async fn a_caller_token_cancels_the_call() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let runner = Registry::global().with(probe.options().cancel_on(caller.clone()));
    let (result, ()) = bounded(async {
        tokio::join!(runner.run("cancel_watch", json!({})), async {
            until("the tool started", || probe.started() == 1).await;
            caller.cancel();
        })
    })
    .await;
    assert_cancelled(&result.unwrap_err(), None);
    assert_eq!(probe.cleanups(), 1);
    until("the watcher saw it", || probe.token_fired() == 1).await;
    assert_eq!(probe.saw_is_cancelled(), 1);
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

#[tokio::test]
async fn aborting_a_call_leaves_the_caller_token_alone() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let handle = Registry::global()
        .with(probe.options().cancel_on(caller.clone()))
        .spawn("cancel_watch", json!({}));
    until("the tool started", || probe.started() == 1).await;
    handle.abort("only this call");
    assert_cancelled(&bounded(handle).await.unwrap_err(), Some("only this call"));
    until("the watcher saw it", || probe.token_fired() == 1).await;
    assert!(!caller.is_cancelled());
}

#[tokio::test]
async fn with_several_caller_tokens_any_one_cancels() {
    for fired in 0..3 {
        let probe = Probe::default();
        let tokens = [
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        ];
        // Two tokens in one layer, a third in a chained runner: they add up.
        let runner = Registry::global()
            .with(
                probe
                    .options()
                    .cancel_on(tokens[0].clone())
                    .cancel_on(tokens[1].clone()),
            )
            .with(CallOptions::new().cancel_on(tokens[2].clone()));
        let (result, ()) = bounded(async {
            tokio::join!(runner.run("cancel_watch", json!({})), async {
                until("the tool started", || probe.started() == 1).await;
                tokens[fired].cancel();
            })
        })
        .await;
        assert_cancelled(&result.unwrap_err(), None);
        assert_eq!(probe.cleanups(), 1, "token {fired}");
        until("the watcher saw it", || probe.token_fired() == 1).await;
        assert_eq!(probe.saw_is_cancelled(), 1);
        for (i, token) in tokens.iter().enumerate() {
            assert_eq!(token.is_cancelled(), i == fired, "token {i}");
        }
    }
}

#[tokio::test]
async fn several_caller_tokens_cancel_a_spawned_call_too() {
    let probe = Probe::default();
    let (a, b) = (CancellationToken::new(), CancellationToken::new());
    let handle = Registry::global()
        .with(probe.options().cancel_on(a.clone()).cancel_on(b.clone()))
        .spawn("cancel_watch", json!({}));
    until("the tool started", || probe.started() == 1).await;
    b.cancel();
    assert_cancelled(&bounded(handle).await.unwrap_err(), None);
    until("the watcher saw it", || probe.token_fired() == 1).await;
    until("the cleanup ran", || probe.cleanups() == 1).await;
    assert!(!a.is_cancelled());
}

// ---------------------------------------------------------------------------------
// The tool's own token.

#[tokio::test]
async fn the_tools_token_is_cancelled_when_the_call_is_aborted() {
    let probe = Probe::default();
    let handle = Registry::global()
        .with(probe.options())
        .spawn("cancel_watch", json!({}));
    until("the tool started", || probe.started() == 1).await;
    settle().await;
    assert_eq!(probe.token_fired(), 0, "nothing cancelled the call yet");
    handle.abort("stop");
    assert_cancelled(&bounded(handle).await.unwrap_err(), Some("stop"));
    until("the watcher saw it", || probe.token_fired() == 1).await;
    assert_eq!(probe.saw_is_cancelled(), 1);
}

#[tokio::test]
async fn aborting_an_outer_call_cancels_its_nested_call() {
    let probe = Probe::default();
    let handle = Registry::global()
        .with(probe.options())
        .spawn("cancel_nested", json!({}));
    until("both tools started", || probe.started() == 2).await;
    handle.abort("outer stopped");
    assert_cancelled(&bounded(handle).await.unwrap_err(), Some("outer stopped"));
    until("the nested watcher saw it", || probe.token_fired() == 1).await;
    until("both cleanups ran", || probe.cleanups() == 2).await;
    settle().await;
    assert_eq!(probe.cleanups(), 2);
}

// ---------------------------------------------------------------------------------
// Dropping the future of `run`.

#[tokio::test]
async fn dropping_the_future_of_run_cancels_the_call_and_cleans_up_once() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    tokio::select! {
        result = runner.run("cancel_watch", json!({})) => panic!("the call ended: {result:?}"),
        () = until("the tool started", || probe.started() == 1) => {}
    }
    // The future is gone: the cleanup ran as it was dropped.
    assert_eq!(probe.cleanups(), 1);
    until("the watcher saw it", || probe.token_fired() == 1).await;
    assert_eq!(probe.saw_is_cancelled(), 1);
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

#[tokio::test]
async fn a_caller_side_timeout_around_run_drops_and_cancels_the_call() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let outcome = timeout(
        Duration::from_millis(100),
        runner.run("cancel_watch", json!({})),
    )
    .await;
    assert!(outcome.is_err(), "the tool never returns: {outcome:?}");
    assert_eq!(probe.started(), 1);
    assert_eq!(probe.cleanups(), 1);
    until("the watcher saw it", || probe.token_fired() == 1).await;
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

// ---------------------------------------------------------------------------------
// Cleanups on every way out.

/// Runs `how` through `cancel_paths` the way `path` says, and returns its outcome.
async fn end_by(path: &str, probe: &Probe) -> Result<Value, ToolError> {
    let runner = Registry::global().with(probe.options());
    let hang = json!({"how": "hang"});
    match path {
        "return" | "error" | "panic" => {
            bounded(runner.run("cancel_paths", json!({"how": path}))).await
        }
        "timeout" => {
            let strict = runner.with(CallOptions::new().timeout(Duration::from_millis(50)));
            bounded(strict.run("cancel_paths", hang)).await
        }
        "abort" => {
            let handle = runner.spawn("cancel_paths", hang);
            until("the tool started", || probe.started() == 1).await;
            handle.abort("aborted");
            bounded(handle).await
        }
        "drop" => {
            tokio::select! {
                result = runner.run("cancel_paths", hang) => result,
                () = until("the tool started", || probe.started() == 1) => {
                    Err(ToolError::cancelled(Some("dropped by the test".into())))
                }
            }
        }
        "sync return" | "sync error" | "sync panic" => {
            let how = path.trim_start_matches("sync ");
            runner.run_sync("cancel_paths_sync", json!({"how": how}))
        }
        other => unreachable!("no path {other}"),
    }
}

#[tokio::test]
async fn every_way_out_runs_the_cleanups_exactly_once() {
    let paths = [
        ("return", None),
        ("error", Some("FAILED")),
        ("panic", Some("PANICKED")),
        ("timeout", Some("TIMEOUT")),
        ("abort", Some("CANCELLED")),
        ("drop", Some("CANCELLED")),
        ("sync return", None),
        ("sync error", Some("FAILED")),
        ("sync panic", Some("PANICKED")),
    ];
    for (path, code) in paths {
        let probe = Probe::default();
        let result = end_by(path, &probe).await;
        assert_eq!(result.as_ref().err().map(ToolError::code), code, "{path}");
        assert_eq!(probe.started(), 1, "{path}");
        until("the cleanup ran", || probe.cleanups() >= 1).await;
        settle().await;
        assert_eq!(
            probe.cleanups(),
            1,
            "{path}: cleanups must run exactly once"
        );
    }
}

#[tokio::test]
async fn cleanups_run_in_reverse_order_and_late_ones_run_at_once() {
    let log = Log::default();
    let runner = Registry::global().with(CallOptions::new().insert(log.clone()));
    assert_eq!(runner.run_sync("cancel_order", json!({})).unwrap(), 3);
    assert_eq!(log.lines(), ["returned", "third", "second", "first"]);

    // A cleanup registered after the call ended runs right away, not never.
    let ctx = log.take_kept().expect("the tool kept its context");
    let late = log.clone();
    ctx.on_cleanup(move || late.push("late"));
    assert_eq!(
        log.lines(),
        ["returned", "third", "second", "first", "late"]
    );
}

#[test]
fn a_panicking_cleanup_does_not_stop_the_others() {
    let log = Log::default();
    let runner = Registry::global().with(CallOptions::new().insert(log.clone()));
    assert_eq!(
        runner.run_sync("cancel_messy_cleanups", json!({})).unwrap(),
        1,
        "the result stands"
    );
    assert_eq!(
        log.lines(),
        ["registers another", "registered while cleaning up", "first"]
    );
}

// ---------------------------------------------------------------------------------
// Sync tools.

#[tokio::test]
async fn a_call_whose_caller_token_is_already_cancelled_does_not_start() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    caller.cancel();
    let runner = Registry::global().with(probe.options().cancel_on(caller));
    let args = json!({"how": "return"});

    assert_cancelled(
        &runner
            .run_sync("cancel_paths_sync", args.clone())
            .unwrap_err(),
        None,
    );
    assert_cancelled(
        &bounded(runner.run("cancel_paths_sync", args.clone()))
            .await
            .unwrap_err(),
        None,
    );
    assert_cancelled(
        &bounded(runner.spawn("cancel_paths_sync", args.clone()))
            .await
            .unwrap_err(),
        None,
    );
    let result =
        bounded(runner.execute(ToolCall::new("c", "cancel_paths_sync", args.clone()))).await;
    assert_cancelled(result.output().unwrap_err(), None);
    // Async tools do not start either.
    assert_cancelled(
        &bounded(runner.run("cancel_paths", args.clone()))
            .await
            .unwrap_err(),
        None,
    );
    assert_cancelled(
        &bounded(runner.spawn("cancel_paths", args))
            .await
            .unwrap_err(),
        None,
    );
    settle().await;
    assert_eq!((probe.started(), probe.cleanups()), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_sync_call_resolves_at_once_and_its_handler_runs_to_its_end() {
    let probe = Probe::default();
    let handle = Registry::global()
        .with(probe.options())
        .spawn("cancel_sync_blocking", json!({}));
    until("the tool started", || probe.started() == 1).await;
    handle.abort("no longer needed");
    // The handle answers while the handler still blocks its thread.
    assert_cancelled(
        &bounded(handle).await.unwrap_err(),
        Some("no longer needed"),
    );
    assert_eq!(probe.finished(), 0);
    probe.release.store(true, Ordering::SeqCst);
    until("the handler ran to its end", || probe.finished() == 1).await;
    until("the cleanup ran", || probe.cleanups() == 1).await;
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_sync_tool_sees_its_token_cancelled_by_one_caller_token() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let handle = Registry::global()
        .with(probe.options().cancel_on(caller.clone()))
        .spawn("cancel_sync_polls_token", json!({}));
    until("the tool started", || probe.started() == 1).await;
    caller.cancel();
    assert_cancelled(&bounded(handle).await.unwrap_err(), None);
    until("the handler ran to its end", || probe.finished() == 1).await;
    // The handler's own verdict is not observable through the handle (which answered
    // CANCELLED); run it again, directly, to read it.
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let runner = Registry::global().with(probe.options().cancel_on(caller.clone()));
    let verdict = std::thread::scope(|s| {
        let call = s.spawn(|| runner.run_sync("cancel_sync_polls_token", json!({})));
        while probe.started() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        caller.cancel();
        call.join().expect("the call did not panic")
    });
    assert_eq!(verdict.unwrap(), true, "the token followed the caller's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_sync_tool_sees_its_token_cancelled_by_any_of_several_caller_tokens() {
    let probe = Probe::default();
    let (a, b) = (CancellationToken::new(), CancellationToken::new());
    let runner = Registry::global().with(probe.options().cancel_on(a).cancel_on(b.clone()));
    let verdict = std::thread::scope(|s| {
        let call = s.spawn(|| runner.run_sync("cancel_sync_polls_token", json!({})));
        while probe.started() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        b.cancel();
        call.join().expect("the call did not panic")
    });
    assert_eq!(
        verdict.unwrap(),
        true,
        "ctx.is_cancelled() was true but ctx.cancellation_token() was not cancelled"
    );
}

// ---------------------------------------------------------------------------------
// No tasks left behind.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_calls_leave_no_tasks_behind() {
    const ROUNDS: usize = 20;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let runner = Registry::global().with(probe.options().cancel_on(caller.clone()));
    for round in 0..ROUNDS {
        // Aborted spawned calls (each also spawns a watcher task).
        let handle = runner.spawn("cancel_watch", json!({}));
        let other = runner.spawn("cancel_sleep", json!({}));
        until("both started", || probe.started() == round * 5 + 2).await;
        handle.abort("leak check");
        other.abort("leak check");
        assert_eq!(bounded(handle).await.unwrap_err().code(), "CANCELLED");
        assert_eq!(bounded(other).await.unwrap_err().code(), "CANCELLED");
        // A dropped `run` future.
        tokio::select! {
            result = runner.run("cancel_watch", json!({})) => panic!("ended: {result:?}"),
            () = until("started", || probe.started() == round * 5 + 3) => {}
        }
        // A timeout, and a spawned call that times out.
        let strict = runner.with(CallOptions::new().timeout(Duration::from_millis(5)));
        let err = bounded(strict.run("cancel_watch", json!({})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), "TIMEOUT");
        let err = bounded(strict.spawn("cancel_paths", json!({"how": "hang"})))
            .await
            .unwrap_err();
        assert!(
            matches!(err.code(), "TIMEOUT" | "CANCELLED"),
            "{err:?} (the code is checked in timeouts.rs)"
        );
    }
    until("every watcher saw its call end", || {
        probe.token_fired() == ROUNDS * 3
    })
    .await;
    until("every cleanup ran", || probe.cleanups() == ROUNDS * 5).await;
    // A caller token fired after the calls ended changes nothing.
    caller.cancel();
    let settled = async {
        while metrics.num_alive_tasks() > before {
            sleep(Duration::from_millis(5)).await;
        }
    };
    assert!(
        timeout(LIMIT, settled).await.is_ok(),
        "tasks left behind: {} alive, {before} before",
        metrics.num_alive_tasks()
    );
    assert_eq!(probe.cleanups(), ROUNDS * 5);
}
