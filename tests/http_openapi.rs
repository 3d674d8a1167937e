//! `GET <prefix>/openapi.json`: the document is valid OpenAPI 3.1 (against the
//! official JSON Schema, offline), and it is true: every operation, sent its
//! minimal valid request, answers a status the document lists, with a body the
//! documented schema accepts.

#[path = "../examples/demo/mod.rs"]
#[allow(dead_code)]
mod demo;
#[path = "support/http.rs"]
mod http_support;

use std::fmt::Write as _;
use std::net::SocketAddr;

use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use toolfunc::http::{Api, Server};
use toolfunc::{Registry, ToolError, ToolFunc};

use http_support::{Reply, call};

/// The official schema of OpenAPI 3.1 documents (see `fixtures/openapi/README.md`).
const OAS_SCHEMA: &str = include_str!("fixtures/openapi/schema-3.1.json");

async fn start(api: Api) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(Server::new().mount(api).expect("mount").serve(listener));
    addr
}

/// Asserts `doc` is an OpenAPI 3.1 document whose schemas are JSON Schemas and
/// whose references all resolve.
fn assert_valid_openapi(doc: &Value) {
    let schema: Value = serde_json::from_str(OAS_SCHEMA).expect("the fixture is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the OpenAPI schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not OpenAPI 3.1: {errors:#?}\n{doc:#}");
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        assert!(
            jsonschema::meta::is_valid(schema),
            "component {name} is not a JSON Schema: {schema:#}"
        );
    }
    let mut refs = Vec::new();
    collect_refs(doc, &mut refs);
    assert!(!refs.is_empty());
    for target in refs {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("a reference outside the document: {target}"));
        assert!(
            doc.pointer(pointer).is_some(),
            "the reference {target} points nowhere"
        );
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => out.push(target.clone()),
                    _ => collect_refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// A minimal instance of `schema`: required properties only, the first type,
/// enum value or branch, the smallest number and the shortest string.
fn minimal(doc: &Value, schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    if let Some(first) = map.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    let mut base = match map.get("$ref").and_then(Value::as_str) {
        Some(target) => minimal(
            doc,
            doc.pointer(target.trim_start_matches('#')).expect("ref"),
        ),
        None => Value::Null,
    };
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = map.get(key).and_then(|b| b.get(0)) {
            merge(&mut base, minimal(doc, first));
        }
    }
    if let Some(all) = map.get("allOf").and_then(Value::as_array) {
        for part in all {
            merge(&mut base, minimal(doc, part));
        }
    }
    let ty = match map.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(list)) => list.first().and_then(Value::as_str),
        _ if map.contains_key("properties") || map.contains_key("required") => Some("object"),
        _ => None,
    };
    let own = match ty {
        Some("object") => {
            let mut object = Map::new();
            for name in map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let prop = map
                    .get("properties")
                    .and_then(|p| p.get(name))
                    .cloned()
                    .unwrap_or(json!({}));
                object.insert(name.to_owned(), minimal(doc, &prop));
            }
            Value::Object(object)
        }
        Some("array") => {
            let n = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = map.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..n).map(|_| minimal(doc, &item)).collect())
        }
        Some("integer" | "number") => map.get("minimum").cloned().unwrap_or(json!(0)),
        Some("string") => {
            let n = map.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            Value::from("a".repeat(usize::try_from(n).unwrap_or(0)))
        }
        Some("boolean") => Value::Bool(false),
        _ => Value::Null,
    };
    merge(&mut base, own);
    base
}

fn merge(base: &mut Value, more: Value) {
    match (base, more) {
        (Value::Object(base), Value::Object(more)) => base.extend(more),
        (_, Value::Null) => {}
        (base, more) => *base = more,
    }
}

/// Asserts `instance` is valid against a documented `schema` (its references
/// resolved in the document).
fn assert_matches(doc: &Value, schema: &Value, instance: &Value, what: &str) {
    let mut root = schema.clone();
    if !root.is_object() {
        root = json!({"allOf": [root]});
    }
    root["components"] = doc["components"].clone();
    let validator = jsonschema::validator_for(&root).expect("a documented schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: {instance} does not match {schema}: {errors:?}"
    );
}

/// `p=<JSON>`, percent-encoded.
fn query(p: &Value) -> String {
    let mut out = String::from("?p=");
    for byte in p.to_string().bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            write!(out, "%{byte:02X}").unwrap();
        }
    }
    out
}

/// One request an operation documents: its arguments, where they go, and the
/// schema a 200 JSON body must match.
struct Example {
    args: Value,
    in_query: bool,
    ok: Option<Value>,
    ndjson: Option<Value>,
}

/// The documented example requests of an operation: one per act when it lists
/// acts, else one.
fn examples(doc: &Value, op: &Value) -> Vec<Example> {
    let p = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "p" && p["in"] == "query");
    let body = &op["requestBody"]["content"]["application/json"]["schema"];
    let in_query = p.is_some() || body.is_null();
    let ok = &op["responses"]["200"]["content"];
    let ok_json = ok.get("application/json").map(|c| c["schema"].clone());
    let ok_ndjson = ok.get("application/x-ndjson").map(|c| c["schema"].clone());
    if let Some(acts) = op["x-toolfunc-acts"].as_array() {
        return acts
            .iter()
            .map(|act| Example {
                args: minimal(doc, &act["request"]),
                in_query,
                ok: act.get("response").cloned(),
                ndjson: act.get("ndjson").cloned(),
            })
            .collect();
    }
    let args = match p {
        Some(p) => minimal(doc, &p["content"]["application/json"]["schema"]),
        None if body.is_null() => json!({}),
        None => minimal(doc, body),
    };
    vec![Example {
        args,
        in_query,
        ok: ok_json,
        ndjson: ok_ndjson,
    }]
}

async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    example: &Example,
    headers: &[(&str, &str)],
) -> Reply {
    let path = path.replace("{id}", "1");
    if example.in_query {
        let args = &example.args;
        let path = if args.as_object().is_some_and(Map::is_empty) {
            path
        } else {
            format!("{path}{}", query(args))
        };
        call(addr, method, &path, headers, None).await
    } else {
        let mut all = headers.to_vec();
        all.push(("content-type", "application/json"));
        let body = example.args.to_string();
        call(addr, method, &path, &all, Some(&body)).await
    }
}

/// Sends every documented operation its minimal request; returns how many 200
/// bodies were checked against their schemas, and the operation ids seen.
async fn round_trip(
    addr: SocketAddr,
    doc: &Value,
    headers: &[(&str, &str)],
) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut ids = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        // REST order: read, create, change, then delete.
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(op) = item.get(method) else {
                continue;
            };
            let id = op["operationId"].as_str().expect("an operationId");
            ids.push(id.to_owned());
            if let Some(acts) = op["x-toolfunc-acts"].as_array() {
                ids.extend(
                    acts.iter()
                        .map(|a| a["operationId"].as_str().unwrap().to_owned()),
                );
            }
            let listed: Vec<u16> = op["responses"]
                .as_object()
                .expect("responses")
                .keys()
                .filter_map(|k| k.parse().ok())
                .collect();
            for mut example in examples(doc, op) {
                let what = format!(
                    "{} {path} ({id}) with {}",
                    method.to_uppercase(),
                    example.args
                );
                let reply = send(addr, &method.to_uppercase(), path, &example, headers).await;
                assert!(
                    listed.contains(&reply.status),
                    "{what}: status {} is not documented ({listed:?}): {}",
                    reply.status,
                    reply.text()
                );
                if reply.status != 200 {
                    let body = reply.json();
                    assert_matches(
                        doc,
                        &json!({"$ref": "#/components/schemas/Error"}),
                        &body,
                        &what,
                    );
                    continue;
                }
                match reply.header("content-type") {
                    Some("application/json") => {
                        let schema = example
                            .ok
                            .as_ref()
                            .unwrap_or_else(|| panic!("{what}: JSON answered, none documented"));
                        assert_matches(doc, schema, &reply.json(), &what);
                    }
                    other => panic!("{what}: unexpected content type {other:?}"),
                }
                checked += 1;
                // A tool that streams on request: ask, and check every line.
                if let Some(lines) = example.ndjson.take()
                    && example.args.is_object()
                {
                    example.args["stream"] = Value::Bool(true);
                    let reply = send(addr, &method.to_uppercase(), path, &example, headers).await;
                    assert_eq!(reply.status, 200, "{what} streamed: {}", reply.text());
                    assert_eq!(reply.header("content-type"), Some("application/x-ndjson"));
                    for line in reply.text().lines() {
                        let item: Value = serde_json::from_str(line).expect("an NDJSON line");
                        assert_matches(doc, &lines, &item, &what);
                    }
                    checked += 1;
                }
            }
        }
    }
    (checked, ids)
}

#[tokio::test]
async fn the_demo_document_is_openapi_and_true() {
    let addr = start(Api::new(demo::catalog())).await;
    let reply = call(addr, "GET", "/api/openapi.json", &[], None).await;
    let doc = reply.ok();
    assert_eq!(doc["openapi"], "3.1.1");
    assert_valid_openapi(&doc);
    // The schemas are the tools' own, their `$defs` lifted and shared by tool.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert_eq!(schemas["add.Params"]["required"], json!(["a", "b"]));
    assert!(schemas.contains_key("users.User"), "{:?}", schemas.keys());
    assert!(schemas.contains_key("users.NewUser"));
    assert!(
        !doc.to_string().contains("#/$defs"),
        "a $ref was left behind"
    );
    let paths = &doc["paths"];
    // Read-only tools answer GET as well; others only POST.
    assert!(paths["/api/add"]["get"].is_object());
    assert!(paths["/api/fail"]["get"].is_null());
    assert!(paths["/api/fail"]["post"].is_object());
    // REST verbs on their routes.
    let users = &paths["/api/users/{id}"];
    assert_eq!(users["get"]["operationId"], "users.get");
    assert_eq!(users["put"]["operationId"], "users.put");
    assert_eq!(users["delete"]["operationId"], "users.delete");
    assert_eq!(paths["/api/users"]["get"]["operationId"], "users.list");
    assert!(users["get"]["parameters"][0]["in"] == "path");
    // A service's acts share its POST, chosen by `act`.
    let greeter = &paths["/api/greeter"]["post"];
    let body = &greeter["requestBody"]["content"]["application/json"]["schema"];
    assert_eq!(body["discriminator"]["propertyName"], "act");
    assert_eq!(body["oneOf"].as_array().map(Vec::len), Some(2));
    let hello = &schemas["greeter.hello.Call"];
    assert_eq!(hello["properties"]["act"]["const"], "$hello");
    assert_eq!(hello["required"][0], "act");
    let create = &paths["/api/users"]["post"]["x-toolfunc-acts"];
    assert_eq!(create[0]["operationId"], "users.post");
    assert_eq!(create[1]["operationId"], "users.promote");
    // What the schemas imply, written out: the range of a Rust integer type, and
    // `null` for a number that is not finite.
    let count = &schemas["countdown.Params"]["properties"]["count"];
    assert_eq!(
        (&count["minimum"], &count["maximum"]),
        (&json!(0), &json!(u64::MAX))
    );
    assert_eq!(
        schemas["add.Result"]["anyOf"],
        json!([{"type": "number", "format": "double"}, {"type": "null"}])
    );
    // A body is required even with no required argument: a POST without one says
    // no JSON content type, and is refused with 415.
    assert_eq!(paths["/api/fail"]["post"]["requestBody"]["required"], true);
    // An act the method names may be left out, or `null`.
    let post = &schemas["users.post.Params"]["properties"]["act"];
    assert_eq!(post["enum"], json!(["post", null]));
    // Streams are NDJSON, or an array when not asked for.
    let countdown = &paths["/api/countdown"]["post"]["responses"]["200"]["content"];
    assert!(countdown["application/x-ndjson"].is_object());
    assert_eq!(countdown["application/json"]["schema"]["type"], "array");
    // Statuses.
    let responses = &paths["/api/add"]["post"]["responses"];
    for status in ["200", "400", "403", "404", "408", "413", "415", "500"] {
        assert!(responses[status].is_object(), "{status} missing");
    }
    assert!(responses["401"].is_null(), "no auth hook, no 401");
    assert!(paths["/api/add"]["get"]["responses"]["415"].is_null());
    assert!(doc["components"]["securitySchemes"].is_null());
    let (checked, ids) = round_trip(addr, &doc, &[]).await;
    assert!(checked >= 10, "only {checked} answers were checked");
    for id in [
        "add",
        "add.query",
        "greeter",
        "greeter.hello",
        "greeter.mul",
        "users",
        "users.list",
        "users.get",
        "users.post",
        "users.promote",
        "users.put",
        "users.delete",
        "countdown",
        "countdown.query",
        "fail",
        "sleep",
        "discovery",
        "openapi",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id} not documented: {ids:?}");
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "operationIds repeat: {ids:?}");
    // The function gives the same document.
    assert_eq!(Api::new(demo::catalog()).openapi_document(), doc);
}

#[tokio::test]
async fn rpc_timeout_is_documented_with_the_bound_the_server_reads() {
    let addr = start(Api::new(demo::catalog())).await;
    let doc = Api::new(demo::catalog()).openapi_document();
    // `rpc-timeout` is bounded as the server reads it: a whole number of
    // milliseconds that fits 64 bits.
    let timeout = &doc["components"]["parameters"]["rpcTimeout"]["schema"];
    assert_eq!(
        timeout,
        &json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
    );
    for (sent, status) in [
        (u64::MAX.to_string(), 200),
        ("18446744073709551616".to_owned(), 400),
        ("0".to_owned(), 200),
        ("-1".to_owned(), 400),
    ] {
        let reply = call(
            addr,
            "POST",
            "/api/add",
            &[("rpc-timeout", &sent), ("content-type", "application/json")],
            Some(r#"{"a":1,"b":2}"#),
        )
        .await;
        assert_eq!(
            reply.status,
            status,
            "rpc-timeout: {sent}: {}",
            reply.text()
        );
    }
}

#[tokio::test]
async fn hidden_tools_are_left_out() {
    let registry = demo::catalog();
    registry
        .register(
            ToolFunc::builder("secret")
                .api(false)
                .handler_sync(|_ctx, _args| Ok(Value::Null))
                .build()
                .unwrap(),
        )
        .unwrap();
    let doc = Api::new(registry).openapi_document();
    assert_valid_openapi(&doc);
    let text = doc.to_string();
    assert!(!text.contains("secret"), "{text}");
    assert!(doc["paths"]["/api/add"].is_object());
}

#[tokio::test]
async fn the_auth_scheme_appears_with_a_hook() {
    let api = Api::new(demo::catalog()).prefix("/rpc").auth(|req| {
        match req.headers.get("authorization") {
            Some(v) if v == "Bearer s3cret" => Ok(()),
            _ => Err(ToolError::custom(
                "UNAUTHORIZED",
                401,
                "a token is required",
            )),
        }
    });
    let doc = api.openapi_document();
    assert_valid_openapi(&doc);
    assert_eq!(
        doc["components"]["securitySchemes"]["auth"]["scheme"],
        "bearer"
    );
    assert_eq!(doc["security"], json!([{"auth": []}]));
    assert!(doc["paths"]["/rpc/add"]["post"]["responses"]["401"].is_object());
    let addr = start(api).await;
    // The document is behind the hook too.
    call(addr, "GET", "/rpc/openapi.json", &[], None)
        .await
        .error(401, "UNAUTHORIZED");
    let token = [("authorization", "Bearer s3cret")];
    let served = call(addr, "GET", "/rpc/openapi.json", &token, None)
        .await
        .ok();
    assert_eq!(served, doc);
    let (checked, _) = round_trip(addr, &doc, &token).await;
    assert!(checked >= 10);

    // Described by the program.
    let scheme = json!({"type": "apiKey", "in": "header", "name": "x-api-key"});
    let doc = Api::new(Registry::new())
        .auth(|_| Ok(()))
        .openapi_security("key", scheme.clone())
        .openapi_info("Shop", "2.1.0")
        .openapi_document();
    assert_valid_openapi(&doc);
    assert_eq!(doc["components"]["securitySchemes"]["key"], scheme);
    assert_eq!(doc["security"], json!([{"key": []}]));
    assert_eq!(doc["info"]["title"], "Shop");
    assert_eq!(doc["info"]["version"], "2.1.0");
}

#[tokio::test]
async fn the_document_follows_the_registry() {
    let registry = Registry::new();
    let api = Api::new(&registry);
    let before = api.openapi_document();
    assert_eq!(api.openapi_document(), before, "kept between calls");
    assert!(before["paths"]["/api/later"].is_null());
    registry
        .register(
            ToolFunc::builder("later")
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let after = api.openapi_document();
    assert!(after["paths"]["/api/later"]["post"].is_object());
    let addr = start(api).await;
    let served = call(addr, "GET", "/api/openapi.json", &[], None).await.ok();
    assert_eq!(served, after);
    // The document answers GET alone.
    let reply = call(
        addr,
        "POST",
        "/api/openapi.json",
        &[("content-type", "application/json")],
        Some("{}"),
    )
    .await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("GET, OPTIONS"));
}

/// The methods `item` (a path of the document) lists, as `Allow` spells them.
fn documented_methods(item: &Value) -> Vec<&'static str> {
    ["GET", "POST", "PUT", "PATCH", "DELETE"]
        .into_iter()
        .filter(|m| item.get(m.to_ascii_lowercase()).is_some())
        .collect()
}

#[tokio::test]
async fn each_path_answers_the_methods_it_documents() {
    let addr = start(Api::new(demo::catalog())).await;
    let doc = Api::new(demo::catalog()).openapi_document();
    let paths = doc["paths"].as_object().expect("paths");
    let mut resources = 0;
    for (path, item) in paths {
        // Exactly what the document lists: a REST resource's client forms (`PUT
        // <res>` with the id in the body, `POST <res>/<id>` naming the act) are
        // operations of their own.
        let mut expected = documented_methods(item);
        let rest = item
            .as_object()
            .is_some_and(|ops| ops.values().any(|op| op.get("x-toolfunc-act").is_some()));
        if rest {
            resources += 1;
        }
        expected.push("OPTIONS");
        let allow = expected.join(", ");
        let path = path.replace("{id}", "1");
        let reply = call(addr, "OPTIONS", &path, &[], None).await;
        assert_eq!(reply.status, 204, "OPTIONS {path}");
        assert_eq!(
            reply.header("allow"),
            Some(allow.as_str()),
            "OPTIONS {path}"
        );
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE"] {
            if expected.contains(&method) {
                continue;
            }
            let reply = call(addr, method, &path, &[], None).await;
            reply.error(405, "METHOD_NOT_ALLOWED");
            assert_eq!(
                reply.header("allow"),
                Some(allow.as_str()),
                "{method} {path}"
            );
        }
    }
    assert_eq!(resources, 2, "the two paths of `users`");
}

#[test]
fn definitions_of_the_same_name_stay_apart() {
    let thing = |ty: &str| {
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/Thing"}},
            "required": ["x"],
            "$defs": {"Thing": {"type": ty}},
        })
    };
    let registry = Registry::new();
    for (name, ty) in [("a", "string"), ("b", "integer"), ("c", "string")] {
        registry
            .register(
                ToolFunc::builder(name)
                    .params_schema(thing(ty))
                    .result_schema(thing("boolean"))
                    .handler_sync(|_ctx, args| Ok(args))
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let doc = Api::new(registry).openapi_document();
    assert_valid_openapi(&doc);
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["a.Thing"]["type"], "string");
    assert_eq!(schemas["b.Thing"]["type"], "integer");
    // Within one tool, a second `Thing` that differs gets a name of its own.
    let a_result = &schemas["a.Result"]["properties"]["x"]["$ref"];
    assert_eq!(a_result, "#/components/schemas/a.Result.Thing");
    assert_eq!(schemas["a.Result.Thing"]["type"], "boolean");
    assert_eq!(
        schemas["a.Params"]["properties"]["x"]["$ref"],
        "#/components/schemas/a.Thing"
    );
}

/// The document is kept until the registry changes, and a prompt or resource
/// registered (or removed) is such a change: the next document shows it.
#[tokio::test]
async fn a_prompt_registered_later_is_in_the_next_document() {
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("echo")
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .unwrap(),
        )
        .unwrap();
    let addr = start(Api::new(registry.clone())).await;
    let before = call(addr, "GET", "/api/openapi.json", &[], None)
        .await
        .text();
    assert!(!before.contains("late_prompt"), "{before}");
    let prompt = toolfunc::prompt::PromptFunc::builder("late_prompt")
        .description("Registered after the first document.")
        .handler_sync(|_, _| Ok("Hello."))
        .build()
        .unwrap();
    registry.register_prompt(prompt).unwrap();
    let after = call(addr, "GET", "/api/openapi.json", &[], None)
        .await
        .text();
    assert!(
        after.contains("late_prompt"),
        "the kept document did not change"
    );
    assert!(registry.unregister_prompt("late_prompt"));
    let again = call(addr, "GET", "/api/openapi.json", &[], None)
        .await
        .text();
    assert!(!again.contains("late_prompt"));
}
