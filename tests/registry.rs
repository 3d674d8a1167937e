//! `Registry`: the global registry filled by `#[tool]`, registries made at run time,
//! and running tools by name, alias and position.

use serde_json::{Value, json};
use toolfunc::{Registry, ToolError, ToolFunc, tool};

/// Adds two integers.
#[tool(alias = ["reg_plus", "reg_sum"])]
fn reg_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Echoes a text, asynchronously.
#[tool(alias = "reg_async_alias")]
async fn reg_async_echo(text: String) -> String {
    tokio::task::yield_now().await;
    text
}

/// The full description of this tool.
///
/// A second paragraph that only direct lookup shows.
#[tool(summary = "Short summary.")]
fn reg_summarised() -> bool {
    true
}

/// A tool that returns its arguments, for registries made at run time.
fn echo(name: &str) -> ToolFunc {
    ToolFunc::builder(name)
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .expect("a builder with a handler builds")
}

fn echo_with_aliases(name: &str, aliases: &[&str]) -> ToolFunc {
    aliases
        .iter()
        .fold(ToolFunc::builder(name), |b, alias| b.alias(*alias))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .expect("a builder with a handler builds")
}

fn is_not_found(err: &ToolError, name: &str) -> bool {
    matches!(err, ToolError::NotFound { name: n, .. } if n == name)
        && err.data() == Some(json!({"what": name}))
}

// ---------------------------------------------------------------------------------
// The global registry.

#[test]
fn global_holds_macro_tools_without_registration() {
    let registry = Registry::global();
    for name in [
        "reg_add",
        "reg_plus",
        "reg_sum",
        "reg_async_echo",
        "reg_async_alias",
        "reg_summarised",
    ] {
        assert!(registry.has(name), "{name}");
    }
    let names = registry.names();
    for name in ["reg_add", "reg_async_echo", "reg_summarised"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // Aliases are not names.
    assert!(!names.iter().any(|n| n == "reg_plus"), "{names:?}");
    assert_eq!(registry.get("reg_plus").unwrap().name(), "reg_add");
    assert!(Registry::try_global().is_ok());
}

#[tokio::test]
async fn run_by_name_and_by_alias() {
    let registry = Registry::global();
    let args = json!({"a": 2, "b": 3});
    for name in ["reg_add", "reg_plus", "reg_sum"] {
        assert_eq!(registry.run(name, args.clone()).await.unwrap(), json!(5));
        assert_eq!(registry.run_sync(name, args.clone()).unwrap(), json!(5));
        assert_eq!(
            registry.run(name, vec![json!(2), json!(3)]).await.unwrap(),
            json!(5)
        );
        assert_eq!(
            registry.run_sync(name, vec![json!(2), json!(3)]).unwrap(),
            json!(5)
        );
    }
    for name in ["reg_async_echo", "reg_async_alias"] {
        assert_eq!(
            registry.run(name, json!({"text": "hi"})).await.unwrap(),
            json!("hi")
        );
        assert_eq!(
            registry.run(name, vec![json!("hi")]).await.unwrap(),
            json!("hi")
        );
    }
}

#[test]
fn positional_args_map_values_in_declaration_order() {
    /// Subtracts.
    #[tool]
    fn reg_minus(zeta: i64, alpha: i64) -> i64 {
        zeta - alpha
    }
    let registry = Registry::global();
    assert_eq!(
        registry
            .run_sync("reg_minus", vec![json!(10), json!(3)])
            .unwrap(),
        json!(7)
    );
    assert_eq!(reg_minus(1, 1), 0);
}

#[test]
fn run_sync_on_an_async_tool_is_async_only() {
    let registry = Registry::global();
    for name in ["reg_async_echo", "reg_async_alias"] {
        let err = registry.run_sync(name, json!({"text": "x"})).unwrap_err();
        assert!(
            matches!(&err, ToolError::AsyncOnly { name } if name == "reg_async_echo"),
            "{err:?}"
        );
        assert_eq!(err.code(), "ASYNC_ONLY");
        let err = registry.run_sync(name, vec![json!("x")]).unwrap_err();
        assert_eq!(err.code(), "ASYNC_ONLY");
    }
}

#[tokio::test]
async fn unknown_names_are_not_found() {
    let registry = Registry::global();
    let err = registry.run("no_such_tool", json!({})).await.unwrap_err();
    assert!(is_not_found(&err, "no_such_tool"), "{err:?}");
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(
        serde_json::to_value(&err).unwrap()["data"]["what"],
        "no_such_tool"
    );
    let err = registry.run_sync("no_such_tool", json!({})).unwrap_err();
    assert!(is_not_found(&err, "no_such_tool"), "{err:?}");
    let err = registry
        .run("no_such_tool", Vec::<Value>::new())
        .await
        .unwrap_err();
    assert!(is_not_found(&err, "no_such_tool"), "{err:?}");
    let err = registry
        .run_sync("no_such_tool", Vec::<Value>::new())
        .unwrap_err();
    assert!(is_not_found(&err, "no_such_tool"), "{err:?}");
    assert!(registry.get("no_such_tool").is_none());
    assert!(!registry.has("no_such_tool"));
}

#[tokio::test]
async fn positional_args_with_too_many_values_are_arguments() {
    let registry = Registry::global();
    let err = registry
        .run("reg_add", vec![json!(1), json!(2), json!(3)])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/2"),
        "{err:?}"
    );
    let err = registry
        .run_sync("reg_summarised", vec![json!(1)])
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/0"),
        "{err:?}"
    );
    // Too few is left to the parameter check: the missing one is named.
    let err = registry.run_sync("reg_add", vec![json!(1)]).unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/b"),
        "{err:?}"
    );
}

#[test]
fn definitions_advertise_the_summary_and_get_keeps_the_description() {
    let registry = Registry::global();
    let full =
        "The full description of this tool.\n\nA second paragraph that only direct lookup shows.";

    let advertised = registry
        .definitions()
        .into_iter()
        .find(|d| d.name == "reg_summarised")
        .expect("advertised");
    assert_eq!(
        serde_json::to_value(&advertised).unwrap(),
        json!({
            "name": "reg_summarised",
            "description": "Short summary.",
            "params": {"type": "object", "properties": {}},
            "result": {"type": "boolean"}
        })
    );

    let def = registry.get("reg_summarised").unwrap().definition().clone();
    assert_eq!(def.description.as_deref(), Some(full));
    assert_eq!(def.summary.as_deref(), Some("Short summary."));

    // A tool without a summary is advertised with its description.
    let add = registry
        .definitions()
        .into_iter()
        .find(|d| d.name == "reg_add")
        .expect("advertised");
    assert_eq!(add.description.as_deref(), Some("Adds two integers."));
    assert_eq!(&add, registry.get("reg_add").unwrap().definition());
}

#[test]
fn names_and_definitions_are_sorted() {
    let names = Registry::global().names();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let def_names: Vec<String> = Registry::global()
        .definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(def_names, names);

    let registry = Registry::new();
    for name in ["delta", "alpha", "charlie", "bravo"] {
        registry.register(echo(name)).unwrap();
    }
    assert_eq!(registry.names(), ["alpha", "bravo", "charlie", "delta"]);
    let def_names: Vec<String> = registry.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(def_names, ["alpha", "bravo", "charlie", "delta"]);
}

// ---------------------------------------------------------------------------------
// Registries made at run time.

#[tokio::test]
async fn a_new_registry_is_empty() {
    let registry = Registry::new();
    assert!(registry.names().is_empty());
    assert!(registry.definitions().is_empty());
    assert!(!registry.has("reg_add"), "it does not see the global tools");
    let err = registry
        .run("reg_add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(is_not_found(&err, "reg_add"), "{err:?}");
}

#[test]
fn register_counts_and_unregister_takes_back() {
    let registry = Registry::new();
    assert!(
        registry
            .register(echo_with_aliases("counted", &["counted_alias"]))
            .unwrap()
    );
    assert!(!registry.register(echo("counted")).unwrap());
    assert!(!registry.register(echo("counted")).unwrap());
    assert_eq!(registry.names(), ["counted"]);

    // Three registrations: two unregistrations keep the tool, the third removes it.
    assert!(registry.unregister("counted"));
    assert!(registry.has("counted") && registry.has("counted_alias"));
    assert!(registry.unregister("counted_alias"), "by alias");
    assert!(registry.has("counted") && registry.has("counted_alias"));
    assert_eq!(
        registry.run_sync("counted_alias", json!({"x": 1})).unwrap(),
        json!({"x": 1})
    );
    assert!(registry.unregister("counted"));
    assert!(!registry.has("counted"));
    assert!(!registry.has("counted_alias"), "aliases go with the tool");
    assert!(registry.get("counted_alias").is_none());
    assert!(registry.names().is_empty());
    assert!(!registry.unregister("counted"));
    assert!(!registry.unregister("counted_alias"));

    // The freed alias can be used by another tool.
    assert!(registry.register(echo("counted_alias")).unwrap());
    assert!(registry.has("counted_alias"));
}

#[test]
fn alias_conflicts_are_refused_and_change_nothing() {
    let registry = Registry::new();
    assert!(
        registry
            .register(echo_with_aliases("first", &["shared"]))
            .unwrap()
    );
    let before_names = registry.names();
    let before_defs = registry.definitions();

    let attempts = [
        // A name that is an existing alias.
        echo("shared"),
        // An alias that is an existing alias.
        echo_with_aliases("second", &["second_ok", "shared"]),
        // An alias that is an existing name.
        echo_with_aliases("third", &["third_ok", "first"]),
    ];
    for tool in attempts {
        let name = tool.name().to_owned();
        let err = registry.register(tool).unwrap_err();
        assert!(matches!(err, ToolError::Conflict { .. }), "{name}: {err:?}");
        assert_eq!((err.code(), err.status()), ("CONFLICT", 409));
    }
    assert_eq!(registry.names(), before_names);
    assert_eq!(registry.definitions(), before_defs);
    for name in ["second", "second_ok", "third", "third_ok"] {
        assert!(!registry.has(name), "{name} must not be registered");
    }
    assert_eq!(registry.get("shared").unwrap().name(), "first");
    assert_eq!(registry.get("first").unwrap().name(), "first");
}

#[test]
fn has_finds_names_and_aliases() {
    let registry = Registry::new();
    registry
        .register(echo_with_aliases("finder", &["finder_a", "finder_b"]))
        .unwrap();
    assert!(registry.has("finder"));
    assert!(registry.has("finder_a"));
    assert!(registry.has("finder_b"));
    assert!(!registry.has("finder_c"));
    assert!(!registry.has(""));
}

#[test]
fn clones_share_their_tools() {
    let registry = Registry::new();
    let clone = registry.clone();
    registry.register(echo("shared_tool")).unwrap();
    assert!(clone.has("shared_tool"));
    assert!(clone.unregister("shared_tool"));
    assert!(!registry.has("shared_tool"));
}

#[test]
fn ten_thousand_tools_are_each_found() {
    const COUNT: usize = 10_000;
    let registry = Registry::new();
    for i in 0..COUNT {
        let tool = ToolFunc::builder(format!("tool_{i}"))
            .alias(format!("alias_{i}"))
            .handler_sync(move |_ctx, _args| Ok(json!(i)))
            .build()
            .unwrap();
        assert!(registry.register(tool).unwrap());
    }
    assert_eq!(registry.names().len(), COUNT);
    assert_eq!(registry.definitions().len(), COUNT);
    for i in 0..COUNT {
        assert_eq!(
            registry
                .run_sync(&format!("tool_{i}"), Value::Null)
                .unwrap(),
            json!(i)
        );
        assert_eq!(
            registry.get(&format!("alias_{i}")).unwrap().name(),
            format!("tool_{i}")
        );
    }
    assert!(!registry.has(&format!("tool_{COUNT}")));
}
