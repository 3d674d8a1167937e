//! Two `#[tool]`s with one name in one program: the global registry refuses to guess
//! which one a caller meant and reports both, with their source locations.

use toolfunc::{Registry, ToolError, tool};

mod billing {
    use toolfunc::tool;

    /// Looks an invoice up.
    #[tool]
    pub(crate) fn lookup(id: u64) -> u64 {
        id
    }
}

mod shipping {
    use toolfunc::tool;

    /// Looks a parcel up.
    #[tool]
    pub(crate) fn lookup(id: u64) -> u64 {
        id + 1
    }
}

/// Its alias is the name of another tool.
#[tool(alias = "status")]
fn health() -> &'static str {
    "ok"
}

/// Named like the alias above.
#[tool]
fn status() -> &'static str {
    "up"
}

#[test]
fn duplicate_names_and_aliases_are_reported_together() {
    // The functions themselves are untouched.
    assert_eq!(billing::lookup(1) + shipping::lookup(1), 3);
    assert_eq!((health(), status()), ("ok", "up"));

    let err = Registry::try_global().unwrap_err();
    assert!(matches!(err, ToolError::Conflict { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with("2 problem(s) among #[tool] declarations"),
        "{message}"
    );
    assert!(
        message.contains("two tools are named `lookup`"),
        "{message}"
    );
    assert!(message.contains("tests/duplicates.rs:"), "{message}");
    assert!(message.contains("`status`"), "{message}");

    // The same report, as a panic, for the common entry point.
    let panic = std::panic::catch_unwind(Registry::global).unwrap_err();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("two tools are named `lookup`"), "{text}");
}
