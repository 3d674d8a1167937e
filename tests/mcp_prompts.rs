//! Prompts, resources and completions over MCP (over `serve_io`, the transport of
//! stdio): listed a page at a time, got and read with their arguments checked,
//! refused with `-32602` and data that says what was unknown, bounded (URI length,
//! read size, subscriptions per session), judged by the registry's layers, and
//! announced to the sessions that asked.

#[path = "support/mcp.rs"]
mod mcp_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::complete::{Completer, Completion, CompletionRequest};
use toolfunc::layer::{Call, Layer, Next, ReplyFuture, Viewer};
use toolfunc::mcp::Server;
use toolfunc::prompt::{PromptFunc, PromptMessage};
use toolfunc::resource::ResourceFunc;
use toolfunc::{CollectLimit, Kind, Registry, ToolDefinition, ToolError, ToolFunc};

use mcp_support::{Pipe, with_method};

const QUIET: Duration = Duration::from_millis(300);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Topic {
    /// What to write about.
    topic: String,
    /// How many paragraphs.
    count: Option<u32>,
}

/// A prompt with typed arguments, made from a typed tool.
fn essay() -> PromptFunc {
    let tool = ToolFunc::builder("essay")
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
    PromptFunc::from_tool(tool).expect("a valid prompt")
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry.register_prompt(essay()).expect("a fresh name");
    registry
        .register_prompt(
            PromptFunc::builder("greet")
                .description("Greet someone.")
                .argument("name", "Who to greet.", true)
                .argument("language", "In which language.", false)
                .complete(
                    "language",
                    Completer::new(|r: &CompletionRequest| {
                        // The argument already given narrows the answer.
                        let formal = r.arguments.get("name").is_some_and(|n| n.starts_with("Dr"));
                        let all = if formal {
                            vec!["english"]
                        } else {
                            vec!["english", "esperanto", "french"]
                        };
                        Completion::matching(all, &r.value)
                    }),
                )
                .handler_sync(|_, args| {
                    Ok(format!(
                        "Say hello to {}.",
                        args["name"].as_str().unwrap_or("?")
                    ))
                })
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
            ResourceFunc::builder("file:///logs/{day}/{+path}", "logs")
                .description("One log of one day.")
                .handler_sync(|_, params| Ok(json!({"day": params["day"], "path": params["path"]})))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh template");
    registry
}

fn error_of(answer: &Value) -> &Value {
    answer
        .get("error")
        .unwrap_or_else(|| panic!("an error expected: {answer}"))
}

#[tokio::test]
async fn prompts_are_listed_and_got_with_their_arguments_checked() {
    let (mut pipe, init) = Pipe::connect(Server::new(registry())).await;
    let capabilities = &init["capabilities"];
    assert_eq!(capabilities["prompts"]["listChanged"], true, "{init}");
    assert_eq!(capabilities["resources"]["subscribe"], true, "{init}");
    assert!(capabilities.get("completions").is_some(), "{init}");

    let listed = pipe.request("prompts/list", json!({})).await;
    let prompts = listed["result"]["prompts"]
        .as_array()
        .expect("prompts")
        .clone();
    let names: Vec<&str> = prompts.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["essay", "greet"]);
    assert_eq!(
        prompts[0]["arguments"],
        json!([
            {"name": "topic", "description": "What to write about.", "required": true},
            {"name": "count", "description": "How many paragraphs.", "required": false}
        ])
    );
    assert_eq!(prompts[1]["description"], "Greet someone.");

    // MCP sends every argument as a string: a number's is read as one.
    let got = pipe
        .request(
            "prompts/get",
            json!({"name": "essay", "arguments": {"topic": "rust", "count": "3"}}),
        )
        .await;
    let messages = &got["result"]["messages"];
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": {"type": "text", "text": "Write 3 paragraphs about rust."}}),
        "{got}"
    );
    assert_eq!(messages[1]["role"], "assistant");

    // A missing argument, a wrong one, an unknown prompt: -32602, saying what.
    let missing = pipe
        .request("prompts/get", json!({"name": "essay", "arguments": {}}))
        .await;
    assert_eq!(error_of(&missing)["code"], -32602, "{missing}");
    assert_eq!(error_of(&missing)["data"]["code"], "ARGUMENTS", "{missing}");
    let wrong = pipe
        .request(
            "prompts/get",
            json!({"name": "essay", "arguments": {"topic": "x", "count": "many"}}),
        )
        .await;
    assert_eq!(error_of(&wrong)["data"]["code"], "ARGUMENTS", "{wrong}");
    let unknown = pipe.request("prompts/get", json!({"name": "nope"})).await;
    assert_eq!(error_of(&unknown)["code"], -32602, "{unknown}");
    assert_eq!(error_of(&unknown)["data"]["name"], "nope", "{unknown}");
    pipe.close().await;
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read() {
    let server = Server::new(registry()).collect_limit(CollectLimit::new(1_000, 4_096));
    let (mut pipe, _) = Pipe::connect(server).await;
    let listed = pipe.request("resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"],
        json!([
            {"uri": "file:///logo", "name": "logo", "mimeType": "image/png"},
            {"uri": "file:///motd", "name": "motd", "description": "The message of the day.", "mimeType": "text/plain"}
        ]),
        "{listed}"
    );
    let templates = pipe.request("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"], "file:///logs/{day}/{+path}",
        "{templates}"
    );

    let text = pipe
        .request("resources/read", json!({"uri": "file:///motd"}))
        .await;
    assert_eq!(
        text["result"]["contents"],
        json!([{"uri": "file:///motd", "mimeType": "text/plain", "text": "Hello."}])
    );
    let blob = pipe
        .request("resources/read", json!({"uri": "file:///logo"}))
        .await;
    assert_eq!(blob["result"]["contents"][0]["blob"], "iVBORw==", "{blob}");
    let log = pipe
        .request(
            "resources/read",
            json!({"uri": "file:///logs/2026-12-01/web/access%20log"}),
        )
        .await;
    let read = &log["result"]["contents"][0];
    assert_eq!(read["mimeType"], "application/json", "{log}");
    let body: Value = serde_json::from_str(read["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(body, json!({"day": "2026-12-01", "path": "web/access log"}));

    // Unknown: -32602 with the URI (SEP-2164); a URI past 4 KiB is refused unread.
    let unknown = pipe
        .request("resources/read", json!({"uri": "file:///nowhere"}))
        .await;
    assert_eq!(error_of(&unknown)["code"], -32602, "{unknown}");
    assert_eq!(
        error_of(&unknown)["data"]["uri"],
        "file:///nowhere",
        "{unknown}"
    );
    let too_long = format!("file:///logs/{}/x", "d".repeat(5_000));
    let refused = pipe
        .request("resources/read", json!({"uri": too_long}))
        .await;
    assert_eq!(error_of(&refused)["code"], -32602, "{refused}");
    assert_eq!(error_of(&refused)["data"]["code"], "ARGUMENTS", "{refused}");
    // A read past the server's collect limit is refused, not sent.
    let big = format!("file:///logs/day/{}", "p".repeat(4_000));
    let refused = pipe.request("resources/read", json!({"uri": big})).await;
    assert_eq!(error_of(&refused)["data"]["code"], "TOO_LARGE", "{refused}");
    pipe.close().await;
}

#[tokio::test]
async fn lists_come_in_pages_that_cover_everything_once() {
    let registry = Registry::new();
    for i in 0..7 {
        registry
            .register_prompt(
                PromptFunc::builder(format!("p{i}"))
                    .handler_sync(|_, _| Ok("x"))
                    .build()
                    .expect("a valid prompt"),
            )
            .expect("a fresh name");
        registry
            .register_resource(
                ResourceFunc::builder(format!("t{i}://{{x}}"), format!("t{i}"))
                    .handler_sync(|_, _| Ok("x"))
                    .build()
                    .expect("a valid template"),
            )
            .expect("a fresh template");
    }
    let (mut pipe, _) = Pipe::connect(Server::new(registry).page_size(3)).await;
    for (method, key, field) in [
        ("prompts/list", "prompts", "name"),
        (
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate",
        ),
    ] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let page = pipe.request(method, params).await;
            let items = page["result"][key].as_array().expect("a page").clone();
            assert!(items.len() <= 3, "{page}");
            seen.extend(
                items
                    .iter()
                    .map(|i| i[field].as_str().expect("named").to_owned()),
            );
            match page["result"]["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen.len(), 7, "{method}: {seen:?}");
        seen.dedup();
        assert_eq!(seen.len(), 7, "{method}: {seen:?}");
    }
    let bad = pipe
        .request(
            "resources/templates/list",
            json!({"cursor": "not a position"}),
        )
        .await;
    assert_eq!(error_of(&bad)["code"], -32602, "{bad}");
    pipe.close().await;
}

#[tokio::test]
async fn subscriptions_hear_updates_until_unsubscribed_and_are_bounded() {
    let registry = registry();
    let (mut pipe, _) = Pipe::connect(Server::new(&registry).max_subscriptions(1)).await;
    let ok = pipe
        .request("resources/subscribe", json!({"uri": "file:///motd"}))
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    // Past the bound, and a URI nothing reads: refused.
    let busy = pipe
        .request("resources/subscribe", json!({"uri": "file:///logo"}))
        .await;
    assert_eq!(error_of(&busy)["data"]["code"], "BUSY", "{busy}");
    let unknown = pipe
        .request("resources/subscribe", json!({"uri": "file:///nowhere"}))
        .await;
    assert_eq!(error_of(&unknown)["code"], -32602, "{unknown}");

    registry.notify_resource_updated("file:///logo");
    registry.notify_resource_updated("file:///motd");
    let heard = pipe.drain(QUIET).await;
    let updated = with_method(&heard, "notifications/resources/updated");
    assert_eq!(updated.len(), 1, "{heard:?}");
    assert_eq!(updated[0]["params"]["uri"], "file:///motd");

    // List changes reach the session too.
    registry
        .register_prompt(
            PromptFunc::builder("late")
                .handler_sync(|_, _| Ok("x"))
                .build()
                .expect("valid"),
        )
        .expect("a fresh name");
    registry.unregister_resource("file:///logo");
    let heard = pipe.drain(QUIET).await;
    assert_eq!(
        with_method(&heard, "notifications/prompts/list_changed").len(),
        1,
        "{heard:?}"
    );
    assert_eq!(
        with_method(&heard, "notifications/resources/list_changed").len(),
        1,
        "{heard:?}"
    );

    let ok = pipe
        .request("resources/unsubscribe", json!({"uri": "file:///motd"}))
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    registry.notify_resource_updated("file:///motd");
    let heard = pipe.drain(QUIET).await;
    assert!(
        with_method(&heard, "notifications/resources/updated").is_empty(),
        "{heard:?}"
    );
    pipe.close().await;
}

#[tokio::test]
async fn completions_see_the_arguments_already_given() {
    let (mut pipe, _) = Pipe::connect(Server::new(registry())).await;
    let complete = |value: &str, name: Option<&str>| {
        let mut params = json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "language", "value": value}
        });
        if let Some(name) = name {
            params["context"] = json!({"arguments": {"name": name}});
        }
        params
    };
    let open = pipe
        .request("completion/complete", complete("e", None))
        .await;
    assert_eq!(
        open["result"]["completion"]["values"],
        json!(["english", "esperanto"]),
        "{open}"
    );
    let narrowed = pipe
        .request("completion/complete", complete("e", Some("Dr Who")))
        .await;
    assert_eq!(
        narrowed["result"]["completion"]["values"],
        json!(["english"]),
        "{narrowed}"
    );
    // An argument without a completer has no suggestions; an unknown one is refused.
    let none = pipe
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "a"}}),
        )
        .await;
    assert_eq!(none["result"]["completion"]["values"], json!([]), "{none}");
    let unknown = pipe
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "tone", "value": ""}}),
        )
        .await;
    assert_eq!(error_of(&unknown)["code"], -32602, "{unknown}");
    let template = pipe
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "file:///logs/{day}/{+path}"}, "argument": {"name": "day", "value": ""}}),
        )
        .await;
    assert_eq!(
        template["result"]["completion"]["values"],
        json!([]),
        "{template}"
    );
    pipe.close().await;
}

#[tokio::test]
async fn a_sessionless_prompt_asks_its_client_in_rounds() {
    let registry = Registry::new();
    registry
        .register_prompt(
            PromptFunc::builder("context")
                .handler(|ctx, _| async move {
                    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
                    let answer = ctx.elicit_named("about", "About what?", schema).await?;
                    let content = answer.content.unwrap_or_default();
                    Ok(format!("Write about {}.", content["text"].as_str().unwrap_or("nothing")))
                })
                .build()
                .expect("a valid prompt"),
        )
        .expect("a fresh name");
    let mut pipe = Pipe::spawn(Server::new(registry));
    let capabilities =
        json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    let mut first = json!({"name": "context"});
    first["_meta"] = capabilities["_meta"].clone();
    let asked = pipe.request_modern("prompts/get", first.clone()).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert_eq!(
        result["inputRequests"]["about"]["method"], "elicitation/create",
        "{asked}"
    );
    let state = result["requestState"].as_str().expect("a state").to_owned();

    // The state is the prompt's: a tool of that name, or a forged state, cannot use it.
    let mut forged = first.clone();
    forged["requestState"] = json!(format!("{state}x"));
    forged["inputResponses"] = json!({"about": {"action": "accept", "content": {"text": "cats"}}});
    let refused = pipe.request_modern("prompts/get", forged).await;
    assert_eq!(error_of(&refused)["code"], -32602, "{refused}");

    let mut retry = first;
    retry["requestState"] = json!(state);
    retry["inputResponses"] = json!({"about": {"action": "accept", "content": {"text": "cats"}}});
    let got = pipe.request_modern("prompts/get", retry).await;
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "Write about cats.",
        "{got}"
    );
    pipe.close().await;
}

/// Hides everything named `secret*` and records what kind of function each call
/// ran.
struct Judge(Arc<Mutex<Vec<(Kind, String)>>>);

impl Layer for Judge {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        self.0
            .lock()
            .expect("not poisoned")
            .push((call.kind(), call.tool().to_owned()));
        next.run(call)
    }

    fn visible(&self, tool: &ToolDefinition, _viewer: &Viewer<'_>) -> bool {
        !tool.name.starts_with("secret")
    }
}

#[tokio::test]
async fn layers_see_prompt_and_resource_calls_and_hide_them_alike() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let registry = registry().layer(Judge(Arc::clone(&seen)));
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
    let (mut pipe, _) = Pipe::connect(Server::new(&registry)).await;
    let listed = pipe.request("prompts/list", json!({})).await.to_string();
    assert!(!listed.contains("secret"), "{listed}");
    let listed = pipe.request("resources/list", json!({})).await.to_string();
    assert!(!listed.contains("secret"), "{listed}");
    let hidden = pipe
        .request("prompts/get", json!({"name": "secret_plan"}))
        .await;
    let unknown = pipe
        .request("prompts/get", json!({"name": "no_plan"}))
        .await;
    assert_eq!(error_of(&hidden)["code"], error_of(&unknown)["code"]);
    assert_eq!(error_of(&hidden)["data"]["code"], "NOT_FOUND", "{hidden}");
    let hidden = pipe
        .request("resources/read", json!({"uri": "file:///secret"}))
        .await;
    assert_eq!(error_of(&hidden)["data"]["code"], "NOT_FOUND", "{hidden}");

    pipe.request(
        "prompts/get",
        json!({"name": "greet", "arguments": {"name": "Ann"}}),
    )
    .await;
    pipe.request("resources/read", json!({"uri": "file:///motd"}))
        .await;
    let seen = seen.lock().expect("not poisoned").clone();
    assert_eq!(
        seen,
        [
            (Kind::Prompt, "greet".to_owned()),
            (Kind::Resource, "motd".to_owned())
        ]
    );
    pipe.close().await;
}
