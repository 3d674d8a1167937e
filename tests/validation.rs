//! Argument checking: what is refused before a handler runs, and the JSON Pointer of
//! the failing value, for `#[tool]` functions (checked by deserialisation) and for
//! builder tools with a JSON schema (checked against the schema).

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};
use toolfunc::{Registry, ToolError, ToolFunc, tool};

#[derive(Deserialize, schemars::JsonSchema)]
struct Item {
    id: u64,
    name: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Inner {
    value: u8,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Outer {
    inner: Inner,
}

/// Adds coordinates.
#[tool]
fn val_point(x: i64, y: i64) -> i64 {
    x + y
}

/// Adds coordinates, asynchronously.
#[tool]
async fn val_point_async(x: i64, y: i64) -> i64 {
    tokio::task::yield_now().await;
    x + y
}

/// Returns its optional argument.
#[tool]
fn val_optional(a: Option<i64>) -> Option<i64> {
    a
}

/// Counts items.
#[tool]
fn val_items(items: Vec<Item>) -> usize {
    items
        .iter()
        .filter(|i| i.id > 0 && !i.name.is_empty())
        .count()
}

/// Reads a nested value.
#[tool]
fn val_nested(outer: Outer) -> u8 {
    outer.inner.value
}

/// Sums counts by name.
#[tool]
fn val_counts(counts: BTreeMap<String, u32>) -> u32 {
    counts.values().sum()
}

/// The failing path and message of an `ARGUMENTS` error (panics on anything else).
fn arguments_error(result: Result<Value, ToolError>) -> (String, String) {
    match result {
        Err(ToolError::Arguments { path, message }) => (path, message),
        other => panic!("expected an ARGUMENTS error, got {other:?}"),
    }
}

fn run(name: &str, args: Value) -> (String, String) {
    arguments_error(Registry::global().run_sync(name, args))
}

// ---------------------------------------------------------------------------------
// The arguments object itself.

#[tokio::test]
async fn non_object_arguments_are_refused_at_the_root() {
    let schema_tool = ToolFunc::builder("val_schema_root")
        .params_schema(json!({"type": "object", "properties": {}}))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap();
    let typed_tool = ToolFunc::builder("val_typed_root")
        .typed_sync(|_ctx, item: Item| Ok(item.id))
        .build()
        .unwrap();
    let registry = Registry::new();
    registry.register(schema_tool).unwrap();
    registry.register(typed_tool).unwrap();

    for (args, found) in [
        (json!([1, 2]), "an array"),
        (json!("x"), "a string"),
        (json!(3), "a number"),
        (json!(true), "a boolean"),
    ] {
        let expected = (
            String::new(),
            format!("expected an object of named arguments, found {found}"),
        );
        assert_eq!(run("val_point", args.clone()), expected, "{args}");
        assert_eq!(
            arguments_error(
                Registry::global()
                    .run("val_point_async", args.clone())
                    .await
            ),
            expected,
            "{args}"
        );
        assert_eq!(
            arguments_error(registry.run_sync("val_schema_root", args.clone())),
            expected,
            "{args}"
        );
        assert_eq!(
            arguments_error(registry.run_sync("val_typed_root", args.clone())),
            expected,
            "{args}"
        );
    }
}

#[test]
fn null_means_no_arguments() {
    let registry = Registry::global();
    assert_eq!(
        registry.run_sync("val_optional", Value::Null).unwrap(),
        Value::Null
    );
    assert_eq!(
        registry.run_sync("val_optional", json!({"a": 5})).unwrap(),
        json!(5)
    );
    // With required parameters, `null` is an empty object: the first one is missing.
    assert_eq!(
        run("val_point", Value::Null),
        ("/x".into(), "missing required property `x`".into())
    );

    let builder_tool = ToolFunc::builder("val_null_schema")
        .params_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"]
        }))
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap();
    let local = Registry::new();
    local.register(builder_tool).unwrap();
    assert_eq!(
        arguments_error(local.run_sync("val_null_schema", Value::Null)),
        ("/a".into(), "missing required property `a`".into())
    );
}

// ---------------------------------------------------------------------------------
// `#[tool]` functions: what deserialisation refuses, located by the schema check of
// the parameters type (and said as for a tool built with a schema).

#[test]
fn a_missing_required_field_is_named() {
    assert_eq!(
        run("val_point", json!({"x": 1})),
        ("/y".into(), "missing required property `y`".into())
    );
    assert_eq!(
        run(
            "val_items",
            json!({"items": [{"id": 1, "name": "a"}, {"id": 2}]})
        ),
        (
            "/items/1/name".into(),
            "missing required property `name`".into()
        )
    );
    assert_eq!(
        run("val_nested", json!({"outer": {}})),
        (
            "/outer/inner".into(),
            "missing required property `inner`".into()
        )
    );
}

#[test]
fn a_wrong_type_deep_inside_is_located() {
    let (path, message) = run(
        "val_items",
        json!({"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": "three", "name": "c"}]}),
    );
    assert_eq!(path, "/items/2/id");
    assert_eq!(message, "expected integer, found string");

    let (path, message) = run("val_nested", json!({"outer": {"inner": {"value": 300}}}));
    assert_eq!(path, "/outer/inner/value");
    assert_eq!(message, "expected a number <= 255");

    let (path, message) = run("val_point", json!({"x": 1, "y": 1.5}));
    assert_eq!(path, "/y");
    assert_eq!(message, "expected integer, found number");

    let (path, message) = run("val_items", json!({"items": {"id": 1}}));
    assert_eq!(path, "/items");
    assert_eq!(message, "expected array, found object");

    // What the schema accepts and serde refuses (a whole number past `i64`) keeps
    // serde's message.
    let (_, message) = run("val_point", json!({"x": 1e20, "y": 1}));
    assert!(message.contains("i64"), "{message}");
}

#[test]
fn map_keys_are_escaped_in_the_path() {
    assert_eq!(
        Registry::global()
            .run_sync("val_counts", json!({"counts": {"a": 1, "b": 2}}))
            .unwrap(),
        json!(3)
    );
    assert_eq!(
        run("val_counts", json!({"counts": {"apples": -1}})).0,
        "/counts/apples"
    );
    assert_eq!(
        run("val_counts", json!({"counts": {"a/b": "x"}})).0,
        "/counts/a~1b"
    );
    assert_eq!(
        run("val_counts", json!({"counts": {"m~n": "x"}})).0,
        "/counts/m~0n"
    );
}

#[test]
fn typed_builder_tools_report_the_same_paths() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Batch {
        items: Vec<Item>,
    }
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("val_typed_batch")
                .typed_sync(|_ctx, batch: Batch| Ok(batch.items.len()))
                .build()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        arguments_error(registry.run_sync(
            "val_typed_batch",
            json!({"items": [{"id": 1, "name": "a"}, {"id": -4, "name": "b"}]})
        )),
        ("/items/1/id".into(), "expected a number >= 0".into())
    );
}

// ---------------------------------------------------------------------------------
// Builder tools with a JSON schema: paths from the schema check.

/// A registry with one schema-checked tool named `checked` that echoes its arguments.
fn checked(schema: Value) -> Registry {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("checked")
                .params_schema(schema)
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

/// Asserts that each of `good` passes (echoed back) and each of `bad` fails at its path
/// with its message.
fn assert_checks(schema: &Value, good: &[Value], bad: &[(Value, &str, &str)]) {
    let registry = checked(schema.clone());
    for args in good {
        assert_eq!(
            registry.run_sync("checked", args.clone()).unwrap(),
            *args,
            "{args} must pass {schema}"
        );
    }
    for (args, path, message) in bad {
        assert_eq!(
            arguments_error(registry.run_sync("checked", args.clone())),
            ((*path).to_owned(), (*message).to_owned()),
            "{args} against {schema}"
        );
    }
}

#[test]
fn schema_nested_objects() {
    let schema = json!({
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "address": {
                        "type": "object",
                        "properties": {"zip": {"type": "string"}},
                        "required": ["zip"]
                    }
                },
                "required": ["address"]
            }
        },
        "required": ["user"]
    });
    assert_checks(
        &schema,
        &[json!({"user": {"address": {"zip": "12345"}}})],
        &[
            (json!({}), "/user", "missing required property `user`"),
            (
                json!({"user": 1}),
                "/user",
                "expected object, found integer",
            ),
            (
                json!({"user": {}}),
                "/user/address",
                "missing required property `address`",
            ),
            (
                json!({"user": {"address": {}}}),
                "/user/address/zip",
                "missing required property `zip`",
            ),
            (
                json!({"user": {"address": {"zip": 12345}}}),
                "/user/address/zip",
                "expected string, found integer",
            ),
        ],
    );
}

#[test]
fn schema_arrays() {
    let schema = json!({
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": 3
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": false
            },
            "matrix": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "number"}}
            }
        }
    });
    assert_checks(
        &schema,
        &[json!({"tags": ["a"], "pair": ["x", 1], "matrix": [[1, 2.5], []]})],
        &[
            (
                json!({"tags": "a"}),
                "/tags",
                "expected array, found string",
            ),
            (json!({"tags": []}), "/tags", "expected at least 1 items"),
            (
                json!({"tags": ["a", "b", "c", "d"]}),
                "/tags",
                "expected at most 3 items",
            ),
            (
                json!({"tags": ["a", 2]}),
                "/tags/1",
                "expected string, found integer",
            ),
            (
                json!({"pair": [1, 1]}),
                "/pair/0",
                "expected string, found integer",
            ),
            (
                json!({"pair": ["x", 1, 2]}),
                "/pair/2",
                "no value is allowed here",
            ),
            (
                json!({"matrix": [[1], [2, "3"]]}),
                "/matrix/1/1",
                "expected number, found string",
            ),
        ],
    );
}

#[test]
fn schema_enum_and_const() {
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast", "slow"]},
            "version": {"const": 2}
        }
    });
    assert_checks(
        &schema,
        &[
            json!({"mode": "fast", "version": 2}),
            json!({"mode": "slow"}),
        ],
        &[
            (
                json!({"mode": "medium"}),
                "/mode",
                "expected one of [\"fast\",\"slow\"]",
            ),
            (
                json!({"mode": null}),
                "/mode",
                "expected one of [\"fast\",\"slow\"]",
            ),
            (json!({"version": 3}), "/version", "expected 2"),
        ],
    );
}

#[test]
fn schema_enum_compares_numbers_by_value() {
    let schema = json!({"type": "object", "properties": {"level": {"enum": [1, 2, 3]}}});
    assert_checks(&schema, &[json!({"level": 1.0})], &[]);
}

#[test]
fn schema_const_compares_numbers_by_value() {
    let schema = json!({"type": "object", "properties": {"version": {"const": 2}}});
    assert_checks(&schema, &[json!({"version": 2.0})], &[]);
}

#[test]
fn schema_additional_properties() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "options": {
                "type": "object",
                "properties": {"verbose": {"type": "boolean"}},
                "additionalProperties": false
            },
            "scores": {
                "type": "object",
                "additionalProperties": {"type": "integer"}
            }
        },
        "additionalProperties": false
    });
    assert_checks(
        &schema,
        &[json!({"name": "n", "options": {"verbose": true}, "scores": {"a": 1, "b": 2}})],
        &[
            (
                json!({"name": "n", "extra": 1}),
                "/extra",
                "unknown property `extra`",
            ),
            (
                json!({"options": {"verbose": true, "debug": true}}),
                "/options/debug",
                "unknown property `debug`",
            ),
            (
                json!({"scores": {"a": 1, "b": "two"}}),
                "/scores/b",
                "expected integer, found string",
            ),
            (json!({"a/b": 1}), "/a~1b", "unknown property `a/b`"),
        ],
    );
}

#[test]
fn schema_additional_properties_false_allows_pattern_properties() {
    let schema = json!({
        "type": "object",
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": false
    });
    assert_checks(
        &schema,
        // A property matching a pattern is known; any other is refused.
        &[json!({"x-trace": "abc"})],
        &[(json!({"other": 1}), "/other", "unknown property `other`")],
    );
}

#[test]
fn schema_refs_to_defs() {
    let schema = json!({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "owner": {"$ref": "#/definitions/Person"}
        },
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "parent": {"$ref": "#/$defs/Item"}
                },
                "required": ["id"]
            }
        },
        "definitions": {
            "Person": {"type": "object", "properties": {"name": {"type": "string"}}}
        }
    });
    assert_checks(
        &schema,
        &[json!({
            "items": [{"id": 1}, {"id": 2, "parent": {"id": 1}}],
            "owner": {"name": "Ann"}
        })],
        &[
            (
                json!({"items": [{"id": 1}, {"id": "2"}]}),
                "/items/1/id",
                "expected integer, found string",
            ),
            (
                json!({"items": [{"id": 1}, {}]}),
                "/items/1/id",
                "missing required property `id`",
            ),
            (
                json!({"items": [{"id": 1, "parent": {"id": 2, "parent": {"id": true}}}]}),
                "/items/0/parent/parent/id",
                "expected integer, found boolean",
            ),
            (
                json!({"owner": {"name": 7}}),
                "/owner/name",
                "expected string, found integer",
            ),
        ],
    );

    // A reference to nothing is a broken definition: refused when the tool is built,
    // not discovered by the first call that reaches it.
    let dangling = json!({
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/Missing"}}
    });
    let err = ToolFunc::builder("dangling")
        .params_schema(dangling.clone())
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION");
    assert!(err.to_string().contains("#/$defs/Missing"), "{err}");
    // The standalone check reports it where a value reaches it.
    let err = toolfunc::schema::validate(&dangling, &json!({"x": 1})).unwrap_err();
    assert_eq!(
        arguments_error(Err(err)),
        (
            "/x".to_owned(),
            "schema reference #/$defs/Missing not found".to_owned()
        )
    );
    assert!(toolfunc::schema::validate(&dangling, &json!({})).is_ok());
}

#[test]
fn schema_integer_versus_number() {
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "maybe": {"type": ["integer", "null"]}
        }
    });
    assert_checks(
        &schema,
        &[
            json!({"count": 3, "ratio": 0.5, "maybe": null}),
            // A number with no fractional part is an integer; an integer is a number.
            json!({"count": 3.0, "ratio": 2, "maybe": -4}),
        ],
        &[
            (
                json!({"count": 1.5}),
                "/count",
                "expected integer, found number",
            ),
            (
                json!({"count": "3"}),
                "/count",
                "expected integer, found string",
            ),
            (
                json!({"ratio": "0.5"}),
                "/ratio",
                "expected number, found string",
            ),
            (
                json!({"ratio": null}),
                "/ratio",
                "expected number, found null",
            ),
            (
                json!({"maybe": 0.5}),
                "/maybe",
                "expected integer or null, found number",
            ),
        ],
    );
}

#[test]
fn schema_bounds() {
    let schema = json!({
        "type": "object",
        "properties": {
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "share": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "code": {"type": "string", "minLength": 2, "maxLength": 4},
            "nested": {
                "type": "object",
                "properties": {"levels": {"type": "array", "items": {"type": "integer", "maximum": 9}}}
            }
        }
    });
    assert_checks(
        &schema,
        &[
            json!({"age": 0, "share": 0.5, "code": "ab"}),
            json!({"age": 150, "share": 0.999, "code": "ääää", "nested": {"levels": [9, -3]}}),
        ],
        &[
            (json!({"age": -1}), "/age", "expected a number >= 0"),
            (json!({"age": 151}), "/age", "expected a number <= 150"),
            (json!({"share": 0}), "/share", "expected a number > 0"),
            (json!({"share": 1}), "/share", "expected a number < 1"),
            (
                json!({"code": "a"}),
                "/code",
                "expected at least 2 characters",
            ),
            (
                json!({"code": "abcde"}),
                "/code",
                "expected at most 4 characters",
            ),
            (
                json!({"nested": {"levels": [1, 10]}}),
                "/nested/levels/1",
                "expected a number <= 9",
            ),
        ],
    );
}

#[test]
fn schema_combinators() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "shape": {"oneOf": [
                {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
                {"type": "object", "properties": {"w": {"type": "number"}}, "required": ["w"]}
            ]},
            "limit": {"allOf": [{"type": "integer"}, {"minimum": 1}]},
            "name": {"not": {"const": ""}}
        }
    });
    assert_checks(
        &schema,
        &[
            json!({"id": 1, "shape": {"r": 1}, "limit": 1, "name": "x"}),
            json!({"id": "a"}),
        ],
        &[
            (
                json!({"id": true}),
                "/id",
                "matches none of the anyOf options",
            ),
            (
                json!({"shape": {}}),
                "/shape",
                "matches none of the oneOf options",
            ),
            (
                json!({"shape": {"r": 1, "w": 2}}),
                "/shape",
                "matches 2 oneOf options, expected exactly one",
            ),
            (json!({"limit": 0}), "/limit", "expected a number >= 1"),
            (
                json!({"name": ""}),
                "/name",
                "matches a schema it must not match",
            ),
        ],
    );
}

#[test]
fn schema_property_names_are_escaped_in_the_path() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a/b": {"type": "integer"},
            "m~n": {"type": "object", "required": ["x/y"]}
        }
    });
    assert_checks(
        &schema,
        &[json!({"a/b": 1, "m~n": {"x/y": 0}})],
        &[
            (
                json!({"a/b": "1"}),
                "/a~1b",
                "expected integer, found string",
            ),
            (
                json!({"m~n": {}}),
                "/m~0n/x~1y",
                "missing required property `x/y`",
            ),
        ],
    );
}

// ---------------------------------------------------------------------------------
// Whole floats.

#[test]
fn whole_floats_are_integers_as_json_schema_says() {
    // `3.0` is an integer to JSON Schema and to JavaScript callers.
    assert_eq!(
        Registry::global()
            .run_sync("val_point", json!({"x": 3.0, "y": -2.0}))
            .unwrap(),
        json!(1)
    );
    assert_eq!(
        Registry::global()
            .run_sync("val_items", json!({"items": [{"id": 7.0, "name": "a"}]}))
            .unwrap(),
        json!(1)
    );
    // A fraction, or a whole float out of the type's range, is still refused, at its path.
    assert_eq!(
        run("val_point", json!({"x": 3.5, "y": 1})).0,
        "/x",
        "a fraction is not an integer"
    );
    assert_eq!(
        run("val_nested", json!({"outer": {"inner": {"value": 300.0}}})).0,
        "/outer/inner/value"
    );
    // The error speaks of the value as sent.
    let (path, message) = run("val_items", json!({"items": [{"id": 1.5, "name": "a"}]}));
    assert_eq!(path, "/items/0/id");
    assert_eq!(message, "expected integer, found number");
}

/// A struct argument sent as a JSON array is refused where the schema says
/// object (serde's derive would read it field by field), at its JSON path: at the
/// root of a parameter, nested, inside a list and behind an `Option`; arrays where
/// the schema takes them still pass.
#[tokio::test]
async fn an_array_is_no_object_where_the_schema_says_object() {
    let registry = Registry::global();
    for (tool, args, path) in [
        ("val_nested", json!({"outer": [[7]]}), "/outer"),
        (
            "val_nested",
            json!({"outer": {"inner": [7]}}),
            "/outer/inner",
        ),
        (
            "val_items",
            json!({"items": [{"id": 1, "name": "a"}, [2, "b"]]}),
            "/items/1",
        ),
        ("val_optional_outer", json!({"outer": [[7]]}), "/outer"),
    ] {
        let err = registry.run(tool, args.clone()).await.unwrap_err();
        match &err {
            ToolError::Arguments { path: at, .. } => assert_eq!(at, path, "{tool} {args}"),
            other => panic!("{tool} {args}: {other:?}"),
        }
    }
    assert_eq!(
        registry
            .run(
                "val_items",
                json!({"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]})
            )
            .await
            .unwrap(),
        json!(2)
    );
    assert_eq!(
        registry
            .run("val_optional_outer", json!({"outer": null}))
            .await
            .unwrap(),
        json!(0)
    );
}

/// Reads a nested value, when there is one.
#[tool]
fn val_optional_outer(outer: Option<Outer>) -> u8 {
    outer.map_or(0, |outer| outer.inner.value)
}
