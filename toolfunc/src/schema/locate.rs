//! Where a value first breaks a schema this crate derived or wrote itself, worded as
//! the JSON Schema check words it: the location of a typed tool's failed read, and
//! the check of the arguments of prompts and resources built at run time.
//!
//! It reads the keywords those schemas are made of (schemars' output and the
//! crate's own: `type`, `properties`, `required`, `additionalProperties`, `items`,
//! `prefixItems`, `enum`, `const`, `anyOf`, `oneOf`, `allOf`, `not`, local `$ref`s,
//! and the bounds on numbers, lengths and counts) and leaves the rest (`pattern`,
//! `format`, conditionals) to the full check of the `validate` feature. The work is
//! bounded: the value is no deeper than [`MAX_DEPTH`](super::limits::MAX_DEPTH) when
//! it is called, and a schema that loops through `$ref`s without descending into
//! the value stops after a fixed number of steps.

use serde_json::{Map, Value};

use super::limits::percent_decode;
use super::{push_index, push_token};

/// The most subschemas one walk visits before it gives up (and finds nothing).
const MAX_STEPS: usize = 100_000;

/// The most subschemas one walk is inside of at once (its recursion): a value's
/// levels, and the `$ref`s and options between them.
const MAX_NESTING: usize = 256;

/// The JSON Pointer and message of the first error of `value` against `schema`, in
/// the order a deserialiser reading it meets them: a value of the wrong kind before
/// a missing property (which serde finds only once it has read the whole object).
/// `None` when `schema` accepts `value`, as far as its keywords above say.
pub(crate) fn first_error(schema: &Value, value: &Value) -> Option<(String, String)> {
    let mut walk = Walk {
        root: schema,
        steps: 0,
        nesting: 0,
        missing: None,
    };
    let mut path = String::new();
    match walk.check(schema, value, &mut path) {
        Some(found) => Some(found),
        None => walk.missing,
    }
}

struct Walk<'s> {
    root: &'s Value,
    steps: usize,
    nesting: usize,
    /// The first missing required property met, reported when nothing else is wrong.
    missing: Option<(String, String)>,
}

type Found = Option<(String, String)>;

impl<'s> Walk<'s> {
    /// Whether `schema` accepts `value` entirely (missing properties included).
    fn accepts(&mut self, schema: &'s Value, value: &Value) -> bool {
        let mut inner = Walk {
            root: self.root,
            steps: self.steps,
            nesting: self.nesting,
            missing: None,
        };
        let mut path = String::new();
        let ok = inner.check(schema, value, &mut path).is_none() && inner.missing.is_none();
        self.steps = inner.steps;
        ok
    }

    /// The first error of `value` at `path` that is not a missing property; missing
    /// ones are kept in `self.missing`.
    fn check(&mut self, schema: &'s Value, value: &Value, path: &mut String) -> Found {
        self.steps += 1;
        if self.steps > MAX_STEPS || self.nesting >= MAX_NESTING {
            return None;
        }
        self.nesting += 1;
        let found = self.keywords(schema, value, path);
        self.nesting -= 1;
        found
    }

    fn keywords(&mut self, schema: &'s Value, value: &Value, path: &mut String) -> Found {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(false) => return fail(path, "no value is allowed here".into()),
            _ => return None,
        };
        if let Some(target) = map
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.resolve(r))
            && let found @ Some(_) = self.check(target, value, path)
        {
            return found;
        }
        if let Some(types) = map.get("type")
            && !has_type(types, value)
        {
            let expected = type_label(types);
            return fail(
                path,
                format!("expected {expected}, found {}", type_name(value)),
            );
        }
        if let Some(Value::Array(options)) = map.get("enum")
            && !options.iter().any(|option| same(option, value))
        {
            let options = Value::Array(options.clone());
            return fail(path, format!("expected one of {options}"));
        }
        if let Some(expected) = map.get("const")
            && !same(expected, value)
        {
            return fail(path, format!("expected {expected}"));
        }
        if let found @ Some(_) = self.branches(map, value, path) {
            return found;
        }
        match value {
            Value::Object(object) => self.object(map, object, path),
            Value::Array(items) => self.array(map, items, path),
            Value::String(text) => string(map, text, path),
            Value::Number(_) => number(map, value, path),
            _ => None,
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`.
    fn branches(&mut self, map: &'s Map<String, Value>, value: &Value, path: &mut String) -> Found {
        if let Some(Value::Array(all)) = map.get("allOf") {
            for schema in all {
                if let found @ Some(_) = self.check(schema, value, path) {
                    return found;
                }
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(options)) = map.get(key) else {
                continue;
            };
            let matched = options.iter().filter(|o| self.accepts(o, value)).count();
            if matched == 0 {
                // One option: its own error is the clearest message.
                if let [only] = options.as_slice() {
                    let before = self.missing.take();
                    let found = self.check(only, value, path);
                    let found = found.or_else(|| self.missing.take());
                    self.missing = before;
                    return found;
                }
                return fail(path, format!("matches none of the {key} options"));
            }
            if key == "oneOf" && matched > 1 {
                return fail(
                    path,
                    format!("matches {matched} oneOf options, expected exactly one"),
                );
            }
        }
        if let Some(not) = map.get("not")
            && self.accepts(not, value)
        {
            return fail(path, "matches a schema it must not match".into());
        }
        None
    }

    fn object(
        &mut self,
        map: &'s Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
    ) -> Found {
        let properties = map.get("properties").and_then(Value::as_object);
        let additional = map.get("additionalProperties");
        for (key, item) in object {
            let schema = match properties.and_then(|p| p.get(key)) {
                Some(schema) => schema,
                None => match additional {
                    Some(Value::Bool(false)) => {
                        let mut at = path.clone();
                        push_token(&mut at, key);
                        return Some((at, format!("unknown property `{key}`")));
                    }
                    Some(schema) => schema,
                    None => continue,
                },
            };
            let len = path.len();
            push_token(path, key);
            let found = self.check(schema, item, path);
            path.truncate(len);
            if found.is_some() {
                return found;
            }
        }
        if self.missing.is_none()
            && let Some(Value::Array(required)) = map.get("required")
            && let Some(name) = required
                .iter()
                .filter_map(Value::as_str)
                .find(|name| !object.contains_key(*name))
        {
            let mut at = path.clone();
            push_token(&mut at, name);
            self.missing = Some((at, format!("missing required property `{name}`")));
        }
        let count = object.len();
        if let Some(limit) = limit(map, "minProperties")
            && count < limit
        {
            return fail(path, format!("expected at least {limit} properties"));
        }
        if let Some(limit) = limit(map, "maxProperties")
            && count > limit
        {
            return fail(path, format!("expected at most {limit} properties"));
        }
        None
    }

    fn array(&mut self, map: &'s Map<String, Value>, items: &[Value], path: &mut String) -> Found {
        let prefix = match map.get("prefixItems") {
            Some(Value::Array(prefix)) => prefix.as_slice(),
            _ => &[],
        };
        let rest = map.get("items");
        for (index, item) in items.iter().enumerate() {
            let schema = match prefix.get(index) {
                Some(schema) => schema,
                None => match rest {
                    Some(schema) => schema,
                    None => break,
                },
            };
            let len = path.len();
            push_index(path, index);
            let found = self.check(schema, item, path);
            path.truncate(len);
            if found.is_some() {
                return found;
            }
        }
        let count = items.len();
        if let Some(limit) = limit(map, "minItems")
            && count < limit
        {
            return fail(path, format!("expected at least {limit} items"));
        }
        if let Some(limit) = limit(map, "maxItems")
            && count > limit
        {
            return fail(path, format!("expected at most {limit} items"));
        }
        if map.get("uniqueItems") == Some(&Value::Bool(true))
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[i + 1..].iter().any(|b| same(a, b)))
        {
            return fail(path, "expected unique items".into());
        }
        None
    }

    /// The schema a local `$ref` (`#`, `#/$defs/Name`) points at.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        self.root.pointer(&percent_decode(pointer))
    }
}

#[expect(
    clippy::unnecessary_wraps,
    reason = "every check answers `Found`; a failure is its `Some`"
)]
fn fail(path: &str, message: String) -> Found {
    Some((path.to_owned(), message))
}

fn string(map: &Map<String, Value>, text: &str, path: &str) -> Found {
    let chars = || text.chars().count();
    if let Some(limit) = limit(map, "minLength")
        && chars() < limit
    {
        return fail(path, format!("expected at least {limit} characters"));
    }
    if let Some(limit) = limit(map, "maxLength")
        && chars() > limit
    {
        return fail(path, format!("expected at most {limit} characters"));
    }
    None
}

fn number(map: &Map<String, Value>, value: &Value, path: &str) -> Found {
    let n = value.as_f64()?;
    let bound = |key: &str| map.get(key).filter(|b| b.is_number());
    let below = |limit: &Value| value_lt(value, limit);
    let above = |limit: &Value| value_lt(limit, value);
    if let Some(limit) = bound("minimum")
        && below(limit)
    {
        return fail(path, format!("expected a number >= {limit}"));
    }
    if let Some(limit) = bound("maximum")
        && above(limit)
    {
        return fail(path, format!("expected a number <= {limit}"));
    }
    if let Some(limit) = bound("exclusiveMinimum")
        && !above(limit)
    {
        return fail(path, format!("expected a number > {limit}"));
    }
    if let Some(limit) = bound("exclusiveMaximum")
        && !below(limit)
    {
        return fail(path, format!("expected a number < {limit}"));
    }
    if let Some(step) = bound("multipleOf").and_then(Value::as_f64)
        && step > 0.0
        && (n / step).fract() != 0.0
    {
        let step = &map["multipleOf"];
        return fail(path, format!("expected a multiple of {step}"));
    }
    None
}

/// `a < b` for two JSON numbers, exactly when both are integers.
fn value_lt(a: &Value, b: &Value) -> bool {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a < b;
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a < b;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}

/// A count keyword (`minItems`, `maxLength`...) as a number.
fn limit(map: &Map<String, Value>, key: &str) -> Option<usize> {
    map.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

/// JSON equality, numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => !value_lt(a, b) && !value_lt(b, a),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn has_type(types: &Value, value: &Value) -> bool {
    match types {
        Value::String(t) => is_type(t, value),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .any(|t| is_type(t, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Value) -> bool {
    match (name, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        // JSON Schema counts a number with no fraction as an integer: `3.0` too.
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The schema's own spelling of a `type` keyword: `integer`, `integer or null`.
pub(super) fn type_label(types: &Value) -> String {
    match types {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

/// The JSON Schema type of `value`, as an error names it.
pub(super) fn type_name(value: &Value) -> &'static str {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::first_error;

    fn at(schema: &serde_json::Value, value: &serde_json::Value) -> Option<(String, String)> {
        first_error(schema, value)
    }

    #[expect(
        clippy::unnecessary_wraps,
        reason = "compared with `first_error`'s answer as it is"
    )]
    fn err(path: &str, message: &str) -> Option<(String, String)> {
        Some((path.to_owned(), message.to_owned()))
    }

    #[test]
    fn a_value_of_the_wrong_kind_comes_before_a_missing_property() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a", "b"]
        });
        assert_eq!(
            at(&schema, &json!({"b": 1})),
            err("/b", "expected string, found integer")
        );
        assert_eq!(
            at(&schema, &json!({"b": "x"})),
            err("/a", "missing required property `a`")
        );
        assert_eq!(at(&schema, &json!({"a": 3.0, "b": "x"})), None);
        assert_eq!(
            at(&schema, &json!({"a": 3.5, "b": "x"})),
            err("/a", "expected integer, found number")
        );
    }

    #[test]
    fn refs_options_and_arrays_are_followed() {
        let schema = json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "maxItems": 3},
                "note": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]},
                "size": {"type": ["integer", "null"], "minimum": 0},
                "kind": {"enum": ["a", "b"]}
            },
            "additionalProperties": false,
            "$defs": {"Line": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}
        });
        assert_eq!(
            at(&schema, &json!({"items": [{"id": 1}, {"id": "x"}]})),
            err("/items/1/id", "expected integer, found string")
        );
        assert_eq!(
            at(&schema, &json!({"items": [{}]})),
            err("/items/0/id", "missing required property `id`")
        );
        assert_eq!(
            at(
                &schema,
                &json!({"items": [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]})
            ),
            err("/items", "expected at most 3 items")
        );
        assert_eq!(at(&schema, &json!({"note": null, "size": null})), None);
        assert_eq!(
            at(&schema, &json!({"note": 4})),
            err("/note", "matches none of the anyOf options")
        );
        assert_eq!(
            at(&schema, &json!({"size": -1})),
            err("/size", "expected a number >= 0")
        );
        assert_eq!(
            at(&schema, &json!({"size": 1.5})),
            err("/size", "expected integer or null, found number")
        );
        assert_eq!(
            at(&schema, &json!({"kind": "c"})),
            err("/kind", "expected one of [\"a\",\"b\"]")
        );
        assert_eq!(
            at(&schema, &json!({"other": 1})),
            err("/other", "unknown property `other`")
        );
        assert_eq!(
            at(&schema, &json!({"a/b": 1})),
            err("/a~1b", "unknown property `a/b`")
        );
    }

    #[test]
    fn one_of_counts_its_matches_and_tuples_read_their_prefix() {
        let schema = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert_eq!(
            at(&schema, &json!(1)),
            err("", "matches 2 oneOf options, expected exactly one")
        );
        assert_eq!(at(&schema, &json!(1.5)), None);
        assert_eq!(
            at(&schema, &json!("x")),
            err("", "matches none of the oneOf options")
        );
        let tuple = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false});
        assert_eq!(at(&tuple, &json!(["a", 1])), None);
        assert_eq!(
            at(&tuple, &json!(["a", "b"])),
            err("/1", "expected integer, found string")
        );
        assert_eq!(
            at(&tuple, &json!(["a", 1, 2])),
            err("/2", "no value is allowed here")
        );
    }

    #[test]
    fn a_ref_loop_that_never_descends_ends() {
        let schema =
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}});
        assert_eq!(at(&schema, &json!({"x": 1})), None);
        let schema = json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]});
        assert_eq!(at(&schema, &json!(1)), None);
    }
}
