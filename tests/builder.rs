//! `ToolFunc::builder` and `ToolFunc::from_definition`: tools made at run time, their
//! schemas, and the checks made before a handler runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolfunc::{Registry, ToolDefinition, ToolError, ToolFunc};

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The left operand.
    a: i64,
    b: Option<i64>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
}

fn registry_with(tool: ToolFunc) -> Registry {
    let registry = Registry::new();
    assert!(registry.register(tool).unwrap());
    registry
}

fn definition_json(registry: &Registry, name: &str) -> Value {
    serde_json::to_value(registry.get(name).unwrap().definition()).unwrap()
}

fn add_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer"}
        },
        "required": ["a", "b"]
    })
}

fn is_arguments_at(err: &ToolError, at: &str) -> bool {
    matches!(err, ToolError::Arguments { path, .. } if path == at)
}

fn is_definition(err: &ToolError, tool: &str) -> bool {
    matches!(err, ToolError::Definition { name, .. } if name == tool)
}

// ---------------------------------------------------------------------------------
// The four handler forms.

#[tokio::test]
async fn handler_async_over_json() {
    let tool = ToolFunc::builder("json_async")
        .description("Adds, asynchronously.")
        .params_schema(add_schema())
        .handler(|_ctx, args: Value| async move {
            tokio::task::yield_now().await;
            Ok(json!(
                args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()
            ))
        })
        .build()
        .unwrap();
    assert!(tool.is_async());
    let registry = registry_with(tool);
    assert_eq!(
        registry
            .run("json_async", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        registry
            .run_sync("json_async", json!({"a": 1, "b": 2}))
            .unwrap_err()
            .code(),
        "ASYNC_ONLY"
    );
    assert_eq!(
        definition_json(&registry, "json_async"),
        json!({"name": "json_async", "description": "Adds, asynchronously.", "params": add_schema()})
    );
}

#[tokio::test]
async fn handler_sync_over_json() {
    let tool = ToolFunc::builder("json_sync")
        .params_schema(add_schema())
        .result_schema(json!({"type": "integer"}))
        .handler_sync(|ctx, args| {
            assert_eq!(ctx.tool_name(), "json_sync");
            Ok(json!(
                args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()
            ))
        })
        .build()
        .unwrap();
    assert!(!tool.is_async());
    let registry = registry_with(tool);
    assert_eq!(
        registry
            .run_sync("json_sync", json!({"a": 1, "b": 2}))
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        registry
            .run("json_sync", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        definition_json(&registry, "json_sync"),
        json!({"name": "json_sync", "params": add_schema(), "result": {"type": "integer"}})
    );
}

#[tokio::test]
async fn typed_derives_both_schemas() {
    let tool = ToolFunc::builder("typed_async")
        .typed(|_ctx, args: AddArgs| async move {
            Ok::<_, ToolError>(Sum {
                total: args.a + args.b.unwrap_or(0),
            })
        })
        .build()
        .unwrap();
    assert!(tool.is_async());
    let registry = registry_with(tool);
    assert_eq!(
        definition_json(&registry, "typed_async"),
        json!({
            "name": "typed_async",
            "params": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "The left operand."},
                    "b": {"type": ["integer", "null"], "format": "int64"}
                },
                "required": ["a"]
            },
            "result": {
                "type": "object",
                "properties": {"total": {"type": "integer", "format": "int64"}},
                "required": ["total"]
            }
        })
    );
    assert_eq!(
        registry.run("typed_async", json!({"a": 4})).await.unwrap(),
        json!({"total": 4})
    );
    let err = registry
        .run("typed_async", json!({"a": "4"}))
        .await
        .unwrap_err();
    assert!(is_arguments_at(&err, "/a"), "{err:?}");
}

#[test]
fn typed_sync_derives_both_schemas_and_unit_has_none() {
    let tool = ToolFunc::builder("typed_sync")
        .typed_sync(|_ctx, args: AddArgs| {
            Ok(Sum {
                total: args.a + args.b.unwrap_or(0),
            })
        })
        .build()
        .unwrap();
    assert!(!tool.is_async());
    let registry = registry_with(tool);
    assert_eq!(
        registry
            .run_sync("typed_sync", json!({"a": 4, "b": 5}))
            .unwrap(),
        json!({"total": 9})
    );
    assert_eq!(
        definition_json(&registry, "typed_sync")["result"],
        json!({
            "type": "object",
            "properties": {"total": {"type": "integer", "format": "int64"}},
            "required": ["total"]
        })
    );

    let unit = ToolFunc::builder("typed_unit")
        .typed_sync(|_ctx, _args: AddArgs| Ok(()))
        .build()
        .unwrap();
    assert_eq!(unit.definition().result, None);
    let registry = registry_with(unit);
    assert_eq!(
        registry.run_sync("typed_unit", json!({"a": 1})).unwrap(),
        Value::Null
    );
}

#[test]
fn given_schemas_win_over_derived_ones() {
    let params = json!({
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0}},
        "required": ["a"]
    });
    let result = json!({"type": "object", "description": "given"});
    let tool = ToolFunc::builder("typed_given")
        .params_schema(params.clone())
        .result_schema(result.clone())
        .typed_sync(|_ctx, args: AddArgs| Ok(Sum { total: args.a }))
        .build()
        .unwrap();
    assert_eq!(tool.definition().params, params);
    assert_eq!(tool.definition().result, Some(result.clone()));

    // Given after the typed handler, too.
    let tool = ToolFunc::builder("typed_given_after")
        .typed_sync(|_ctx, args: AddArgs| Ok(Sum { total: args.a }))
        .params_schema(params.clone())
        .result_schema(result.clone())
        .build()
        .unwrap();
    assert_eq!(tool.definition().params, params);
    assert_eq!(tool.definition().result, Some(result));
}

// ---------------------------------------------------------------------------------
// A given schema is checked before the handler runs.

#[tokio::test]
async fn given_schema_is_enforced_before_the_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let sync_runs = Arc::clone(&runs);
    let async_runs = Arc::clone(&runs);
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("guarded_sync")
                .params_schema(add_schema())
                .handler_sync(move |_ctx, args| {
                    sync_runs.fetch_add(1, Ordering::SeqCst);
                    Ok(args)
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("guarded_async")
                .params_schema(add_schema())
                .handler(move |_ctx, args| {
                    let runs = Arc::clone(&async_runs);
                    async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(args)
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();

    for (bad, at) in [
        (json!({"a": 1}), "/b"),
        (json!({"a": "1", "b": 2}), "/a"),
        (json!({"a": 1, "b": 2.5}), "/b"),
        (json!([1, 2]), ""),
    ] {
        let err = registry.run_sync("guarded_sync", bad.clone()).unwrap_err();
        assert!(is_arguments_at(&err, at), "{bad}: {err:?}");
        let err = registry
            .run("guarded_async", bad.clone())
            .await
            .unwrap_err();
        assert!(is_arguments_at(&err, at), "{bad}: {err:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no handler ran");

    let good = json!({"a": 1, "b": 2});
    assert_eq!(
        registry.run_sync("guarded_sync", good.clone()).unwrap(),
        good
    );
    assert_eq!(
        registry.run("guarded_async", good.clone()).await.unwrap(),
        good
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn given_schema_is_enforced_for_typed_handlers_too() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let tool = ToolFunc::builder("typed_guarded")
        .params_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": 0}},
            "required": ["a"]
        }))
        .typed_sync(move |_ctx, args: AddArgs| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(args.a)
        })
        .build()
        .unwrap();
    let registry = registry_with(tool);
    let result = registry.run_sync("typed_guarded", json!({"a": -1}));
    assert!(
        matches!(&result, Err(err) if is_arguments_at(err, "/a")),
        "{result:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the handler must not run");
}

// ---------------------------------------------------------------------------------
// Invalid definitions.

#[test]
fn a_builder_without_handler_is_a_definition_error() {
    let err = ToolFunc::builder("no_handler")
        .params_schema(add_schema())
        .build()
        .unwrap_err();
    assert!(is_definition(&err, "no_handler"), "{err:?}");
    assert_eq!((err.code(), err.status()), ("DEFINITION", 500));

    let err = ToolFunc::builder("")
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION", "{err:?}");
}

#[test]
fn a_params_schema_whose_root_is_not_an_object_is_a_definition_error() {
    for schema in [
        json!({"type": "array", "items": {"type": "integer"}}),
        json!({"type": "string"}),
        json!({"type": ["object", "null"]}),
        json!({"properties": {"a": {"type": "integer"}}}),
        json!("object"),
        json!(true),
        Value::Null,
    ] {
        let err = ToolFunc::builder("bad_root")
            .params_schema(schema.clone())
            .handler_sync(|_ctx, args| Ok(args))
            .build()
            .unwrap_err();
        assert!(is_definition(&err, "bad_root"), "{schema}: {err:?}");
        let err = ToolFunc::builder("bad_root_typed")
            .params_schema(schema.clone())
            .typed_sync(|_ctx, args: AddArgs| Ok(args.a))
            .build()
            .unwrap_err();
        assert!(is_definition(&err, "bad_root_typed"), "{schema}: {err:?}");
    }
}

#[test]
fn typed_args_that_are_not_an_object_are_a_definition_error() {
    let err = ToolFunc::builder("typed_vec")
        .typed_sync(|_ctx, args: Vec<i64>| Ok(args.len()))
        .build()
        .unwrap_err();
    assert!(is_definition(&err, "typed_vec"), "{err:?}");
}

#[test]
fn an_object_root_without_properties_gets_empty_properties() {
    let tool = ToolFunc::builder("bare_object")
        .params_schema(json!({"type": "object"}))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap();
    assert_eq!(
        tool.definition().params,
        json!({"type": "object", "properties": {}})
    );
    let tool = ToolFunc::builder("no_schema")
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap();
    assert_eq!(
        tool.definition().params,
        json!({"type": "object", "properties": {}})
    );
}

// ---------------------------------------------------------------------------------
// Definitions as JSON.

fn loaded_definition() -> Value {
    json!({
        "name": "loaded",
        "title": "Loaded",
        "description": "Loaded from JSON.",
        "summary": "Loaded.",
        "params": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        },
        "result": {"type": "string"},
        "alias": ["loaded_alias"],
        "tags": ["io"]
    })
}

#[tokio::test]
async fn from_definition_with_a_handler() {
    let def: ToolDefinition = serde_json::from_value(loaded_definition()).unwrap();
    let tool = ToolFunc::from_definition(def.clone())
        .handler_sync(|_ctx, args| Ok(args["text"].clone()))
        .build()
        .unwrap();
    assert_eq!(tool.definition(), &def);
    let registry = registry_with(tool);
    assert_eq!(definition_json(&registry, "loaded"), loaded_definition());
    assert_eq!(
        registry
            .run("loaded_alias", json!({"text": "hi"}))
            .await
            .unwrap(),
        json!("hi")
    );
    // The loaded schema is enforced.
    let err = registry
        .run("loaded", json!({"text": 1}))
        .await
        .unwrap_err();
    assert!(is_arguments_at(&err, "/text"), "{err:?}");

    // Without a handler it does not build.
    let err = ToolFunc::from_definition(def).build().unwrap_err();
    assert!(is_definition(&err, "loaded"), "{err:?}");
}

#[test]
fn from_definition_accepts_one_string_for_alias_and_tags() {
    let def: ToolDefinition = serde_json::from_value(json!({
        "name": "short",
        "alias": "short_alias",
        "tags": "one"
    }))
    .unwrap();
    assert_eq!(def.alias, ["short_alias"]);
    assert_eq!(def.tags, ["one"]);
    assert_eq!(def.params, json!({"type": "object", "properties": {}}));
    let tool = ToolFunc::from_definition(def)
        .handler_sync(|_ctx, _args| Ok(json!("ok")))
        .build()
        .unwrap();
    let registry = registry_with(tool);
    assert_eq!(
        registry.run_sync("short_alias", Value::Null).unwrap(),
        json!("ok")
    );
    assert_eq!(
        definition_json(&registry, "short"),
        json!({
            "name": "short",
            "params": {"type": "object", "properties": {}},
            "alias": ["short_alias"],
            "tags": ["one"]
        })
    );
}

#[test]
fn definition_json_round_trip() {
    let tool = ToolFunc::builder("round")
        .title("Round")
        .description("Rounds.\n\nTwo paragraphs.")
        .summary("Rounds.")
        .alias("round_a")
        .alias("round_b")
        .tag("math")
        .typed_sync(|_ctx, args: AddArgs| Ok(Sum { total: args.a }))
        .build()
        .unwrap();
    let def = tool.definition().clone();
    let wire = serde_json::to_value(&def).unwrap();
    assert_eq!(wire["alias"], json!(["round_a", "round_b"]));
    assert_eq!(wire["tags"], json!(["math"]));
    let back: ToolDefinition = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(back, def);
    assert_eq!(serde_json::to_value(&back).unwrap(), wire);
    let text = serde_json::to_string(&def).unwrap();
    assert_eq!(serde_json::from_str::<ToolDefinition>(&text).unwrap(), def);

    let loaded: ToolDefinition = serde_json::from_value(loaded_definition()).unwrap();
    assert_eq!(serde_json::to_value(&loaded).unwrap(), loaded_definition());

    // `advertised` swaps in the summary.
    let advertised = serde_json::to_value(def.advertised()).unwrap();
    assert_eq!(advertised["description"], "Rounds.");
    assert!(advertised.get("summary").is_none());
}

// ---------------------------------------------------------------------------------
// Positional arguments.

#[test]
fn param_order_is_used_by_positional_args() {
    let tool = ToolFunc::builder("ordered")
        .params_schema(json!({
            "type": "object",
            "properties": {
                "alpha": {"type": "integer"},
                "zeta": {"type": "integer"}
            }
        }))
        .param_order(["zeta", "alpha"])
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap();
    let registry = registry_with(tool);
    assert_eq!(
        registry
            .run_sync("ordered", vec![json!(1), json!(2)])
            .unwrap(),
        json!({"zeta": 1, "alpha": 2})
    );
    assert_eq!(
        registry.run_sync("ordered", vec![json!(1)]).unwrap(),
        json!({"zeta": 1})
    );
    let err = registry
        .run_sync("ordered", vec![json!(1), json!(2), json!(3)])
        .unwrap_err();
    assert!(is_arguments_at(&err, "/2"), "{err:?}");

    // param_order also applies to typed tools.
    let tool = ToolFunc::builder("ordered_typed")
        .param_order(["b", "a"])
        .typed_sync(|_ctx, args: AddArgs| Ok(args.a - args.b.unwrap_or(0)))
        .build()
        .unwrap();
    let registry = registry_with(tool);
    assert_eq!(
        registry
            .run_sync("ordered_typed", vec![json!(3), json!(10)])
            .unwrap(),
        json!(7)
    );
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Diff {
    zeta: i64,
    alpha: i64,
}

#[test]
fn typed_positional_args_map_a_single_object_onto_the_first_field() {
    let tool = ToolFunc::builder("typed_whole")
        .typed_sync(|_ctx, args: Diff| Ok(args.zeta - args.alpha))
        .build()
        .unwrap();
    let registry = registry_with(tool);
    // Positional values are always arguments in order; an arguments object goes to `run`.
    let err = registry
        .run_sync("typed_whole", vec![json!({"zeta": 10, "alpha": 3})])
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/zeta"),
        "{err:?}"
    );
}

#[test]
fn typed_positional_args_follow_field_declaration_order() {
    let tool = ToolFunc::builder("typed_positional")
        .typed_sync(|_ctx, args: Diff| Ok(args.zeta - args.alpha))
        .build()
        .unwrap();
    let registry = registry_with(tool);
    // `Diff` declares `zeta` first, so 10 is zeta and 3 is alpha.
    assert_eq!(
        registry
            .run_sync("typed_positional", vec![json!(10), json!(3)])
            .unwrap(),
        json!(7)
    );
}
