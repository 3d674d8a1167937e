//! Registries in a chain: a child sees its parents' tools, keeps its own to itself,
//! may shadow inherited ones, and unregisters in a chosen scope (local, inherited,
//! all).

use serde_json::{Value, json};
use toolfunc::{Registry, ToolError, ToolFunc, UnregisterOptions, UnregisterScope, tool};

/// Answers with a fixed text, for calls through a child of the global registry.
#[tool(alias = "hier_global_alias")]
fn hier_global_answer() -> &'static str {
    "global"
}

/// Doubles a number.
#[tool]
async fn hier_global_double(n: i64) -> i64 {
    tokio::task::yield_now().await;
    n * 2
}

/// A tool that answers `out`, described as `out` too (to tell definitions apart).
fn answer(name: &str, out: &'static str) -> ToolFunc {
    ToolFunc::builder(name)
        .description(out)
        .handler_sync(move |_ctx, _args| Ok(json!(out)))
        .build()
        .expect("a builder with a handler builds")
}

fn run(registry: &Registry, name: &str) -> Result<Value, ToolError> {
    registry.run_sync(name, Value::Null)
}

fn local() -> UnregisterOptions {
    UnregisterOptions::new().scope(UnregisterScope::Local)
}

fn inherited() -> UnregisterOptions {
    UnregisterOptions::new().scope(UnregisterScope::Inherited)
}

fn all() -> UnregisterOptions {
    UnregisterOptions::new().scope(UnregisterScope::All)
}

// ---------------------------------------------------------------------------------
// Seeing and shadowing.

#[test]
fn a_child_sees_its_parents_tools_and_keeps_its_own() {
    let parent = Registry::new();
    parent.register(answer("from_parent", "parent")).unwrap();
    let child = parent.isolate();
    assert!(child.register(answer("from_child", "child")).unwrap());

    assert!(child.has("from_parent"));
    assert!(!child.has_local("from_parent"));
    assert_eq!(run(&child, "from_parent").unwrap(), "parent");
    assert_eq!(child.get("from_parent").unwrap().name(), "from_parent");

    assert!(child.has_local("from_child"));
    assert_eq!(run(&child, "from_child").unwrap(), "child");
    assert!(
        !parent.has("from_child"),
        "the parent does not see the child's tools"
    );
    assert!(parent.get("from_child").is_none());
    assert_eq!(run(&parent, "from_child").unwrap_err().code(), "NOT_FOUND");

    // A tool the parent registers later is seen at once.
    parent.register(answer("later", "later")).unwrap();
    assert_eq!(run(&child, "later").unwrap(), "later");
}

#[test]
fn a_shadow_runs_in_the_child_and_the_original_in_the_parent() {
    let parent = Registry::new();
    parent.register(answer("calc", "parent")).unwrap();
    let child = parent.isolate();
    assert!(
        child.register(answer("calc", "child")).unwrap(),
        "a shadow is new"
    );
    assert_eq!(run(&child, "calc").unwrap(), "child");
    assert_eq!(run(&parent, "calc").unwrap(), "parent");
    assert!(child.has_local("calc"));
    assert_eq!(
        child
            .get("calc")
            .unwrap()
            .definition()
            .description
            .as_deref(),
        Some("child")
    );
}

#[test]
fn names_and_definitions_list_inherited_and_local_tools_a_shadow_once() {
    let grandparent = Registry::new();
    grandparent.register(answer("a_gp", "gp")).unwrap();
    grandparent.register(answer("shared", "gp")).unwrap();
    let parent = grandparent.isolate();
    parent.register(answer("b_parent", "parent")).unwrap();
    parent.register(answer("shared", "parent")).unwrap();
    let child = parent.isolate();
    child.register(answer("c_child", "child")).unwrap();

    assert_eq!(child.names(), ["a_gp", "b_parent", "c_child", "shared"]);
    assert_eq!(parent.names(), ["a_gp", "b_parent", "shared"]);
    assert_eq!(grandparent.names(), ["a_gp", "shared"]);

    let defs: Vec<(String, Option<String>)> = child
        .definitions()
        .into_iter()
        .map(|d| (d.name, d.description))
        .collect();
    let expected = [
        ("a_gp", "gp"),
        ("b_parent", "parent"),
        ("c_child", "child"),
        ("shared", "parent"),
    ];
    assert_eq!(
        defs,
        expected.map(|(n, d)| (n.to_owned(), Some(d.to_owned())))
    );
}

#[test]
fn three_levels_deep() {
    let grandparent = Registry::new();
    let parent = grandparent.isolate();
    let child = parent.isolate();
    grandparent.register(answer("deep", "gp")).unwrap();
    assert_eq!(run(&child, "deep").unwrap(), "gp");
    parent.register(answer("deep", "parent")).unwrap();
    assert_eq!(
        run(&child, "deep").unwrap(),
        "parent",
        "the nearest shadow wins"
    );
    child.register(answer("deep", "child")).unwrap();
    assert_eq!(run(&child, "deep").unwrap(), "child");
    assert_eq!(run(&parent, "deep").unwrap(), "parent");
    assert_eq!(run(&grandparent, "deep").unwrap(), "gp");
}

#[test]
fn lineage() {
    let grandparent = Registry::new();
    let parent = grandparent.isolate();
    let child = parent.isolate();
    let sibling = parent.isolate();

    assert!(grandparent.parent().is_none());
    assert!(parent.parent().unwrap().ptr_eq(&grandparent));
    assert!(child.parent().unwrap().ptr_eq(&parent));
    assert!(
        child
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .ptr_eq(&grandparent)
    );

    assert!(child.descends_from(&parent));
    assert!(child.descends_from(&grandparent));
    assert!(!child.descends_from(&child), "not from itself");
    assert!(!parent.descends_from(&child));
    assert!(!child.descends_from(&sibling));
    assert!(!sibling.descends_from(&child));
    assert!(!child.ptr_eq(&sibling));
    assert!(child.clone().ptr_eq(&child));
    assert!(!child.descends_from(&Registry::new()));
}

// ---------------------------------------------------------------------------------
// Scoped unregistration.

#[test]
fn local_unregister_of_a_shadow_reveals_the_parents_tool() {
    let parent = Registry::new();
    parent.register(answer("calc", "parent")).unwrap();
    let child = parent.isolate();
    child.register(answer("calc", "child")).unwrap();

    assert!(child.unregister_with("calc", local()));
    assert!(!child.has_local("calc"));
    assert_eq!(run(&child, "calc").unwrap(), "parent");
    assert_eq!(run(&parent, "calc").unwrap(), "parent");

    // The default scope is local too.
    child.register(answer("calc", "child")).unwrap();
    assert!(child.unregister("calc"));
    assert_eq!(run(&child, "calc").unwrap(), "parent");
}

#[test]
fn local_unregister_of_an_inherited_tool_is_false_and_changes_nothing() {
    let parent = Registry::new();
    parent.register(answer("only_parent", "parent")).unwrap();
    let child = parent.isolate();

    assert!(!child.unregister_with("only_parent", local()));
    assert!(!child.unregister("only_parent"));
    assert!(
        !child.unregister_with("only_parent", local().force()),
        "force does not widen the scope"
    );
    assert!(parent.has_local("only_parent"));
    assert_eq!(run(&child, "only_parent").unwrap(), "parent");
    // The parent's count is untouched: one unregister there removes it.
    assert!(parent.unregister("only_parent"));
    assert!(!child.has("only_parent"));
}

#[test]
fn inherited_unregister_removes_the_first_occurrence_up_the_chain() {
    let grandparent = Registry::new();
    grandparent.register(answer("calc", "gp")).unwrap();
    let parent = grandparent.isolate();
    parent.register(answer("calc", "parent")).unwrap();
    let child = parent.isolate();

    // The child has none: the parent's is the first occurrence.
    assert!(child.unregister_with("calc", inherited()));
    assert!(!parent.has_local("calc"));
    assert!(grandparent.has_local("calc"));
    assert_eq!(run(&child, "calc").unwrap(), "gp");

    // With a shadow in the child, the shadow goes first.
    child.register(answer("calc", "child")).unwrap();
    assert!(child.unregister_with("calc", inherited()));
    assert!(!child.has_local("calc"));
    assert!(grandparent.has_local("calc"));
    assert_eq!(run(&child, "calc").unwrap(), "gp");

    assert!(child.unregister_with("calc", inherited()));
    assert!(!child.has("calc") && !grandparent.has("calc"));
    assert!(!child.unregister_with("calc", inherited()), "nothing left");
}

#[test]
fn inherited_unregister_takes_one_registration_back() {
    let parent = Registry::new();
    parent.register(answer("counted", "parent")).unwrap();
    parent.register(answer("counted", "parent")).unwrap();
    let child = parent.isolate();
    assert!(child.unregister_with("counted", inherited()));
    assert!(parent.has_local("counted"), "one registration is left");
    assert!(child.unregister_with("counted", inherited()));
    assert!(!parent.has("counted"));

    // With `force`, one call removes a tool held several times.
    parent.register(answer("counted", "parent")).unwrap();
    parent.register(answer("counted", "parent")).unwrap();
    assert!(child.unregister_with("counted", inherited().force()));
    assert!(!parent.has("counted"));
}

#[test]
fn all_unregister_removes_from_the_child_and_every_parent() {
    let grandparent = Registry::new();
    let parent = grandparent.isolate();
    let child = parent.isolate();
    for (registry, out) in [(&grandparent, "gp"), (&parent, "parent"), (&child, "child")] {
        registry.register(answer("everywhere", out)).unwrap();
    }
    grandparent.register(answer("untouched", "gp")).unwrap();

    assert!(child.unregister_with("everywhere", all()));
    for registry in [&grandparent, &parent, &child] {
        assert!(!registry.has("everywhere"));
    }
    assert_eq!(run(&child, "untouched").unwrap(), "gp");
    assert!(!child.unregister_with("everywhere", all()));

    // A tool only the parents hold is removed from them all.
    grandparent.register(answer("upstairs", "gp")).unwrap();
    parent.register(answer("upstairs", "parent")).unwrap();
    assert!(child.unregister_with("upstairs", all()));
    assert!(!grandparent.has("upstairs"));
}

#[test]
fn unregister_from_a_parent_leaves_the_childs_shadow() {
    let parent = Registry::new();
    parent.register(answer("calc", "parent")).unwrap();
    let child = parent.isolate();
    child.register(answer("calc", "child")).unwrap();
    assert!(
        parent.unregister_with("calc", all()),
        "All goes up, never down"
    );
    assert!(!parent.has("calc"));
    assert_eq!(run(&child, "calc").unwrap(), "child");
}

// ---------------------------------------------------------------------------------
// The global registry as a parent.

#[tokio::test]
async fn a_child_of_the_global_registry_reaches_tool_functions() {
    let child = Registry::global().isolate();
    assert!(child.descends_from(Registry::global()));
    assert_eq!(run(&child, "hier_global_answer").unwrap(), "global");
    assert_eq!(run(&child, "hier_global_alias").unwrap(), "global");
    assert_eq!(
        child
            .run("hier_global_double", json!({"n": 21}))
            .await
            .unwrap(),
        json!(42)
    );
    assert!(child.names().iter().any(|n| n == "hier_global_answer"));

    // A shadow in the child stays in the child.
    child
        .register(answer("hier_global_answer", "shadow"))
        .unwrap();
    assert_eq!(run(&child, "hier_global_answer").unwrap(), "shadow");
    assert_eq!(
        run(Registry::global(), "hier_global_answer").unwrap(),
        "global"
    );
    assert!(!child.unregister_with("hier_global_double", local()));
    assert!(Registry::global().has("hier_global_double"));
    assert!(child.unregister("hier_global_answer"));
    assert_eq!(run(&child, "hier_global_answer").unwrap(), "global");
    assert_eq!(hier_global_answer(), "global");
}
