//! Streaming tools: `#[tool]` functions returning `impl Stream`, `run_stream` and
//! `run` over them, errors, panics and timeouts as the last item, backpressure,
//! dropping a stream early, and the `stream::callbacks` lifecycle adaptor.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

#[path = "support/calls.rs"]
mod calls;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::timeout;
use toolfunc::stream::{Callbacks, StreamEnd, callbacks};
use toolfunc::{
    CallOptions, CancellationToken, Ctx, Registry, ToolCall, ToolError, ToolFunc, ToolStream, tool,
};

use calls::{Log, Probe, bounded, definition, settle, until};

/// Counts the start, registers a counting cleanup and watches the call's token (until
/// `LIMIT`).
fn arm(ctx: &Ctx) -> Probe {
    let probe = calls::arm(ctx);
    probe.watch_token(ctx);
    probe
}

/// One item of `st_ticks`.
#[derive(Serialize, schemars::JsonSchema)]
struct Tick {
    n: u32,
    label: String,
}

/// Counts from 0 up to `n` (excluded), from a sync function.
#[tool]
fn st_count(n: u32) -> impl Stream<Item = u32> {
    futures::stream::iter(0..n)
}

/// Counts from 0 up to `n` (excluded), from an async function, yielding between items.
#[tool]
async fn st_count_async(ctx: Ctx, n: u32) -> impl Stream<Item = Result<u32, ToolError>> {
    arm(&ctx);
    tokio::task::yield_now().await;
    futures::stream::iter(0..n).then(|i| async move {
        tokio::task::yield_now().await;
        Ok(i)
    })
}

/// Structured items.
#[tool]
fn st_ticks(n: u32) -> impl Stream<Item = Tick> {
    futures::stream::iter(0..n).map(|n| Tick {
        n,
        label: format!("tick {n}"),
    })
}

/// Yields 0..5 but item `at` is an application error with its own code.
#[tool]
fn st_fail_at(ctx: Ctx, at: u32) -> impl Stream<Item = Result<u32, ToolError>> {
    arm(&ctx);
    futures::stream::iter(0..5).map(move |i| {
        if i == at {
            Err(ToolError::custom(
                "ST_BROKEN",
                422,
                format!("broken at {i}"),
            ))
        } else {
            Ok(i)
        }
    })
}

/// Yields 0..5 but item `at` is a plain `String` error.
#[tool]
fn st_fail_display(at: u32) -> impl Stream<Item = Result<u32, String>> {
    futures::stream::iter(0..5).map(move |i| {
        if i == at {
            Err(format!("bad item {i}"))
        } else {
            Ok(i)
        }
    })
}

/// Fails to open its stream when asked to.
#[tool]
fn st_open(ctx: Ctx, fail: bool) -> Result<impl Stream<Item = u32>, ToolError> {
    arm(&ctx);
    if fail {
        return Err(ToolError::custom("ST_CLOSED", 503, "the source is closed"));
    }
    Ok(futures::stream::iter(0..2))
}

/// A stream type of the caller's own naming: `#[tool(stream)]` says it is one.
type Evens = futures::stream::BoxStream<'static, u32>;

/// The even numbers below `n`, as a named stream type.
#[tool(stream)]
fn st_named(n: u32) -> Evens {
    futures::stream::iter((0..n).filter(|i| i % 2 == 0)).boxed()
}

/// The even numbers below `n`, or a refusal to open the stream past 100.
#[tool(stream)]
fn st_named_open(n: u32) -> Result<Evens, String> {
    if n > 100 {
        return Err(format!("{n} is too many"));
    }
    Ok(futures::stream::iter((0..n).filter(|i| i % 2 == 0)).boxed())
}

/// Produces items forever, only as fast as they are consumed, counting each.
#[tool]
fn st_endless(ctx: Ctx) -> impl Stream<Item = u64> {
    let probe = arm(&ctx);
    futures::stream::unfold(0_u64, move |n| {
        probe.produced.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Some((n, n + 1)))
    })
}

/// Produces items from a spawned task into a channel of one slot; the task stops when
/// the call's token is cancelled.
#[tool]
async fn st_channel(ctx: Ctx) -> impl Stream<Item = u64> {
    let probe = arm(&ctx);
    // Opening may wait, as a real source would (connecting, say).
    tokio::task::yield_now().await;
    let token = ctx.cancellation_token();
    let (tx, rx) = tokio::sync::mpsc::channel::<u64>(1);
    tokio::spawn(async move {
        let mut n = 0;
        loop {
            tokio::select! {
                () = token.cancelled() => break,
                sent = tx.send(n) => {
                    if sent.is_err() {
                        break;
                    }
                    probe.produced.fetch_add(1, Ordering::SeqCst);
                    n += 1;
                }
            }
        }
        probe.stopped.store(true, Ordering::SeqCst);
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|n| (n, rx)) })
}

/// Answers 42 without streaming.
#[tool]
fn st_plain() -> u32 {
    42
}

/// Fails without streaming.
#[tool]
fn st_plain_fail() -> Result<u32, String> {
    Err("plain failure".into())
}

/// Never answers, as a plain async tool.
#[tool]
async fn st_plain_hang(ctx: &Ctx) -> u32 {
    arm(ctx);
    std::future::pending().await
}

/// Says whether it was asked for a stream, as a streaming tool.
#[tool]
fn st_mode(ctx: Ctx) -> impl Stream<Item = bool> {
    futures::stream::once(std::future::ready(ctx.is_stream()))
}

/// Says whether it was asked for a stream, as a plain tool.
#[tool]
fn st_mode_plain(ctx: &Ctx) -> bool {
    ctx.is_stream()
}

/// Panics while producing its second item.
#[tool]
fn st_panic(ctx: Ctx) -> impl Stream<Item = u32> {
    arm(&ctx);
    futures::stream::iter(0..3).map(|i| {
        assert!(i != 1, "item boom");
        i
    })
}

/// Panics before its stream exists, when asked to.
#[tool]
async fn st_panic_open(ctx: Ctx, boom: bool) -> impl Stream<Item = u32> {
    arm(&ctx);
    tokio::task::yield_now().await;
    assert!(!boom, "open boom");
    futures::stream::empty()
}

/// Consumes a nested stream item by item and reports what it saw.
#[tool]
async fn st_nested_consumer(ctx: &Ctx, n: u32) -> Result<Value, ToolError> {
    let runner = ctx.with(CallOptions::new());
    let mut items = runner.run_stream("st_count_async", json!({"n": n}));
    let mut seen = Vec::new();
    while let Some(item) = items.next().await {
        seen.push(item?);
    }
    let modes = runner.run_stream("st_mode", json!({})).next().await;
    Ok(json!({"seen": seen, "nested_is_stream": modes.transpose()?}))
}

/// Yields one item, then nothing for ever; its own timeout is 200 ms.
#[tool(timeout = "200ms")]
fn st_slow(ctx: Ctx) -> impl Stream<Item = u32> {
    arm(&ctx);
    futures::stream::once(std::future::ready(0)).chain(futures::stream::pending())
}

/// Every item of a stream, bounded; then checks it stays ended.
async fn drain(mut stream: ToolStream) -> Vec<Result<Value, ToolError>> {
    let mut items = Vec::new();
    while let Some(item) = bounded(stream.next()).await {
        items.push(item);
    }
    assert!(
        bounded(stream.next()).await.is_none(),
        "an ended stream stays ended"
    );
    items
}

/// The `Ok` values, and the code of the error that ended the stream, if any.
fn split(items: &[Result<Value, ToolError>]) -> (Vec<Value>, Option<String>) {
    let mut values = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(v) => values.push(v.clone()),
            Err(err) => {
                assert_eq!(i, items.len() - 1, "an error is the last item: {items:?}");
                return (values, Some(err.code().to_owned()));
            }
        }
    }
    (values, None)
}

// ---------------------------------------------------------------------------------
// Definitions.

#[test]
fn a_streaming_tool_says_so_and_its_result_schema_is_the_items() {
    let uint32 = json!({"type": "integer", "format": "uint32", "minimum": 0});
    assert_eq!(
        definition("st_count"),
        json!({
            "name": "st_count",
            "description": "Counts from 0 up to `n` (excluded), from a sync function.",
            "params": {
                "type": "object",
                "properties": {"n": uint32},
                "required": ["n"]
            },
            "result": uint32,
            "stream": true
        })
    );
    // `Result` items: the schema is the `Ok` type's.
    assert_eq!(definition("st_count_async")["result"], uint32);
    assert_eq!(definition("st_count_async")["stream"], true);
    assert_eq!(definition("st_open")["result"], uint32);
    assert_eq!(
        definition("st_ticks")["result"],
        json!({
            "description": "One item of `st_ticks`.",
            "type": "object",
            "properties": {
                "n": uint32,
                "label": {"type": "string"}
            },
            "required": ["n", "label"]
        })
    );
    let tool = Registry::global().get("st_count").unwrap();
    assert!(tool.is_stream());
    assert!(
        tool.is_async(),
        "a streaming tool does not run synchronously"
    );
    assert!(tool.definition().stream);
    // A plain tool has no `stream` key.
    assert!(definition("st_plain").get("stream").is_none());
    assert!(!Registry::global().get("st_plain").unwrap().is_stream());
}

// ---------------------------------------------------------------------------------
// `run` and `run_stream`.

#[tokio::test]
async fn run_collects_the_items_into_an_array() {
    let registry = Registry::global();
    assert_eq!(
        bounded(registry.run("st_count", json!({"n": 4})))
            .await
            .unwrap(),
        json!([0, 1, 2, 3])
    );
    assert_eq!(
        bounded(registry.run("st_count_async", json!({"n": 3})))
            .await
            .unwrap(),
        json!([0, 1, 2])
    );
    assert_eq!(
        bounded(registry.run("st_count", json!({"n": 0})))
            .await
            .unwrap(),
        json!([])
    );
    assert_eq!(
        bounded(registry.run("st_ticks", json!({"n": 2})))
            .await
            .unwrap(),
        json!([{"n": 0, "label": "tick 0"}, {"n": 1, "label": "tick 1"}])
    );
    // Every way of running a tool for one value collects.
    assert_eq!(
        bounded(registry.spawn("st_count_async", json!({"n": 2})))
            .await
            .unwrap(),
        json!([0, 1])
    );
    let result = bounded(registry.execute(ToolCall::new("s", "st_count", json!({"n": 2})))).await;
    assert_eq!(result.into_output().unwrap(), json!([0, 1]));
    assert_eq!(
        bounded(registry.run("st_count", vec![json!(3)]))
            .await
            .unwrap(),
        json!([0, 1, 2])
    );
    let err = registry.run_sync("st_count", json!({"n": 1})).unwrap_err();
    assert_eq!(err.code(), "ASYNC_ONLY");
    // Arguments are checked as for any tool.
    let err = bounded(registry.run("st_count", json!({"n": "x"})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
}

#[tokio::test]
async fn run_stream_yields_the_items_in_order() {
    let registry = Registry::global();
    for name in ["st_count", "st_count_async"] {
        let items = drain(registry.run_stream(name, json!({"n": 5}))).await;
        let (values, error) = split(&items);
        assert_eq!(values, [0, 1, 2, 3, 4], "{name}");
        assert_eq!(error, None, "{name}");
    }
    let items = drain(registry.run_stream("st_count", json!({"n": 0}))).await;
    assert!(items.is_empty());
    let items = drain(registry.run_stream("st_count", json!({"n": -1}))).await;
    assert_eq!(split(&items), (vec![], Some("ARGUMENTS".into())));
}

#[tokio::test]
async fn run_stream_goes_through_a_runner_with_its_context() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let items = drain(runner.run_stream("st_count_async", json!({"n": 2}))).await;
    assert_eq!(split(&items), (vec![json!(0), json!(1)], None));
    assert_eq!(probe.cleanups(), 1, "the tool found the runner's probe");
}

#[tokio::test]
async fn a_tool_can_consume_a_nested_stream() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let out = bounded(runner.run("st_nested_consumer", json!({"n": 3})))
        .await
        .unwrap();
    assert_eq!(out, json!({"seen": [0, 1, 2], "nested_is_stream": true}));
    assert_eq!(probe.cleanups(), 1, "the nested call inherited the probe");
}

// ---------------------------------------------------------------------------------
// Errors.

#[tokio::test]
async fn an_error_item_ends_the_stream_and_keeps_its_code() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let items = drain(runner.run_stream("st_fail_at", json!({"at": 2}))).await;
    assert_eq!(items.len(), 3, "nothing after the error: {items:?}");
    let (values, _) = split(&items);
    assert_eq!(values, [0, 1]);
    let err = items[2].as_ref().unwrap_err();
    assert!(
        matches!(err, ToolError::Custom { code, status: 422, message, .. }
            if code == "ST_BROKEN" && message == "broken at 2"),
        "{err:?}"
    );
    assert_eq!(probe.cleanups(), 1);

    // `run` gives the same error.
    let err = bounded(runner.run("st_fail_at", json!({"at": 0})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ST_BROKEN");
    assert_eq!(probe.cleanups(), 2);

    // Any other error type becomes FAILED with its message.
    let items = drain(runner.run_stream("st_fail_display", json!({"at": 1}))).await;
    assert_eq!(items.len(), 2);
    assert!(
        matches!(&items[1], Err(ToolError::Failed { message, .. }) if message == "bad item 1"),
        "{items:?}"
    );
}

#[tokio::test]
async fn an_error_opening_the_stream_is_the_first_and_only_item() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let items = drain(runner.run_stream("st_open", json!({"fail": true}))).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let err = items[0].as_ref().unwrap_err();
    assert_eq!((err.code(), err.status()), ("ST_CLOSED", 503));
    assert_eq!(err.to_string(), "the source is closed");
    assert_eq!(probe.cleanups(), 1);

    let err = bounded(runner.run("st_open", json!({"fail": true})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ST_CLOSED");
    let items = drain(runner.run_stream("st_open", json!({"fail": false}))).await;
    assert_eq!(split(&items), (vec![json!(0), json!(1)], None));
    assert_eq!(probe.cleanups(), 3);
}

#[tokio::test]
async fn a_named_stream_type_streams_and_so_does_a_result_of_one() {
    let uint32 = json!({"type": "integer", "format": "uint32", "minimum": 0});
    for name in ["st_named", "st_named_open"] {
        assert_eq!(definition(name)["stream"], true, "{name}");
        assert_eq!(definition(name)["result"], uint32, "{name}");
        let items = drain(Registry::global().run_stream(name, json!({"n": 5}))).await;
        assert_eq!(
            split(&items),
            (vec![json!(0), json!(2), json!(4)], None),
            "{name}"
        );
    }
    let items = drain(Registry::global().run_stream("st_named_open", json!({"n": 101}))).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(
        (err.code(), err.to_string()),
        ("FAILED", "101 is too many".into())
    );
}

#[tokio::test]
async fn an_unknown_tool_yields_not_found_once() {
    let items = drain(Registry::global().run_stream("st_no_such_tool", json!({}))).await;
    assert_eq!(items.len(), 1);
    let err = items[0].as_ref().unwrap_err();
    assert!(
        matches!(err, ToolError::NotFound { name, .. } if name == "st_no_such_tool"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_panicking_item_is_panicked_and_ends_the_stream() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let items = drain(runner.run_stream("st_panic", json!({}))).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap(), &json!(0));
    assert!(
        matches!(&items[1], Err(ToolError::Panicked { message }) if message == "item boom"),
        "{items:?}"
    );
    assert_eq!(probe.cleanups(), 1);

    let err = bounded(runner.run("st_panic", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PANICKED");
    assert_eq!(probe.cleanups(), 2);

    // A panic before the stream exists.
    let items = drain(runner.run_stream("st_panic_open", json!({"boom": true}))).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(
        matches!(&items[0], Err(ToolError::Panicked { message }) if message == "open boom"),
        "{items:?}"
    );
    assert_eq!(probe.cleanups(), 3);
    settle().await;
    assert_eq!(probe.cleanups(), 3);
}

#[tokio::test]
async fn a_timeout_on_a_slow_stream_is_the_last_item() {
    assert_eq!(definition("st_slow")["timeout"], 200);
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let items = drain(runner.run_stream("st_slow", json!({}))).await;
    let (values, error) = split(&items);
    // The first item is ready at once, but a very slow machine may reach the
    // deadline before the first poll.
    assert!(values.len() <= 1, "{items:?}");
    assert_eq!(error.as_deref(), Some("TIMEOUT"), "{items:?}");
    assert!(
        matches!(
            items.last(),
            Some(Err(ToolError::Timeout {
                after_ms: Some(200)
            }))
        ),
        "{items:?}"
    );
    assert_eq!(probe.cleanups(), 1);
    until("the tool's token fired", || probe.token_fired() == 1).await;

    // A caller's shorter timeout applies to the whole stream too.
    let strict = runner.with(CallOptions::new().timeout(Duration::from_millis(50)));
    let items = drain(strict.run_stream("st_channel", json!({}))).await;
    // The producer never runs dry, so only the timeout can end this stream.
    assert!(
        matches!(
            items.last(),
            Some(Err(ToolError::Timeout { after_ms: Some(50) }))
        ),
        "{:?}",
        items.last()
    );
    until("the producer stopped", || probe.stopped()).await;
}

#[tokio::test]
async fn a_caller_token_ends_a_stream_with_cancelled() {
    let probe = Probe::default();
    let caller = CancellationToken::new();
    let runner = Registry::global().with(probe.options().cancel_on(caller.clone()));
    let mut stream = runner.run_stream("st_endless", json!({}));
    for want in 0..2 {
        assert_eq!(bounded(stream.next()).await.unwrap().unwrap(), want);
    }
    caller.cancel();
    let err = bounded(stream.next()).await.unwrap().unwrap_err();
    assert!(
        matches!(err, ToolError::Cancelled { reason: None }),
        "{err:?}"
    );
    assert!(bounded(stream.next()).await.is_none());
    assert_eq!(probe.cleanups(), 1);
    until("the tool's token fired", || probe.token_fired() == 1).await;
}

// ---------------------------------------------------------------------------------
// Backpressure and dropping early.

#[tokio::test]
async fn items_are_produced_only_as_they_are_consumed() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut stream = runner.run_stream("st_endless", json!({}));
    settle().await;
    assert_eq!(
        probe.produced(),
        0,
        "nothing is produced before the first poll"
    );
    for want in 0..3 {
        assert_eq!(bounded(stream.next()).await.unwrap().unwrap(), want);
    }
    let produced = probe.produced();
    assert!(
        (3..=5).contains(&produced),
        "produced {produced} for 3 taken"
    );
    settle().await;
    assert_eq!(
        probe.produced(),
        produced,
        "an idle consumer gets no more items"
    );

    drop(stream);
    assert_eq!(probe.cleanups(), 1, "dropping the stream ran the cleanup");
    until("the tool's token fired", || probe.token_fired() == 1).await;
    settle().await;
    assert_eq!(probe.produced(), produced, "the producer stopped");
    assert_eq!(probe.cleanups(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_producer_waits_for_the_consumer_and_stops_when_dropped() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut stream = runner.run_stream("st_channel", json!({}));
    for want in 0..3 {
        assert_eq!(bounded(stream.next()).await.unwrap().unwrap(), want);
    }
    settle().await;
    // Three taken, one in the channel's slot, one maybe on its way.
    let produced = probe.produced();
    assert!(
        (3..=5).contains(&produced),
        "produced {produced} for 3 taken"
    );
    assert!(!probe.stopped());

    drop(stream);
    assert_eq!(probe.cleanups(), 1);
    until("the producer stopped", || probe.stopped()).await;
    let at_stop = probe.produced();
    assert!(at_stop <= produced + 1, "{at_stop} after {produced}");
    settle().await;
    assert_eq!(probe.produced(), at_stop);
    assert_eq!(probe.cleanups(), 1);
}

#[tokio::test]
async fn dropping_a_stream_at_any_point_runs_the_cleanup_once() {
    // Never polled: the tool never ran, so it registered nothing.
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    drop(runner.run_stream("st_endless", json!({})));
    settle().await;
    assert_eq!((probe.cleanups(), probe.produced()), (0, 0));

    // Dropped after its end: the cleanup ran at the end, not again.
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut stream = runner.run_stream("st_count_async", json!({"n": 2}));
    while bounded(stream.next()).await.is_some() {}
    assert_eq!(probe.cleanups(), 1);
    drop(stream);
    settle().await;
    assert_eq!(probe.cleanups(), 1);

    // Dropped after one item.
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut stream = runner.run_stream("st_count_async", json!({"n": 10}));
    assert_eq!(bounded(stream.next()).await.unwrap().unwrap(), 0);
    assert_eq!(probe.cleanups(), 0);
    drop(stream);
    assert_eq!(probe.cleanups(), 1);
    until("the tool's token fired", || probe.token_fired() == 1).await;
    settle().await;
    assert_eq!(probe.cleanups(), 1);
}

// ---------------------------------------------------------------------------------
// Non-streaming tools and `is_stream`.

#[tokio::test]
async fn run_stream_on_a_plain_tool_yields_its_one_result() {
    let registry = Registry::global();
    let items = drain(registry.run_stream("st_plain", json!({}))).await;
    assert_eq!(split(&items), (vec![json!(42)], None));
    let items = drain(registry.run_stream("st_plain_fail", json!({}))).await;
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], Err(ToolError::Failed { message, .. }) if message == "plain failure"),
        "{items:?}"
    );
}

#[tokio::test]
async fn dropping_the_stream_of_a_plain_tool_cancels_it() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());
    let mut stream = runner.run_stream("st_plain_hang", json!({}));
    let waited = timeout(Duration::from_millis(100), stream.next()).await;
    assert!(waited.is_err(), "the tool never answers: {waited:?}");
    assert_eq!(probe.cleanups(), 0);
    drop(stream);
    assert_eq!(probe.cleanups(), 1);
    until("the tool's token fired", || probe.token_fired() == 1).await;

    // And a timeout is its one item.
    let strict = runner.with(CallOptions::new().timeout(Duration::from_millis(50)));
    let items = drain(strict.run_stream("st_plain_hang", json!({}))).await;
    assert!(
        matches!(
            items.as_slice(),
            [Err(ToolError::Timeout { after_ms: Some(50) })]
        ),
        "{items:?}"
    );
    assert_eq!(probe.cleanups(), 2);
}

#[tokio::test]
async fn ctx_is_stream_tells_how_the_tool_was_called() {
    let registry = Registry::global();
    let items = drain(registry.run_stream("st_mode", json!({}))).await;
    assert_eq!(split(&items), (vec![json!(true)], None));
    assert_eq!(
        bounded(registry.run("st_mode", json!({}))).await.unwrap(),
        json!([false])
    );
    let items = drain(registry.run_stream("st_mode_plain", json!({}))).await;
    assert_eq!(split(&items), (vec![json!(true)], None));
    assert_eq!(
        bounded(registry.run("st_mode_plain", json!({})))
            .await
            .unwrap(),
        json!(false)
    );
    assert_eq!(
        registry.run_sync("st_mode_plain", json!({})).unwrap(),
        json!(false)
    );
}

#[tokio::test]
async fn a_builder_stream_handler_streams_too() {
    let tool = ToolFunc::builder("countdown")
        .params_schema(json!({"type": "object", "properties": {"from": {"type": "integer"}}}))
        .result_schema(json!({"type": "integer"}))
        .stream_handler(|ctx, args: Value| async move {
            let from = args["from"].as_u64().unwrap_or(3);
            let streamed = ctx.is_stream();
            Ok(futures::stream::iter((0..=from).rev())
                .map(move |n| Ok::<_, ToolError>(json!({"n": n, "streamed": streamed}))))
        })
        .build()
        .unwrap();
    assert!(tool.definition().stream);
    assert_eq!(tool.definition().result, Some(json!({"type": "integer"})));
    let registry = Registry::new();
    registry.register(tool).unwrap();

    let items = drain(registry.run_stream("countdown", json!({"from": 2}))).await;
    assert_eq!(
        split(&items),
        (
            vec![
                json!({"n": 2, "streamed": true}),
                json!({"n": 1, "streamed": true}),
                json!({"n": 0, "streamed": true})
            ],
            None
        )
    );
    assert_eq!(
        bounded(registry.run("countdown", json!({"from": 1})))
            .await
            .unwrap(),
        json!([{"n": 1, "streamed": false}, {"n": 0, "streamed": false}])
    );
    let items = drain(registry.run_stream("countdown", json!({"from": "x"}))).await;
    assert_eq!(split(&items), (vec![], Some("ARGUMENTS".into())));
}

// ---------------------------------------------------------------------------------
// `stream::callbacks`.

/// `stream` with every hook logging; `on_item` multiplies by ten.
fn hooked<S>(stream: S, log: &Log) -> Callbacks<S, i32, String>
where
    S: Stream<Item = Result<i32, String>>,
{
    let (start, item, fin, error, cancel, close) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    callbacks(stream)
        .on_start(move || start.push("start"))
        .on_item(move |x| {
            item.push(format!("item {x}"));
            x * 10
        })
        .on_final(move || fin.push("final"))
        .on_error(move |e: &String| error.push(format!("error {e}")))
        .on_cancel(move || cancel.push("cancel"))
        .on_close(move |end| close.push(format!("close {end:?}")))
}

#[tokio::test]
async fn callbacks_on_a_stream_that_runs_to_its_end() {
    let log = Log::default();
    let mut stream = hooked(futures::stream::iter([Ok(1), Ok(2), Ok(3)]), &log);
    assert!(log.lines().is_empty(), "nothing runs before the first poll");
    let mut items = Vec::new();
    while let Some(item) = bounded(stream.next()).await {
        items.push(item);
    }
    assert_eq!(items, [Ok(10), Ok(20), Ok(30)]);
    let want = [
        "start",
        "item 1",
        "item 2",
        "item 3",
        "final",
        "close Final",
    ];
    assert_eq!(log.lines(), want);
    // Polling an ended stream and dropping it run nothing more.
    assert_eq!(bounded(stream.next()).await, None);
    drop(stream);
    assert_eq!(log.lines(), want);
}

#[tokio::test]
async fn callbacks_on_a_stream_that_fails() {
    let log = Log::default();
    let inner = futures::stream::iter([Ok(1), Err("bad".to_owned()), Ok(3)]);
    let mut stream = hooked(inner, &log);
    let mut items = Vec::new();
    while let Some(item) = bounded(stream.next()).await {
        items.push(item);
    }
    assert_eq!(items, [Ok(10), Err("bad".to_owned())], "the error ends it");
    let want = ["start", "item 1", "error bad", "close Error(\"bad\")"];
    assert_eq!(log.lines(), want);
    assert_eq!(bounded(stream.next()).await, None);
    drop(stream);
    assert_eq!(log.lines(), want, "no cancel after an error");
}

#[tokio::test]
async fn callbacks_on_a_stream_dropped_early() {
    let log = Log::default();
    let mut stream = hooked(futures::stream::repeat(Ok(7)), &log);
    assert_eq!(bounded(stream.next()).await, Some(Ok(70)));
    assert_eq!(bounded(stream.next()).await, Some(Ok(70)));
    drop(stream);
    assert_eq!(
        log.lines(),
        ["start", "item 7", "item 7", "cancel", "close Cancel"]
    );

    // Dropped before its first poll: it never started, but it still closes once.
    let log = Log::default();
    drop(hooked(futures::stream::repeat(Ok(7)), &log));
    assert_eq!(log.lines(), ["cancel", "close Cancel"]);
}

#[tokio::test]
async fn callbacks_without_on_item_pass_items_through() {
    let ends = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ends);
    let stream =
        callbacks(futures::stream::iter([Ok::<_, String>(1), Ok(2)])).on_close(move |end| {
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(end == StreamEnd::Final);
        });
    let items: Vec<_> = bounded(stream.collect::<Vec<_>>()).await;
    assert_eq!(items, [Ok(1), Ok(2)]);
    assert_eq!(*ends.lock().unwrap_or_else(PoisonError::into_inner), [true]);
}

/// A tool stream with hooks that log `Value` items and how it ended.
fn hooked_tool_stream(stream: ToolStream, log: &Log) -> Callbacks<ToolStream, Value, ToolError> {
    let (start, item, fin, error, cancel, close) = (
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
        log.clone(),
    );
    callbacks(stream)
        .on_start(move || start.push("start"))
        .on_item(move |v: Value| {
            item.push(format!("item {v}"));
            json!({"wrapped": v})
        })
        .on_final(move || fin.push("final"))
        .on_error(move |e: &ToolError| error.push(format!("error {}", e.code())))
        .on_cancel(move || cancel.push("cancel"))
        .on_close(move |end| {
            close.push(match end {
                StreamEnd::Error(err) => format!("close Error {}", err.code()),
                StreamEnd::Cancel => format!("close Cancel: {}", end.reason().unwrap_or("-")),
                StreamEnd::Final => "close Final".to_owned(),
            });
        })
}

#[tokio::test]
async fn callbacks_over_tool_streams() {
    let probe = Probe::default();
    let runner = Registry::global().with(probe.options());

    // To the end.
    let log = Log::default();
    let stream = hooked_tool_stream(runner.run_stream("st_count", json!({"n": 2})), &log);
    let items: Vec<_> = bounded(stream.collect::<Vec<_>>()).await;
    let values: Vec<Value> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(values, [json!({"wrapped": 0}), json!({"wrapped": 1})]);
    assert_eq!(
        log.lines(),
        ["start", "item 0", "item 1", "final", "close Final"]
    );

    // An error item.
    let log = Log::default();
    let stream = hooked_tool_stream(runner.run_stream("st_fail_at", json!({"at": 1})), &log);
    let items: Vec<_> = bounded(stream.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        log.lines(),
        [
            "start",
            "item 0",
            "error ST_BROKEN",
            "close Error ST_BROKEN"
        ]
    );
    assert_eq!(probe.cleanups(), 1);

    // Dropped early: the hooks close with Cancel and the tool's cleanup runs once.
    let log = Log::default();
    let mut stream = hooked_tool_stream(runner.run_stream("st_endless", json!({})), &log);
    assert_eq!(
        bounded(stream.next()).await.unwrap().unwrap(),
        json!({"wrapped": 0})
    );
    drop(stream);
    assert_eq!(
        log.lines(),
        [
            "start",
            "item 0",
            "cancel",
            "close Cancel: dropped by the consumer"
        ]
    );
    assert_eq!(probe.cleanups(), 2);
    settle().await;
    assert_eq!(probe.cleanups(), 2);
}

#[tokio::test]
async fn a_closed_tool_stream_says_why_it_was_cancelled() {
    let stop = CancellationToken::new();
    let why = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&why);
    let runner = Registry::global().with(CallOptions::new().cancel_on(stop.clone()));
    let mut stream = callbacks(runner.run_stream("st_endless", json!({}))).on_close(move |end| {
        *seen.lock().unwrap_or_else(PoisonError::into_inner) = Some((
            matches!(end, StreamEnd::Error(_)),
            end.reason().map(str::to_owned),
        ));
    });
    assert!(bounded(stream.next()).await.unwrap().is_ok());
    stop.cancel();
    while bounded(stream.next()).await.is_some() {}
    assert_eq!(
        *why.lock().unwrap_or_else(PoisonError::into_inner),
        Some((true, Some("cancelled".to_owned())))
    );
}
