//! JSON Schemas of tool parameters and results: generation (schemars), argument
//! parsing with JSON-Pointer error paths, and a structural check for tools whose
//! schema is given as JSON.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::ToolError;

/// The parameters schema of a tool without parameters.
#[must_use]
pub fn empty_object() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// The JSON Schema (draft 2020-12) of `T`, without the `$schema` and `title` keys
/// that only make sense for a standalone document.
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
    let mut value = schemars::SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value();
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
pub fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    // Fast path: plain serde. Path tracking allocates for every map key it passes,
    // so it only runs again, on the same value, when this fails.
    match T::deserialize(&args) {
        Ok(value) => Ok(value),
        Err(_) => Err(locate_error::<T>(args)),
    }
}

#[cold]
fn locate_error<T: DeserializeOwned>(args: Value) -> ToolError {
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
    let properties = schema.get("properties").and_then(Value::as_object);
    let listed = |name: &str| properties.is_some_and(|p| p.contains_key(name));
    let mut fields: Option<&'static [&'static str]> = None;
    // The probe fails every request; all it wants is the field list.
    let _ = T::deserialize(FieldsProbe(&mut fields));
    let mut names: Vec<String> = fields
        .unwrap_or_default()
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
            Segment::Seq { index } => push_token(&mut out, &index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => push_token(&mut out, key),
            Segment::Unknown => push_token(&mut out, "?"),
        }
    }
    out
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

/// Checks `value` against `schema` for tools whose schema is given as JSON rather than
/// derived from a Rust type (typed tools are checked by deserialisation instead).
///
/// The check covers the keywords that describe a value's shape: `type`, `properties`,
/// `required`, `additionalProperties`, `items`, `prefixItems`, `enum`, `const`,
/// `anyOf`, `oneOf`, `allOf`, `not`, local `$ref`s into `$defs`/`definitions`, and the
/// numeric, string-length and array-length bounds. Numbers compare by value (`1` equals
/// `1.0`). Keywords that need regular expressions or formats (`pattern`,
/// `patternProperties`, `format`) are not evaluated; where `patternProperties` is
/// present, `additionalProperties` is not enforced either, so valid input is never
/// refused.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
/// assert!(toolfunc::schema::validate(&schema, &json!({"n": 3})).is_ok());
/// let err = toolfunc::schema::validate(&schema, &json!({"n": "3"})).unwrap_err();
/// assert_eq!(err.to_string(), "invalid arguments at /n: expected integer, found string");
/// ```
pub fn validate(schema: &Value, value: &Value) -> Result<(), ToolError> {
    let mut path = String::new();
    Checker { root: schema }
        .check(schema, value, &mut path, 0)
        .map_err(|(path, message)| ToolError::arguments(path, message))
}

type Failure = (String, String);

struct Checker<'a> {
    root: &'a Value,
}

/// Deep enough for any real schema, shallow enough to stop a `$ref` cycle.
const MAX_DEPTH: usize = 64;

impl Checker<'_> {
    fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        let fail = |path: &String, message: String| Err((path.clone(), message));
        if depth > MAX_DEPTH {
            return fail(path, "schema nesting too deep (recursive $ref?)".into());
        }
        let schema = match schema {
            Value::Object(map) => map,
            Value::Bool(false) => return fail(path, "no value is allowed here".into()),
            // `true` and non-schema values constrain nothing.
            _ => return Ok(()),
        };
        if let Some(Value::String(reference)) = schema.get("$ref") {
            let target = self.resolve(reference).ok_or_else(|| {
                (
                    path.clone(),
                    format!("schema reference {reference} not found"),
                )
            })?;
            self.check(target, value, path, depth + 1)?;
        }
        if let Some(expected) = schema.get("type") {
            let found = type_name(value);
            let ok = match expected {
                Value::String(t) => type_matches(t, value),
                Value::Array(ts) => ts
                    .iter()
                    .any(|t| t.as_str().is_some_and(|t| type_matches(t, value))),
                _ => true,
            };
            if !ok {
                let expected = match expected {
                    Value::Array(ts) => ts
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" or "),
                    other => other.as_str().unwrap_or("?").to_owned(),
                };
                return fail(path, format!("expected {expected}, found {found}"));
            }
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.iter().any(|a| json_eq(a, value))
        {
            return fail(
                path,
                format!("expected one of {}", Value::from(allowed.clone())),
            );
        }
        if let Some(expected) = schema.get("const")
            && !json_eq(expected, value)
        {
            return fail(path, format!("expected {expected}"));
        }
        self.check_combinators(schema, value, path, depth)?;
        match value {
            Value::Object(object) => self.check_object(schema, object, path, depth),
            Value::Array(items) => self.check_array(schema, items, path, depth),
            Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(f64::NAN), path),
            Value::String(s) => {
                let len = s.chars().count() as u64;
                if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                    && len < min
                {
                    return fail(path, format!("expected at least {min} characters"));
                }
                if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                    && len > max
                {
                    return fail(path, format!("expected at most {max} characters"));
                }
                Ok(())
            }
            Value::Null | Value::Bool(_) => Ok(()),
        }
    }

    fn check_combinators(
        &self,
        schema: &Map<String, Value>,
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        if let Some(Value::Array(all)) = schema.get("allOf") {
            for sub in all {
                self.check(sub, value, path, depth + 1)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = schema.get(key) {
                let mut first_failure = None;
                let mut matched = 0;
                for sub in options {
                    match self.check(sub, value, &mut path.clone(), depth + 1) {
                        Ok(()) => matched += 1,
                        Err(failure) => {
                            first_failure.get_or_insert(failure);
                        }
                    }
                }
                if matched == 0 {
                    // One option: its own error is the clearest message.
                    if options.len() == 1
                        && let Some(failure) = first_failure
                    {
                        return Err(failure);
                    }
                    return Err((path.clone(), format!("matches none of the {key} options")));
                }
                if key == "oneOf" && matched > 1 {
                    return Err((
                        path.clone(),
                        format!("matches {matched} oneOf options, expected exactly one"),
                    ));
                }
            }
        }
        if let Some(not) = schema.get("not")
            && self.check(not, value, &mut path.clone(), depth + 1).is_ok()
        {
            return Err((path.clone(), "matches a schema it must not match".into()));
        }
        Ok(())
    }

    fn check_object(
        &self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    let len = path.len();
                    push_token(path, name);
                    let failure = (path.clone(), format!("missing required property `{name}`"));
                    path.truncate(len);
                    return Err(failure);
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        // `patternProperties` needs regular expressions, which this check does not
        // evaluate: when present, properties outside `properties` are let through
        // rather than wrongly refused.
        let additional = if schema.contains_key("patternProperties") {
            None
        } else {
            schema.get("additionalProperties")
        };
        for (key, item) in object {
            let len = path.len();
            push_token(path, key);
            let result = match properties.and_then(|p| p.get(key)) {
                Some(sub) => self.check(sub, item, path, depth + 1),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        Err((path.clone(), format!("unknown property `{key}`")))
                    }
                    Some(sub) => self.check(sub, item, path, depth + 1),
                    None => Ok(()),
                },
            };
            path.truncate(len);
            result?;
        }
        Ok(())
    }

    fn check_array(
        &self,
        schema: &Map<String, Value>,
        items: &[Value],
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        let count = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && count < min
        {
            return Err((path.clone(), format!("expected at least {min} items")));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && count > max
        {
            return Err((path.clone(), format!("expected at most {max} items")));
        }
        let prefix = schema
            .get("prefixItems")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for (index, item) in items.iter().enumerate() {
            let sub = prefix.get(index).or_else(|| schema.get("items"));
            if let Some(sub) = sub {
                let len = path.len();
                push_token(path, &index.to_string());
                let result = self.check(sub, item, path, depth + 1);
                path.truncate(len);
                result?;
            }
        }
        Ok(())
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(pointer)
    }
}

fn check_number(schema: &Map<String, Value>, n: f64, path: &str) -> Result<(), Failure> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let fail = |message: String| Err((path.to_owned(), message));
    if let Some(min) = bound("minimum")
        && n < min
    {
        return fail(format!("expected a number >= {min}"));
    }
    if let Some(max) = bound("maximum")
        && n > max
    {
        return fail(format!("expected a number <= {max}"));
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        return fail(format!("expected a number > {min}"));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        return fail(format!("expected a number < {max}"));
    }
    Ok(())
}

/// JSON equality as JSON Schema defines it: numbers compare by value (`1 == 1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        // Unknown type names (such as the reference library's "any") accept everything.
        _ => true,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
