//! User code that denies warnings, missing docs and needless qualified paths: the
//! expansions of documented public tools must not trip any of them.

#![deny(warnings, missing_docs, unused_qualifications)]

use serde_json::json;
use toolfunc::{Ctx, Registry, ToolError, tool};

/// Adds two numbers.
#[tool(alias = "plus", tags = ["math"])]
pub fn add(
    /// The left operand.
    a: f64,
    /// The right operand; zero when absent.
    b: Option<f64>,
) -> f64 {
    a + b.unwrap_or(0.0)
}

/// Divides, failing on a zero divisor.
#[tool(deny_unknown_fields)]
pub fn divide(a: f64, b: f64) -> Result<f64, ToolError> {
    if b == 0.0 {
        return Err(ToolError::failed("division by zero"));
    }
    Ok(a / b)
}

/// Names the running tool.
#[tool(title = "Who am I", summary = "The tool's own name.")]
pub fn whoami(ctx: &Ctx) -> String {
    ctx.tool_name().to_owned()
}

/// Does nothing, successfully.
#[tool]
pub fn noop() {}

/// Runs the tools.
pub fn main() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("plus", json!({"a": 1, "b": 2})).unwrap(),
        json!(3.0)
    );
    assert_eq!(
        registry.run_sync("add", json!({"a": 1})).unwrap(),
        json!(1.0)
    );
    assert_eq!(
        registry
            .run_sync("divide", json!({"a": 6, "b": 3}))
            .unwrap(),
        json!(2.0)
    );
    let err = registry
        .run_sync("divide", json!({"a": 6, "b": 0}))
        .unwrap_err();
    assert_eq!(err.code(), "FAILED");
    let err = registry
        .run_sync("divide", json!({"a": 6, "b": 3, "c": 1}))
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(
        registry.run_sync("whoami", json!({})).unwrap(),
        json!("whoami")
    );
    assert_eq!(registry.run_sync("noop", json!({})).unwrap(), json!(null));

    let def = registry.get("add").unwrap().definition().clone();
    assert_eq!(def.description.as_deref(), Some("Adds two numbers."));
    assert_eq!(
        def.params["properties"]["a"]["description"],
        "The left operand."
    );
    let def = registry.get("whoami").unwrap().definition().clone();
    assert_eq!(def.title.as_deref(), Some("Who am I"));
    assert_eq!(def.summary.as_deref(), Some("The tool's own name."));
}
