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
    Validator::compile(schema).validate(value)
}

/// A parameters schema compiled once (at build time) into a tree of checks, so a call
/// pays for the checks only, not for reading the schema again.
#[derive(Debug)]
pub(crate) struct Validator {
    nodes: Vec<Node>,
}

type Failure = (String, String);

/// Deep enough for any real schema, shallow enough to stop a `$ref` cycle that never
/// descends into the value.
const MAX_DEPTH: usize = 64;

#[derive(Debug)]
enum Node {
    /// `true`, `{}`, or a value that is not a schema.
    Any,
    /// `false`.
    Never,
    /// A `$ref` that points nowhere; reported when a value reaches it.
    Dangling(String),
    Rules(Box<Rules>),
}

#[derive(Debug, Default)]
struct Rules {
    reference: Option<usize>,
    /// Allowed JSON types, and their names for the error message.
    types: Option<(TypeSet, String)>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    all_of: Vec<usize>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    not: Option<usize>,
    required: Vec<String>,
    properties: Vec<(String, usize)>,
    additional: Additional,
    prefix_items: Vec<usize>,
    items: Option<usize>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
}

#[derive(Debug, Default)]
enum Additional {
    #[default]
    Allowed,
    Denied,
    Schema(usize),
}

impl Validator {
    /// Compiles `schema`. Never fails: unresolvable `$ref`s become checks that fail
    /// when reached (see [`Validator::dangling`]).
    pub(crate) fn compile(schema: &Value) -> Self {
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            refs: Vec::new(),
        };
        compiler.node(schema);
        Self {
            nodes: compiler.nodes,
        }
    }

    /// The first `$ref` that resolves to nothing, if any.
    pub(crate) fn dangling(&self) -> Option<&str> {
        self.nodes.iter().find_map(|node| match node {
            Node::Dangling(reference) => Some(reference.as_str()),
            _ => None,
        })
    }

    /// Whether the schema accepts every object (nothing to check per call).
    pub(crate) fn accepts_any_object(&self) -> bool {
        match self.nodes.first() {
            Some(Node::Any) => true,
            Some(Node::Rules(rules)) => {
                let Rules {
                    reference: None,
                    types,
                    enumeration: None,
                    constant: None,
                    all_of,
                    any_of,
                    one_of,
                    not: None,
                    required,
                    properties,
                    additional: Additional::Allowed,
                    prefix_items,
                    items: None,
                    min_items: None,
                    max_items: None,
                    min_length: None,
                    max_length: None,
                    minimum: None,
                    maximum: None,
                    exclusive_minimum: None,
                    exclusive_maximum: None,
                } = &**rules
                else {
                    return false;
                };
                types
                    .as_ref()
                    .is_none_or(|(t, _)| t.accepts(&Value::Object(Map::new())))
                    && all_of.is_empty()
                    && any_of.is_empty()
                    && one_of.is_empty()
                    && required.is_empty()
                    && properties.is_empty()
                    && prefix_items.is_empty()
            }
            _ => false,
        }
    }

    pub(crate) fn validate(&self, value: &Value) -> Result<(), ToolError> {
        let mut path = String::new();
        self.check(0, value, &mut path, 0)
            .map_err(|(path, message)| ToolError::arguments(path, message))
    }

    fn check(
        &self,
        node: usize,
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        let fail = |path: &String, message: String| Err((path.clone(), message));
        if depth > MAX_DEPTH {
            return fail(path, "schema nesting too deep (recursive $ref?)".into());
        }
        let rules = match &self.nodes[node] {
            Node::Any => return Ok(()),
            Node::Never => return fail(path, "no value is allowed here".into()),
            Node::Dangling(reference) => {
                return fail(path, format!("schema reference {reference} not found"));
            }
            Node::Rules(rules) => rules,
        };
        if let Some(target) = rules.reference {
            self.check(target, value, path, depth + 1)?;
        }
        if let Some((types, label)) = &rules.types
            && !types.accepts(value)
        {
            return fail(
                path,
                format!("expected {label}, found {}", type_name(value)),
            );
        }
        if let Some(allowed) = &rules.enumeration
            && !allowed.iter().any(|a| json_eq(a, value))
        {
            return fail(
                path,
                format!("expected one of {}", Value::from(allowed.clone())),
            );
        }
        if let Some(expected) = &rules.constant
            && !json_eq(expected, value)
        {
            return fail(path, format!("expected {expected}"));
        }
        self.check_combinators(rules, value, path, depth)?;
        match value {
            Value::Object(object) => self.check_object(rules, object, path, depth),
            Value::Array(items) => self.check_array(rules, items, path, depth),
            Value::Number(n) => check_number(rules, n.as_f64().unwrap_or(f64::NAN), path),
            Value::String(s) => {
                let len = s.chars().count() as u64;
                if let Some(min) = rules.min_length
                    && len < min
                {
                    return fail(path, format!("expected at least {min} characters"));
                }
                if let Some(max) = rules.max_length
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
        rules: &Rules,
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        for &sub in &rules.all_of {
            self.check(sub, value, path, depth + 1)?;
        }
        for (key, options) in [("anyOf", &rules.any_of), ("oneOf", &rules.one_of)] {
            if options.is_empty() {
                continue;
            }
            let mut first_failure = None;
            let mut matched = 0;
            for &sub in options {
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
        if let Some(not) = rules.not
            && self.check(not, value, &mut path.clone(), depth + 1).is_ok()
        {
            return Err((path.clone(), "matches a schema it must not match".into()));
        }
        Ok(())
    }

    fn check_object(
        &self,
        rules: &Rules,
        object: &Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        for name in &rules.required {
            if !object.contains_key(name) {
                let len = path.len();
                push_token(path, name);
                let failure = (path.clone(), format!("missing required property `{name}`"));
                path.truncate(len);
                return Err(failure);
            }
        }
        for (key, item) in object {
            let sub = rules
                .properties
                .binary_search_by(|(name, _)| name.as_str().cmp(key))
                .ok()
                .map(|i| rules.properties[i].1);
            let sub = match (sub, &rules.additional) {
                (Some(sub), _) | (None, &Additional::Schema(sub)) => sub,
                (None, Additional::Allowed) => continue,
                (None, Additional::Denied) => {
                    let len = path.len();
                    push_token(path, key);
                    let failure = (path.clone(), format!("unknown property `{key}`"));
                    path.truncate(len);
                    return Err(failure);
                }
            };
            let len = path.len();
            push_token(path, key);
            let result = self.check(sub, item, path, depth + 1);
            path.truncate(len);
            result?;
        }
        Ok(())
    }

    fn check_array(
        &self,
        rules: &Rules,
        items: &[Value],
        path: &mut String,
        depth: usize,
    ) -> Result<(), Failure> {
        let count = items.len() as u64;
        if let Some(min) = rules.min_items
            && count < min
        {
            return Err((path.clone(), format!("expected at least {min} items")));
        }
        if let Some(max) = rules.max_items
            && count > max
        {
            return Err((path.clone(), format!("expected at most {max} items")));
        }
        for (index, item) in items.iter().enumerate() {
            if let Some(sub) = rules.prefix_items.get(index).copied().or(rules.items) {
                let len = path.len();
                push_index(path, index);
                let result = self.check(sub, item, path, depth + 1);
                path.truncate(len);
                result?;
            }
        }
        Ok(())
    }
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// `$ref` strings already compiled, with their node, so cycles terminate.
    refs: Vec<(String, usize)>,
}

impl Compiler<'_> {
    fn node(&mut self, schema: &Value) -> usize {
        let index = self.nodes.len();
        self.nodes.push(Node::Any);
        let node = match schema {
            Value::Bool(false) => Node::Never,
            Value::Object(map) if !map.is_empty() => Node::Rules(Box::new(self.rules(map))),
            _ => Node::Any,
        };
        self.nodes[index] = node;
        index
    }

    fn reference(&mut self, reference: &str) -> usize {
        if let Some((_, node)) = self.refs.iter().find(|(r, _)| r == reference) {
            return *node;
        }
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer));
        let index = self.nodes.len();
        // Registered before compiling the target: a recursive schema refers back to it.
        self.refs.push((reference.to_owned(), index));
        if let Some(target) = target {
            let built = self.node(target);
            debug_assert_eq!(built, index, "the target's node is the next one");
        } else {
            self.nodes.push(Node::Dangling(reference.to_owned()));
        }
        index
    }

    fn list(&mut self, value: Option<&Value>) -> Vec<usize> {
        value
            .and_then(Value::as_array)
            .map(|subs| subs.iter().map(|sub| self.node(sub)).collect())
            .unwrap_or_default()
    }

    fn rules(&mut self, map: &Map<String, Value>) -> Rules {
        let u64_of = |key: &str| map.get(key).and_then(Value::as_u64);
        let f64_of = |key: &str| map.get(key).and_then(Value::as_f64);
        let types = match map.get("type") {
            Some(Value::String(t)) => Some((TypeSet::of(t), t.clone())),
            Some(Value::Array(ts)) => {
                let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                let set = names
                    .iter()
                    .fold(TypeSet(0), |set, name| TypeSet(set.0 | TypeSet::of(name).0));
                Some((set, names.join(" or ")))
            }
            _ => None,
        };
        let mut properties: Vec<(String, usize)> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(k, v)| (k.clone(), self.node(v)))
                    .collect()
            })
            .unwrap_or_default();
        properties.sort_by(|a, b| a.0.cmp(&b.0));
        // `patternProperties` needs regular expressions, which this check does not
        // evaluate: when present, properties outside `properties` are let through
        // rather than wrongly refused.
        let additional = if map.contains_key("patternProperties") {
            Additional::Allowed
        } else {
            match map.get("additionalProperties") {
                Some(Value::Bool(false)) => Additional::Denied,
                Some(Value::Bool(true)) | None => Additional::Allowed,
                Some(sub) => Additional::Schema(self.node(sub)),
            }
        };
        Rules {
            reference: map
                .get("$ref")
                .and_then(Value::as_str)
                .map(|r| self.reference(r)),
            types,
            enumeration: map.get("enum").and_then(Value::as_array).cloned(),
            constant: map.get("const").cloned(),
            all_of: self.list(map.get("allOf")),
            any_of: self.list(map.get("anyOf")),
            one_of: self.list(map.get("oneOf")),
            not: map.get("not").map(|sub| self.node(sub)),
            required: map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            properties,
            additional,
            prefix_items: self.list(map.get("prefixItems")),
            items: map.get("items").map(|sub| self.node(sub)),
            min_items: u64_of("minItems"),
            max_items: u64_of("maxItems"),
            min_length: u64_of("minLength"),
            max_length: u64_of("maxLength"),
            minimum: f64_of("minimum"),
            maximum: f64_of("maximum"),
            exclusive_minimum: f64_of("exclusiveMinimum"),
            exclusive_maximum: f64_of("exclusiveMaximum"),
        }
    }
}

fn check_number(rules: &Rules, n: f64, path: &str) -> Result<(), Failure> {
    let fail = |message: String| Err((path.to_owned(), message));
    if let Some(min) = rules.minimum
        && n < min
    {
        return fail(format!("expected a number >= {min}"));
    }
    if let Some(max) = rules.maximum
        && n > max
    {
        return fail(format!("expected a number <= {max}"));
    }
    if let Some(min) = rules.exclusive_minimum
        && n <= min
    {
        return fail(format!("expected a number > {min}"));
    }
    if let Some(max) = rules.exclusive_maximum
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

/// A set of JSON Schema type names, as bits.
#[derive(Debug, Clone, Copy)]
struct TypeSet(u8);

impl TypeSet {
    const OBJECT: u8 = 1;
    const ARRAY: u8 = 1 << 1;
    const STRING: u8 = 1 << 2;
    const BOOLEAN: u8 = 1 << 3;
    const NULL: u8 = 1 << 4;
    const NUMBER: u8 = 1 << 5;
    const INTEGER: u8 = 1 << 6;
    /// Unknown type names (such as the reference library's "any") accept everything.
    const ANY: u8 = 1 << 7;

    fn of(name: &str) -> Self {
        Self(match name {
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            "string" => Self::STRING,
            "boolean" => Self::BOOLEAN,
            "null" => Self::NULL,
            "number" => Self::NUMBER,
            "integer" => Self::INTEGER,
            _ => Self::ANY,
        })
    }

    fn accepts(self, value: &Value) -> bool {
        let bit = match value {
            Value::Object(_) => Self::OBJECT,
            Value::Array(_) => Self::ARRAY,
            Value::String(_) => Self::STRING,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Null => Self::NULL,
            Value::Number(n) => {
                // A number with no fractional part is an integer too.
                let integer =
                    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
                Self::NUMBER | if integer { Self::INTEGER } else { 0 }
            }
        };
        self.0 & (bit | Self::ANY) != 0
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
