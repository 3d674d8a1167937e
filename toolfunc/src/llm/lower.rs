//! Lowering a tool's JSON Schema to what each target accepts: `$ref`s inlined,
//! strictness, Gemini's OpenAPI subset, formats each provider takes.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{Target, export_error};
use crate::error::ToolError;

/// Lowers a root schema (parameters or result) for `target`.
pub(super) fn lower_root(tool: &str, schema: &Value, target: Target) -> Result<Value, ToolError> {
    let mut lowering = Lowering {
        tool,
        root: schema,
        target,
        stack: Vec::new(),
        recursive: BTreeSet::new(),
    };
    lowering.stack.push(ROOT.to_owned());
    let mut lowered = lowering.node(schema, "")?;
    lowering.stack.pop();
    if let Value::Object(map) = &mut lowered {
        map.remove("title");
        map.remove("$schema");
        if target != Target::Mcp {
            map.remove("description");
        }
        if map.get("type").and_then(Value::as_str) != Some("object") {
            return Err(export_error(tool, "", "the root is not an object schema"));
        }
    }
    // Recursive types keep their definitions, lowered like the rest.
    if !lowering.recursive.is_empty() {
        let mut defs = Map::new();
        let mut done = BTreeSet::new();
        while let Some(name) = lowering
            .recursive
            .iter()
            .find(|n| !done.contains(*n))
            .cloned()
        {
            done.insert(name.clone());
            let target_schema = lowering
                .definition(&name)
                .cloned()
                .unwrap_or(Value::Bool(true));
            lowering.stack.push(name.clone());
            let lowered_def = lowering.node(&target_schema, &format!("/$defs/{name}"))?;
            lowering.stack.pop();
            defs.insert(name, lowered_def);
        }
        if let Value::Object(map) = &mut lowered {
            map.insert("$defs".into(), Value::Object(defs));
        }
    }
    Ok(lowered)
}

struct Lowering<'a> {
    tool: &'a str,
    root: &'a Value,
    target: Target,
    /// Definitions being inlined (to spot recursion).
    stack: Vec<String>,
    /// Definitions referred to recursively, kept under `$defs`.
    recursive: BTreeSet<String>,
}

/// The name under `$defs` of a root schema that refers to itself.
const ROOT: &str = "Root";

/// Keys the Gemini `Schema` proto knows; any other key is a hard error there.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "properties",
    "required",
    "propertyOrdering",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
];

/// Formats OpenAI strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Formats Anthropic strict mode accepts.
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "email",
    "uri",
    "uuid",
    "ipv4",
    "ipv6",
];

impl Lowering<'_> {
    fn error(&self, path: &str, message: &str) -> ToolError {
        export_error(self.tool, path, message)
    }

    fn definition(&self, name: &str) -> Option<&Value> {
        if name == ROOT {
            return Some(self.root);
        }
        self.root
            .get("$defs")
            .or_else(|| self.root.get("definitions"))
            .and_then(|defs| defs.get(name))
    }

    fn node(&mut self, schema: &Value, path: &str) -> Result<Value, ToolError> {
        let Value::Object(map) = schema else {
            return Ok(match schema {
                // `true` accepts anything: an empty schema says the same everywhere.
                Value::Bool(true) => json!({}),
                other => other.clone(),
            });
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(map, reference, path);
        }
        let mut out = Map::new();
        let mut moved = Vec::new();
        for (key, value) in map {
            match key.as_str() {
                // Dropped: document-level keys, and defaults/examples where a target
                // refuses or ignores them.
                "$schema" | "$defs" | "definitions" | "title" => {}
                "default" | "examples" if self.target.strict() || self.target == Target::Gemini => {
                }
                // Strict targets and Gemini take `anyOf` only.
                "oneOf" if self.target.strict() || self.target == Target::Gemini => {
                    out.insert("anyOf".into(), self.list(value, &format!("{path}/oneOf"))?);
                }
                "format" => {
                    let format = value.as_str().unwrap_or_default();
                    let keep = match self.target {
                        Target::OpenAiStrict => OPENAI_FORMATS.contains(&format),
                        Target::AnthropicStrict => ANTHROPIC_FORMATS.contains(&format),
                        Target::Gemini => {
                            matches!(format, "int32" | "int64" | "float" | "double" | "date-time")
                        }
                        _ => true,
                    };
                    if keep {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                | "minLength" | "maxLength" | "pattern"
                    if self.target == Target::AnthropicStrict =>
                {
                    moved.push(format!("{key}: {value}"));
                }
                "minItems" | "maxItems" if self.target == Target::AnthropicStrict => {
                    if key == "minItems" && value.as_u64().is_some_and(|n| n <= 1) {
                        out.insert(key.clone(), value.clone());
                    } else {
                        moved.push(format!("{key}: {value}"));
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                    if self.target == Target::Gemini => {}
                _ => {
                    out.insert(key.clone(), self.node_value(key, value, path)?);
                }
            }
        }
        if !moved.is_empty() {
            let note = format!("({})", moved.join(", "));
            let description = match out.get("description").and_then(Value::as_str) {
                Some(text) => format!("{text} {note}"),
                None => note,
            };
            out.insert("description".into(), json!(description));
        }
        self.shape_object(&mut out, path)?;
        self.nullable(&mut out, path)?;
        if self.target == Target::Gemini {
            self.gemini(&mut out, path)?;
        }
        Ok(Value::Object(out))
    }

    /// Inlines a local reference, merging what sits beside it; a recursive one stays a
    /// reference (into `$defs`) where the target can say recursion.
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &str,
        path: &str,
    ) -> Result<Value, ToolError> {
        // `#` is the root itself (a type that contains itself directly).
        let name = if reference == "#" {
            ROOT.to_owned()
        } else {
            reference
                .strip_prefix("#/$defs/")
                .or_else(|| reference.strip_prefix("#/definitions/"))
                .ok_or_else(|| {
                    self.error(path, &format!("the reference {reference} is not local"))
                })?
                .to_owned()
        };
        if self.stack.contains(&name) {
            if !self.target.recursion() {
                return Err(self.error(
                    path,
                    &format!(
                        "`{name}` is recursive, which {:?} cannot express",
                        self.target
                    ),
                ));
            }
            self.recursive.insert(name.clone());
            let mut reference = Map::new();
            reference.insert("$ref".into(), json!(format!("#/$defs/{name}")));
            return Ok(Value::Object(reference));
        }
        let target = self.definition(&name).cloned().ok_or_else(|| {
            self.error(path, &format!("the reference {reference} points nowhere"))
        })?;
        self.stack.push(name);
        let mut inlined = self.node(&target, path)?;
        self.stack.pop();
        if let Value::Object(inlined_map) = &mut inlined {
            for (key, value) in map {
                if key != "$ref" && key != "$defs" && key != "definitions" {
                    inlined_map.insert(key.clone(), self.node_value(key, value, path)?);
                }
            }
        }
        Ok(inlined)
    }

    /// Lowers the value under `key` (sub-schemas are lowered, other values copied).
    fn node_value(&mut self, key: &str, value: &Value, path: &str) -> Result<Value, ToolError> {
        let here = format!("{path}/{key}");
        match key {
            "properties" => {
                let Value::Object(properties) = value else {
                    return Ok(value.clone());
                };
                let mut out = Map::new();
                for (name, schema) in properties {
                    out.insert(name.clone(), self.node(schema, &format!("{here}/{name}"))?);
                }
                Ok(Value::Object(out))
            }
            "items" | "not" | "additionalProperties" if value.is_object() => {
                self.node(value, &here)
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => self.list(value, &here),
            _ => Ok(value.clone()),
        }
    }

    fn list(&mut self, value: &Value, path: &str) -> Result<Value, ToolError> {
        let Value::Array(items) = value else {
            return Ok(value.clone());
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.node(item, &format!("{path}/{i}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// Objects: closed for strict targets (maps cannot be said there), every property
    /// required (optional ones nullable) for OpenAI strict.
    fn shape_object(&mut self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        let is_object = out.get("type").is_some_and(|t| {
            t == "object"
                || t.as_array()
                    .is_some_and(|ts| ts.iter().any(|t| t == "object"))
        }) || out.contains_key("properties");
        if !is_object {
            return Ok(());
        }
        let map_values = out
            .get("additionalProperties")
            .is_some_and(|extra| extra.is_object() || extra == &Value::Bool(true));
        if map_values && (self.target.strict() || self.target == Target::Gemini) {
            return Err(self.error(
                path,
                &format!(
                    "a map (free-form keys) cannot be expressed for {:?}; use a list of entries",
                    self.target
                ),
            ));
        }
        if self.target.strict() {
            out.insert("additionalProperties".into(), json!(false));
            out.entry("properties").or_insert_with(|| json!({}));
        }
        if self.target == Target::OpenAiStrict {
            let required: BTreeSet<String> = out
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = out.get_mut("properties") {
                let names: Vec<String> = properties.keys().cloned().collect();
                for name in &names {
                    if !required.contains(name)
                        && let Some(Value::Object(schema)) = properties.get_mut(name)
                    {
                        make_nullable(schema);
                    }
                }
                out.insert("required".into(), json!(names));
            }
        }
        Ok(())
    }

    /// `type: [T, "null"]` as each target says it.
    fn nullable(&self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        let Some(Value::Array(types)) = out.get("type") else {
            return Ok(());
        };
        let non_null: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let has_null = non_null.len() < types.len();
        match self.target {
            Target::Gemini => {
                if non_null.len() != 1 {
                    return Err(self.error(path, "Gemini takes a single type per schema"));
                }
                out.insert("type".into(), non_null[0].clone());
                if has_null {
                    out.insert("nullable".into(), json!(true));
                }
            }
            Target::AnthropicStrict if has_null => {
                let mut value_branch = out.clone();
                value_branch.insert(
                    "type".into(),
                    if non_null.len() == 1 {
                        non_null[0].clone()
                    } else {
                        Value::Array(non_null)
                    },
                );
                value_branch.remove("description");
                let description = out.get("description").cloned();
                out.clear();
                out.insert(
                    "anyOf".into(),
                    json!([Value::Object(value_branch), {"type": "null"}]),
                );
                if let Some(description) = description {
                    out.insert("description".into(), description);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Gemini's subset: `anyOf` with a null branch becomes `nullable`, `const` an
    /// `enum`, only string enums, and only the keys its proto knows.
    fn gemini(&self, out: &mut Map<String, Value>, path: &str) -> Result<(), ToolError> {
        if let Some(Value::Array(options)) = out.get("anyOf") {
            let non_null: Vec<&Value> = options
                .iter()
                .filter(|o| o.get("type") != Some(&json!("null")))
                .collect();
            if non_null.len() < options.len() && non_null.len() == 1 {
                let mut merged = non_null[0].as_object().cloned().unwrap_or_default();
                merged.insert("nullable".into(), json!(true));
                if let Some(description) = out.get("description") {
                    merged.insert("description".into(), description.clone());
                }
                *out = merged;
            }
        }
        if let Some(constant) = out.remove("const") {
            if !constant.is_string() {
                return Err(self.error(path, "Gemini only takes string constants"));
            }
            out.insert("enum".into(), json!([constant]));
        }
        if let Some(Value::Array(values)) = out.get("enum")
            && values.iter().any(|v| !v.is_string())
        {
            return Err(self.error(path, "Gemini only takes string enums"));
        }
        out.retain(|key, _| GEMINI_KEYS.contains(&key.as_str()));
        Ok(())
    }
}

/// Makes a property accept `null` too (OpenAI strict's way of saying optional).
fn make_nullable(schema: &mut Map<String, Value>) {
    match schema.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            schema.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
        }
        _ => {
            if let Some(Value::Array(options)) = schema.get_mut("anyOf") {
                if !options
                    .iter()
                    .any(|o| o.get("type") == Some(&json!("null")))
                {
                    options.push(json!({"type": "null"}));
                }
            } else {
                let inner = std::mem::take(schema);
                schema.insert(
                    "anyOf".into(),
                    json!([Value::Object(inner), {"type": "null"}]),
                );
            }
        }
    }
}
