//! A `#[tool]` that depends on a tool nobody defines is reported when the global
//! registry is built, with its location: never first at call time.

use toolfunc::{Registry, ToolError, tool};

/// Needs a tool that does not exist.
#[tool(depends(fetch = "no_such_tool"))]
fn orphan() -> u8 {
    0
}

#[test]
fn a_missing_dependency_is_reported_at_startup() {
    assert_eq!(orphan(), 0);
    let err = Registry::try_global().unwrap_err();
    assert!(matches!(err, ToolError::Definition { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("`orphan` depends on `no_such_tool` (as `fetch`)"),
        "{message}"
    );
    assert!(
        message.contains("tests/missing_dependency.rs:"),
        "{message}"
    );
}
