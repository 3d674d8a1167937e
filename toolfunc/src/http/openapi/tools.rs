//! The operations of a tool: a plain tool's POST (and GET), a service's acts under
//! one POST (and GET), a REST resource's verbs and the forms the JavaScript
//! clients send its `put` in, with the parameters they take.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::components::clean;
use super::doc::{Doc, Outcome, Risks};
use super::schemas::{Adapt, Streams, strip_id};
use crate::http::{routes, wire};
use crate::tool::ToolDefinition;
use crate::tool::service::{ActDefinition, needed_scopes};

/// Where one act's request is documented: its schema and where it goes.
struct Branch {
    act: String,
    /// The scopes a call of the act needs (its tool's and its own).
    scopes: Vec<String>,
    operation_id: String,
    summary: Option<String>,
    request: Value,
    ok: Outcome,
}

impl Doc<'_> {
    pub(super) fn tool(&mut self, def: &ToolDefinition) {
        self.same.clear();
        let ns = clean(&def.name);
        if def.acts.is_empty() {
            self.plain(def, &ns);
        } else if def.action.as_deref() == Some("res") {
            self.resource(def, &ns);
        } else {
            self.service(def, &ns);
        }
    }

    fn plain(&mut self, def: &ToolDefinition, ns: &str) {
        let streams = Streams::of(def.stream, &def.params);
        let (params, _, required) = self.component(ns, "Params", &def.params, Adapt::default());
        let ok = self.outcome(ns, "Result", def.result.as_ref(), streams);
        let risks = Risks {
            body: true,
            stream: streams.streams,
            get_act: false,
            background: def.background,
        };
        let mut post = self.operation(def, None, &def.name.clone(), risks, &ok);
        post["requestBody"] = self.request_body(&params, required);
        let path = self.path(&def.name, false);
        self.put(path.clone(), "post", post);
        if self.view.writes_over_get || routes::read_only(def, None) {
            let risks = Risks {
                body: false,
                ..risks
            };
            let mut get = self.operation(def, None, &format!("{}.query", def.name), risks, &ok);
            push_param(&mut get, query_p(&params, required, &def.params));
            self.put(path, "get", get);
        }
    }

    /// A `$` act as one branch of a service's POST (and GET): its params with `act`.
    fn branch(
        &mut self,
        def: &ToolDefinition,
        ns: &str,
        act: &ActDefinition,
        verb: bool,
    ) -> Branch {
        let method = clean(act.method());
        let adapt = Adapt {
            act: Some((&act.name, !verb)),
            drop_id: false,
        };
        let local = if verb { "Params" } else { "Call" };
        let (request, _, _) = self.component(ns, &format!("{method}.{local}"), &act.params, adapt);
        let ok = self.outcome(
            ns,
            &format!("{method}.Result"),
            act.result.as_ref(),
            Streams::of(act.stream, &act.params),
        );
        Branch {
            act: act.name.clone(),
            scopes: needed_scopes(def, Some(act)),
            operation_id: self.unique_id(format!("{}.{}", def.name, act.method())),
            summary: summary(act.title.as_deref(), act.description.as_deref()),
            request,
            ok,
        }
    }

    /// One operation for several acts chosen by the body's `act`.
    fn choice(
        &mut self,
        def: &ToolDefinition,
        id: &str,
        branches: &[Branch],
        risks: Risks,
    ) -> (Value, Value) {
        let mut json_any = Vec::new();
        let mut ndjson_any = Vec::new();
        for branch in branches {
            if let Some(s) = &branch.ok.json
                && !json_any.contains(s)
            {
                json_any.push(s.clone());
            }
            if let Some(s) = &branch.ok.ndjson
                && !ndjson_any.contains(s)
            {
                ndjson_any.push(s.clone());
            }
        }
        let one = |mut list: Vec<Value>| match list.len() {
            0 => None,
            1 => list.pop(),
            _ => Some(json!({"anyOf": list})),
        };
        let ok = Outcome {
            json: one(json_any),
            ndjson: one(ndjson_any),
        };
        let streams = branches.iter().any(|b| b.ok.ndjson.is_some());
        let risks = Risks {
            stream: risks.stream || streams,
            ..risks
        };
        let mut operation = self.operation(def, None, id, risks, &ok);
        let acts: Vec<Value> = branches
            .iter()
            .map(|b| {
                let mut entry = json!({
                    "act": b.act,
                    "operationId": b.operation_id,
                    "request": b.request,
                });
                if let Some(summary) = &b.summary {
                    entry["summary"] = Value::from(summary.clone());
                }
                if let Some(s) = &b.ok.json {
                    entry["response"] = s.clone();
                }
                if let Some(s) = &b.ok.ndjson {
                    entry["ndjson"] = s.clone();
                }
                if self.view.oauth.is_some() && b.scopes != def.scopes {
                    // The act needs scopes of its own, on top of the operation's.
                    entry["security"] = self.security(&b.scopes);
                }
                entry
            })
            .collect();
        operation["x-toolfunc-acts"] = Value::Array(acts);
        if let [only] = branches
            && let Some(summary) = &only.summary
        {
            operation["summary"] = Value::from(summary.clone());
        }
        let body = if let [only] = branches {
            only.request.clone()
        } else {
            let mapping: Map<String, Value> = branches
                .iter()
                .filter_map(|b| {
                    let target = b.request["$ref"].as_str()?;
                    Some((b.act.clone(), Value::from(target)))
                })
                .collect();
            json!({
                "oneOf": branches.iter().map(|b| b.request.clone()).collect::<Vec<_>>(),
                "discriminator": {"propertyName": "act", "mapping": mapping},
            })
        };
        (operation, body)
    }

    fn service(&mut self, def: &ToolDefinition, ns: &str) {
        let branches: Vec<Branch> = def
            .acts
            .iter()
            .map(|act| self.branch(def, ns, act, false))
            .collect();
        let risks = Risks {
            body: true,
            ..Risks::default()
        };
        let (mut post, body) = self.choice(def, &def.name, &branches, risks);
        post["requestBody"] = self.request_body(&body, true);
        let path = self.path(&def.name, false);
        self.put(path.clone(), "post", post);
        let gettable: Vec<Branch> = def
            .acts
            .iter()
            .zip(branches)
            .filter(|(act, _)| self.view.writes_over_get || routes::read_only(def, Some(act)))
            .map(|(_, b)| b)
            .collect();
        if gettable.is_empty() {
            return;
        }
        let risks = Risks {
            body: false,
            stream: false,
            get_act: !self.view.writes_over_get,
            background: false,
        };
        let (mut get, p) = self.choice(def, &format!("{}.query", def.name), &gettable, risks);
        push_param(&mut get, p_param(&p, true));
        self.put(path, "get", get);
    }

    fn resource(&mut self, def: &ToolDefinition, ns: &str) {
        let mut posts = Vec::new();
        for act in &def.acts {
            let verb = act.name.as_str();
            if verb == "post" || !act.is_verb() {
                posts.push(self.branch(def, ns, act, verb == "post"));
                continue;
            }
            let takes_id = wire::property(&act.params, "id").is_some();
            let on_id = verb == "get" || (verb != "list" && takes_id);
            let adapt = Adapt {
                act: None,
                drop_id: on_id,
            };
            let method = clean(verb);
            let (params, id, required) =
                self.component(ns, &format!("{method}.Params"), &act.params, adapt);
            let streams = Streams::of(act.stream, &act.params);
            let ok = self.outcome(
                ns,
                &format!("{method}.Result"),
                act.result.as_ref(),
                streams,
            );
            let query = verb == "get" || verb == "list" || verb == "delete";
            let risks = Risks {
                body: !query,
                stream: streams.streams,
                get_act: false,
                background: false,
            };
            let operation_id = format!("{}.{verb}", def.name);
            let mut operation = self.operation(def, Some(act), &operation_id, risks, &ok);
            operation["x-toolfunc-act"] = Value::from(verb);
            if on_id {
                push_id(&mut operation, id);
            }
            if query {
                let remaining = if on_id {
                    strip_id(&act.params)
                } else {
                    act.params.clone()
                };
                push_param(&mut operation, query_p(&params, required, &remaining));
            } else {
                operation["requestBody"] = self.request_body(&params, required);
            }
            let path = self.path(&def.name, on_id);
            let method = if query && verb != "delete" {
                "get"
            } else {
                verb
            };
            self.put(path, method, operation);
            if on_id && matches!(verb, "put" | "patch") {
                self.client_forms(def, ns, act, &ok);
            }
        }
        if posts.is_empty() {
            return;
        }
        let risks = Risks {
            body: true,
            ..Risks::default()
        };
        let id = if let [only] = posts.as_slice()
            && only.act == "post"
        {
            format!("{}.post", def.name)
        } else {
            def.name.clone()
        };
        let (mut post, body) = self.choice(def, &id, &posts, risks);
        let required = posts.iter().any(|b| b.act != "post");
        post["requestBody"] = self.request_body(&body, required);
        let path = self.path(&def.name, false);
        self.put(path, "post", post);
    }

    /// The forms the JavaScript clients send a resource's `put` (or `patch`) in,
    /// besides `PUT <res>/{id}`, which the server answers too: the 0.1.1 client's
    /// `PUT <res>` with the id in the body, and the 1.x client's `POST <res>/{id}`
    /// with the act named (in the body, or in `rpc-act`). Each is its own
    /// operation, marked `deprecated` and `x-toolfunc-compat`: a new client uses the
    /// canonical one.
    fn client_forms(&mut self, def: &ToolDefinition, ns: &str, act: &ActDefinition, ok: &Outcome) {
        let verb = act.name.as_str();
        let method = clean(verb);
        let risks = Risks {
            body: true,
            stream: Streams::of(act.stream, &act.params).streams,
            get_act: false,
            background: false,
        };
        let forms = [
            (
                "idInBody",
                false,
                "PUT",
                "the 0.1.1 JavaScript client's form: the id in the body",
            ),
            (
                "byPost",
                true,
                "POST",
                "the 1.x JavaScript client's form: POST to the item, the act named in \
                 `act` (or the `rpc-act` header)",
            ),
        ];
        for (form, on_id, http_method, what) in forms {
            let adapt = Adapt {
                act: on_id.then_some((verb, true)),
                drop_id: on_id,
            };
            let (params, id, required) =
                self.component(ns, &format!("{method}.{form}.Params"), &act.params, adapt);
            let operation_id = format!("{}.{verb}.{form}", def.name);
            let mut operation = self.operation(def, Some(act), &operation_id, risks, ok);
            operation["x-toolfunc-act"] = Value::from(verb);
            operation["x-toolfunc-compat"] = Value::from(what);
            operation["deprecated"] = Value::Bool(true);
            if on_id {
                push_id(&mut operation, id);
            }
            operation["requestBody"] = self.request_body(&params, required || on_id);
            let path = self.path(&def.name, on_id);
            self.put(path, &http_method.to_ascii_lowercase(), operation);
        }
    }

    /// An operation of a tool (or of one act of it), without its request.
    pub(super) fn operation(
        &mut self,
        def: &ToolDefinition,
        act: Option<&ActDefinition>,
        id: &str,
        risks: Risks,
        ok: &Outcome,
    ) -> Value {
        let operation_id = self.unique_id(id.to_owned());
        let (title, description) = match act {
            Some(act) => (act.title.as_deref(), act.description.as_deref()),
            None => (def.title.as_deref(), def.description.as_deref()),
        };
        let mut operation = Map::new();
        operation.insert("operationId".into(), Value::from(operation_id));
        if let Some(summary) = summary(title, description) {
            operation.insert("summary".into(), Value::from(summary));
        }
        let mut text = description.unwrap_or_default().to_owned();
        if act.is_none() && !def.alias.is_empty() {
            let also: Vec<String> = def.alias.iter().map(|a| self.path(a, false)).collect();
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            let _ = write!(text, "Also served at {}.", also.join(", "));
        }
        if !text.is_empty() {
            operation.insert("description".into(), Value::from(text));
        }
        if !def.tags.is_empty() {
            operation.insert("tags".into(), json!(def.tags));
        }
        operation.insert(
            "parameters".into(),
            json!([
                {"$ref": "#/components/parameters/rpcTimeout"},
                {"$ref": "#/components/parameters/reqId"},
            ]),
        );
        operation.insert("responses".into(), self.responses(ok, risks, true));
        if self.view.oauth.is_some() {
            let scopes = needed_scopes(def, act);
            operation.insert("security".into(), self.security(&scopes));
        }
        Value::Object(operation)
    }
}

/// The `id` path parameter of a REST resource's operation, of the type its
/// method declares (`string` when it declares none).
fn push_id(operation: &mut Value, schema: Option<Value>) {
    let schema = schema.unwrap_or_else(|| json!({"type": "string"}));
    push_param(
        operation,
        json!({
            "name": "id", "in": "path", "required": true, "schema": schema,
            "description": "The resource id (cast to the type the method declares).",
        }),
    );
}

/// The `p` query parameter of a GET or DELETE, when there are arguments to send.
fn query_p(schema: &Value, required: bool, params: &Value) -> Option<Value> {
    let empty = params
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
        && params.get("additionalProperties") == Some(&Value::Bool(false));
    let none = params
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if empty || none {
        return None;
    }
    Some(p_param(schema, required))
}

fn p_param(schema: &Value, required: bool) -> Value {
    json!({
        "name": "p", "in": "query", "required": required,
        "description": "The arguments as JSON text (form-encoded).",
        "content": {"application/json": {"schema": schema}},
    })
}

fn push_param(operation: &mut Value, param: impl Into<Option<Value>>) {
    if let (Some(param), Some(Value::Array(list))) = (param.into(), operation.get_mut("parameters"))
    {
        list.insert(0, param);
    }
}

fn summary(title: Option<&str>, description: Option<&str>) -> Option<String> {
    title
        .or_else(|| description.and_then(|d| d.lines().next()))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
