//! A `#[tool_service]` whose type is not `Default` is not registered by itself, and a
//! call of it by name says how to register it instead of looking like a typo.

use serde_json::json;
use toolfunc::{Registry, ToolError, tool_service};

/// Holds state that has no default.
struct Ledger {
    opening: i64,
}

/// A ledger with an opening balance.
#[tool_service(name = "ledger")]
impl Ledger {
    /// The opening balance.
    fn balance(&self) -> i64 {
        self.opening
    }
}

#[test]
fn an_unregistered_service_says_how_to_register_it() {
    let err = Registry::global()
        .run_sync("ledger", json!({"act": "$balance"}))
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    let message = err.to_string();
    assert!(message.contains("ledger"), "{message}");
    assert!(message.contains("#[tool_service]"), "{message}");
    assert!(message.contains("register_service"), "{message}");
    // The name stays the name; the explanation is its own field, on the wire too.
    let ToolError::NotFound { name, hint, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(name, "ledger");
    assert!(
        hint.as_deref()
            .is_some_and(|h| h.contains("register_service"))
    );
    let wire = serde_json::to_value(&err).unwrap();
    assert_eq!(wire["data"]["what"], "ledger", "{wire}");
    assert!(
        wire["data"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("register_service"))
    );
    let back: ToolError = serde_json::from_value(wire).unwrap();
    assert_eq!(back.to_string(), err.to_string());
}

#[test]
fn an_unknown_name_is_a_plain_not_found() {
    let err = Registry::global()
        .run_sync("no_such_tool", json!({}))
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(err.to_string(), "tool not found: no_such_tool");
}

#[test]
fn once_registered_it_runs() {
    let registry = Registry::new();
    registry.register_service(Ledger { opening: 12 }).unwrap();
    assert_eq!(
        registry
            .run_sync("ledger", json!({"act": "$balance"}))
            .unwrap(),
        json!(12)
    );
}

#[tokio::test]
async fn waiting_for_an_unregistered_service_says_how_to_register_it_too() {
    let err = Registry::global().ready("ledger").await.unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert!(err.to_string().contains("register_service"), "{err}");
}
