//! `#[tool]`: what the attribute puts in the tool's definition, and how the generated
//! handler parses arguments, injects the context and converts errors.

#![allow(
    clippy::needless_pass_by_value,
    reason = "#[tool] parameters are deserialised, so they are owned"
)]

use std::error::Error as _;
use std::fmt;

use serde::Deserialize;
use serde_json::{Value, json};
use toolfunc::{Ctx, Registry, ToolCall, ToolError, tool};

/// The full definition of a global tool, as JSON.
fn definition(name: &str) -> Value {
    let tool = Registry::global()
        .get(name)
        .unwrap_or_else(|| panic!("no global tool `{name}`"));
    serde_json::to_value(tool.definition()).expect("a definition serialises")
}

fn run(name: &str, args: Value) -> Result<Value, ToolError> {
    Registry::global().run_sync(name, args)
}

// ---------------------------------------------------------------------------------
// Descriptions from doc comments.

/// Multiplies two numbers.
///
/// The second paragraph says more.
/// It spans two lines.
#[tool]
fn multiply(
    /// The left factor.
    a: f64,
    /** The right factor. */
    b: f64,
) -> f64 {
    a * b
}

#[test]
fn doc_comments_become_descriptions() {
    assert_eq!(
        definition("multiply"),
        json!({
            "name": "multiply",
            "description": "Multiplies two numbers.\n\nThe second paragraph says more.\nIt spans two lines.",
            "params": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "format": "double", "description": "The left factor."},
                    "b": {"type": "number", "format": "double", "description": "The right factor."}
                },
                "required": ["a", "b"]
            },
            "result": {"type": "number", "format": "double"}
        })
    );
    assert_eq!(
        run("multiply", json!({"a": 2, "b": 3.5})).unwrap(),
        json!(7.0)
    );
}

// ---------------------------------------------------------------------------------
// Optional and defaulted parameters.

/// Greets someone.
#[tool]
fn greet(name: String, greeting: Option<String>) -> String {
    format!("{}, {name}", greeting.as_deref().unwrap_or("Hello"))
}

#[test]
fn option_params_are_not_required() {
    assert_eq!(
        definition("greet")["params"],
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "greeting": {"type": ["string", "null"]}
            },
            "required": ["name"]
        })
    );
    assert_eq!(
        run("greet", json!({"name": "Ann"})).unwrap(),
        json!("Hello, Ann")
    );
    assert_eq!(
        run("greet", json!({"name": "Ann", "greeting": null})).unwrap(),
        json!("Hello, Ann")
    );
    assert_eq!(
        run("greet", json!({"name": "Ann", "greeting": "Hi"})).unwrap(),
        json!("Hi, Ann")
    );
}

/// Repeats a text.
#[tool]
fn repeat(text: String, #[serde(default)] times: u32) -> String {
    text.repeat(times as usize)
}

#[test]
fn serde_default_on_a_param_is_honoured() {
    assert_eq!(
        definition("repeat")["params"],
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "times": {"type": "integer", "format": "uint32", "minimum": 0, "default": 0}
            },
            "required": ["text"]
        })
    );
    assert_eq!(run("repeat", json!({"text": "ab"})).unwrap(), json!(""));
    assert_eq!(
        run("repeat", json!({"text": "ab", "times": 3})).unwrap(),
        json!("ababab")
    );
}

/// Takes parameters whose JSON names differ from their Rust names.
#[tool]
fn json_names(#[serde(rename = "kind")] category: String, r#type: u8) -> String {
    let number = r#type;
    format!("{category}/{number}")
}

#[test]
fn serde_rename_and_raw_identifiers_name_the_json_arguments() {
    assert_eq!(
        definition("json_names")["params"],
        json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string"},
                "type": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}
            },
            "required": ["kind", "type"]
        })
    );
    assert_eq!(
        run("json_names", json!({"kind": "a", "type": 1})).unwrap(),
        json!("a/1")
    );
    assert_eq!(
        Registry::global()
            .run_sync("json_names", vec![json!("b"), json!(2)])
            .unwrap(),
        json!("b/2")
    );
}

// ---------------------------------------------------------------------------------
// Attribute keys.

/// The full description, which is long.
#[tool(
    name = "renamed_tool",
    title = "A Title",
    summary = "Short.",
    alias = "single_alias",
    tags = ["t1", "t2"]
)]
fn keyed() -> u8 {
    7
}

/// This doc comment loses to the `description` key.
#[tool(alias = ["list_a", "list_b"], description = "Given by the key.")]
fn listed() {}

#[test]
fn attribute_keys_land_in_the_definition() {
    assert_eq!(
        definition("renamed_tool"),
        json!({
            "name": "renamed_tool",
            "title": "A Title",
            "description": "The full description, which is long.",
            "summary": "Short.",
            "params": {"type": "object", "properties": {}},
            "result": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
            "alias": ["single_alias"],
            "tags": ["t1", "t2"]
        })
    );
    assert_eq!(
        definition("listed"),
        json!({
            "name": "listed",
            "description": "Given by the key.",
            "params": {"type": "object", "properties": {}},
            "alias": ["list_a", "list_b"]
        })
    );
}

#[test]
fn name_and_aliases_are_how_the_tool_is_found() {
    let registry = Registry::global();
    assert!(
        !registry.has("keyed"),
        "the Rust name is replaced by `name`"
    );
    assert_eq!(run("renamed_tool", Value::Null).unwrap(), json!(7));
    assert_eq!(run("single_alias", Value::Null).unwrap(), json!(7));
    assert_eq!(run("list_a", Value::Null).unwrap(), Value::Null);
    assert_eq!(run("list_b", json!({})).unwrap(), Value::Null);
    assert_eq!(registry.get("list_b").unwrap().name(), "listed");
}

// ---------------------------------------------------------------------------------
// Result schemas.

/// Parses an integer.
#[tool]
fn parse_number(text: String) -> Result<i64, std::num::ParseIntError> {
    text.trim().parse()
}

/// Returns nothing, or fails.
#[tool]
fn unit_result(fail: bool) -> Result<(), String> {
    if fail {
        Err("asked to fail".into())
    } else {
        Ok(())
    }
}

/// Takes nothing.
#[tool]
fn no_args() -> String {
    "nothing".into()
}

#[test]
fn result_schema_comes_from_the_return_type() {
    assert_eq!(
        definition("parse_number")["result"],
        json!({"type": "integer", "format": "int64"})
    );
    assert_eq!(
        run("parse_number", json!({"text": " 42 "})).unwrap(),
        json!(42)
    );
    assert_eq!(definition("no_args")["result"], json!({"type": "string"}));
}

#[test]
fn unit_results_have_no_result_schema() {
    for name in ["unit_result", "listed"] {
        let def = Registry::global().get(name).unwrap().definition().clone();
        assert_eq!(def.result, None, "{name}");
        assert!(definition(name).get("result").is_none(), "{name}");
    }
    assert_eq!(
        run("unit_result", json!({"fail": false})).unwrap(),
        Value::Null
    );
}

#[test]
fn a_tool_without_arguments_has_an_empty_object_schema() {
    assert_eq!(
        definition("no_args")["params"],
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(run("no_args", json!({})).unwrap(), json!("nothing"));
    assert_eq!(run("no_args", Value::Null).unwrap(), json!("nothing"));
}

// ---------------------------------------------------------------------------------
// Async functions and the injected context.

/// Doubles a number, asynchronously.
#[tool]
async fn async_double(n: i64) -> i64 {
    tokio::task::yield_now().await;
    n * 2
}

/// Reports who is running.
#[tool(alias = "whoami_alias")]
fn whoami(ctx: &Ctx, suffix: String) -> Value {
    json!({"tool": ctx.tool_name(), "call": ctx.call_id(), "suffix": suffix})
}

/// Reports who is running, asynchronously.
#[tool]
async fn whoami_async(ctx: &Ctx) -> Value {
    tokio::task::yield_now().await;
    json!({"tool": ctx.tool_name(), "call": ctx.call_id()})
}

/// Takes the context by value.
#[tool]
fn ctx_by_value(ctx: Ctx) -> String {
    ctx.definition().name.clone()
}

#[tokio::test]
async fn async_tools_run() {
    let registry = Registry::global();
    assert!(registry.get("async_double").unwrap().is_async());
    assert_eq!(
        registry
            .run("async_double", json!({"n": 21}))
            .await
            .unwrap(),
        json!(42)
    );
    assert_eq!(
        definition("async_double")["params"],
        json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "format": "int64"}},
            "required": ["n"]
        })
    );
}

#[tokio::test]
async fn ctx_is_injected_and_left_out_of_the_schema() {
    let registry = Registry::global();
    assert_eq!(
        definition("whoami")["params"],
        json!({
            "type": "object",
            "properties": {"suffix": {"type": "string"}},
            "required": ["suffix"]
        })
    );
    assert_eq!(
        definition("whoami_async")["params"],
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(
        definition("ctx_by_value")["params"],
        json!({"type": "object", "properties": {}})
    );

    // Called through an alias, the context still names the tool itself.
    assert_eq!(
        run("whoami_alias", json!({"suffix": "!"})).unwrap(),
        json!({"tool": "whoami", "call": null, "suffix": "!"})
    );
    let result = registry
        .execute(ToolCall::new("call-7", "whoami", json!({"suffix": "?"})))
        .await;
    assert_eq!(
        result.into_output().unwrap(),
        json!({"tool": "whoami", "call": "call-7", "suffix": "?"})
    );
    let result = registry
        .execute(ToolCall::new("call-8", "whoami_async", Value::Null))
        .await;
    assert_eq!(
        result.into_output().unwrap(),
        json!({"tool": "whoami_async", "call": "call-8"})
    );
    assert_eq!(
        run("ctx_by_value", Value::Null).unwrap(),
        json!("ctx_by_value")
    );
}

// ---------------------------------------------------------------------------------
// `#[tool(args)]` and unknown fields.

#[derive(Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// The query.
    query: String,
    limit: Option<u32>,
}

/// Searches.
#[tool(args)]
fn search(args: SearchArgs) -> Vec<String> {
    let limit = args.limit.unwrap_or(1) as usize;
    vec![args.query; limit]
}

#[test]
fn args_struct_is_the_whole_arguments_object() {
    assert_eq!(
        definition("search")["params"],
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The query."},
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}
            },
            "required": ["query"]
        })
    );
    assert_eq!(
        run("search", json!({"query": "q", "limit": 2})).unwrap(),
        json!(["q", "q"])
    );
    // The struct is not nested under the parameter's name.
    let err = run("search", json!({"args": {"query": "q"}})).unwrap_err();
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/query"),
        "{err:?}"
    );
}

#[test]
fn args_struct_positional_values_follow_field_declaration_order() {
    // `SearchArgs` declares `query` before `limit`.
    let out = Registry::global().run_sync("search", vec![json!("q"), json!(2)]);
    assert_eq!(out.unwrap(), json!(["q", "q"]));
}

#[test]
fn args_struct_arguments_object_goes_through_run() {
    let out = Registry::global().run_sync("search", json!({"query": "q", "limit": 3}));
    assert_eq!(out.unwrap(), json!(["q", "q", "q"]));
}

/// Rejects unknown fields.
#[tool(deny_unknown_fields)]
fn strict(a: i32) -> i32 {
    a
}

/// Ignores unknown fields.
#[tool]
fn lenient(a: i32) -> i32 {
    a
}

#[test]
fn deny_unknown_fields_rejects_what_the_default_ignores() {
    assert_eq!(
        definition("strict")["params"],
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer", "format": "int32"}},
            "required": ["a"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        definition("lenient")["params"],
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer", "format": "int32"}},
            "required": ["a"]
        })
    );
    assert_eq!(run("lenient", json!({"a": 1, "b": 2})).unwrap(), json!(1));
    assert_eq!(run("strict", json!({"a": 1})).unwrap(), json!(1));
    let err = run("strict", json!({"a": 1, "b": 2})).unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS", "{err:?}");
    assert!(err.to_string().contains("unknown property `b`"), "{err}");
    assert!(
        matches!(&err, ToolError::Arguments { path, .. } if path == "/b"),
        "{err:?}"
    );
}

// ---------------------------------------------------------------------------------
// The function stays a function.

#[tokio::test]
async fn the_function_remains_callable_directly() {
    assert!((multiply(2.0, 4.0) - 8.0).abs() < f64::EPSILON);
    assert_eq!(greet("Bo".into(), None), "Hello, Bo");
    assert_eq!(repeat("x".into(), 2), "xx");
    assert_eq!(keyed(), 7);
    listed();
    assert_eq!(parse_number("5".into()).unwrap(), 5);
    assert_eq!(async_double(4).await, 8);
    assert_eq!(
        search(SearchArgs {
            query: "a".into(),
            limit: None
        }),
        ["a"]
    );
    assert!(load("x".into()).is_err());
}

// ---------------------------------------------------------------------------------
// Error conversion.

#[derive(Debug)]
struct LoadError {
    path: String,
    cause: std::io::Error,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot load {}", self.path)
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}

/// Fails with a std error that has a source.
#[tool]
fn load(path: String) -> Result<String, LoadError> {
    Err(LoadError {
        path,
        cause: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    })
}

/// Fails with an error that is only `Display`.
#[tool]
fn display_error() -> Result<u8, String> {
    Err("plain message".into())
}

/// Fails with its own `ToolError`.
#[tool]
async fn teapot() -> Result<(), ToolError> {
    tokio::task::yield_now().await;
    Err(ToolError::custom("TEAPOT", 418, "short and stout").with_data(json!({"spout": 1})))
}

#[test]
fn std_errors_become_failed_and_keep_their_source() {
    let err = run("load", json!({"path": "a.txt"})).unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert_eq!(err.status(), 500);
    assert_eq!(err.to_string(), "cannot load a.txt");
    assert!(
        matches!(&err, ToolError::Failed { message, data: None, .. } if message == "cannot load a.txt")
    );
    let source = err.source().expect("the handler's error is the source");
    assert_eq!(source.to_string(), "cannot load a.txt");
    let cause = source.source().expect("the source chain is kept");
    assert_eq!(cause.to_string(), "no such file");

    let err = run("parse_number", json!({"text": "x"})).unwrap_err();
    assert_eq!(err.code(), "FAILED");
    assert_eq!(err.to_string(), "invalid digit found in string");
    assert!(err.source().is_some());
}

#[test]
fn std_error_source_downcasts_to_the_handlers_error() {
    let err = run("load", json!({"path": "a.txt"})).unwrap_err();
    let source = err.source().expect("the handler's error is the source");
    let load = source
        .downcast_ref::<LoadError>()
        .expect("the source is the LoadError");
    assert_eq!(load.path, "a.txt");
}

#[test]
fn display_errors_become_failed() {
    let err = run("display_error", Value::Null).unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed { message, data: None, source: None } if message == "plain message"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "plain message");
    let err = run("unit_result", json!({"fail": true})).unwrap_err();
    assert_eq!(
        (err.code(), err.to_string()),
        ("FAILED", "asked to fail".into())
    );
}

#[tokio::test]
async fn tool_errors_pass_through_unchanged() {
    let err = Registry::global()
        .run("teapot", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ToolError::Custom { code, status: 418, message, data: Some(data) }
                if code == "TEAPOT" && message == "short and stout" && *data == json!({"spout": 1})
        ),
        "{err:?}"
    );
    assert_eq!((err.code(), err.status()), ("TEAPOT", 418));
    assert_eq!(definition("teapot").get("result"), None);
}

/// Exists only in builds with a feature nobody enables.
#[tool]
#[cfg(not(test))] // never true in this test binary
fn conditional_tool() -> u8 {
    1
}

/// Exists in every build.
#[tool]
#[cfg(test)] // always true in this test binary
fn unconditional_tool() -> u8 {
    2
}

#[test]
fn cfg_on_the_function_applies_to_its_registration() {
    assert!(!Registry::global().has("conditional_tool"));
    assert_eq!(
        Registry::global()
            .run_sync("unconditional_tool", Value::Null)
            .unwrap(),
        json!(2)
    );
}
