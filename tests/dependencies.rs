//! Dependencies: tool instances registered and released with the tool that declares
//! them (counted, last declared released first), tools by name that must exist at
//! registration, local aliases for nested calls, cycles, and how nested calls bind to
//! shadows in child registries.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::timeout;
use toolfunc::{
    Binding, CallOptions, Ctx, RegisterOptions, Registry, ToolError, ToolFunc, UnregisterOptions,
    tool,
};

/// Long enough for any healthy run, short enough that a broken one fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

/// Fetches a user's name (the dependency of `dep_global_greet`).
#[tool]
fn dep_global_fetch(id: u64) -> String {
    format!("user-{id}")
}

/// Greets a user, fetching it through its dependency alias.
#[tool(depends(fetch = "dep_global_fetch"))]
async fn dep_global_greet(ctx: &Ctx, id: u64) -> Result<String, ToolError> {
    let user = ctx.run("fetch", json!({"id": id})).await?;
    Ok(format!("hello {}", user.as_str().unwrap_or("?")))
}

type Log = Arc<Mutex<Vec<String>>>;

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A tool answering `name` whose `dispose` writes its name into `log`.
fn logged(name: &str, log: &Log) -> ToolFunc {
    logged_builder(name, log)
        .build()
        .expect("a builder with a handler builds")
}

fn logged_builder(name: &str, log: &Log) -> toolfunc::ToolBuilder {
    let (log, own) = (Arc::clone(log), name.to_owned());
    let out = name.to_owned();
    ToolFunc::builder(name)
        .handler_sync(move |_ctx, _args| Ok(json!(out)))
        .dispose(move || {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(own.clone());
            Ok(())
        })
}

/// A tool answering `out`.
fn answer(name: &str, out: &'static str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(move |_ctx, _args| Ok(json!(out)))
        .build()
        .expect("a builder with a handler builds")
}

/// A tool that returns what the nested call `ctx.run(target)` returns.
fn caller_of(name: &str, target: &'static str) -> toolfunc::ToolBuilder {
    ToolFunc::builder(name)
        .handler(move |ctx, _args| async move { ctx.run(target, Value::Null).await })
}

/// A tool whose `setup` and `dispose` count themselves.
fn counted_hooks(name: &str, setups: &Arc<AtomicUsize>, disposes: &Arc<AtomicUsize>) -> ToolFunc {
    let (setups, disposes) = (Arc::clone(setups), Arc::clone(disposes));
    ToolFunc::builder(name)
        .handler_sync(|_ctx, _args| Ok(json!("dep")))
        .setup(move || {
            setups.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .dispose(move || {
            disposes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .build()
        .expect("a builder with a handler builds")
}

async fn bounded<F: Future<Output = Result<Value, ToolError>>>(
    call: F,
) -> Result<Value, ToolError> {
    timeout(LIMIT, call).await.expect("the call finishes")
}

// ---------------------------------------------------------------------------------
// Dependencies on tool instances.

#[tokio::test]
async fn registering_a_tool_registers_its_dependency_counted() {
    let registry = Registry::new();
    let main = caller_of("main", "d")
        .depends("d", answer("dep", "from dep"))
        .build()
        .unwrap();
    assert!(registry.register(main).unwrap());
    assert!(registry.has_local("dep"), "the dependency came with it");
    assert!(!registry.has("d"), "the alias is local to the tool");
    assert_eq!(
        registry
            .get("main")
            .unwrap()
            .dependencies()
            .collect::<Vec<_>>(),
        [("d", "dep")]
    );
    // Already held by `main`: a separate registration is counted.
    assert!(!registry.register(answer("dep", "other")).unwrap());
    assert_eq!(
        bounded(registry.run("main", Value::Null)).await.unwrap(),
        "from dep"
    );

    // Removing `main` releases its hold; the separate registration keeps `dep`.
    assert!(registry.unregister("main"));
    assert!(registry.has("dep"));
    assert!(registry.unregister("dep"));
    assert!(!registry.has("dep"));
}

#[test]
fn removing_the_only_holder_removes_the_dependency() {
    let registry = Registry::new();
    let (setups, disposes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let main = answer_builder("main")
        .depends("d", counted_hooks("dep", &setups, &disposes))
        .build()
        .unwrap();
    registry.register(main).unwrap();
    assert_eq!(setups.load(Ordering::SeqCst), 1);
    assert!(registry.unregister("main"));
    assert!(!registry.has("dep"), "nobody else held it");
    assert_eq!(disposes.load(Ordering::SeqCst), 1);
}

#[test]
fn a_dependency_registered_first_outlives_its_dependent() {
    let registry = Registry::new();
    let dep = Arc::new(answer("dep", "dep"));
    assert!(registry.register(Arc::clone(&dep)).unwrap());
    let main = answer_builder("main").depends("d", dep).build().unwrap();
    assert!(registry.register(main).unwrap());
    assert!(registry.unregister("main"));
    assert!(registry.has("dep"));
    assert!(registry.unregister("dep"));
    assert!(!registry.has("dep"), "two holds, two releases");
}

#[test]
fn a_counted_dependent_holds_its_dependency_once() {
    let registry = Registry::new();
    let make = || {
        answer_builder("main")
            .depends("d", answer("dep", "dep"))
            .build()
            .unwrap()
    };
    assert!(registry.register(make()).unwrap());
    assert!(!registry.register(make()).unwrap());
    assert!(registry.unregister("main"));
    assert!(registry.has("main") && registry.has("dep"));
    assert!(registry.unregister("main"));
    assert!(!registry.has("main"));
    assert!(
        !registry.has("dep"),
        "released once, with the last registration"
    );
}

#[test]
fn dependencies_are_released_last_declared_first() {
    let registry = Registry::new();
    let log = Log::default();
    let first = logged_builder("first", &log)
        .depends("inner", logged("first_inner", &log))
        .build()
        .unwrap();
    let main = logged_builder("main", &log)
        .depends("a", first)
        .depends("b", logged("second", &log))
        .depends("c", logged("third", &log))
        .build()
        .unwrap();
    registry.register(main).unwrap();
    assert_eq!(
        registry.names(),
        ["first", "first_inner", "main", "second", "third"]
    );
    assert!(registry.unregister("main"));
    // A tool goes before what it depends on; its dependencies go last declared first.
    assert_eq!(
        entries(&log),
        ["main", "third", "second", "first", "first_inner"]
    );
    assert!(registry.names().is_empty());
}

#[test]
fn a_refused_dependent_releases_the_dependencies_it_took() {
    let registry = Registry::new();
    registry.register(answer("blocker", "blocker")).unwrap();
    let (setups, disposes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // `main`'s alias clashes with `blocker`.
    let main = answer_builder("main")
        .alias("blocker")
        .depends("d", counted_hooks("dep", &setups, &disposes))
        .build()
        .unwrap();
    let err = registry.register(main).unwrap_err();
    assert_eq!(err.code(), "CONFLICT");
    assert!(!registry.has("main"));
    assert!(!registry.has("dep"), "the dependency was given back");
    assert_eq!(
        (
            setups.load(Ordering::SeqCst),
            disposes.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

#[test]
fn a_refused_dependency_refuses_the_dependent() {
    let registry = Registry::new();
    registry.register(answer("blocker", "blocker")).unwrap();
    let clashing = ToolFunc::builder("bad_dep")
        .alias("blocker")
        .handler_sync(|_ctx, _args| Ok(Value::Null))
        .build()
        .unwrap();
    let main = answer_builder("main")
        .depends("ok", answer("ok_dep", "ok"))
        .depends("bad", clashing)
        .build()
        .unwrap();
    assert_eq!(registry.register(main).unwrap_err().code(), "CONFLICT");
    assert!(!registry.has("main"));
    assert!(!registry.has("bad_dep"));
    assert!(
        !registry.has("ok_dep"),
        "the dependency taken before is given back"
    );
    assert_eq!(registry.names(), ["blocker"]);
}

#[tokio::test]
async fn an_override_keeps_a_shared_dependency_alive() {
    let registry = Registry::new();
    let (setups, disposes) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let dep = Arc::new(counted_hooks("dep", &setups, &disposes));
    let v1 = caller_of("main", "d")
        .depends("d", Arc::clone(&dep))
        .build()
        .unwrap();
    registry.register(v1).unwrap();
    let v2 = caller_of("main", "d").depends("d", dep).build().unwrap();
    assert!(
        registry
            .register_with(v2, RegisterOptions::new().allow_override(true))
            .unwrap()
    );
    assert!(registry.has("dep"));
    assert_eq!(
        disposes.load(Ordering::SeqCst),
        0,
        "never left the registry"
    );
    assert_eq!(
        bounded(registry.run("main", Value::Null)).await.unwrap(),
        "dep"
    );

    assert!(registry.unregister_with("main", UnregisterOptions::new().force()));
    assert!(!registry.has("dep"));
    assert_eq!(
        (
            setups.load(Ordering::SeqCst),
            disposes.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

fn answer_builder(name: &str) -> toolfunc::ToolBuilder {
    let out = name.to_owned();
    ToolFunc::builder(name).handler_sync(move |_ctx, _args| Ok(json!(out)))
}

// ---------------------------------------------------------------------------------
// Local aliases.

#[tokio::test]
async fn a_nested_call_resolves_the_dependency_alias_first() {
    let registry = Registry::new();
    // A global name `d` exists too: the alias wins inside `main`.
    registry.register(answer("d", "the tool named d")).unwrap();
    let main = caller_of("main", "d")
        .depends("d", answer("real_dep", "through the alias"))
        .build()
        .unwrap();
    registry.register(main).unwrap();
    assert_eq!(
        bounded(registry.run("main", Value::Null)).await.unwrap(),
        "through the alias"
    );
    assert_eq!(
        registry.run_sync("d", Value::Null).unwrap(),
        "the tool named d"
    );

    // Another tool has no such alias: it reaches the tool named `d`.
    registry
        .register(caller_of("other", "d").build().unwrap())
        .unwrap();
    assert_eq!(
        bounded(registry.run("other", Value::Null)).await.unwrap(),
        "the tool named d"
    );
    // And an unknown name is NOT_FOUND at call time.
    registry
        .register(caller_of("lost", "nowhere").build().unwrap())
        .unwrap();
    let err = bounded(registry.run("lost", Value::Null))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
}

// ---------------------------------------------------------------------------------
// Dependencies by name.

#[tokio::test]
async fn a_missing_dependency_by_name_fails_at_registration() {
    let registry = Registry::new();
    let make = || {
        caller_of("needs_f", "f")
            .depends_on("f", "provider")
            .build()
            .unwrap()
    };
    let err = registry.register(make()).unwrap_err();
    assert!(
        matches!(&err, ToolError::Definition { name, .. } if name == "needs_f"),
        "{err:?}"
    );
    assert_eq!(err.code(), "DEFINITION");
    assert!(err.to_string().contains("provider"), "{err}");
    assert!(!registry.has("needs_f"));

    registry.register(answer("provider", "provided")).unwrap();
    assert!(registry.register(make()).unwrap());
    assert_eq!(
        bounded(registry.run("needs_f", Value::Null)).await.unwrap(),
        "provided"
    );
    // A name dependency is not held: removing the dependent leaves it.
    assert!(registry.unregister("needs_f"));
    assert!(registry.has("provider"));
}

#[tokio::test]
async fn a_dependency_by_name_may_live_in_a_parent() {
    let parent = Registry::new();
    parent.register(answer("provider", "from parent")).unwrap();
    let child = parent.isolate();
    let tool = caller_of("needs_f", "f")
        .depends_on("f", "provider")
        .build()
        .unwrap();
    assert!(child.register(tool).unwrap());
    assert_eq!(
        bounded(child.run("needs_f", Value::Null)).await.unwrap(),
        "from parent"
    );
}

#[tokio::test]
async fn tool_functions_reach_their_dependencies_by_alias() {
    let registry = Registry::global();
    let greet = registry.get("dep_global_greet").unwrap();
    assert_eq!(
        greet.dependencies().collect::<Vec<_>>(),
        [("fetch", "dep_global_fetch")]
    );
    assert!(!registry.has("fetch"));
    assert_eq!(
        bounded(registry.run("dep_global_greet", json!({"id": 7})))
            .await
            .unwrap(),
        "hello user-7"
    );
    // Through a child of the global registry too.
    let child = registry.isolate();
    assert_eq!(
        bounded(child.run("dep_global_greet", json!({"id": 8})))
            .await
            .unwrap(),
        "hello user-8"
    );
    assert_eq!(dep_global_fetch(1), "user-1");
}

/// A tool that calls `alias` with `n - 1` until `n` is 0, then answers its own name.
fn ping(name: &str, dependency: Option<(&str, &str)>) -> ToolFunc {
    let alias = dependency.map(|(alias, _)| alias.to_owned());
    let own = name.to_owned();
    let builder = ToolFunc::builder(name).handler(move |ctx, args: Value| {
        let (alias, own) = (alias.clone(), own.clone());
        async move {
            let n = args["n"].as_u64().unwrap_or(0);
            match alias {
                Some(alias) if n > 0 => ctx.run(&alias, json!({"n": n - 1})).await,
                _ => Ok(json!(own)),
            }
        }
    });
    match dependency {
        Some((alias, target)) => builder.depends_on(alias, target),
        None => builder,
    }
    .build()
    .unwrap()
}

#[tokio::test]
async fn a_cycle_of_name_dependencies_terminates() {
    let registry = Registry::new();
    // `b` first without its dependency, then `a` on `b`, then `b` replaced by one on `a`.
    registry.register(ping("b", None)).unwrap();
    registry.register(ping("a", Some(("to_b", "b")))).unwrap();
    assert!(
        registry
            .register_with(
                ping("b", Some(("to_a", "a"))),
                RegisterOptions::new().allow_override(true)
            )
            .unwrap()
    );
    // Counted registrations of either end of the cycle terminate too.
    assert!(!registry.register(ping("a", Some(("to_b", "b")))).unwrap());
    assert!(!registry.register(ping("b", Some(("to_a", "a")))).unwrap());

    assert_eq!(
        bounded(registry.run("a", json!({"n": 3}))).await.unwrap(),
        "b"
    );
    assert_eq!(
        bounded(registry.run("b", json!({"n": 3}))).await.unwrap(),
        "a"
    );

    // A tool may name itself.
    assert!(
        registry
            .register(ping("me", Some(("again", "me"))))
            .unwrap()
    );
    assert_eq!(
        bounded(registry.run("me", json!({"n": 4}))).await.unwrap(),
        "me"
    );

    timeout(LIMIT, registry.clear())
        .await
        .expect("clear finishes")
        .unwrap();
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn an_instance_depending_back_by_name_terminates() {
    let registry = Registry::new();
    let back = ping("back", Some(("to_front", "front")));
    let front = ToolFunc::builder("front")
        .handler_sync(|_ctx, _args| Ok(json!("front")))
        .depends("b", back)
        .build()
        .unwrap();
    // `back` names `front`, which is being registered: either way, it ends.
    let registered = tokio::task::spawn_blocking(move || {
        let outcome = registry.register(front);
        (outcome, registry)
    });
    let (outcome, registry) = timeout(LIMIT, registered)
        .await
        .expect("registration finishes")
        .unwrap();
    match outcome {
        Ok(_) => assert!(registry.has("front") && registry.has("back")),
        Err(err) => {
            assert_eq!(err.code(), "DEFINITION", "{err:?}");
            assert!(registry.names().is_empty(), "{:?}", registry.names());
        }
    }
}

// ---------------------------------------------------------------------------------
// Binding nested calls to shadows.

/// The reference example: `main` in the parent calls `dep`; the child shadows `dep`.
fn parent_and_child() -> (Registry, Registry) {
    let parent = Registry::new();
    let dep = Arc::new(answer("dep", "parent-dep"));
    parent.register(Arc::clone(&dep)).unwrap();
    parent
        .register(caller_of("main", "dep").depends("d", dep).build().unwrap())
        .unwrap();
    let child = parent.isolate();
    child.register(answer("dep", "child-dep")).unwrap();
    (parent, child)
}

async fn run_main(registry: &Registry, binding: Option<Binding>) -> Value {
    let runner =
        registry.with(binding.map_or_else(CallOptions::new, |b| CallOptions::new().binding(b)));
    bounded(runner.run("main", Value::Null)).await.unwrap()
}

#[tokio::test]
async fn auto_binding_late_binds_from_a_descendant_only() {
    let (parent, child) = parent_and_child();
    assert_eq!(run_main(&child, None).await, "child-dep");
    assert_eq!(run_main(&parent, None).await, "parent-dep");
    assert_eq!(run_main(&child, Some(Binding::Auto)).await, "child-dep");
    assert_eq!(
        bounded(child.run("main", Value::Null)).await.unwrap(),
        "child-dep"
    );
}

#[tokio::test]
async fn early_binding_keeps_to_the_holding_registry() {
    let (parent, child) = parent_and_child();
    assert_eq!(run_main(&child, Some(Binding::Early)).await, "parent-dep");
    assert_eq!(run_main(&parent, Some(Binding::Early)).await, "parent-dep");
}

#[tokio::test]
async fn late_binding_resolves_in_the_calling_registry() {
    let (parent, child) = parent_and_child();
    assert_eq!(run_main(&parent, Some(Binding::Late)).await, "parent-dep");
    assert_eq!(run_main(&child, Some(Binding::Late)).await, "child-dep");
}

#[tokio::test]
async fn a_sibling_never_sees_the_childs_shadow() {
    let (parent, child) = parent_and_child();
    let sibling = parent.isolate();
    for binding in [
        None,
        Some(Binding::Auto),
        Some(Binding::Early),
        Some(Binding::Late),
    ] {
        assert_eq!(
            run_main(&sibling, binding).await,
            "parent-dep",
            "{binding:?}"
        );
    }
    assert_eq!(run_main(&child, None).await, "child-dep");
}

#[tokio::test]
async fn binding_applies_to_calls_through_a_dependency_alias() {
    let parent = Registry::new();
    let dep = answer("dep", "parent-dep");
    parent
        .register(caller_of("main", "d").depends("d", dep).build().unwrap())
        .unwrap();
    let child = parent.isolate();
    child.register(answer("dep", "child-dep")).unwrap();
    assert_eq!(run_main(&child, None).await, "child-dep");
    assert_eq!(run_main(&child, Some(Binding::Early)).await, "parent-dep");
    assert_eq!(run_main(&parent, None).await, "parent-dep");
}
