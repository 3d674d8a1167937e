//! An OpenAPI schema as JSON Schema 2020-12: the document's `$ref`s copied into the
//! tool schema's `$defs`, and OpenAPI 3.0's `nullable` and boolean
//! `exclusiveMinimum`/`exclusiveMaximum` written as JSON Schema says them.

use serde_json::{Map, Value, json};

/// The document's schemas a tool's schema names, copied into its `$defs`.
#[derive(Default)]
pub(super) struct Defs {
    pub(super) made: Map<String, Value>,
}

impl Defs {
    /// `schema` with its local `$ref`s pointing into `$defs` (what they name copied
    /// there), OpenAPI 3.0's `nullable` and boolean `exclusiveMinimum` turned into
    /// JSON Schema's, and any other `$ref` (another file's) left open as `{}`.
    pub(super) fn take(&mut self, document: &Value, schema: &Value, legacy: bool) -> Value {
        let mut schema = schema.clone();
        let mut pending = Vec::new();
        rewrite(&mut schema, legacy, &mut pending);
        while let Some(pointer) = pending.pop() {
            let key = def_key(&pointer);
            if self.made.contains_key(&key) {
                continue;
            }
            let mut target = document
                .pointer(&pointer)
                .cloned()
                .unwrap_or_else(|| json!({}));
            // Reserved before its own refs are followed, so a cycle ends.
            self.made.insert(key.clone(), Value::Null);
            rewrite(&mut target, legacy, &mut pending);
            self.made.insert(key, target);
        }
        schema
    }
}

/// The `$defs` key of a local pointer: a component schema's name, else the
/// pointer's segments joined by `.`.
fn def_key(pointer: &str) -> String {
    pointer
        .strip_prefix("/components/schemas/")
        .map_or_else(
            || pointer.trim_start_matches('/').replace('/', "."),
            |name| name.replace('/', "."),
        )
        .replace("~1", "_")
        .replace("~0", "_")
}

fn rewrite(value: &mut Value, legacy: bool, pending: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                if let Some(pointer) = target.strip_prefix('#') {
                    let pointer = pointer.to_owned();
                    object.insert(
                        "$ref".into(),
                        json!(format!("#/$defs/{}", def_key(&pointer))),
                    );
                    pending.push(pointer);
                } else {
                    object.remove("$ref");
                }
            }
            if legacy {
                legacy_keywords(object);
            }
            for (key, child) in object.iter_mut() {
                // Examples and enums are data, not schemas.
                if !matches!(
                    key.as_str(),
                    "example" | "examples" | "enum" | "const" | "default"
                ) {
                    rewrite(child, legacy, pending);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite(item, legacy, pending);
            }
        }
        _ => {}
    }
}

/// OpenAPI 3.0's keywords that JSON Schema 2020-12 reads otherwise.
fn legacy_keywords(object: &mut Map<String, Value>) {
    if object.remove("nullable") == Some(Value::Bool(true)) {
        match object.get_mut("type") {
            Some(Value::String(kind)) => {
                let kind = kind.clone();
                object.insert("type".into(), json!([kind, "null"]));
            }
            Some(Value::Array(kinds)) if !kinds.contains(&json!("null")) => {
                kinds.push(json!("null"));
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = object.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match object.get(flag) {
            Some(Value::Bool(true)) => {
                if let Some(limit) = object.remove(bound) {
                    object.insert(flag.into(), limit);
                } else {
                    object.remove(flag);
                }
            }
            Some(Value::Bool(false)) => {
                object.remove(flag);
            }
            _ => {}
        }
    }
}
