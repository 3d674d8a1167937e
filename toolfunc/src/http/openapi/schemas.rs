//! A tool's schemas as components (their `$defs` lifted beside them, every `$ref`
//! rewritten, integers bounded, a result's numbers nullable) and a params schema
//! adapted to a request: `act` added, `id` left to the path.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::components::{SCHEMAS, clean, reference, unique};
use super::doc::{Doc, Outcome};
use crate::http::wire;
use crate::schema::rewrite::{
    bound_integer, def_name, each_schema, lift_definitions, number_or_null, rebase_refs,
};

impl Doc<'_> {
    /// A schema of a tool as a component, its `$defs` lifted beside it; returns the
    /// reference to it and, when `adapt` drops `id`, the schema of `id`.
    pub(super) fn component(
        &mut self,
        ns: &str,
        local: &str,
        raw: &Value,
        adapt: Adapt<'_>,
    ) -> (Value, Option<Value>, bool) {
        let root = unique(&mut self.names, format!("{ns}.{local}"));
        let mut schema = raw.clone();
        each_schema(&mut schema, &mut bound_integer);
        let lifted = lift_definitions(&mut schema);
        // Shared by tool when the same definition recurs (a `User` in every act);
        // apart when two differ under one name.
        let tentative: HashMap<String, String> = lifted
            .iter()
            .map(|(key, _)| (key.clone(), format!("{ns}.{}", clean(def_name(key)))))
            .collect();
        let rewritten = |mapping: &HashMap<String, String>| {
            lifted
                .iter()
                .map(|(key, def)| {
                    let mut def = def.clone();
                    rebase_refs(&mut def, SCHEMAS, &root, mapping);
                    (mapping[key].clone(), def)
                })
                .collect::<Vec<_>>()
        };
        let mut defs = rewritten(&tentative);
        let distinct: HashSet<&String> = tentative.values().collect();
        let fits = distinct.len() == tentative.len()
            && defs.iter().all(|(name, def)| {
                self.schemas.get(name).is_none_or(|have| have == def)
                    && (self.schemas.contains_key(name) || !self.names.contains(name))
            });
        let mapping = if fits {
            tentative
        } else {
            let mapping: HashMap<String, String> = lifted
                .iter()
                .map(|(key, _)| {
                    let name = format!("{root}.{}", clean(def_name(key)));
                    (key.clone(), unique(&mut self.names, name))
                })
                .collect();
            defs = rewritten(&mapping);
            mapping
        };
        rebase_refs(&mut schema, SCHEMAS, &root, &mapping);
        for (name, def) in defs {
            self.names.insert(name.clone());
            if !self.same.iter().any(|(_, n)| *n == name) {
                self.same.push((def.clone(), name.clone()));
            }
            self.schemas.insert(name, def);
        }
        let id = apply(&mut schema, adapt);
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        if let Some((_, existing)) = self.same.iter().find(|(s, _)| *s == schema) {
            self.names.remove(&root);
            return (reference(existing), id, required);
        }
        self.same.push((schema.clone(), root.clone()));
        self.schemas.insert(root.clone(), schema);
        (reference(&root), id, required)
    }

    /// The 200 answer of a tool or act.
    pub(super) fn outcome(
        &mut self,
        ns: &str,
        local: &str,
        result: Option<&Value>,
        streams: Streams,
    ) -> Outcome {
        let item = match result {
            Some(result) => {
                // A number that is not finite is sent as `null` (JSON has no NaN).
                let mut result = result.clone();
                each_schema(&mut result, &mut number_or_null);
                self.component(ns, local, &result, Adapt::default()).0
            }
            None => json!({}),
        };
        let mut outcome = Outcome::default();
        if streams.json() {
            outcome.json = Some(if streams.streams {
                json!({"type": "array", "items": item})
            } else {
                item.clone()
            });
        }
        if streams.streams {
            outcome.ndjson = Some(json!({"anyOf": [item, reference("Error")]}));
        }
        outcome
    }
}

/// Whether a tool or act streams, and whether the call chooses (`stream`).
#[derive(Clone, Copy)]
pub(super) struct Streams {
    pub(super) streams: bool,
    chooses: bool,
}

impl Streams {
    pub(super) fn of(streams: bool, params: &Value) -> Self {
        Self {
            streams,
            chooses: wire::property(params, "stream").is_some(),
        }
    }

    /// Whether a JSON body can answer: not a stream, or one the caller may decline.
    pub(super) fn json(self) -> bool {
        !self.streams || self.chooses
    }
}

/// What a request schema is made of, from a params schema.
#[derive(Clone, Copy, Default)]
pub(super) struct Adapt<'a> {
    /// An `act` property with this `const`, required or not.
    pub(super) act: Option<(&'a str, bool)>,
    /// Leaves `id` out (it comes from the path).
    pub(super) drop_id: bool,
}

/// Applies `adapt` to a (rewritten) params schema; returns the schema of `id` when
/// it was dropped.
fn apply(schema: &mut Value, adapt: Adapt<'_>) -> Option<Value> {
    if adapt.act.is_none() && !adapt.drop_id {
        return None;
    }
    if *schema == Value::Bool(true) {
        *schema = json!({});
    }
    let map = schema.as_object_mut()?;
    let mut id = None;
    if adapt.drop_id {
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            id = properties.remove("id");
        }
        if let Some(Value::Array(required)) = map.get_mut("required") {
            required.retain(|r| r != "id");
            if required.is_empty() {
                map.remove("required");
            }
        }
    }
    if let Some((act, required)) = adapt.act {
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            // Where the act may be left out (the HTTP method names it), `null`
            // leaves it out too.
            let schema = if required {
                json!({"const": act, "description": "The act to run."})
            } else {
                json!({
                    "enum": [act, null],
                    "description": "The act to run (the method's when left out or `null`).",
                })
            };
            properties.insert("act".into(), schema);
        }
        if required {
            let list = map
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.insert(0, Value::from("act"));
            }
        }
    }
    id
}

/// A params schema without `id` (to know what is left for `p`).
pub(super) fn strip_id(params: &Value) -> Value {
    let mut params = params.clone();
    apply(
        &mut params,
        Adapt {
            act: None,
            drop_id: true,
        },
    );
    params
}
