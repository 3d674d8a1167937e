//! `ToolCall`, `Registry::execute` and `Registry::execute_batch`: correlated calls,
//! per-call error isolation, concurrency, panics, and the wire form of results.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::{sleep, timeout};
use toolfunc::{Ctx, Registry, ToolCall, ToolError, ToolFunc, ToolResult, tool};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(10);

/// Adds two integers.
#[tool]
fn exec_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Always fails.
#[tool]
fn exec_fail() -> Result<i64, String> {
    Err("nope".into())
}

/// Panics, synchronously.
#[tool]
fn exec_panic_sync() -> i64 {
    panic!("sync boom")
}

/// Panics, asynchronously.
#[tool]
async fn exec_panic_async(after_yield: bool) -> i64 {
    if after_yield {
        tokio::task::yield_now().await;
    }
    panic!("async boom")
}

/// Calls another tool through its context.
#[tool]
async fn exec_nested(ctx: &Ctx, a: i64) -> Result<Value, ToolError> {
    ctx.run("exec_add", json!({"a": a, "b": a})).await
}

/// A barrier (tokio's `sync` feature is not enabled here): `wait` returns once
/// `parties` callers have arrived, or fails after `LIMIT`.
struct Barrier {
    parties: usize,
    arrived: AtomicUsize,
}

impl Barrier {
    fn new(parties: usize) -> Self {
        Self {
            parties,
            arrived: AtomicUsize::new(0),
        }
    }

    async fn wait(&self) -> Result<(), ToolError> {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let all_arrived = async {
            while self.arrived.load(Ordering::SeqCst) < self.parties {
                sleep(Duration::from_millis(1)).await;
            }
        };
        timeout(LIMIT, all_arrived)
            .await
            .map_err(|_| ToolError::failed("not every call was in flight"))
    }
}

static RENDEZVOUS: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));

/// Waits until another call reaches the same point.
#[tool]
async fn exec_rendezvous(label: String) -> Result<String, ToolError> {
    RENDEZVOUS.wait().await?;
    Ok(label)
}

/// The output of a successful call (`None` for an error).
fn out(result: &ToolResult) -> Option<&Value> {
    result.output().ok()
}

// ---------------------------------------------------------------------------------
// One call.

#[tokio::test]
async fn execute_one_call() {
    let registry = Registry::global();
    let call = ToolCall::new("c1", "exec_add", json!({"a": 1, "b": 2}));
    assert_eq!((call.id.as_str(), call.name.as_str()), ("c1", "exec_add"));
    assert_eq!(call.arguments, json!({"a": 1, "b": 2}));
    let result = registry.execute(call).await;
    assert_eq!(result.id(), "c1");
    assert_eq!(result.name(), "exec_add");
    assert!(result.is_ok());
    assert_eq!(out(&result), Some(&json!(3)));

    let result = registry
        .execute(ToolCall::new("c2", "exec_fail", Value::Null))
        .await;
    assert_eq!(result.id(), "c2");
    assert!(!result.is_ok());
    let err = result.into_output().unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed { message, .. } if message == "nope"),
        "{err:?}"
    );

    let result = registry
        .execute(ToolCall::new("c3", "exec_nested", json!({"a": 4})))
        .await;
    assert_eq!(out(&result), Some(&json!(8)));
}

// ---------------------------------------------------------------------------------
// Batches.

#[tokio::test]
async fn batch_preserves_order_and_isolates_failures() {
    let registry = Registry::global();
    let calls = vec![
        ToolCall::new("1", "exec_add", json!({"a": 1, "b": 1})),
        ToolCall::new("2", "exec_fail", json!({})),
        ToolCall::new("3", "no_such_tool", json!({})),
        ToolCall::new("4", "exec_panic_sync", json!({})),
        ToolCall::new("5", "exec_panic_async", json!({"after_yield": true})),
        ToolCall::new("6", "exec_add", json!({"a": "x"})),
        ToolCall::new("7", "exec_add", json!({"a": 2, "b": 2})),
        ToolCall::new("8", "exec_nested", json!({"a": 5})),
    ];
    let results = timeout(LIMIT, registry.execute_batch(calls))
        .await
        .expect("the batch finishes");
    let ids: Vec<&str> = results.iter().map(ToolResult::id).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6", "7", "8"]);
    let codes: Vec<Option<&str>> = results
        .iter()
        .map(|r| r.output().err().map(ToolError::code))
        .collect();
    assert_eq!(
        codes,
        [
            None,
            Some("FAILED"),
            Some("NOT_FOUND"),
            Some("PANICKED"),
            Some("PANICKED"),
            Some("ARGUMENTS"),
            None,
            None
        ]
    );
    assert_eq!(out(&results[0]), Some(&json!(2)));
    assert_eq!(out(&results[6]), Some(&json!(4)));
    assert_eq!(out(&results[7]), Some(&json!(10)));
    assert_eq!(results[2].name(), "no_such_tool");
}

#[tokio::test]
async fn an_empty_batch_gives_no_results() {
    let results = Registry::global().execute_batch(Vec::new()).await;
    assert!(results.is_empty());
}

#[tokio::test]
async fn batch_calls_run_concurrently() {
    // Each call waits until the other has started: this only finishes if both are
    // in flight together.
    let calls = vec![
        ToolCall::new("left", "exec_rendezvous", json!({"label": "L"})),
        ToolCall::new("right", "exec_rendezvous", json!({"label": "R"})),
    ];
    let results = timeout(LIMIT * 2, Registry::global().execute_batch(calls))
        .await
        .expect("the batch finishes");
    assert_eq!(out(&results[0]), Some(&json!("L")));
    assert_eq!(out(&results[1]), Some(&json!("R")));
}

#[tokio::test]
async fn batch_calls_run_concurrently_with_builder_tools() {
    let barrier = Arc::new(Barrier::new(3));
    let registry = Registry::new();
    for name in ["meet_a", "meet_b", "meet_c"] {
        let barrier = Arc::clone(&barrier);
        let tool = ToolFunc::builder(name)
            .handler(move |ctx, _args| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await?;
                    Ok(json!({"tool": ctx.tool_name(), "call": ctx.call_id()}))
                }
            })
            .build()
            .unwrap();
        registry.register(tool).unwrap();
    }
    let calls = ["meet_c", "meet_a", "meet_b"]
        .into_iter()
        .enumerate()
        .map(|(i, name)| ToolCall::new(i.to_string(), name, Value::Null));
    let results = timeout(LIMIT * 2, registry.execute_batch(calls))
        .await
        .expect("the batch finishes");
    let outputs: Vec<Value> = results
        .into_iter()
        .map(|r| r.into_output().unwrap())
        .collect();
    assert_eq!(
        outputs,
        [
            json!({"tool": "meet_c", "call": "0"}),
            json!({"tool": "meet_a", "call": "1"}),
            json!({"tool": "meet_b", "call": "2"}),
        ]
    );
}

// ---------------------------------------------------------------------------------
// Panics.

fn is_panicked(err: &ToolError, text: &str) -> bool {
    matches!(err, ToolError::Panicked { message } if message == text)
}

#[tokio::test]
async fn a_panicking_sync_tool_is_panicked_and_the_registry_still_works() {
    let registry = Registry::global();
    let err = registry
        .run_sync("exec_panic_sync", Value::Null)
        .unwrap_err();
    assert!(is_panicked(&err, "sync boom"), "{err:?}");
    assert_eq!((err.code(), err.status()), ("PANICKED", 500));
    let err = registry
        .run("exec_panic_sync", Value::Null)
        .await
        .unwrap_err();
    assert!(is_panicked(&err, "sync boom"), "{err:?}");
    let result = registry
        .execute(ToolCall::new("p", "exec_panic_sync", Value::Null))
        .await;
    assert!(is_panicked(result.output().unwrap_err(), "sync boom"));

    assert_eq!(
        registry
            .run_sync("exec_add", json!({"a": 1, "b": 2}))
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        registry
            .run("exec_add", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!(3)
    );
}

#[tokio::test]
async fn a_panicking_async_tool_is_panicked_and_the_registry_still_works() {
    let registry = Registry::global();
    for after_yield in [false, true] {
        let err = registry
            .run("exec_panic_async", json!({"after_yield": after_yield}))
            .await
            .unwrap_err();
        assert!(is_panicked(&err, "async boom"), "{err:?}");
    }
    assert_eq!(
        registry.run("exec_nested", json!({"a": 1})).await.unwrap(),
        json!(2)
    );
}

#[tokio::test]
async fn builder_handlers_that_panic_are_panicked() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("panics_before_future")
                .handler(
                    |_ctx, _args| -> std::future::Ready<Result<Value, ToolError>> {
                        panic!("before the future")
                    },
                )
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("panics_with_a_string")
                .handler_sync(|_ctx, args| panic!("formatted {}", args["n"]))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("panics_with_a_number")
                .handler_sync(|_ctx, _args| std::panic::panic_any(42_u8))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("fine")
                .handler_sync(|_ctx, _args| Ok(json!("fine")))
                .build()
                .unwrap(),
        )
        .unwrap();

    let err = registry
        .run("panics_before_future", Value::Null)
        .await
        .unwrap_err();
    assert!(is_panicked(&err, "before the future"), "{err:?}");
    let err = registry
        .run_sync("panics_with_a_string", json!({"n": 7}))
        .unwrap_err();
    assert!(is_panicked(&err, "formatted 7"), "{err:?}");
    let err = registry
        .run_sync("panics_with_a_number", Value::Null)
        .unwrap_err();
    assert!(is_panicked(&err, "non-string panic payload"), "{err:?}");
    assert_eq!(
        registry.run_sync("fine", Value::Null).unwrap(),
        json!("fine")
    );
    assert_eq!(registry.names().len(), 4);
}

// ---------------------------------------------------------------------------------
// The wire form of calls and results.

#[test]
fn tool_call_wire_form() {
    let call = ToolCall::new("c9", "exec_add", json!({"a": 1}));
    let wire = serde_json::to_value(&call).unwrap();
    assert_eq!(
        wire,
        json!({"id": "c9", "name": "exec_add", "arguments": {"a": 1}})
    );
    assert_eq!(serde_json::from_value::<ToolCall>(wire).unwrap(), call);
    // Arguments may be left out: no arguments.
    let call: ToolCall = serde_json::from_value(json!({"id": "c", "name": "n"})).unwrap();
    assert_eq!(call.arguments, Value::Null);
}

#[tokio::test]
async fn tool_results_serialise_and_come_back() {
    let registry = Registry::global();
    let results = registry
        .execute_batch([
            ToolCall::new("ok", "exec_add", json!({"a": 1, "b": 2})),
            ToolCall::new("failed", "exec_fail", Value::Null),
            ToolCall::new("missing", "no_such_tool", Value::Null),
            ToolCall::new("bad", "exec_add", json!({"a": 1})),
        ])
        .await;
    let wire = serde_json::to_value(&results).unwrap();
    assert_eq!(
        wire,
        json!([
            {"id": "ok", "name": "exec_add", "ok": 3},
            {"id": "failed", "name": "exec_fail", "error": {
                "code": "FAILED", "message": "nope", "status": 500
            }},
            {"id": "missing", "name": "no_such_tool", "error": {
                "code": "NOT_FOUND", "message": "tool not found: no_such_tool", "status": 404,
                "data": {"what": "no_such_tool"}
            }},
            {"id": "bad", "name": "exec_add", "error": {
                "code": "ARGUMENTS", "message": "missing required property `b`", "status": 400,
                "data": {"path": "/b"}
            }}
        ])
    );

    let back: Vec<ToolResult> = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(back.len(), 4);
    assert_eq!((back[0].id(), back[0].name()), ("ok", "exec_add"));
    assert_eq!(out(&back[0]), Some(&json!(3)));
    assert!(
        matches!(back[1].output(), Err(ToolError::Failed { message, .. }) if message == "nope")
    );
    assert!(
        matches!(back[2].output(), Err(ToolError::NotFound { name, .. }) if name == "no_such_tool")
    );
    assert!(matches!(back[3].output(), Err(ToolError::Arguments { path, .. }) if path == "/b"));
    assert_eq!(serde_json::to_value(&back).unwrap(), wire);
}

#[test]
fn a_null_output_round_trips() {
    let result = ToolResult::new("n", "t", Ok(Value::Null));
    let wire = serde_json::to_value(&result).unwrap();
    assert_eq!(wire, json!({"id": "n", "name": "t", "ok": null}));
    let back: ToolResult = serde_json::from_value(wire).unwrap();
    assert_eq!(out(&back), Some(&Value::Null));
    // Written by a peer that leaves out a null `ok`.
    let back: ToolResult = serde_json::from_value(json!({"id": "n", "name": "t"})).unwrap();
    assert_eq!(out(&back), Some(&Value::Null));
}
