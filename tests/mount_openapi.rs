//! An HTTP service described by OpenAPI, mounted into a registry: its operations
//! listed and called by name, in process, over HTTP and MCP, exported to LLMs,
//! under scopes; a 404 comes back as an error with its status and body; the
//! mount's own credentials go to the service and an inbound caller's never do.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use serde_json::{Value, json};
use toolfunc::auth::ApiKeys;
use toolfunc::http::{Api, Server};
use toolfunc::mount::Mount;
use toolfunc::{CallOptions, Identity, Registry};

/// A Petstore-shaped document: path, query, header and body parameters, `$ref`s
/// to parameters, bodies and schemas, a relative server URL.
fn document() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": "/v1"}],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "Lists pets",
                    "tags": ["read"],
                    "parameters": [
                        {"$ref": "#/components/parameters/Limit"},
                        {"name": "tag", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}}
                    ],
                    "responses": {"200": {"description": "pets"}}
                },
                "post": {
                    "operationId": "createPet",
                    "description": "Adds a pet.",
                    "tags": ["write"],
                    "parameters": [{"name": "x-request-note", "in": "header", "schema": {"type": "string"}}],
                    "requestBody": {"$ref": "#/components/requestBodies/NewPet"},
                    "responses": {"201": {"description": "created"}}
                }
            },
            "/pets/{petId}": {
                "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"operationId": "getPet", "tags": ["read"], "responses": {"200": {"description": "a pet"}}},
                "delete": {"tags": ["write"], "responses": {"204": {"description": "gone"}}}
            }
        },
        "components": {
            "parameters": {
                "Limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}}
            },
            "requestBodies": {
                "NewPet": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewPet"}}}}
            },
            "schemas": {
                "NewPet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "tag": {"type": "string", "nullable": true}}
                }
            }
        }
    })
}

#[derive(Default)]
struct Store {
    pets: Mutex<BTreeMap<u64, Value>>,
    /// The `authorization` header of every request the service saw.
    seen: Mutex<Vec<Option<String>>>,
    /// The `traceparent` header of every request the service saw.
    traces: Mutex<Vec<Option<String>>>,
}

impl Store {
    fn saw(&self, headers: &HeaderMap) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.seen.lock().unwrap().push(auth);
        let trace = headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        self.traces.lock().unwrap().push(trace);
    }
}

/// The service and its document on one port; the document's URL.
async fn petstore() -> (String, Arc<Store>) {
    let store = Arc::new(Store::default());
    let app = axum::Router::new()
        .route("/openapi.json", get(|| async { Json(document()) }))
        .route(
            "/v1/pets",
            get(
                |State(s): State<Arc<Store>>, headers: HeaderMap, Query(q): Query<Vec<(String, String)>>| async move {
                    s.saw(&headers);
                    let limit = q.iter().find(|(k, _)| k == "limit").and_then(|(_, v)| v.parse().ok()).unwrap_or(usize::MAX);
                    let tags: Vec<&String> = q.iter().filter(|(k, _)| k == "tag").map(|(_, v)| v).collect();
                    let pets: Vec<Value> = s.pets.lock().unwrap().values()
                        .filter(|p| tags.is_empty() || tags.iter().any(|t| p["tag"] == json!(t)))
                        .take(limit).cloned().collect();
                    Json(json!(pets))
                },
            )
            .post(
                |State(s): State<Arc<Store>>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    s.saw(&headers);
                    let mut pets = s.pets.lock().unwrap();
                    let id = pets.len() as u64 + 1;
                    let mut pet = body;
                    pet["id"] = json!(id);
                    pet["note"] = json!(headers.get("x-request-note").and_then(|v| v.to_str().ok()));
                    pets.insert(id, pet.clone());
                    (StatusCode::CREATED, Json(pet))
                },
            ),
        )
        .route(
            "/v1/pets/{id}",
            get(|State(s): State<Arc<Store>>, headers: HeaderMap, Path(id): Path<u64>| async move {
                s.saw(&headers);
                match s.pets.lock().unwrap().get(&id) {
                    Some(pet) => Ok(Json(pet.clone())),
                    None => Err((StatusCode::NOT_FOUND, Json(json!({"message": format!("no pet {id}")})))),
                }
            })
            .delete(|State(s): State<Arc<Store>>, headers: HeaderMap, Path(id): Path<u64>| async move {
                s.saw(&headers);
                s.pets.lock().unwrap().remove(&id);
                StatusCode::NO_CONTENT
            }),
        )
        .with_state(Arc::clone(&store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/openapi.json"), store)
}

#[tokio::test]
async fn operations_are_tools_called_at_the_documents_server() {
    let (url, _store) = petstore().await;
    let registry = Registry::new();
    let mounted = registry
        .mount("pets", format!("openapi+{url}"))
        .await
        .unwrap();
    assert_eq!(
        mounted.names(),
        [
            "pets_createPet",
            "pets_delete_pets_petId",
            "pets_getPet",
            "pets_listPets"
        ]
    );
    let def = registry.get("pets_createPet").unwrap().definition().clone();
    assert_eq!(def.description.as_deref(), Some("Adds a pet."));
    let params = def.params.value();
    assert_eq!(
        params["properties"]["x-request-note"]["x-toolfunc-in"],
        "header"
    );
    assert_eq!(params["properties"]["body"]["$ref"], "#/$defs/NewPet");
    assert_eq!(params["required"], json!(["body"]));
    assert_eq!(
        registry
            .get("pets_getPet")
            .unwrap()
            .definition()
            .annotations
            .read_only,
        Some(true)
    );

    // create, get, list (query arrays repeated), delete.
    let made = registry
        .run(
            "pets_createPet",
            json!({"body": {"name": "Rex", "tag": "dog"}, "x-request-note": "hi"}),
        )
        .await
        .unwrap();
    assert_eq!(
        made,
        json!({"id": 1, "name": "Rex", "tag": "dog", "note": "hi"})
    );
    registry
        .run(
            "pets_createPet",
            json!({"body": {"name": "Tom", "tag": "cat"}}),
        )
        .await
        .unwrap();
    registry
        .run(
            "pets_createPet",
            json!({"body": {"name": "Bo", "tag": null}}),
        )
        .await
        .unwrap();
    let rex = registry
        .run("pets_getPet", json!({"petId": "1"}))
        .await
        .unwrap();
    assert_eq!(rex["name"], "Rex");
    let some = registry
        .run("pets_listPets", json!({"tag": ["dog", "cat"], "limit": 5}))
        .await
        .unwrap();
    assert_eq!(some.as_array().unwrap().len(), 2);
    let one = registry
        .run("pets_listPets", json!({"limit": 1}))
        .await
        .unwrap();
    assert_eq!(one.as_array().unwrap().len(), 1);
    assert_eq!(
        registry
            .run("pets_delete_pets_petId", json!({"petId": "2"}))
            .await
            .unwrap(),
        Value::Null
    );

    // An unknown id: the service's 404, with its status and body.
    let err = registry
        .run("pets_getPet", json!({"petId": "9"}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("UPSTREAM", 404));
    assert_eq!(err.data().unwrap()["body"], json!({"message": "no pet 9"}));
    assert!(err.to_string().contains("404"), "{err}");

    mounted.close().await;
    assert!(registry.names().is_empty());
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_request() {
    let (url, store) = petstore().await;
    let registry = Registry::new();
    registry
        .mount("pets", format!("openapi+{url}"))
        .await
        .unwrap();
    // Bad arguments are refused before any request, at their path.
    let before = store.seen.lock().unwrap().len();
    let err = registry
        .run("pets_listPets", json!({"limit": 0}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert!(err.to_string().contains("/limit"), "{err}");
    let err = registry
        .run("pets_createPet", json!({"body": {"tag": "x"}}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ARGUMENTS");
    assert_eq!(store.seen.lock().unwrap().len(), before);
}

#[tokio::test]
async fn a_mount_selects_renames_and_guards_its_tools() {
    let (url, _store) = petstore().await;
    let registry = Registry::new();
    let mounted = Mount::new("shop", format!("openapi+{url}"))
        .separator(".")
        .include_tags(["read"])
        .exclude(["listPets"])
        .rename("getPet", "pet")
        .scopes(["pets:read"])
        .into_registry(&registry)
        .await
        .unwrap();
    assert_eq!(mounted.names(), ["shop.pet"]);
    let def = registry.get("shop.pet").unwrap().definition().clone();
    assert_eq!(def.scopes, ["pets:read"]);

    // A name already taken: the mount fails and leaves nothing behind.
    let err = registry.mount("shop.pet", format!("openapi+{url}")).await;
    assert!(err.is_ok(), "another namespace, other names");
    let again = Mount::new("shop", format!("openapi+{url}"))
        .separator(".")
        .rename("getPet", "pet")
        .into_registry(&registry)
        .await
        .unwrap_err();
    assert_eq!(again.code(), "CONFLICT");
    assert!(!registry.has("shop.listPets"));

    // Sources that cannot be read say why.
    let err = registry
        .mount("x", "openapi+file:/no/such/file.json")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE");
    let err = registry
        .mount("x", "openapi+http://127.0.0.1:1/openapi.json")
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE");
    let err = registry.mount("x", "gopher://x").await.unwrap_err();
    assert_eq!(err.code(), "BAD_URL");
}

#[tokio::test]
async fn a_document_from_a_file_is_called_at_its_base_url() {
    let (url, _store) = petstore().await;
    let dir = std::env::temp_dir().join(format!("toolfunc-mount-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pets.json");
    std::fs::write(&file, document().to_string()).unwrap();
    let base = url.replace("/openapi.json", "/v1");
    let registry = Registry::new();
    // A file's relative server URL names no host: the mount must say where.
    let err = registry
        .mount("p", format!("openapi+file:{}", file.display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("base_url"), "{err}");
    Mount::new("p", format!("openapi+file:{}", file.display()))
        .base_url(base)
        .into_registry(&registry)
        .await
        .unwrap();
    let made = registry
        .run("p_createPet", json!({"body": {"name": "Ada"}}))
        .await
        .unwrap();
    assert_eq!(made["name"], "Ada");
    // `connect` opens the same source by the operations' own names.
    let transport = toolfunc::connect(&format!("openapi+{url}")).await.unwrap();
    let pet = transport
        .run("getPet", json!({"petId": "1"}))
        .await
        .unwrap();
    assert_eq!(pet["name"], "Ada");
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn mounted_operations_are_served_and_the_inbound_token_stays_here() {
    let (url, store) = petstore().await;
    let registry = Registry::new();
    Mount::new("pets", format!("openapi+{url}"))
        .bearer("mount-token")
        .scopes(["pets"])
        .into_registry(&registry)
        .await
        .unwrap();
    let keys = ApiKeys::new()
        .key("inbound-secret", Identity::new("ann").with_scopes(["pets"]))
        .key("no-scope", Identity::new("bob"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let api = Api::new(registry.clone()).authenticate(keys);
    tokio::spawn(Server::new().mount(api).unwrap().serve(listener));
    let http = reqwest::Client::new();
    let made: Value = http
        .post(format!("http://{addr}/api/pets_createPet"))
        .bearer_auth("inbound-secret")
        .json(&json!({"body": {"name": "Rex"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(made["name"], "Rex");
    // The service saw the mount's token, never the caller's.
    assert_eq!(
        store.seen.lock().unwrap().as_slice(),
        [Some("Bearer mount-token".to_owned())]
    );
    // A caller without the mount's scope neither sees nor calls its tools.
    let listing: Value = http
        .get(format!("http://{addr}/api"))
        .bearer_auth("no-scope")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listing.get("pets_getPet").is_none(), "{listing}");
    let refused = http
        .post(format!("http://{addr}/api/pets_getPet"))
        .bearer_auth("no-scope")
        .json(&json!({"petId": "1"}))
        .send()
        .await
        .unwrap();
    assert!(refused.status().is_client_error());
    assert_eq!(store.seen.lock().unwrap().len(), 1);

    // In process, with an identity holding the scope, and exported to LLMs.
    let runner =
        registry.with(CallOptions::new().identity(Identity::new("ann").with_scopes(["pets"])));
    let rex = runner
        .run("pets_getPet", json!({"petId": "1"}))
        .await
        .unwrap();
    assert_eq!(rex["name"], "Rex");
    let openai = toolfunc::llm::tools(&registry, toolfunc::llm::Target::OpenAiStrict).unwrap();
    let names: Vec<&str> = openai
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"pets_listPets"), "{names:?}");
    let anthropic = toolfunc::llm::tools(&registry, toolfunc::llm::Target::Anthropic).unwrap();
    let get_pet = anthropic
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "pets_getPet")
        .unwrap();
    assert_eq!(get_pet["input_schema"]["required"], json!(["petId"]));
}

/// Refuses every call of a tool whose name says it deletes.
struct NoDeletes;

impl toolfunc::layer::Layer for NoDeletes {
    fn call(
        &self,
        call: toolfunc::layer::Call,
        next: toolfunc::layer::Next,
    ) -> toolfunc::layer::ReplyFuture {
        if call.tool().contains("delete") {
            return toolfunc::layer::ReplyFuture::ready(Err(toolfunc::ToolError::custom(
                "NO_DELETES",
                403,
                "not here",
            )));
        }
        next.run(call)
    }
}

#[tokio::test]
async fn mounted_operations_go_through_layers_traces_and_llm_tool_calls() {
    let (url, store) = petstore().await;
    let registry = Registry::new();
    registry
        .mount("pets", format!("openapi+{url}"))
        .await
        .unwrap();
    let guarded = registry.clone().layer(NoDeletes);
    let err = guarded
        .run("pets_delete_pets_petId", json!({"petId": "1"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NO_DELETES");
    assert!(
        store.seen.lock().unwrap().is_empty(),
        "a refused call sends nothing"
    );

    // The caller's W3C trace context goes on to the service.
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let traced =
        guarded.with(CallOptions::new().insert(toolfunc::TraceContext::new(parent).unwrap()));
    traced.run("pets_listPets", json!({})).await.unwrap();
    let headers = store.traces.lock().unwrap().clone();
    assert_eq!(headers.len(), 1);
    let sent = headers[0].clone().unwrap();
    assert!(
        sent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{sent}"
    );

    // An LLM's tool call of a mounted operation, answered in the provider's shape.
    let assistant = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "pets_createPet", "input": {"body": {"name": "Ada"}}}]});
    let reply =
        toolfunc::llm::run_tool_calls(&guarded, toolfunc::llm::Target::Anthropic, &assistant)
            .await
            .unwrap();
    let text = reply["content"][0]["content"].to_string();
    assert!(text.contains("Ada"), "{reply}");
}

#[tokio::test]
async fn an_answer_longer_than_the_bound_fails_the_call() {
    let (url, _store) = petstore().await;
    let registry = Registry::new();
    Mount::new("pets", format!("openapi+{url}"))
        .max_response_bytes(64)
        .into_registry(&registry)
        .await
        .unwrap();
    let long_name = "x".repeat(100);
    // The created pet is answered whole: longer than 64 bytes.
    let err = registry
        .run("pets_createPet", json!({"body": {"name": long_name}}))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.status()), ("UPSTREAM", 502), "{err}");
    assert!(err.to_string().contains("longer than 64 bytes"), "{err}");
    // A short answer still comes back.
    assert!(
        registry
            .run("pets_getPet", json!({"petId": "7"}))
            .await
            .is_err_and(|e| e.status() == 404)
    );
}

#[tokio::test]
async fn a_source_that_never_answers_fails_the_mount_at_its_timeout() {
    // Accepts connections and says nothing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let registry = Registry::new();
    let err = Mount::new("mute", format!("openapi+http://{addr}/openapi.json"))
        .connect_timeout(std::time::Duration::from_millis(200))
        .into_registry(&registry)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "UNAVAILABLE");
    assert!(err.to_string().contains("did not answer within"), "{err}");
    assert!(registry.names().is_empty());
}
