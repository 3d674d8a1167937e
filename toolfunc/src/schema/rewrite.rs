//! Rewriting of JSON Schema values, apart from any one use of them: a walk over
//! every subschema, the bounds and nulls a schema leaves implied written out, and a
//! schema's definitions lifted out of it with its `$ref`s rebased to where they
//! went. The OpenAPI document (`http::openapi`) builds its components with them.

use std::collections::HashMap;

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};

/// Calls `f` on every subschema of `schema` (`properties`, `items`, `anyOf`,
/// `$defs`, ...), then on `schema` itself; not on values (`const`, `enum`,
/// `default`, examples). What `f` makes of a schema is not visited again.
pub(crate) fn each_schema(schema: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(map) = schema else {
        return;
    };
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(schemas) = value {
                    schemas.values_mut().for_each(|s| each_schema(s, f));
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" | "items" => match value {
                Value::Array(schemas) => schemas.iter_mut().for_each(|s| each_schema(s, f)),
                schema => each_schema(schema, f),
            },
            "additionalProperties"
            | "unevaluatedProperties"
            | "propertyNames"
            | "additionalItems"
            | "unevaluatedItems"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else" => each_schema(value, f),
            _ => {}
        }
    }
    f(map);
}

/// Whether a schema's `type` names `ty` (alone or in a list).
fn has_type(map: &Map<String, Value>, ty: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(list)) => list.iter().any(|t| t == ty),
        _ => false,
    }
}

/// Lets a number be `null` as well: a result holding `NaN` or an infinity is sent
/// with `null` in its place, as `serde_json` writes them. Written as an `anyOf`
/// rather than a list of types: tools that read response schemas (Schemathesis
/// 4.32 among them) fail on a `type` list inside an `anyOf` branch.
pub(crate) fn number_or_null(map: &mut Map<String, Value>) {
    if !has_type(map, "number") || has_type(map, "null") {
        return;
    }
    let mut number = std::mem::take(map);
    for key in ["title", "description"] {
        if let Some(text) = number.remove(key) {
            map.insert(key.into(), text);
        }
    }
    map.insert(
        "anyOf".into(),
        json!([Value::Object(number), {"type": "null"}]),
    );
}

/// Writes the bounds an integer's `format` implies (`uint64`: 0 to 2^64 - 1, as
/// schemars names Rust's integer types) when the schema does not give them, so
/// that what the document accepts is what the parameter type can hold.
pub(crate) fn bound_integer(map: &mut Map<String, Value>) {
    if !has_type(map, "integer") {
        return;
    }
    let (min, max): (Value, Value) = match map.get("format").and_then(Value::as_str) {
        Some("int8") => (i8::MIN.into(), i8::MAX.into()),
        Some("int16") => (i16::MIN.into(), i16::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        Some("int64") => (i64::MIN.into(), i64::MAX.into()),
        Some("uint8") => (0.into(), u8::MAX.into()),
        Some("uint16") => (0.into(), u16::MAX.into()),
        Some("uint32") => (0.into(), u32::MAX.into()),
        Some("uint64") => (0.into(), u64::MAX.into()),
        // `isize` and `usize`.
        Some("int") => (
            i64::try_from(isize::MIN).unwrap_or(i64::MIN).into(),
            i64::try_from(isize::MAX).unwrap_or(i64::MAX).into(),
        ),
        Some("uint") => (
            0.into(),
            u64::try_from(usize::MAX).unwrap_or(u64::MAX).into(),
        ),
        _ => return,
    };
    if !map.contains_key("minimum") && !map.contains_key("exclusiveMinimum") {
        map.insert("minimum".into(), min);
    }
    if !map.contains_key("maximum") && !map.contains_key("exclusiveMaximum") {
        map.insert("maximum".into(), max);
    }
}

/// Takes a schema out of its own document: drops `$schema` and `$id`, and removes
/// its `$defs` and `definitions`, returned keyed `"$defs/<name>"` and
/// `"definitions/<name>"` (the keys [`rebase_refs`] maps).
pub(crate) fn lift_definitions(schema: &mut Value) -> Vec<(String, Value)> {
    let mut lifted: Vec<(String, Value)> = Vec::new();
    if let Value::Object(map) = schema {
        map.remove("$schema");
        map.remove("$id");
        for kind in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = map.remove(kind) {
                lifted.extend(defs.into_iter().map(|(k, v)| (format!("{kind}/{k}"), v)));
            }
        }
    }
    lifted
}

/// `"$defs/User"` → `"User"`.
pub(crate) fn def_name(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, name)| name)
}

/// Rewrites the `$ref`s of a schema moved to `<base>/<root>` (the OpenAPI document
/// passes `#/components/schemas`), whose `$defs` moved to `<base>/<name>` for the
/// names `mapping` gives (keyed `"$defs/<name>"`, as [`lift_definitions`] returns
/// them).
pub(crate) fn rebase_refs(
    value: &mut Value,
    base: &str,
    root: &str,
    mapping: &HashMap<String, String>,
) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "$ref" => {
                        if let Value::String(target) = value
                            && let Some(moved) = moved(target, base, root, mapping)
                        {
                            *target = moved;
                        }
                    }
                    // Values, not schemas.
                    "const" | "enum" | "default" | "examples" | "example" => {}
                    _ => rebase_refs(value, base, root, mapping),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rebase_refs(item, base, root, mapping);
            }
        }
        _ => {}
    }
}

/// Where a local reference points once the schema moved.
fn moved(
    target: &str,
    base: &str,
    root: &str,
    mapping: &HashMap<String, String>,
) -> Option<String> {
    let fragment = target.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(format!("{base}/{root}"));
    }
    // `#name` is an anchor: it still names what it named.
    let pointer = fragment.strip_prefix('/')?;
    let mut parts = pointer.splitn(3, '/');
    if let (Some(kind @ ("$defs" | "definitions")), Some(name)) = (parts.next(), parts.next()) {
        let name = percent_decode_str(name).decode_utf8_lossy();
        let name = name.replace("~1", "/").replace("~0", "~");
        if let Some(component) = mapping.get(&format!("{kind}/{name}")) {
            let rest = parts.next().map(|r| format!("/{r}")).unwrap_or_default();
            return Some(format!("{base}/{component}{rest}"));
        }
    }
    Some(format!("{base}/{root}{fragment}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_follow_their_schemas() {
        let mapping = HashMap::from([("$defs/User".to_owned(), "users.User".to_owned())]);
        let moved = |t: &str| moved(t, "#/components/schemas", "users.list.Result", &mapping);
        assert_eq!(
            moved("#/$defs/User").as_deref(),
            Some("#/components/schemas/users.User")
        );
        assert_eq!(
            moved("#/$defs/User/properties/id").as_deref(),
            Some("#/components/schemas/users.User/properties/id")
        );
        assert_eq!(
            moved("#").as_deref(),
            Some("#/components/schemas/users.list.Result")
        );
        assert_eq!(
            moved("#/properties/a").as_deref(),
            Some("#/components/schemas/users.list.Result/properties/a")
        );
        assert_eq!(moved("#anchor"), None);
        assert_eq!(moved("https://example.com/s.json"), None);
    }

    #[test]
    fn implied_bounds_and_nulls_are_written_out() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint8"},
                "m": {"type": ["integer", "null"], "format": "int32", "minimum": 1},
                "xs": {"type": "array", "items": {"type": "number", "description": "x"}},
                "enum": {"enum": [{"type": "number"}]},
            },
            "$defs": {"D": {"type": "number", "format": "float"}},
        });
        each_schema(&mut schema, &mut bound_integer);
        each_schema(&mut schema, &mut number_or_null);
        let props = &schema["properties"];
        assert_eq!(
            (&props["n"]["minimum"], &props["n"]["maximum"]),
            (&json!(0), &json!(255))
        );
        assert_eq!(props["m"]["minimum"], 1, "a bound given stays");
        assert_eq!(props["m"]["maximum"], i32::MAX);
        assert_eq!(
            props["xs"]["items"],
            json!({"description": "x", "anyOf": [{"type": "number"}, {"type": "null"}]})
        );
        assert_eq!(
            props["enum"],
            json!({"enum": [{"type": "number"}]}),
            "values are left"
        );
        assert_eq!(schema["$defs"]["D"]["anyOf"][1], json!({"type": "null"}));
    }
}
