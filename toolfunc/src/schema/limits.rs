//! What every check of a value against a schema keeps to, with or without the
//! `validate` feature: how deep a value may be nested, whether a schema checks
//! anything at all, and how a `$ref`'s fragment is read.

use serde_json::{Map, Value};

use super::{push_index, push_token};

/// The deepest nesting of arrays and objects a checked value may have; the root
/// counts as one level. It is serde_json's own parsing limit, so no value read from
/// JSON text is refused for its depth, and it bounds the recursion of every check.
pub(crate) const MAX_DEPTH: usize = 128;

/// The JSON Pointer of the first array or object nested deeper than [`MAX_DEPTH`].
///
/// Values built in Rust can be arbitrarily deep; these walks stop at the limit, so
/// their own recursion is bounded too.
pub(crate) fn too_deep(value: &Value) -> Option<String> {
    fn deep(value: &Value, level: usize) -> bool {
        match value {
            Value::Array(items) => level > MAX_DEPTH || items.iter().any(|v| deep(v, level + 1)),
            Value::Object(map) => level > MAX_DEPTH || map.values().any(|v| deep(v, level + 1)),
            _ => false,
        }
    }
    if !deep(value, 1) {
        return None;
    }
    // Found: follow the first too-deep child down, writing its path.
    let mut path = String::new();
    let mut value = value;
    for level in 1..=MAX_DEPTH {
        let next = match value {
            Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
                deep(item, level + 1).then(|| {
                    push_index(&mut path, index);
                    item
                })
            }),
            Value::Object(map) => map.iter().find_map(|(key, item)| {
                deep(item, level + 1).then(|| {
                    push_token(&mut path, key);
                    item
                })
            }),
            _ => None,
        };
        match next {
            Some(next) => value = next,
            None => break,
        }
    }
    Some(path)
}

/// Decodes the `%XX` escapes of a URI fragment.
pub(crate) fn percent_decode(fragment: &str) -> String {
    if !fragment.contains('%') {
        return fragment.to_owned();
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = fragment.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the schema accepts every object: nothing to check per call.
pub(crate) fn accepts_any_object(schema: &Value) -> bool {
    /// Keywords that never refuse a value.
    const ANNOTATIONS: &[&str] = &[
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    ];
    let accepts_anything = |v: &Value| v == &Value::Bool(true) || v == &Value::Object(Map::new());
    match schema {
        Value::Bool(b) => *b,
        Value::Object(map) => map.iter().all(|(key, value)| match key.as_str() {
            "type" => match value {
                Value::String(t) => t == "object",
                Value::Array(ts) => ts.iter().any(|t| t == "object"),
                _ => false,
            },
            "properties" | "patternProperties" => value
                .as_object()
                .is_some_and(|props| props.values().all(accepts_anything)),
            "additionalProperties" | "unevaluatedProperties" | "propertyNames" => {
                accepts_anything(value)
            }
            "required" => value.as_array().is_some_and(Vec::is_empty),
            key => ANNOTATIONS.contains(&key),
        }),
        _ => false,
    }
}
