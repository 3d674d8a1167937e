//! The work a JSON-Schema tool does per call is bounded: a value nested deeper than
//! the limit is refused before it is checked, and a schema whose check could take
//! more than a bounded number of steps per value (recursion through several
//! branches that read the same input, `$ref` loops that never descend) is refused
//! when the tool is built.
//!
//! No test here measures time. Boundedness shows structurally: the attack schemas
//! are refused with a `DEFINITION` error, and the accepted recursive schemas check
//! values at the depth limit, which a check exponential in depth could never finish.

use serde_json::{Value, json};
use toolfunc::{Registry, ToolError, ToolFunc};

/// The deepest nesting of arrays and objects a schema tool accepts (the root
/// arguments object counts as one level).
const MAX_DEPTH: usize = 128;

/// `{"c": {"c": ... {"c": leaf}}}`, `levels` objects deep.
fn nested_objects(levels: usize, leaf: Value) -> Value {
    let mut value = leaf;
    for _ in 0..levels {
        value = json!({ "c": value });
    }
    value
}

/// The recursive-`anyOf` attack: two branches, each of which follows `c` back into the
/// same definition, so a value `d` levels deep is checked along 2^d paths.
fn two_branch_recursion() -> Value {
    json!({
        "type": "object",
        "$defs": {"n": {"anyOf": [
            {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}},
            {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}
        ]}},
        "$ref": "#/$defs/n"
    })
}

fn build(name: &str, schema: Value) -> Result<ToolFunc, ToolError> {
    ToolFunc::builder(name)
        .params_schema(schema)
        .handler_sync(|_ctx, args| Ok(args))
        .build()
}

fn registry_with(name: &str, schema: Value) -> Registry {
    let registry = Registry::new();
    registry
        .register(build(name, schema).expect("the schema is accepted"))
        .unwrap();
    registry
}

fn assert_refused(name: &str, schema: Value, mentions: &str) {
    let shown = schema.to_string();
    let err = build(name, schema).expect_err("the schema must be refused");
    assert_eq!(err.code(), "DEFINITION", "{shown}: {err:?}");
    assert!(
        matches!(&err, ToolError::Definition { name: n, .. } if n == name),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(mentions),
        "{shown}: {err} should mention {mentions}"
    );
}

fn arguments_error(result: Result<Value, ToolError>) -> (String, String) {
    match result {
        Err(ToolError::Arguments { path, message }) => (path, message),
        other => panic!("expected an ARGUMENTS error, got {other:?}"),
    }
}

/// The JSON Pointer `/c/c/.../c` with `levels` segments.
fn c_path(levels: usize) -> String {
    "/c".repeat(levels)
}

// ---------------------------------------------------------------------------------
// Schemas that cannot be checked in bounded work are refused at build.

#[test]
fn recursion_through_two_branches_that_read_the_same_input_is_refused_at_build() {
    // The finding's form: a schema of a few dozen characters and a deeply nested
    // value, with the object root a parameters schema needs.
    let bare = r##"{"$defs":{"n":{"anyOf":[{"properties":{"c":{"$ref":"#/$defs/n"}}},{"properties":{"c":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}"##;
    assert!(bare.len() < 140);
    let mut schema: Value = serde_json::from_str(bare).unwrap();
    schema["type"] = json!("object");
    assert_refused("two_branches", schema, "#/$defs/n");
    assert_refused("two_branches_pretty", two_branch_recursion(), "#/$defs/n");

    // oneOf and allOf multiply the same way.
    for combinator in ["oneOf", "allOf"] {
        let mut schema = two_branch_recursion();
        let branches = schema["$defs"]["n"]["anyOf"].take();
        schema["$defs"]["n"] = json!({ combinator: branches });
        assert_refused(combinator, schema, "#/$defs/n");
    }

    // Two properties of one branch do not multiply (they read different input), but a
    // property and `additionalProperties` that both reach the recursion for the same
    // key do: `patternProperties` and `properties` both apply to `c`.
    assert_refused(
        "pattern_and_property",
        json!({
            "type": "object",
            "$defs": {"n": {
                "type": "object",
                "properties": {"c": {"$ref": "#/$defs/n"}},
                "patternProperties": {"^c$": {"$ref": "#/$defs/n"}}
            }},
            "$ref": "#/$defs/n"
        }),
        "#/$defs/n",
    );
}

#[test]
fn the_standalone_check_refuses_the_attack_schema_instead_of_running_it() {
    let bare: Value = serde_json::from_str(r##"{"$defs":{"n":{"anyOf":[{"properties":{"c":{"$ref":"#/$defs/n"}}},{"properties":{"c":{"$ref":"#/$defs/n"}}}]}},"$ref":"#/$defs/n"}"##).unwrap();
    // 100 levels: 2^100 paths for an exponential check. This one answers at once.
    let value = nested_objects(100, json!(1));
    let err = toolfunc::schema::validate(&bare, &value).unwrap_err();
    assert_eq!(err.code(), "DEFINITION", "{err:?}");
}

#[test]
fn a_ref_loop_that_never_descends_is_refused_at_build() {
    assert_refused(
        "self_loop",
        json!({"type": "object", "allOf": [{"$ref": "#"}]}),
        "#",
    );
    assert_refused(
        "two_step_loop",
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {
                "a": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]},
                "b": {"not": {"$ref": "#/$defs/a"}}
            }
        }),
        "#/$defs/a",
    );
}

#[test]
fn a_schema_that_fans_out_without_recursion_is_refused_at_build() {
    // No cycle at all, but each level doubles the subschemas every value is checked
    // against: 2^24 checks for one property.
    let mut defs = serde_json::Map::new();
    for level in 0..24 {
        let next = format!("#/$defs/d{}", level + 1);
        defs.insert(
            format!("d{level}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("d24".into(), json!({"type": "string"}));
    assert_refused(
        "fan_out",
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/d0"}},
            "$defs": defs
        }),
        "subschemas",
    );
}

// ---------------------------------------------------------------------------------
// Values nested deeper than the limit are refused before they are checked.

/// A linked list: one way to recurse, so checking is linear in depth.
fn linked_list() -> Value {
    json!({
        "type": "object",
        "$defs": {"n": {
            "type": ["object", "integer"],
            "properties": {"c": {"$ref": "#/$defs/n"}}
        }},
        "$ref": "#/$defs/n"
    })
}

#[test]
fn a_value_nested_past_the_limit_is_refused_with_its_path() {
    let registry = registry_with("list", linked_list());
    // The root object and MAX_DEPTH - 1 more: at the limit, checked and accepted.
    let at_limit = nested_objects(MAX_DEPTH, json!(1));
    assert_eq!(
        registry.run_sync("list", at_limit.clone()).unwrap(),
        at_limit
    );
    // At the limit but wrong at the bottom: the schema's own error, at its path.
    let wrong = nested_objects(MAX_DEPTH, json!("x"));
    let (path, message) = arguments_error(registry.run_sync("list", wrong));
    assert_eq!(path, c_path(MAX_DEPTH));
    assert_eq!(message, "expected object or integer, found string");

    // One level more: refused before validation, at the first value past the limit.
    let (path, message) =
        arguments_error(registry.run_sync("list", nested_objects(MAX_DEPTH + 1, json!(1))));
    assert_eq!(path, c_path(MAX_DEPTH));
    assert_eq!(
        message,
        format!("the value is nested deeper than {MAX_DEPTH} levels")
    );

    // Far deeper (a check exponential in depth would never finish): the same answer.
    // (Not deeper still: dropping a serde_json value recurses once per level, and a
    // test thread's stack holds a few hundred levels in debug builds.)
    let (path, _) = arguments_error(registry.run_sync("list", nested_objects(600, json!(1))));
    assert_eq!(path, c_path(MAX_DEPTH));

    // Arrays count as levels too, and the path has their indices.
    let mut deep_array = json!(1);
    for _ in 0..MAX_DEPTH {
        deep_array = json!([0, deep_array]);
    }
    let (path, _) = arguments_error(registry.run_sync("list", json!({ "c": deep_array })));
    assert_eq!(path, format!("/c{}", "/1".repeat(MAX_DEPTH - 1)));
}

#[test]
fn the_standalone_check_refuses_deep_values_too() {
    let err =
        toolfunc::schema::validate(&linked_list(), &nested_objects(500, json!(1))).unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if *path == c_path(MAX_DEPTH)),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------
// Recursive schemas that are checked in linear work stay accepted.

#[test]
fn recursion_through_branches_that_read_different_input_is_accepted() {
    // A binary tree: `left` and `right` both recurse, into different values.
    let tree = json!({
        "type": "object",
        "$defs": {"t": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "left": {"$ref": "#/$defs/t"},
                "right": {"$ref": "#/$defs/t"}
            },
            "required": ["v"]
        }},
        "$ref": "#/$defs/t"
    });
    let registry = registry_with("tree", tree);
    let mut value = json!({"v": 0});
    for level in 1..MAX_DEPTH {
        value = json!({"v": level, "left": value, "right": {"v": -1}});
    }
    assert_eq!(registry.run_sync("tree", value.clone()).unwrap(), value);
    let mut bad = json!({"v": "x"});
    for _ in 1..MAX_DEPTH {
        bad = json!({"v": 0, "right": bad});
    }
    let (path, message) = arguments_error(registry.run_sync("tree", bad));
    assert_eq!(path, format!("{}/v", "/right".repeat(MAX_DEPTH - 1)));
    assert_eq!(message, "expected integer, found string");

    // Any JSON value: an array branch and an object branch both recurse, but an
    // array's items and an object's properties are never the same value.
    let any_json = json!({
        "type": "object",
        "additionalProperties": {"$ref": "#/$defs/json"},
        "$defs": {"json": {"anyOf": [
            {"type": ["null", "boolean", "number", "string"]},
            {"type": "array", "items": {"$ref": "#/$defs/json"}},
            {"type": "object", "additionalProperties": {"$ref": "#/$defs/json"}}
        ]}}
    });
    let registry = registry_with("any_json", any_json);
    let mut value = json!(null);
    for level in 1..MAX_DEPTH {
        value = if level % 2 == 0 {
            json!([1, "a", value])
        } else {
            json!({"k": value, "s": true})
        };
    }
    let args = json!({ "root": value });
    assert_eq!(registry.run_sync("any_json", args.clone()).unwrap(), args);
}

#[test]
fn schemars_recursive_types_are_accepted() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code, reason = "only the schema is used")]
    struct Node {
        name: String,
        children: Vec<Node>,
        parent: Option<Box<Node>>,
    }
    let schema = toolfunc::schema::schema_of::<Node>();
    let registry = registry_with("node", schema);
    let mut value = json!({"name": "leaf", "children": []});
    for _ in 2..MAX_DEPTH / 2 {
        value = json!({"name": "n", "children": [value], "parent": null});
    }
    assert_eq!(registry.run_sync("node", value.clone()).unwrap(), value);
}

// ---------------------------------------------------------------------------------
// Keywords the field's validator enforces.

#[test]
fn pattern_and_format_are_enforced() {
    let registry = registry_with(
        "formats",
        json!({
            "type": "object",
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                "email": {"type": "string", "format": "email"},
                "when": {"type": "string", "format": "date"},
                "ext": {
                    "type": "object",
                    "patternProperties": {"^x-": {"type": "string"}},
                    "additionalProperties": false
                }
            }
        }),
    );
    let good = json!({
        "sku": "ABC-12",
        "email": "a@example.com",
        "when": "2024-02-29",
        "ext": {"x-trace": "t"}
    });
    assert_eq!(registry.run_sync("formats", good.clone()).unwrap(), good);
    for (args, path, message) in [
        (
            json!({"sku": "abc-12"}),
            "/sku",
            "expected a string matching the pattern `^[A-Z]{3}-[0-9]+$`",
        ),
        (
            json!({"email": "nobody"}),
            "/email",
            "expected a valid email",
        ),
        (
            json!({"when": "2023-02-29"}),
            "/when",
            "expected a valid date",
        ),
        (
            json!({"ext": {"x-trace": 1}}),
            "/ext/x-trace",
            "expected string, found integer",
        ),
        (
            json!({"ext": {"other": "o"}}),
            "/ext/other",
            "unknown property `other`",
        ),
    ] {
        assert_eq!(
            arguments_error(registry.run_sync("formats", args.clone())),
            (path.to_owned(), message.to_owned()),
            "{args}"
        );
    }
}

#[test]
fn an_invalid_pattern_is_refused_at_build() {
    assert_refused(
        "bad_pattern",
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}),
        "(",
    );
}

#[test]
fn refs_into_places_no_keyword_names_are_followed_too() {
    // A target outside `$defs` (and percent-encoded): checked, and analysed like any.
    let registry = registry_with(
        "elsewhere",
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/x-defs/a%20b"}},
            "x-defs": {"a b": {"type": "integer"}}
        }),
    );
    assert_eq!(
        arguments_error(registry.run_sync("elsewhere", json!({"x": "s"}))),
        ("/x".to_owned(), "expected integer, found string".to_owned())
    );
    let mut attack = two_branch_recursion();
    let defs = attack.as_object_mut().unwrap().remove("$defs").unwrap();
    attack["x-defs"] = defs;
    attack["$ref"] = json!("#/x-defs/n");
    for branch in 0..2 {
        attack["x-defs"]["n"]["anyOf"][branch]["properties"]["c"]["$ref"] = json!("#/x-defs/n");
    }
    assert_refused("elsewhere_attack", attack, "#/x-defs/n");
}

#[test]
fn a_schema_that_is_not_an_object_or_a_boolean_is_an_error_not_a_panic() {
    // Found by the `schema` fuzz target: a string root once panicked the analysis.
    for schema in [json!("act"), json!(1), json!(null), json!([])] {
        let err = toolfunc::schema::Validator::new(&schema).unwrap_err();
        assert!(
            err.to_string().contains("object or a boolean"),
            "{schema}: {err}"
        );
        let err = toolfunc::schema::validate(&schema, &json!({})).unwrap_err();
        assert_ne!(err.code(), "PANICKED", "{schema}");
    }
}

/// A tool whose schema is compiled at its first call.
fn deferred(name: &str, schema: Value) -> Registry {
    let registry = Registry::new();
    let tool = ToolFunc::builder(name)
        .params_schema(schema)
        .defer_schema(true)
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .expect("a deferred schema is not compiled at build");
    registry.register(tool).unwrap();
    registry
}

#[test]
fn a_deferred_schema_checks_arguments_as_an_eager_one_does() {
    let schema = json!({
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}},
        "required": ["sku"]
    });
    let lazy = deferred("lazy", schema.clone());
    let eager = registry_with("lazy", schema);
    for args in [
        json!({"sku": "ABC-1"}),
        json!({"sku": "abc"}),
        json!({}),
        json!({"sku": 1}),
    ] {
        let lazy_answer = lazy.run_sync("lazy", args.clone());
        let eager_answer = eager.run_sync("lazy", args.clone());
        assert_eq!(
            format!("{lazy_answer:?}"),
            format!("{eager_answer:?}"),
            "{args}"
        );
    }
    // Twice: the compiled schema is kept.
    assert_eq!(
        arguments_error(lazy.run_sync("lazy", json!({"sku": "abc"}))).0,
        "/sku"
    );
}

#[test]
fn a_deferred_schema_that_cannot_be_used_fails_each_call_with_definition() {
    let bad = [
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "(["}}}),
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}),
        two_branch_recursion(),
    ];
    for (n, schema) in bad.into_iter().enumerate() {
        let name = format!("bad_{n}");
        let shown = schema.to_string();
        let registry = deferred(&name, schema);
        for _ in 0..2 {
            let err = registry.run_sync(&name, json!({})).unwrap_err();
            assert_eq!(err.code(), "DEFINITION", "{shown}: {err:?}");
            assert!(
                matches!(&err, ToolError::Definition { name: n, .. } if *n == name),
                "{err:?}"
            );
        }
    }
    // The root is still checked at build.
    let err = ToolFunc::builder("not_an_object")
        .params_schema(json!({"type": "string"}))
        .defer_schema(true)
        .handler_sync(|_ctx, args| Ok(args))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "DEFINITION");
}
