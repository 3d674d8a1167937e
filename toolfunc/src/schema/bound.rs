//! Bounds on the work of one check: how deep a value may be nested, and a build-time
//! proof that no value is checked against more than a bounded number of subschemas.
//!
//! A validator that does not memoise evaluates a subschema once per *path* through the
//! schema that reaches it, not once per subschema. Through `$ref` recursion the number
//! of paths can grow with the depth of the value: in
//! `{"anyOf": [{"properties": {"c": {"$ref": "#"}}}, {"properties": {"c": {"$ref": "#"}}}]}`
//! a value `d` levels deep is checked along 2^d paths. This module counts those paths
//! for every value location up to [`MAX_DEPTH`], as an automaton that reads the value's
//! keys and indices, and refuses the schema when some location could be checked
//! against more than [`MAX_CHECKS_PER_VALUE`] subschemas, or when a `$ref` loop
//! never descends into the value (it could not be evaluated at all).
//!
//! Recursion stays accepted where the branches read different input: a tree's `left`
//! and `right`, or an array branch and an object branch, multiply nothing.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::limits::{MAX_DEPTH, percent_decode};
use super::{push_index, push_token};

/// The most subschemas one value location may be checked against, over every path
/// through the schema. Hand-written and generated tool schemas stay far below (one to
/// a few dozen); the schemas past it repeat work that grows with the value's depth or
/// with every level of a `$ref` chain.
pub(crate) const MAX_CHECKS_PER_VALUE: u64 = 1_000;

/// How many distinct sets of live subschemas the analysis may visit before it gives up
/// (and refuses the schema as too complex to bound).
const MAX_STATES: usize = 20_000;

/// What the analysis of a schema found.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// `$ref`s that point nowhere, with the JSON Pointer (in the schema) of the schema
    /// that holds each.
    pub(crate) dangling: Vec<(String, String)>,
}

/// One subschema: where it is, and the subschemas it applies to the same value
/// (in place) or to the value's keys, properties and items.
#[derive(Debug, Default)]
struct Node {
    location: String,
    in_place: Vec<usize>,
    properties: BTreeMap<String, Vec<usize>>,
    /// `additionalProperties`: keys not listed in `properties`.
    unlisted_keys: Vec<usize>,
    /// `patternProperties` (any pattern may match any key), `unevaluatedProperties`,
    /// `propertyNames`.
    every_key: Vec<usize>,
    /// `prefixItems`, or `items` as an array (older drafts).
    prefix: Vec<Vec<usize>>,
    /// `items` as a schema, or `additionalItems`: the items after the prefix.
    rest_items: Vec<usize>,
    /// `contains`, `unevaluatedItems`.
    every_item: Vec<usize>,
}

struct Graph<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// The subschema each node is.
    values: Vec<&'s Value>,
    ids: HashMap<*const Value, usize>,
    anchors: HashMap<&'s str, &'s Value>,
    dangling: Vec<(String, String)>,
}

/// Keywords whose value is one subschema.
const SINGLE: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
const LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// Checks that `schema` can be evaluated in bounded work: returns the reason when it
/// cannot, and otherwise what a compiler needs to know (its dangling `$ref`s).
pub(crate) fn analyse(schema: &Value) -> Result<Analysis, String> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return Err(format!(
            "a JSON Schema is an object or a boolean, not {}",
            match schema {
                Value::Null => "null",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                _ => "an array",
            }
        ));
    }
    let mut graph = Graph {
        root: schema,
        nodes: Vec::new(),
        values: Vec::new(),
        ids: HashMap::new(),
        anchors: HashMap::new(),
        dangling: Vec::new(),
    };
    graph.discover(schema, &mut String::new(), true)?;
    // `link` may number more nodes (targets outside any schema keyword) as it goes.
    let mut id = 0;
    while id < graph.nodes.len() {
        graph.link(id)?;
        id += 1;
    }
    let closures = graph.closures()?;
    graph.explore(&closures)?;
    Ok(Analysis {
        dangling: graph.dangling,
    })
}

impl<'s> Graph<'s> {
    fn node_of(&self, schema: &Value) -> Option<usize> {
        self.ids.get(&std::ptr::from_ref(schema)).copied()
    }

    /// Numbers every subschema of the document (reachable or not, so `$ref` targets
    /// have their document location) and collects the anchors.
    fn discover(&mut self, schema: &'s Value, path: &mut String, root: bool) -> Result<(), String> {
        if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
            return Ok(());
        }
        if self.ids.contains_key(&std::ptr::from_ref(schema)) {
            return Ok(());
        }
        self.ids
            .insert(std::ptr::from_ref(schema), self.nodes.len());
        self.nodes.push(Node {
            location: format!("#{path}"),
            ..Node::default()
        });
        self.values.push(schema);
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if let Some(Value::String(id)) = map.get("$id") {
            match id.strip_prefix('#') {
                // Draft 6/7 plain-name fragments are anchors.
                Some(name) if !name.is_empty() => {
                    self.anchors.insert(name, schema);
                }
                Some(_) => {}
                None if root => {}
                None => {
                    return Err(format!(
                        "the parameters schema embeds a schema resource with its own `$id` \
                         at `#{path}`; only references within one document are supported"
                    ));
                }
            }
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(name)) = map.get(key) {
                self.anchors.insert(name, schema);
            }
        }
        for (key, value) in map {
            let len = path.len();
            push_token(path, key);
            let key = key.as_str();
            if SINGLE.contains(&key) {
                self.discover(value, path, false)?;
            }
            if LISTS.contains(&key)
                && let Value::Array(subs) = value
            {
                for (index, sub) in subs.iter().enumerate() {
                    let len = path.len();
                    push_index(path, index);
                    self.discover(sub, path, false)?;
                    path.truncate(len);
                }
            }
            if MAPS.contains(&key)
                && let Value::Object(subs) = value
            {
                for (name, sub) in subs {
                    let len = path.len();
                    push_token(path, name);
                    self.discover(sub, path, false)?;
                    path.truncate(len);
                }
            }
            path.truncate(len);
        }
        Ok(())
    }

    /// The subschema a `$ref` (or `$dynamicRef`, `$recursiveRef`) names, if any.
    fn resolve(&self, reference: &str) -> Result<Option<&'s Value>, String> {
        let mut fragment = reference.strip_prefix('#');
        if fragment.is_none()
            && let Some(Value::String(id)) = self.root.get("$id")
        {
            // An absolute reference to the document itself.
            let id = id.split_once('#').map_or(id.as_str(), |(id, _)| id);
            fragment = reference.strip_prefix(id).and_then(|rest| {
                if rest.is_empty() {
                    Some("")
                } else {
                    rest.strip_prefix('#')
                }
            });
        }
        let Some(fragment) = fragment else {
            return Err(format!(
                "the parameters schema refers to `{reference}`, outside itself; only \
                 references within the schema (`#/$defs/...`, `#name`) are supported"
            ));
        };
        let fragment = percent_decode(fragment);
        if fragment.is_empty() {
            Ok(Some(self.root))
        } else if fragment.starts_with('/') {
            Ok(self.root.pointer(&fragment))
        } else {
            Ok(self.anchors.get(fragment.as_str()).copied())
        }
    }

    fn target(&mut self, reference: &str, from: usize) -> Result<Option<usize>, String> {
        let Some(target) = self.resolve(reference)? else {
            let location = self.nodes[from].location.trim_start_matches('#').to_owned();
            self.dangling.push((reference.to_owned(), location));
            return Ok(None);
        };
        if self.node_of(target).is_none() {
            // A pointer into a place no keyword names as a schema: number it now (it is
            // linked in turn, after the nodes before it).
            let mut path = percent_decode(reference.trim_start_matches('#'));
            self.discover(target, &mut path, false)?;
        }
        Ok(self.node_of(target))
    }

    /// Records which subschemas node `id` applies, and to what.
    fn link(&mut self, id: usize) -> Result<(), String> {
        let Value::Object(map) = self.values[id] else {
            return Ok(());
        };
        let mut node = Node {
            location: self.nodes[id].location.clone(),
            ..Node::default()
        };
        let sub = |graph: &Self, value: &Value| graph.node_of(value);
        for key in ["$ref", "$dynamicRef"] {
            if let Some(Value::String(reference)) = map.get(key)
                && let Some(target) = self.target(reference, id)?
            {
                node.in_place.push(target);
            }
        }
        if map.contains_key("$recursiveRef") {
            node.in_place.push(0);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                node.in_place
                    .extend(subs.iter().filter_map(|s| sub(self, s)));
            }
        }
        for key in ["not", "if", "then", "else"] {
            node.in_place
                .extend(map.get(key).and_then(|s| sub(self, s)));
        }
        for key in ["dependentSchemas", "dependencies"] {
            if let Some(Value::Object(subs)) = map.get(key) {
                node.in_place
                    .extend(subs.values().filter_map(|s| sub(self, s)));
            }
        }
        if let Some(Value::Object(props)) = map.get("properties") {
            for (name, schema) in props {
                if let Some(target) = sub(self, schema) {
                    node.properties
                        .entry(name.clone())
                        .or_default()
                        .push(target);
                }
            }
        }
        node.unlisted_keys
            .extend(map.get("additionalProperties").and_then(|s| sub(self, s)));
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            node.every_key
                .extend(patterns.values().filter_map(|s| sub(self, s)));
        }
        for key in ["unevaluatedProperties", "propertyNames"] {
            node.every_key
                .extend(map.get(key).and_then(|s| sub(self, s)));
        }
        for key in ["prefixItems", "items"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                for (index, schema) in subs.iter().enumerate() {
                    if node.prefix.len() <= index {
                        node.prefix.push(Vec::new());
                    }
                    node.prefix[index].extend(sub(self, schema));
                }
            }
        }
        if let Some(items) = map.get("items")
            && !items.is_array()
        {
            node.rest_items.extend(sub(self, items));
        }
        node.rest_items
            .extend(map.get("additionalItems").and_then(|s| sub(self, s)));
        for key in ["contains", "unevaluatedItems"] {
            node.every_item
                .extend(map.get(key).and_then(|s| sub(self, s)));
        }
        self.nodes[id] = node;
        Ok(())
    }

    /// For every node, how many times each node is evaluated on the same value when it
    /// is (its in-place closure, counted along paths). Refuses in-place loops.
    fn closures(&self) -> Result<Vec<Vec<(usize, u64)>>, String> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let count = self.nodes.len();
        let mut marks = vec![Mark::New; count];
        let mut closures: Vec<Vec<(usize, u64)>> = vec![Vec::new(); count];
        for start in 0..count {
            if marks[start] != Mark::New {
                continue;
            }
            // Iterative depth-first search: (node, next edge to follow).
            let mut stack = vec![(start, 0)];
            marks[start] = Mark::Open;
            while let Some(&mut (node, ref mut edge)) = stack.last_mut() {
                if let Some(&next) = self.nodes[node].in_place.get(*edge) {
                    *edge += 1;
                    match marks[next] {
                        Mark::New => {
                            marks[next] = Mark::Open;
                            stack.push((next, 0));
                        }
                        Mark::Open => {
                            return Err(format!(
                                "the parameters schema loops back to `{}` without descending \
                                 into the value, so it cannot be evaluated",
                                self.nodes[next].location
                            ));
                        }
                        Mark::Done => {}
                    }
                    continue;
                }
                stack.pop();
                marks[node] = Mark::Done;
                let mut closure: BTreeMap<usize, u64> = BTreeMap::from([(node, 1)]);
                for &next in &self.nodes[node].in_place {
                    for &(n, c) in &closures[next] {
                        let slot = closure.entry(n).or_default();
                        *slot = slot.saturating_add(c);
                    }
                }
                let total = closure.values().fold(0u64, |a, &c| a.saturating_add(c));
                if total > MAX_CHECKS_PER_VALUE {
                    return Err(self.too_many(&closure, total, 0));
                }
                closures[node] = closure.into_iter().collect();
            }
        }
        Ok(closures)
    }

    /// Follows every way a value can be read (keys, indices) up to [`MAX_DEPTH`] levels,
    /// counting the subschemas that check each location.
    fn explore(&self, closures: &[Vec<(usize, u64)>]) -> Result<(), String> {
        type State = Vec<(usize, u64)>;
        let mut seen: HashSet<State> = HashSet::new();
        let mut frontier: Vec<State> = vec![vec![(0, 1)]];
        for depth in 0..=MAX_DEPTH {
            let mut next_frontier = Vec::new();
            for state in frontier {
                if !seen.insert(state.clone()) {
                    continue;
                }
                if seen.len() > MAX_STATES {
                    return Err(format!(
                        "the parameters schema is too complex to prove its check bounded \
                         (more than {MAX_STATES} combinations of subschemas)"
                    ));
                }
                let mut live: BTreeMap<usize, u64> = BTreeMap::new();
                for &(entry, times) in &state {
                    for &(n, c) in &closures[entry] {
                        let slot = live.entry(n).or_default();
                        *slot = slot.saturating_add(c.saturating_mul(times));
                    }
                }
                let total = live.values().fold(0u64, |a, &c| a.saturating_add(c));
                if total > MAX_CHECKS_PER_VALUE {
                    return Err(self.too_many(&live, total, depth));
                }
                if depth == MAX_DEPTH {
                    continue;
                }
                next_frontier.extend(self.steps(&live));
            }
            frontier = next_frontier;
        }
        Ok(())
    }

    /// The states after reading one key or index, for every key and index that makes a
    /// difference to `live`.
    fn steps(&self, live: &BTreeMap<usize, u64>) -> Vec<Vec<(usize, u64)>> {
        let nodes: Vec<(&Node, u64)> = live.iter().map(|(&n, &c)| (&self.nodes[n], c)).collect();
        let mut names: Vec<&str> = nodes
            .iter()
            .flat_map(|(node, _)| node.properties.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        let prefix = nodes
            .iter()
            .map(|(node, _)| node.prefix.len())
            .max()
            .unwrap_or(0);
        let mut out = Vec::new();
        let mut push = |state: BTreeMap<usize, u64>| {
            if !state.is_empty() {
                out.push(state.into_iter().collect());
            }
        };
        let add = |state: &mut BTreeMap<usize, u64>, targets: &[usize], c: u64| {
            for &t in targets {
                let slot = state.entry(t).or_default();
                *slot = slot.saturating_add(c);
            }
        };
        // Each key named by a live `properties`, then any other key.
        for name in names.iter().copied().map(Some).chain([None]) {
            let mut state = BTreeMap::new();
            for &(node, c) in &nodes {
                match name.and_then(|name| node.properties.get(name)) {
                    Some(listed) => add(&mut state, listed, c),
                    None => add(&mut state, &node.unlisted_keys, c),
                }
                add(&mut state, &node.every_key, c);
            }
            push(state);
        }
        // Each index some live `prefixItems` names, then any later index.
        for index in (0..prefix).map(Some).chain([None]) {
            let mut state = BTreeMap::new();
            for &(node, c) in &nodes {
                let positional = index.and_then(|i| node.prefix.get(i));
                add(&mut state, positional.unwrap_or(&node.rest_items), c);
                add(&mut state, &node.every_item, c);
            }
            push(state);
        }
        out
    }

    fn too_many(&self, live: &BTreeMap<usize, u64>, total: u64, depth: usize) -> String {
        // Blame the most-travelled subschema; among equals, the outermost (the
        // recursion's definition rather than one of its branches).
        let (worst, paths) = live
            .iter()
            .map(|(&n, &c)| (n, c))
            .max_by(|a, b| {
                a.1.cmp(&b.1).then_with(|| {
                    self.nodes[b.0]
                        .location
                        .len()
                        .cmp(&self.nodes[a.0].location.len())
                })
            })
            .unwrap_or((0, total));
        let paths = if paths == u64::MAX {
            "countless".to_owned()
        } else {
            paths.to_string()
        };
        format!(
            "the parameters schema can check one value against more than \
             {MAX_CHECKS_PER_VALUE} subschemas ({paths} paths reach `{}` at depth {depth}): \
             branches of `anyOf`/`oneOf`/`allOf` (or several keywords) that lead to the same \
             subschema for the same value multiply the work at every level",
            self.nodes[worst].location
        )
    }
}
