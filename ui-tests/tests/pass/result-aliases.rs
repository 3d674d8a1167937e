//! A return type named `Result`, whatever its path, is a fallible tool: `Ok` is the
//! result and `Err` a `FAILED` error.

use serde_json::json;
use toolfunc::{Registry, tool};

/// Reads back what it was given, through `std::io::Result`.
#[tool]
fn echo(text: String) -> std::io::Result<String> {
    if text.is_empty() {
        return Err(std::io::Error::other("empty text"));
    }
    Ok(text)
}

/// Validates, with a `String` error and nothing on success.
#[tool]
fn validate(n: i32) -> Result<(), String> {
    if n < 0 {
        return Err(format!("{n} is negative"));
    }
    Ok(())
}

fn main() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("echo", json!({"text": "hi"})).unwrap(),
        json!("hi")
    );
    let err = registry.run_sync("echo", json!({"text": ""})).unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert_eq!(err.to_string(), "empty text");

    assert_eq!(
        registry.run_sync("validate", json!({"n": 1})).unwrap(),
        json!(null)
    );
    let err = registry.run_sync("validate", json!({"n": -1})).unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert_eq!(err.to_string(), "-1 is negative");

    // The result schema is the `Ok` type's; `Result<(), _>` has none.
    let def = registry.get("echo").unwrap().definition().clone();
    assert_eq!(def.result, Some(json!({"type": "string"})));
    let def = registry.get("validate").unwrap().definition().clone();
    assert_eq!(def.result, None);
}
