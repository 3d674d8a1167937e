//! `check_output` (FEATURES C3): a tool that asks for it has every result checked
//! against its result schema; a value the schema refuses is `OUTPUT` with the JSON
//! Pointer of the refused value, from `#[tool]` and from the builder, for values and
//! for each item of a stream.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use toolfunc::{Registry, ToolFunc, tool};

/// A percentage.
#[derive(Serialize, JsonSchema)]
struct Score {
    /// From 0 to 100.
    #[schemars(range(min = 0, max = 100))]
    value: i64,
}

/// Scores `n`, unchecked: whatever `n` is goes out.
#[tool(check_output)]
fn score(n: i64) -> Score {
    Score { value: n }
}

/// Scores each of `ns`.
#[tool(check_output)]
fn scores(ns: Vec<i64>) -> impl futures::Stream<Item = Score> + Send {
    futures::stream::iter(ns.into_iter().map(|value| Score { value }))
}

/// The same as `score`, without the check.
#[tool]
fn score_unchecked(n: i64) -> Score {
    Score { value: n }
}

#[tokio::test]
async fn a_result_the_schema_refuses_is_output_with_its_path() {
    let registry = Registry::global();
    assert_eq!(
        registry.run("score", json!({"n": 42})).await.unwrap(),
        json!({"value": 42})
    );
    let err = registry.run("score", json!({"n": 420})).await.unwrap_err();
    assert_eq!((err.code(), err.status()), ("OUTPUT", 500));
    assert_eq!(err.data().unwrap()["path"], "/value");
    assert!(err.to_string().contains("/value"), "{err}");
    let err = registry.run_sync("score", json!({"n": -1})).unwrap_err();
    assert_eq!(err.code(), "OUTPUT");
    // Without `check_output`, the value goes out as it is.
    assert_eq!(
        registry
            .run("score_unchecked", json!({"n": 420}))
            .await
            .unwrap(),
        json!({"value": 420})
    );
}

#[tokio::test]
async fn each_streamed_item_is_checked() {
    let items: Vec<_> = Registry::global()
        .run_stream("scores", json!({"ns": [1, 2, 300, 4]}))
        .collect()
        .await;
    assert_eq!(
        items.len(),
        3,
        "the refused item ends the stream: {items:?}"
    );
    assert_eq!(items[1].as_ref().unwrap(), &json!({"value": 2}));
    let err = items[2].as_ref().unwrap_err();
    assert_eq!(err.code(), "OUTPUT");
    assert_eq!(err.data().unwrap()["path"], "/value");
}

#[tokio::test]
async fn the_builder_checks_async_results_and_needs_a_schema() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("answer")
                .result_schema(json!({"type": "integer"}))
                .check_output(true)
                .handler(|_ctx, args| async move { Ok(args["give"].clone()) })
                .build()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        registry.run("answer", json!({"give": 42})).await.unwrap(),
        json!(42)
    );
    let err = registry
        .run("answer", json!({"give": "forty-two"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OUTPUT");
    assert_eq!(err.data().unwrap()["path"], "");
    // Nothing to check against: refused when built.
    let err = ToolFunc::builder("nothing")
        .check_output(true)
        .handler_sync(|_ctx, _args| Ok(json!(1)))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION");
    assert!(err.to_string().contains("result schema"), "{err}");
    // The error crosses a wire with its path.
    let wire = serde_json::to_value(
        registry
            .run("answer", json!({"give": []}))
            .await
            .unwrap_err(),
    )
    .unwrap();
    let back: toolfunc::ToolError = serde_json::from_value(wire).unwrap();
    assert_eq!(back.data().unwrap()["path"], "");
}
