//! Arguments checked with and without the `validate` feature: what builds, what
//! is checked, and where a failure is located.

use serde_json::json;

use super::Registry;
use crate::error::ToolError;
use crate::prompt::{PromptFunc, PromptMessage};
use crate::tool::ToolFunc;

/// Without the `validate` feature nothing given as JSON goes unchecked: a tool
/// whose schema would need the full check does not build.
#[cfg(not(feature = "validate"))]
#[test]
fn without_validate_a_schema_given_as_json_does_not_build_unchecked() {
    let err = ToolFunc::builder("shout")
        .params_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}}))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION");
    assert!(err.to_string().contains("`validate` feature"), "{err}");
    let err = ToolFunc::builder("lazy")
        .params_schema_with(|| json!({"type": "object"}))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("`validate` feature"), "{err}");
    let err = ToolFunc::builder("out")
        .result_schema(json!({"type": "integer"}))
        .check_output(true)
        .handler_sync(|_ctx, _args| Ok(json!(1)))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("`validate` feature"), "{err}");
    // A schema that accepts every object checks nothing: it builds.
    let open = ToolFunc::builder("open")
        .params_schema(json!({"type": "object", "description": "anything"}))
        .handler_sync(|_ctx, args| Ok(args))
        .build();
    assert!(open.is_ok());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Order {
    lines: Vec<Line>,
    note: Option<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Line {
    id: u64,
    qty: u8,
}

/// A typed tool's failed read is located with or without the `validate` feature.
#[test]
fn a_typed_tools_failed_read_is_located() {
    let tool = ToolFunc::builder("order")
        .typed_sync(|_ctx, order: Order| {
            let units: u64 = order.lines.iter().map(|l| l.id * u64::from(l.qty)).sum();
            Ok::<_, ToolError>(units + u64::from(order.note.is_some()))
        })
        .build()
        .unwrap();
    let registry = Registry::new();
    registry.register(tool).unwrap();
    let run = |args| registry.run_sync("order", args).unwrap_err();
    let err = run(json!({"lines": [{"id": 1, "qty": 2}, {"id": "x", "qty": 1}]}));
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(err.data().unwrap()["path"], "/lines/1/id");
    assert_eq!(
        err.to_string(),
        "invalid arguments at /lines/1/id: expected integer, found string"
    );
    let err = run(json!({"lines": [{"id": 1, "qty": 300}]}));
    assert_eq!(
        err.to_string(),
        "invalid arguments at /lines/0/qty: expected a number <= 255"
    );
    let err = run(json!({"lines": [{"id": 1}], "note": 3}));
    assert_eq!(err.data().unwrap()["path"], "/note");
    let err = run(json!({"lines": [{"id": 1}]}));
    assert_eq!(
        err.to_string(),
        "invalid arguments at /lines/0/qty: missing required property `qty`"
    );
    let err = run(json!({"note": "x"}));
    assert_eq!(
        err.to_string(),
        "invalid arguments at /lines: missing required property `lines`"
    );
    assert_eq!(
        registry
            .run_sync("order", json!({"lines": [], "note": "x"}))
            .unwrap(),
        json!(1)
    );
}

/// A prompt built at run time has its arguments checked with or without the
/// `validate` feature.
#[test]
fn a_run_time_prompts_arguments_are_checked() {
    let prompt = PromptFunc::builder("review")
        .argument("code", "The code to review.", true)
        .argument("tone", "How to say it.", false)
        .handler_sync(|_ctx, args| Ok(vec![PromptMessage::user(format!("{}", args["code"]))]))
        .build()
        .unwrap();
    let registry = Registry::new();
    registry.register_prompt(prompt).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = runtime
        .block_on(registry.prompt("review", json!({"tone": "kind"})))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments at /code: missing required property `code`"
    );
    let err = runtime
        .block_on(registry.prompt("review", json!({"code": 3})))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments at /code: expected string, found integer"
    );
    assert!(
        runtime
            .block_on(registry.prompt("review", json!({"code": "x"})))
            .is_ok()
    );
}
