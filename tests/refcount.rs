//! Counted registration: each `register` of a name takes one registration and each
//! `unregister` gives one back; `force` removes at once; `allow_override` replaces a
//! tool atomically or protects the namespace; a sealed registry takes no more tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::timeout;
use toolfunc::{RegisterOptions, Registry, RegistryEvent, ToolError, ToolFunc, UnregisterOptions};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// A tool that answers `out`, with the given aliases.
fn answer(name: &str, aliases: &[&str], out: &'static str) -> ToolFunc {
    aliases
        .iter()
        .fold(ToolFunc::builder(name), |b, alias| b.alias(*alias))
        .handler_sync(move |_ctx, _args| Ok(json!(out)))
        .build()
        .expect("a builder with a handler builds")
}

/// A tool that counts its calls in `calls` and answers `out`.
fn counting(name: &str, aliases: &[&str], out: &'static str, calls: &Arc<AtomicUsize>) -> ToolFunc {
    let calls = Arc::clone(calls);
    aliases
        .iter()
        .fold(ToolFunc::builder(name), |b, alias| b.alias(*alias))
        .handler_sync(move |_ctx, _args| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(json!(out))
        })
        .build()
        .expect("a builder with a handler builds")
}

fn run(registry: &Registry, name: &str) -> Result<Value, ToolError> {
    registry.run_sync(name, Value::Null)
}

fn assert_conflict(err: &ToolError, mentions: &str) {
    assert!(matches!(err, ToolError::Conflict { .. }), "{err:?}");
    assert_eq!(err.code(), "CONFLICT");
    assert!(
        err.to_string().contains(mentions),
        "the message names `{mentions}`: {err}"
    );
}

/// The next event of a subscription, failing the test if none comes.
macro_rules! next {
    ($events:expr) => {
        timeout(LIMIT, $events.recv())
            .await
            .expect("an event arrives")
            .expect("the subscriber keeps up")
    };
}

// ---------------------------------------------------------------------------------
// Counting.

#[test]
fn register_twice_then_unregister_twice() {
    let registry = Registry::new();
    assert!(registry.register(answer("twice", &[], "one")).unwrap());
    assert!(!registry.register(answer("twice", &[], "two")).unwrap());
    // The second registration was counted, not placed: the first tool answers.
    assert_eq!(run(&registry, "twice").unwrap(), "one");

    assert!(registry.unregister("twice"));
    assert!(registry.has("twice"), "one registration is left");
    assert_eq!(run(&registry, "twice").unwrap(), "one");

    assert!(registry.unregister("twice"));
    assert!(!registry.has("twice"));
    assert_eq!(run(&registry, "twice").unwrap_err().code(), "NOT_FOUND");
    assert!(!registry.unregister("twice"), "nothing left to take back");
}

#[test]
fn force_removes_whatever_the_count() {
    let registry = Registry::new();
    for _ in 0..3 {
        registry
            .register(answer("forced", &["forced_alias"], "x"))
            .unwrap();
    }
    assert!(registry.unregister_with("forced_alias", UnregisterOptions::new().force()));
    assert!(!registry.has("forced"));
    assert!(!registry.has("forced_alias"));
    assert!(!registry.unregister("forced"));
    // The name is free again, and counts from one.
    assert!(registry.register(answer("forced", &[], "y")).unwrap());
    assert!(registry.unregister("forced"));
    assert!(!registry.has("forced"));
}

// ---------------------------------------------------------------------------------
// Overriding.

#[test]
fn override_replaces_the_handler_and_the_aliases() {
    let registry = Registry::new();
    let (old_calls, new_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    registry
        .register(counting("calc", &["calc_old"], "old", &old_calls))
        .unwrap();
    assert_eq!(run(&registry, "calc").unwrap(), "old");

    let replaced = registry
        .register_with(
            counting("calc", &["calc_new"], "new", &new_calls),
            RegisterOptions::new().allow_override(true),
        )
        .unwrap();
    assert!(replaced, "a replacement reports true");
    assert_eq!(run(&registry, "calc").unwrap(), "new");
    assert_eq!(run(&registry, "calc_new").unwrap(), "new");
    assert_eq!(run(&registry, "calc_old").unwrap_err().code(), "NOT_FOUND");
    assert!(
        !registry.has("calc_old"),
        "the old alias went with the old tool"
    );
    assert_eq!(registry.get("calc_new").unwrap().name(), "calc");
    assert_eq!(old_calls.load(Ordering::SeqCst), 1);
    assert_eq!(new_calls.load(Ordering::SeqCst), 2);
    assert_eq!(registry.names(), ["calc"]);

    // The freed alias can name another tool.
    assert!(registry.register(answer("calc_old", &[], "free")).unwrap());
}

#[test]
fn override_keeping_its_own_alias_is_no_conflict() {
    let registry = Registry::new();
    registry
        .register(answer("keep", &["keep_alias"], "old"))
        .unwrap();
    assert!(
        registry
            .register_with(
                answer("keep", &["keep_alias"], "new"),
                RegisterOptions::new().allow_override(true),
            )
            .unwrap()
    );
    assert_eq!(run(&registry, "keep_alias").unwrap(), "new");
}

#[test]
fn override_whose_alias_names_another_tool_fails_and_keeps_the_old_tool() {
    let registry = Registry::new();
    let old_calls = Arc::new(AtomicUsize::new(0));
    let new_calls = Arc::new(AtomicUsize::new(0));
    registry
        .register(counting("target", &["target_alias"], "old", &old_calls))
        .unwrap();
    registry
        .register(answer("other", &["other_alias"], "other"))
        .unwrap();

    // An alias that is another tool's alias, then one that is another tool's name.
    for clash in ["other_alias", "other"] {
        let err = registry
            .register_with(
                counting("target", &["target_new", clash], "new", &new_calls),
                RegisterOptions::new().allow_override(true),
            )
            .unwrap_err();
        assert_conflict(&err, clash);

        assert_eq!(run(&registry, "target").unwrap(), "old");
        assert_eq!(run(&registry, "target_alias").unwrap(), "old");
        assert!(!registry.has("target_new"), "nothing of the new tool is in");
        assert_eq!(run(&registry, "other").unwrap(), "other");
        assert_eq!(run(&registry, "other_alias").unwrap(), "other");
        assert_eq!(registry.get(clash).unwrap().name(), "other");
    }
    assert_eq!(old_calls.load(Ordering::SeqCst), 4);
    assert_eq!(new_calls.load(Ordering::SeqCst), 0);

    // The refused override took no registration: one unregister removes the old tool.
    assert!(registry.unregister("target"));
    assert!(!registry.has("target"));
}

#[tokio::test]
async fn override_of_a_tool_held_twice_succeeds_and_is_announced() {
    let registry = Registry::new();
    let new_calls = Arc::new(AtomicUsize::new(0));
    registry.register(answer("held", &[], "old")).unwrap();
    assert!(!registry.register(answer("held", &[], "old")).unwrap());

    let mut events = registry.subscribe();
    assert!(
        registry
            .register_with(
                counting("held", &[], "new", &new_calls),
                RegisterOptions::new().allow_override(true),
            )
            .unwrap()
    );
    assert_eq!(run(&registry, "held").unwrap(), "new");
    assert_eq!(new_calls.load(Ordering::SeqCst), 1);

    assert_eq!(
        next!(events),
        RegistryEvent::Removed {
            name: "held".into(),
            replaced: true
        }
    );
    assert_eq!(
        next!(events),
        RegistryEvent::Added {
            name: "held".into()
        }
    );
}

// ---------------------------------------------------------------------------------
// Namespace protection: `allow_override(false)`.

#[test]
fn protected_registration_refuses_a_local_name() {
    let registry = Registry::new();
    registry.register(answer("taken", &[], "first")).unwrap();
    let protect = RegisterOptions::new().allow_override(false);

    let err = registry
        .register_with(answer("taken", &[], "second"), protect)
        .unwrap_err();
    assert_conflict(&err, "taken");
    assert_eq!(run(&registry, "taken").unwrap(), "first");
    // Refused, so not counted: one unregister removes the tool.
    assert!(registry.unregister("taken"));
    assert!(!registry.has("taken"));

    // A free name is registered as usual.
    assert!(
        registry
            .register_with(answer("free", &[], "ok"), protect)
            .unwrap()
    );
    assert_eq!(run(&registry, "free").unwrap(), "ok");
}

#[test]
fn protected_registration_refuses_a_name_of_a_parent() {
    let grandparent = Registry::new();
    grandparent
        .register(answer("inherited", &["inherited_alias"], "gp"))
        .unwrap();
    let child = grandparent.isolate().isolate();
    let protect = RegisterOptions::new().allow_override(false);

    for name in ["inherited", "inherited_alias"] {
        let err = child
            .register_with(answer(name, &[], "child"), protect)
            .unwrap_err();
        assert_conflict(&err, name);
        assert!(!child.has_local(name));
    }
    assert_eq!(run(&child, "inherited").unwrap(), "gp");

    // Without protection the same registration shadows the parent's tool.
    assert!(child.register(answer("inherited", &[], "child")).unwrap());
    assert_eq!(run(&child, "inherited").unwrap(), "child");
    assert_eq!(run(&grandparent, "inherited").unwrap(), "gp");
}

#[test]
fn protected_registration_refuses_a_taken_alias() {
    let parent = Registry::new();
    parent
        .register(answer("p_tool", &["p_alias"], "p"))
        .unwrap();
    let child = parent.isolate();
    child.register(answer("c_tool", &["c_alias"], "c")).unwrap();
    let protect = RegisterOptions::new().allow_override(false);

    // The new tool's alias is a name or an alias, here or in the parent.
    for taken in ["c_tool", "c_alias", "p_tool", "p_alias"] {
        let err = child
            .register_with(answer("fresh", &["fresh_alias", taken], "new"), protect)
            .unwrap_err();
        assert_conflict(&err, taken);
        assert!(!child.has("fresh"));
        assert!(!child.has("fresh_alias"));
    }
    assert_eq!(run(&child, "c_alias").unwrap(), "c");
    assert_eq!(run(&child, "p_alias").unwrap(), "p");
}

// ---------------------------------------------------------------------------------
// Sealing.

#[test]
fn a_sealed_registry_refuses_registrations_and_keeps_its_tools() {
    let registry = Registry::new();
    registry
        .register(answer("before", &["before_alias"], "kept"))
        .unwrap();
    assert!(!registry.is_sealed());
    registry.seal();
    assert!(registry.is_sealed());

    let attempts = [
        (answer("after", &[], "x"), RegisterOptions::new()),
        // Even a counted registration of an existing tool, or a replacement.
        (answer("before", &[], "x"), RegisterOptions::new()),
        (
            answer("before", &[], "x"),
            RegisterOptions::new().allow_override(true),
        ),
    ];
    for (tool, options) in attempts {
        let name = tool.name().to_owned();
        let err = registry.register_with(tool, options).unwrap_err();
        assert!(
            matches!(&err, ToolError::Sealed { name: n } if *n == name),
            "{err:?}"
        );
        assert_eq!(err.code(), "SEALED");
    }
    assert!(!registry.has("after"));
    assert_eq!(run(&registry, "before").unwrap(), "kept");
    assert_eq!(run(&registry, "before_alias").unwrap(), "kept");

    // Sealing is one way; the refused counted registration was not counted.
    registry.seal();
    assert!(registry.is_sealed());
    assert!(
        registry.unregister("before"),
        "tools can still be unregistered"
    );
    assert!(!registry.has("before"));
    assert_eq!(
        registry
            .register(answer("before", &[], "x"))
            .unwrap_err()
            .code(),
        "SEALED"
    );
}

#[test]
fn sealing_one_registry_leaves_its_parent_and_children_open() {
    let parent = Registry::new();
    let child = parent.isolate();
    child.seal();
    assert!(!parent.is_sealed());
    assert!(parent.register(answer("in_parent", &[], "p")).unwrap());
    assert_eq!(
        run(&child, "in_parent").unwrap(),
        "p",
        "inherited tools still run"
    );
    let grandchild = child.isolate();
    assert!(!grandchild.is_sealed());
    assert!(
        grandchild
            .register(answer("in_grandchild", &[], "g"))
            .unwrap()
    );
}
