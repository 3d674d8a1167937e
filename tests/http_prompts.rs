//! Prompts and resources over HTTP: listed at `GET <prefix>/_prompts` and
//! `GET <prefix>/_resources`, got at `POST <prefix>/_prompts/<name>`, read at
//! `GET <prefix>/_resources/read?uri=`, through `http::Client` and as raw
//! requests; judged by scopes and layers as tools are, bounded, and described in
//! the OpenAPI document.

#[path = "support/http.rs"]
mod http;

use serde_json::{Value, json};
use toolfunc::Identity;
use toolfunc::auth::ApiKeys;
use toolfunc::http::{Api, Client};
use toolfunc::layer::{Call, Layer, Next, ReplyFuture, Viewer};
use toolfunc::prompt::{PromptFunc, PromptMessage, Role};
use toolfunc::resource::ResourceFunc;
use toolfunc::{CollectLimit, Registry, ToolDefinition, ToolError, ToolFunc};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    /// What to write about.
    topic: String,
    /// How many paragraphs.
    count: Option<u32>,
}

fn registry() -> Registry {
    let registry = Registry::new();
    let essay = ToolFunc::builder("essay")
        .description("Ask for an essay.")
        .typed(|_ctx, args: Topic| async move {
            Ok::<_, ToolError>(vec![
                PromptMessage::user(format!(
                    "Write {} paragraphs about {}.",
                    args.count.unwrap_or(1),
                    args.topic
                )),
                PromptMessage::assistant("Gladly."),
            ])
        })
        .build()
        .expect("a valid tool");
    registry
        .register_prompt(PromptFunc::from_tool(essay).expect("a valid prompt"))
        .expect("a fresh name");
    registry
        .register_prompt(
            PromptFunc::builder("audit")
                .description("Plan an audit.")
                .scopes(["admin"])
                .handler_sync(|_, _| Ok("Audit everything."))
                .build()
                .expect("a valid prompt"),
        )
        .expect("a fresh name");
    registry
        .register_resource(
            ResourceFunc::builder("file:///motd", "motd")
                .description("The message of the day.")
                .mime_type("text/plain")
                .handler_sync(|_, _| Ok("Hello."))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh URI");
    registry
        .register_resource(
            ResourceFunc::builder("file:///logo", "logo")
                .mime_type("image/png")
                .handler_sync(|_, _| Ok(vec![0x89_u8, b'P', b'N', b'G']))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh URI");
    registry
        .register_resource(
            ResourceFunc::builder("file:///logs/{day}", "logs")
                .description("The log of one day.")
                .handler_sync(|_, params| {
                    Ok(format!("log of {}", params["day"].as_str().unwrap_or("?")))
                })
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh template");
    registry
        .register_resource(
            ResourceFunc::builder("file:///big", "big")
                .handler_sync(|_, _| Ok("x".repeat(4096)))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh URI");
    registry
}

#[tokio::test]
async fn the_client_lists_gets_and_reads() {
    let addr = http::start(Api::new(registry())).await;
    let client = Client::connect(&format!("http://{addr}/api"))
        .await
        .expect("discovery");

    let prompts = client.prompts().await.expect("the prompts");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["audit", "essay"], "by name");
    let essay = &prompts[1];
    assert_eq!(essay.description.as_deref(), Some("Ask for an essay."));
    let args: Vec<(&str, bool)> = essay
        .arguments
        .iter()
        .map(|a| (a.name.as_str(), a.required))
        .collect();
    assert_eq!(args, [("topic", true), ("count", false)]);

    let got = client
        .prompt("essay", json!({"topic": "rust", "count": 2}))
        .await
        .expect("got");
    assert_eq!(got.messages.len(), 2);
    assert_eq!(got.messages[0].role, Role::User);
    assert_eq!(
        got.messages[0].content.text(),
        Some("Write 2 paragraphs about rust.")
    );
    assert_eq!(got.messages[1].role, Role::Assistant);

    let missing = client
        .prompt("essay", json!({}))
        .await
        .expect_err("a required argument is missing");
    assert_eq!(missing.code(), "ARGUMENTS", "{missing}");
    let unknown = client
        .prompt("nope", Value::Null)
        .await
        .expect_err("no such prompt");
    assert_eq!(unknown.code(), "NOT_FOUND");
    let not_an_object = client
        .prompt("essay", json!([1]))
        .await
        .expect_err("arguments are an object");
    assert_eq!(not_an_object.code(), "ARGUMENTS");

    let resources = client.resources().await.expect("the resources");
    let addresses: Vec<&str> = resources
        .iter()
        .map(toolfunc::resource::ResourceDefinition::address)
        .collect();
    assert_eq!(
        addresses,
        [
            "file:///big",
            "file:///logo",
            "file:///motd",
            "file:///logs/{day}"
        ],
        "the fixed resources by URI, then the templates"
    );
    assert!(resources[3].is_template());
    assert_eq!(resources[2].mime_type.as_deref(), Some("text/plain"));

    let motd = client.read("file:///motd").await.expect("read");
    assert_eq!(motd[0].text.as_deref(), Some("Hello."));
    assert_eq!(motd[0].mime_type.as_deref(), Some("text/plain"));
    let logo = client.read("file:///logo").await.expect("read");
    assert_eq!(logo[0].blob.as_deref(), Some("iVBORw=="));
    let day = client.read("file:///logs/2026-12-06").await.expect("read");
    assert_eq!(day[0].text.as_deref(), Some("log of 2026-12-06"));
    assert_eq!(day[0].uri, "file:///logs/2026-12-06");
    let nowhere = client
        .read("file:///nowhere")
        .await
        .expect_err("no resource");
    assert_eq!(nowhere.code(), "NOT_FOUND");
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let api = Api::new(registry()).collect_limit(CollectLimit::new(100, 1024));
    let addr = http::start(api).await;

    // Methods each path answers, and the rest refused with `Allow`.
    let reply = http::get(addr, "/api/_prompts/essay").await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(reply.header("allow"), Some("POST, OPTIONS"));
    let reply = http::post(addr, "/api/_prompts", "{}").await;
    reply.error(405, "METHOD_NOT_ALLOWED");
    http::post(addr, "/api/_resources/read?uri=file:///motd", "{}")
        .await
        .error(405, "METHOD_NOT_ALLOWED");
    http::get(addr, "/api/_prompts/essay/more")
        .await
        .error(404, "NOT_FOUND");
    http::get(addr, "/api/_resources/write")
        .await
        .error(404, "NOT_FOUND");

    // A body that is not an object, a read naming no URI, or two, or one too long.
    let body = http::post(addr, "/api/_prompts/essay", "[1, 2]")
        .await
        .error(400, "ARGUMENTS");
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("object")
    );
    let body = http::post(addr, "/api/_prompts/essay", r#"{"topic": 3}"#)
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/topic", "{body}");
    http::get(addr, "/api/_resources/read")
        .await
        .error(400, "ARGUMENTS");
    http::get(addr, "/api/_resources/read?uri=")
        .await
        .error(400, "ARGUMENTS");
    let body = http::get(addr, "/api/_resources/read?uri=a&uri=b")
        .await
        .error(400, "ARGUMENTS");
    assert_eq!(body["data"]["path"], "/uri");
    let long = format!("/api/_resources/read?uri=file:///logs/{}", "a".repeat(5000));
    http::get(addr, &long).await.error(400, "ARGUMENTS");

    // A read bigger than the API's collect limit is refused, not sent.
    http::get(addr, "/api/_resources/read?uri=file:///big")
        .await
        .error(413, "TOO_LARGE");
    let motd = http::get(addr, "/api/_resources/read?uri=file%3A%2F%2F%2Fmotd")
        .await
        .ok();
    assert_eq!(motd["contents"][0]["text"], "Hello.");
}

/// Hides everything named `secret…` from every caller.
struct HideSecrets;

impl Layer for HideSecrets {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        next.run(call)
    }

    fn visible(&self, tool: &ToolDefinition, _viewer: &Viewer<'_>) -> bool {
        !tool.name.starts_with("secret")
    }
}

#[tokio::test]
async fn scopes_and_layers_judge_prompts_and_resources_as_tools() {
    let registry = registry().layer(HideSecrets);
    registry
        .register_prompt(
            PromptFunc::builder("secret_plan")
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect("a fresh name");
    registry
        .register_resource(
            ResourceFunc::builder("file:///secret", "secret_file")
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect("a fresh URI");
    let keys = ApiKeys::new()
        .key("user-key", Identity::new("user"))
        .key("admin-key", Identity::new("root").with_scopes(["admin"]));
    let api = Api::new(registry)
        .authenticate(keys)
        .resource("http://127.0.0.1/api");
    let addr = http::start(api).await;
    let user = [("authorization", "Bearer user-key")];
    let admin = [("authorization", "Bearer admin-key")];

    // No credential, no list.
    http::get(addr, "/api/_prompts")
        .await
        .error(401, "UNAUTHENTICATED");

    let listed = http::call(addr, "GET", "/api/_prompts", &user, None)
        .await
        .ok();
    let names: Vec<&str> = listed["prompts"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["essay"], "neither the scoped nor the hidden prompt");
    let listed = http::call(addr, "GET", "/api/_prompts", &admin, None)
        .await
        .ok();
    assert_eq!(listed["prompts"].as_array().map(Vec::len), Some(2));

    // A scope the caller lacks is named, with the step-up challenge.
    let reply = http::call(addr, "POST", "/api/_prompts/audit", &user, Some("{}")).await;
    reply.error(403, "INSUFFICIENT_SCOPE");
    let challenge = reply.header("www-authenticate").expect("a challenge");
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    assert!(challenge.contains("admin"), "{challenge}");
    let got = http::call(addr, "POST", "/api/_prompts/audit", &admin, Some("{}"))
        .await
        .ok();
    assert_eq!(got["messages"][0]["content"]["text"], "Audit everything.");

    // What a layer hides does not exist, to anyone.
    let hidden = http::call(
        addr,
        "POST",
        "/api/_prompts/secret_plan",
        &admin,
        Some("{}"),
    )
    .await
    .error(404, "NOT_FOUND");
    let unknown = http::call(addr, "POST", "/api/_prompts/no_plan", &admin, Some("{}"))
        .await
        .error(404, "NOT_FOUND");
    assert_eq!(hidden["errorCode"], unknown["errorCode"]);
    let listed = http::call(addr, "GET", "/api/_resources", &admin, None)
        .await
        .ok()
        .to_string();
    assert!(!listed.contains("secret"), "{listed}");
    http::call(
        addr,
        "GET",
        "/api/_resources/read?uri=file:///secret",
        &admin,
        None,
    )
    .await
    .error(404, "NOT_FOUND");
}

#[tokio::test]
async fn the_openapi_document_describes_each_prompt_and_the_reads() {
    let doc = Api::new(registry()).openapi_document();
    let paths = &doc["paths"];
    assert_eq!(paths["/api/_prompts"]["get"]["operationId"], "prompts.list");
    let essay = &paths["/api/_prompts/essay"]["post"];
    assert_eq!(essay["operationId"], "prompts.get.essay");
    let body = &essay["requestBody"]["content"]["application/json"]["schema"]["$ref"];
    let name = body
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
        .expect("a component");
    let params = &doc["components"]["schemas"][name];
    assert_eq!(params["required"], json!(["topic"]), "{params}");
    assert!(paths["/api/_prompts/essay"].get("get").is_none());
    assert_eq!(
        paths["/api/_resources"]["get"]["operationId"],
        "resources.list"
    );
    let read = &paths["/api/_resources/read"]["get"];
    assert_eq!(read["operationId"], "resources.read");
    assert_eq!(read["parameters"][0]["name"], "uri");
    assert!(read["responses"].get("413").is_some());

    // Nothing of the kind is described where there is none.
    let bare = Api::new(Registry::new()).openapi_document();
    assert!(bare["paths"].get("/api/_prompts").is_none());
    assert!(bare["paths"].get("/api/_resources").is_none());
}

#[tokio::test]
async fn a_tool_of_the_same_name_is_served_in_their_place() {
    let registry = registry();
    registry
        .register(
            ToolFunc::builder("_prompts")
                .handler_sync(|_, _| Ok(json!("the tool")))
                .build()
                .expect("valid"),
        )
        .expect("a fresh name");
    let addr = http::start(Api::new(registry)).await;
    assert_eq!(
        http::post(addr, "/api/_prompts", "{}").await.ok(),
        "the tool"
    );
    let listed = http::get(addr, "/api/_resources").await.ok();
    assert_eq!(listed["resourceTemplates"][0]["name"], "logs");
}
