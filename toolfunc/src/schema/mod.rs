//! JSON Schemas of tool parameters and results: generation (schemars), argument
//! parsing with JSON-Pointer error paths, the check of tools whose schema is given
//! as JSON (feature `validate`: the `jsonschema` crate, with bounds on the work of
//! one call), and the rewriting of schemas placed into other documents (`rewrite`,
//! crate-internal).
//!
//! # Argument checking
//!
//! Arguments are checked before the handler runs. A failure is `ARGUMENTS` with the
//! JSON Pointer of the failing value and what was expected:
//!
//! ```json
//! {"code":"ARGUMENTS","message":"invalid type: string \"two\", expected u64","status":400,"data":{"path":"/lines/1/id"}}
//! ```
//!
//! Non-object arguments fail at path `""`; a missing field at `/field`. `#[tool]`
//! and `typed` tools are checked by deserialising into their parameter types
//! ([`parse_args`]; no second pass), and a failed read is located by walking the
//! type's schema. Tools given a JSON schema are checked against it by `Validator`,
//! compiled once per tool: that needs the `validate` feature, without which such a
//! tool fails to build with `DEFINITION` rather than run unchecked. Prompts and
//! resource templates built at run time are checked without it.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

#[cfg(feature = "validate")]
mod bound;
#[cfg(feature = "validate")]
mod check;
mod lazy;
mod limits;
mod locate;
// Only the OpenAPI document of the `http` feature rewrites schemas so far.
#[cfg(feature = "http-server")]
pub(crate) mod rewrite;

#[cfg(feature = "validate")]
pub use check::{Validator, validate};
pub use lazy::Schema;

/// The parameters schema of a tool without parameters.
#[must_use]
pub fn empty_object() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// The JSON Schema (draft 2020-12) of `T` as serde *reads* it (the deserialize
/// contract: what tool arguments may look like), without the `$schema` and `title`
/// keys that only make sense for a standalone document.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Point { x: i32, y: i32 }
///
/// let schema = toolfunc::schema::schema_of::<Point>();
/// assert_eq!(schema["type"], "object");
/// assert!(schema.get("$schema").is_none());
/// ```
#[must_use]
pub fn schema_of<T: JsonSchema + ?Sized>() -> Value {
    embedded::<T>(SchemaSettings::draft2020_12().for_deserialize())
}

/// The JSON Schema (draft 2020-12) of `T` as serde *writes* it (the serialize
/// contract): the schema of a tool's result. It differs from [`schema_of`] where
/// serde's two directions differ: an `Option` field is required and nullable unless
/// it has `skip_serializing_if`, a field with `#[serde(default)]` is required, and
/// `rename(serialize = ..)`, `skip_serializing` and `into` types are as written.
///
/// ```
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Hit {
///     title: String,
///     note: Option<String>,
///     #[serde(skip_serializing_if = "Option::is_none")]
///     score: Option<f64>,
/// }
///
/// let schema = toolfunc::schema::result_schema_of::<Hit>();
/// assert_eq!(schema["required"], serde_json::json!(["title", "note"]));
/// assert_eq!(schema["properties"]["note"]["type"], serde_json::json!(["string", "null"]));
/// ```
#[must_use]
pub fn result_schema_of<T: JsonSchema + ?Sized>() -> Value {
    embedded::<T>(SchemaSettings::draft2020_12().for_serialize())
}

/// The root schema of `T` under `settings`, made to sit inside a definition.
fn embedded<T: JsonSchema + ?Sized>(settings: SchemaSettings) -> Value {
    without_root_keys(settings.into_generator().into_root_schema_for::<T>())
}

/// A root schema without the keys a definition does not carry. Not generic: every
/// tool's schema function shares it.
fn without_root_keys(schema: schemars::Schema) -> Value {
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
    }
    value
}

/// Checks that a parameters schema describes a JSON object, as every LLM provider and
/// MCP require. Returns the reason when it does not.
pub(crate) fn check_params_root(schema: &Value) -> Result<(), String> {
    let Some(map) = schema.as_object() else {
        return Err("the parameters schema must be a JSON object".into());
    };
    match map.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(format!(
            "the parameters schema must have \"type\": \"object\" at its root, found {other}"
        )),
        None => Err("the parameters schema must have \"type\": \"object\" at its root".into()),
    }
}

/// Deserialises tool arguments into `T`. On failure the error is
/// [`ToolError::Arguments`] with the JSON Pointer of the failing value and serde's
/// description of what was expected.
///
/// `args` may be owned or borrowed (`Value`, `&Value`): it is read in place, never
/// copied, unless the first reading fails.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Item { id: u64 }
/// #[derive(Debug, serde::Deserialize)]
/// struct Args { items: Vec<Item> }
///
/// let err = toolfunc::schema::parse_args::<Args>(serde_json::json!({
///     "items": [{"id": 1}, {"id": 2}, {"id": "three"}]
/// })).unwrap_err();
/// assert!(matches!(err, toolfunc::ToolError::Arguments { ref path, .. } if path == "/items/2/id"));
/// ```
pub fn parse_args<T: DeserializeOwned>(args: impl Borrow<Value>) -> Result<T, ToolError> {
    let args = args.borrow();
    // Fast path: plain serde. Path tracking allocates for every map key it passes,
    // so it only runs again, on the same value, when this fails.
    match T::deserialize(args) {
        Ok(value) => Ok(value),
        Err(_) => retry_whole_floats::<T>(args),
    }
}

/// Deserialises tool arguments into `T`, whose JSON Schema `schema` makes: what
/// `#[tool]` and [`ToolBuilder::typed`](crate::ToolBuilder::typed) read arguments
/// with. A failure is located by checking the arguments against that schema
/// (compiled at the first failure, once per schema function), not by
/// deserialising again with path tracking: `T`'s `Deserialize` is built once, for
/// reading from a `&Value`. The error is the schema check's (the JSON Pointer of the
/// first failing value and what it expected), or serde's message when the schema
/// accepts what serde refused.
#[doc(hidden)]
pub fn parse_args_of<T: DeserializeOwned>(
    args: &Value,
    schema: fn() -> Value,
) -> Result<T, ToolError> {
    // Only the two readings are generic: what is done around them is shared by
    // every tool (one copy in the program, not one per parameters type).
    let err = match T::deserialize(args) {
        Ok(value) => {
            return match array_refused(args, schema) {
                Some(err) => Err(err),
                None => Ok(value),
            };
        }
        Err(err) => err,
    };
    if let Some(whole) = with_whole_floats(args)
        && let Ok(value) = T::deserialize(&whole)
    {
        return Ok(value);
    }
    Err(located_by_schema(args, schema, err.to_string()))
}

/// serde's derive reads a struct from an array too, field by field: where the
/// schema says object, an array is refused as it says.
fn array_refused(args: &Value, schema: fn() -> Value) -> Option<ToolError> {
    if holds_objects(schema) && nested_array(args, 0) {
        array_for_object(args, schema)
    } else {
        None
    }
}

/// How many schema functions [`holds_objects`] remembers (open addressing; past
/// it, every one is answered `true`, the safe side).
const KINDS: usize = 1024;

/// Whether the schema `schema` makes has an object below its root (a struct
/// parameter, or one inside a list): only then can an array stand where an object
/// belongs. Made once per schema function and remembered in a table read without
/// a lock, so a tool of plain parameters pays one atomic load per call.
fn holds_objects(schema: fn() -> Value) -> bool {
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
    static KEYS: [AtomicUsize; KINDS] = [const { AtomicUsize::new(0) }; KINDS];
    static ANSWERS: [AtomicU8; KINDS] = [const { AtomicU8::new(0) }; KINDS];
    let key = schema as usize;
    let start = (key >> 4) % KINDS;
    for probe in 0..8 {
        let slot = (start + probe) % KINDS;
        match KEYS[slot].load(Ordering::Acquire) {
            found if found == key => match ANSWERS[slot].load(Ordering::Acquire) {
                1 => return false,
                2 => return true,
                _ => break,
            },
            0 => {
                let holds = object_below(&schema(), 0);
                if KEYS[slot]
                    .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    ANSWERS[slot].store(if holds { 2 } else { 1 }, Ordering::Release);
                }
                return holds;
            }
            _ => {}
        }
    }
    true
}

/// Whether a schema below the root (`depth` > 0) takes objects: its `type` names
/// `object`, it has `properties`, or it refers to a definition (which may).
fn object_below(schema: &Value, depth: usize) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    if depth > 0
        && (map.contains_key("properties")
            || map.contains_key("$ref")
            || match map.get("type") {
                Some(Value::String(kind)) => kind == "object",
                Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "object"),
                _ => false,
            })
    {
        return true;
    }
    if depth > limits::MAX_DEPTH {
        return true;
    }
    map.iter().any(|(key, value)| match (key.as_str(), value) {
        ("properties" | "$defs" | "definitions", Value::Object(children)) => children
            .values()
            .any(|child| object_below(child, depth + 1)),
        ("items" | "additionalProperties", child) => object_below(child, depth + 1),
        ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(children)) => {
            children.iter().any(|child| object_below(child, depth + 1))
        }
        _ => false,
    })
}

/// Whether `value` holds an array below its root (cheap: no schema read).
fn nested_array(value: &Value, depth: usize) -> bool {
    match value {
        Value::Array(_) => depth > 0,
        Value::Object(map) if depth <= limits::MAX_DEPTH => {
            map.values().any(|v| nested_array(v, depth + 1))
        }
        _ => false,
    }
}

/// The argument error of an array where the schema of `args` (made by `schema`,
/// kept once per schema function) says object, if there is one.
#[cold]
fn array_for_object(args: &Value, schema: fn() -> Value) -> Option<ToolError> {
    type Schemas = Mutex<HashMap<usize, Arc<Value>>>;
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    let root = {
        let mut kept = SCHEMAS
            .get_or_init(Schemas::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            kept.entry(schema as usize)
                .or_insert_with(|| Arc::new(schema())),
        )
    };
    let mut path = String::new();
    array_where_object(args, &root, &root, &mut path, 0)
        .then(|| ToolError::arguments(path, "expected an object, found an array"))
}

/// Whether `value` (at `path`) holds an array where `schema` says object; `path`
/// ends at the first one.
fn array_where_object(
    value: &Value,
    schema: &Value,
    root: &Value,
    path: &mut String,
    depth: usize,
) -> bool {
    if depth > limits::MAX_DEPTH {
        return false;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Array(items) => {
            if only_objects(schema, root, 0) {
                return true;
            }
            let Some(item_schema) = schema.get("items") else {
                return false;
            };
            for (at, item) in items.iter().enumerate() {
                let len = path.len();
                push_token(path, &at.to_string());
                if array_where_object(item, item_schema, root, path, depth + 1) {
                    return true;
                }
                path.truncate(len);
            }
            false
        }
        Value::Object(map) => {
            let branches = ["anyOf", "oneOf", "allOf"]
                .iter()
                .filter_map(|key| schema.get(*key).and_then(Value::as_array))
                .flatten();
            let properties = std::iter::once(schema)
                .chain(branches.map(|branch| resolve(branch, root)))
                .filter_map(|s| s.get("properties").and_then(Value::as_object));
            for properties in properties {
                for (key, value) in map {
                    let Some(sub) = properties.get(key) else {
                        continue;
                    };
                    let len = path.len();
                    push_token(path, key);
                    if array_where_object(value, sub, root, path, depth + 1) {
                        return true;
                    }
                    path.truncate(len);
                }
            }
            false
        }
        _ => false,
    }
}

/// `schema` with a local `$ref` (`#/$defs/..`, `#/definitions/..`) followed.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// Whether `schema` takes objects (or `null`) and never an array.
fn only_objects(schema: &Value, root: &Value, depth: usize) -> bool {
    let schema = resolve(schema, root);
    if depth > 8 {
        return false;
    }
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => {
            kinds.iter().any(|k| k == "object")
                && kinds.iter().all(|k| k == "object" || k == "null")
        }
        _ => {
            let branches: Vec<&Value> = ["anyOf", "oneOf"]
                .iter()
                .filter_map(|key| schema.get(*key).and_then(Value::as_array))
                .flatten()
                .collect();
            if branches.is_empty() {
                return schema.get("properties").is_some() && schema.get("items").is_none();
            }
            let takes_null =
                |b: &&Value| resolve(b, root).get("type") == Some(&Value::from("null"));
            branches.iter().any(|b| !takes_null(b))
                && branches
                    .iter()
                    .all(|b| takes_null(b) || only_objects(b, root, depth + 1))
        }
    }
}

/// Checks `args` against a parameters schema the crate wrote itself (a prompt's or
/// a resource template's arguments: strings, some required), whose keywords
/// [`locate`] reads in full; the `validate` feature is not needed for it.
pub(crate) fn check_own(schema: &Value, args: &Value) -> Result<(), ToolError> {
    if let Some(path) = limits::too_deep(args) {
        return Err(ToolError::arguments(
            path,
            format!(
                "the value is nested deeper than {} levels",
                limits::MAX_DEPTH
            ),
        ));
    }
    match locate::first_error(schema, args) {
        Some((path, message)) => Err(ToolError::arguments(path, message)),
        None => Ok(()),
    }
}

/// Whether a parameters schema accepts every object (nothing to check per call).
#[cfg(not(feature = "validate"))]
pub(crate) fn accepts_any_object(schema: &Value) -> bool {
    limits::accepts_any_object(schema)
}

/// `args` with its whole floats as integers, when it has any.
#[cold]
fn with_whole_floats(args: &Value) -> Option<Value> {
    let mut whole = args.clone();
    integers_for_whole_floats(&mut whole, 0).then_some(whole)
}

/// The argument error of a value serde refused with `message`: the schema
/// check's, else serde's message (at the field it names as missing, if any).
#[cold]
fn located_by_schema(args: &Value, schema: fn() -> Value, message: String) -> ToolError {
    type Made = Mutex<HashMap<usize, Arc<Value>>>;
    static MADE: OnceLock<Made> = OnceLock::new();
    // One schema function per parameters type: a program has finitely many.
    let key = schema as usize;
    let schema = {
        let mut made = MADE
            .get_or_init(Made::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(made.entry(key).or_insert_with(|| Arc::new(schema())))
    };
    if let Err(err) = check_own(&schema, args) {
        return err;
    }
    let mut path = String::new();
    // serde reports a missing field at the object that lacks it; at the root, that
    // is the field.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        push_token(&mut path, field);
    }
    ToolError::arguments(path, message)
}

/// JSON Schema counts `3.0` as an integer, and JavaScript callers send it; serde
/// refuses it for an integer field. On a failed parse, whole floats that fit an
/// integer are read as integers and the parse is tried once more; the error, when
/// there still is one, is that of the value as sent.
#[cold]
fn retry_whole_floats<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    let mut whole = args.clone();
    if integers_for_whole_floats(&mut whole, 0)
        && let Ok(value) = T::deserialize(&whole)
    {
        return Ok(value);
    }
    Err(locate_error::<T>(args))
}

/// Rewrites whole floats (`3.0`, `-2.0`) as integers; whether any was rewritten.
fn integers_for_whole_floats(value: &mut Value, depth: usize) -> bool {
    // Deeper values are refused anyway; stop rather than recurse far.
    if depth > limits::MAX_DEPTH {
        return false;
    }
    match value {
        Value::Number(n) if n.is_f64() => {
            let Some(f) = n.as_f64() else { return false };
            // Whole, finite and in range: the casts are exact.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_precision_loss,
                clippy::cast_sign_loss
            )]
            let integer = if f.fract() != 0.0 || !f.is_finite() {
                None
            } else if f >= 0.0 && f < u64::MAX as f64 {
                Some(Value::from(f as u64))
            } else if f < 0.0 && f >= i64::MIN as f64 {
                Some(Value::from(f as i64))
            } else {
                None
            };
            match integer {
                Some(integer) => {
                    *value = integer;
                    true
                }
                None => false,
            }
        }
        Value::Array(items) => items.iter_mut().fold(false, |any, item| {
            integers_for_whole_floats(item, depth + 1) | any
        }),
        Value::Object(map) => map.values_mut().fold(false, |any, item| {
            integers_for_whole_floats(item, depth + 1) | any
        }),
        _ => false,
    }
}

#[cold]
fn locate_error<T: DeserializeOwned>(args: &Value) -> ToolError {
    match serde_path_to_error::deserialize::<_, T>(args) {
        Ok(_) => ToolError::arguments("", "the arguments could not be deserialised"),
        Err(err) => {
            let mut path = pointer(err.path());
            let message = err.into_inner().to_string();
            // serde reports a missing field at the object that lacks it; point at the field.
            if let Some(field) = message
                .strip_prefix("missing field `")
                .and_then(|rest| rest.strip_suffix('`'))
            {
                push_token(&mut path, field);
            }
            ToolError::arguments(path, message)
        }
    }
}

/// The names of `T`'s fields in declaration order, as serde reads them (renames
/// applied), restricted to those `schema` lists under `properties`; properties serde
/// does not name (flattened fields) follow in schema order.
///
/// Schema property order alone is alphabetical (serde_json's default map), so
/// positional calls use this.
#[doc(hidden)]
pub fn field_order<T: DeserializeOwned>(schema: &Value) -> Vec<String> {
    let mut fields: Option<&'static [&'static str]> = None;
    // The probe fails every request; all it wants is the field list.
    let _ = T::deserialize(FieldsProbe(&mut fields));
    fields_in_order(fields.unwrap_or_default(), schema)
}

/// [`field_order`] once the field list is known. Not generic: every tool shares it.
fn fields_in_order(fields: &[&str], schema: &Value) -> Vec<String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let listed = |name: &str| properties.is_some_and(|p| p.contains_key(name));
    let mut names: Vec<String> = fields
        .iter()
        .filter(|name| listed(name))
        .map(|name| (*name).to_owned())
        .collect();
    for key in properties.into_iter().flat_map(|p| p.keys()) {
        if !names.contains(key) {
            names.push(key.clone());
        }
    }
    names
}

/// A deserializer that records the field list a derived struct asks for.
struct FieldsProbe<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> serde::Deserializer<'de> for FieldsProbe<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("field probe"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(serde::de::Error::custom("field probe"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => push_index(&mut out, *index),
            Segment::Map { key } | Segment::Enum { variant: key } => push_token(&mut out, key),
            Segment::Unknown => push_token(&mut out, "?"),
        }
    }
    out
}

fn push_index(pointer: &mut String, index: usize) {
    use std::fmt::Write as _;
    // Writing to a `String` cannot fail.
    let _ = write!(pointer, "/{index}");
}

fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}
