//! Sessions at rest: a plain `initialize` opens a session the server answers itself,
//! without the SDK's per-session service, and so are its plain requests
//! (`notifications/initialized`, `ping`, the lists, `tools/call`, `prompts/get`,
//! `resources/read`, `completion/complete`, `DELETE`).
//! Their answers must be the SDK's: the same status and JSON-RPC messages as the
//! same session opened with an `Origin` header (which leaves every request to the
//! SDK), for results, tool errors, bad arguments, unknown tools and log messages;
//! the client's name is the call's caller; a cancelled call is cancelled; the cap,
//! the handshake deadline and the idle lifetime hold; and what is not plain (a
//! `GET` stream, a client that can be asked back) brings the SDK's session back.

#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::{Duration, Instant};

use mcp_support::{Answer, Events, LIMIT, serve_http};
use serde_json::{Value, json};
use toolfunc::complete::{Completer, Completion, CompletionRequest};
use toolfunc::mcp::Server;
use toolfunc::prompt::PromptFunc;
use toolfunc::resource::ResourceFunc;
use toolfunc::{Ctx, LogLevel, Registry, RegistryEvent, ToolError, ToolFunc};

const VERSION: &str = "2025-11-25";

/// Tools answering their caller, failing, checking an argument, logging, and
/// sleeping.
fn registry() -> Registry {
    let registry = Registry::new();
    let tools = [
        ToolFunc::builder("whoami")
            .description("Answers its caller and arguments.")
            .handler_sync(|ctx, args| Ok(json!({"caller": ctx.caller(), "args": args})))
            .build(),
        ToolFunc::builder("refuses")
            .description("Always fails.")
            .handler_sync(|_, _| Err(ToolError::custom("NOPE", 409, "not today")))
            .build(),
        ToolFunc::builder("square")
            .description("Squares a number.")
            .params_schema(json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"]
            }))
            .handler_sync(|_, args| Ok(json!(args["n"].as_i64().unwrap_or(0).pow(2))))
            .build(),
        ToolFunc::builder("chatty")
            .description("Logs twice, then answers.")
            .handler(|ctx: Ctx, _args: Value| async move {
                ctx.log(LogLevel::Info, "first");
                tokio::task::yield_now().await;
                ctx.log(LogLevel::Warning, "second");
                Ok(json!("done"))
            })
            .build(),
        ToolFunc::builder("nap")
            .description("Sleeps for an hour.")
            .handler(|_ctx: Ctx, _args: Value| async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(json!("rested"))
            })
            .build(),
    ];
    for tool in tools {
        registry
            .register(tool.expect("a valid tool"))
            .expect("registers");
    }
    registry
        .register_prompt(
            PromptFunc::builder("brief")
                .description("Ask for a brief.")
                .argument("topic", "What about.", true)
                .complete(
                    "topic",
                    Completer::new(|r: &CompletionRequest| {
                        Completion::matching(vec!["rest", "results", "work"], &r.value)
                    }),
                )
                .handler_sync(|_, args| {
                    Ok(format!(
                        "A brief on {}.",
                        args["topic"].as_str().unwrap_or("?")
                    ))
                })
                .build()
                .expect("a valid prompt"),
        )
        .expect("a fresh name");
    registry
        .register_resource(
            ResourceFunc::builder("notes://today", "today")
                .mime_type("text/plain")
                .handler_sync(|_, _| Ok("Rested."))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh URI");
    registry
        .register_resource(
            ResourceFunc::builder("notes://day/{day}", "day")
                .handler_sync(|_, params| Ok(json!({"day": params["day"]})))
                .build()
                .expect("a valid resource"),
        )
        .expect("a fresh template");
    registry
}

/// A session client: plain, or (`through_sdk`) with a loopback `Origin` on every
/// request, which leaves the session to the SDK.
struct Session {
    client: reqwest::Client,
    url: String,
    id: Option<String>,
    through_sdk: bool,
}

impl Session {
    fn new(url: &str, through_sdk: bool) -> Self {
        Self {
            client: reqwest::Client::new(),
            url: url.to_owned(),
            id: None,
            through_sdk,
        }
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let mut request = self.client.request(method, &self.url);
        if let Some(id) = &self.id {
            request = request
                .header("Mcp-Session-Id", id)
                .header("MCP-Protocol-Version", VERSION);
        }
        if self.through_sdk {
            request = request.header("Origin", "http://localhost:1234");
        }
        request
    }

    async fn post(&self, message: &Value) -> Answer {
        let request = self
            .request(reqwest::Method::POST)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        Answer::read(request, LIMIT).await
    }

    /// `initialize` with `capabilities`: the answer.
    async fn open(&mut self, capabilities: Value) -> Answer {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": capabilities,
            "clientInfo": {"name": "resting-client", "version": "2.0"}}});
        let answer = self.post(&init).await;
        self.id.clone_from(&answer.session);
        answer
    }

    async fn initialized(&self) -> Answer {
        self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
    }

    async fn call(&self, id: i64, method: &str, params: Value) -> Answer {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
    }

    async fn delete(&self) -> u16 {
        let answer = Answer::read(self.request(reqwest::Method::DELETE), LIMIT).await;
        answer.status
    }
}

#[tokio::test]
async fn plain_sessions_are_answered_as_the_sdk_answers_them() {
    let url = serve_http(Server::new(registry()).router()).await;
    let mut seen = Vec::new();
    let mut logged = Vec::new();
    for through_sdk in [false, true] {
        let mut session = Session::new(&url, through_sdk);
        let mut answers = Vec::new();
        let opened = session.open(json!({})).await;
        assert_eq!(opened.status, 200, "{}", opened.body);
        assert!(session.id.as_ref().is_some_and(|id| id.len() >= 32));
        answers.push(opened.response(1));
        assert_eq!(session.initialized().await.status, 202);
        let mut id = 2;
        for (method, params) in [
            ("ping", json!({})),
            ("tools/list", json!({})),
            (
                "tools/call",
                json!({"name": "whoami", "arguments": {"x": 1}}),
            ),
            ("tools/call", json!({"name": "refuses", "arguments": {}})),
            (
                "tools/call",
                json!({"name": "square", "arguments": {"n": 12}}),
            ),
            (
                "tools/call",
                json!({"name": "square", "arguments": {"n": "twelve"}}),
            ),
            ("tools/call", json!({"name": "nowhere", "arguments": {}})),
            ("tools/call", json!({"name": "chatty", "arguments": {}})),
            ("prompts/list", json!({})),
            (
                "prompts/get",
                json!({"name": "brief", "arguments": {"topic": "rest"}}),
            ),
            ("resources/list", json!({})),
            ("resources/templates/list", json!({})),
            ("resources/read", json!({"uri": "notes://today"})),
            ("resources/read", json!({"uri": "notes://nowhere"})),
            (
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "brief"},
                "argument": {"name": "topic", "value": "re"}}),
            ),
        ] {
            let answer = session.call(id, method, params).await;
            assert_eq!(answer.status, 200, "{method}: {}", answer.body);
            if !through_sdk {
                // At rest, JSON unless the call logged: its log messages come first,
                // in a stream (the SDK sends them to the session's `GET` stream,
                // which this client did not open).
                let logs = answer.messages().len() - 1;
                let json = answer.content_type.starts_with("application/json");
                assert_eq!(json, logs == 0, "{}", answer.body);
                logged.push(answer.messages());
            }
            answers.push(answer.response(id));
            id += 1;
        }
        assert_eq!(session.delete().await, 204);
        // Gone: its id is unknown now.
        let after = session.call(id, "ping", json!({})).await;
        assert_eq!(after.status, 404, "{}", after.body);
        seen.push(answers);
    }
    let (rest, sdk) = (&seen[0], &seen[1]);
    assert_eq!(rest.len(), sdk.len());
    for (rest, sdk) in rest.iter().zip(sdk) {
        assert_eq!(rest, sdk);
    }
    // The caller is the client its `initialize` named.
    assert_eq!(
        rest[3]["result"]["structuredContent"]["caller"],
        "resting-client"
    );
    // Prompts, resources and completions too (answers[i + 1] is request i).
    assert_eq!(
        rest[9]["result"]["prompts"][0]["name"], "brief",
        "{}",
        rest[9]
    );
    assert_eq!(
        rest[10]["result"]["messages"][0]["content"]["text"], "A brief on rest.",
        "{}",
        rest[10]
    );
    assert_eq!(rest[11]["result"]["resources"][0]["uri"], "notes://today");
    assert_eq!(
        rest[12]["result"]["resourceTemplates"][0]["uriTemplate"],
        "notes://day/{day}"
    );
    assert_eq!(rest[13]["result"]["contents"][0]["text"], "Rested.");
    assert!(rest[14].get("error").is_some(), "{}", rest[14]);
    assert_eq!(
        rest[15]["result"]["completion"]["values"],
        json!(["rest", "results"])
    );
    let chatty = &logged[7];
    assert_eq!(chatty.len(), 3, "{chatty:?}");
    assert_eq!(chatty[0]["method"], "notifications/message");
    assert_eq!(chatty[0]["params"]["level"], "info");
    assert_eq!(chatty[1]["params"]["level"], "warning");
    assert_eq!(chatty[2]["result"]["content"][0]["text"], "done");
}

#[tokio::test]
async fn a_cancelled_call_at_rest_is_cancelled_and_not_answered() {
    let registry = registry();
    let mut events = registry.subscribe();
    let url = serve_http(Server::new(registry).router()).await;
    let mut session = Session::new(&url, false);
    assert_eq!(session.open(json!({})).await.status, 200);
    session.initialized().await;
    let call = {
        let request = session
            .request(reqwest::Method::POST)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "nap", "arguments": {}}})
                .to_string(),
            );
        tokio::spawn(Answer::read(request, LIMIT))
    };
    loop {
        let event = tokio::time::timeout(LIMIT, events.recv())
            .await
            .expect("in time");
        if matches!(&event, Ok(RegistryEvent::CallStarted { tool, .. }) if tool == "nap") {
            break;
        }
    }
    let started = Instant::now();
    let cancel = session
        .post(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 9, "reason": "changed my mind"}}),
        )
        .await;
    assert_eq!(cancel.status, 202);
    let answer = call.await.expect("the call's request ends");
    assert!(started.elapsed() < LIMIT);
    assert_eq!(answer.status, 200);
    assert!(
        answer.messages().iter().all(|message| message["id"] != 9),
        "a response to the cancelled request: {}",
        answer.body
    );
    // The session goes on.
    assert_eq!(session.call(10, "ping", json!({})).await.status, 200);
}

#[tokio::test]
async fn sessions_at_rest_keep_the_cap_and_the_lifetimes() {
    let server = Server::new(registry())
        .max_sessions(2)
        .uninitialized_session_lifetime(Duration::from_millis(300))
        .session_idle_lifetime(Duration::from_millis(1500))
        .session_park_after(Duration::from_millis(200));
    let open = server.clone();
    let url = serve_http(server.router()).await;
    let mut done = Session::new(&url, false);
    assert_eq!(done.open(json!({})).await.status, 200);
    assert_eq!(done.initialized().await.status, 202);
    let mut pending = Session::new(&url, false);
    assert_eq!(pending.open(json!({})).await.status, 200);
    assert_eq!(open.open_sessions(), 2);
    // At the cap: refused with the request's id.
    let refused = Session::new(&url, false).open(json!({})).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.response(1)["error"]["data"]["maxSessions"], 2);
    // The one that never said `initialized` goes at the handshake deadline; the
    // other stays while it is used.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(done.call(2, "ping", json!({})).await.status, 200);
    }
    assert_eq!(pending.call(2, "ping", json!({})).await.status, 404);
    assert_eq!(open.open_sessions(), 1);
    // Idle past its lifetime, it goes too.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(done.call(3, "ping", json!({})).await.status, 404);
    assert_eq!(open.open_sessions(), 0);
}

#[tokio::test]
async fn what_is_not_plain_brings_the_sdk_session_back() {
    let registry = registry();
    let url = serve_http(Server::new(registry.clone()).router()).await;
    // A GET stream: the session comes back and hears the tool list change.
    let mut session = Session::new(&url, false);
    assert_eq!(session.open(json!({})).await.status, 200);
    session.initialized().await;
    let stream = session
        .request(reqwest::Method::GET)
        .header("Accept", "text/event-stream");
    let mut events = Events::open(stream).await;
    registry
        .register(
            ToolFunc::builder("late")
                .description("Registered late.")
                .handler_sync(|_, _| Ok(json!({"late": true})))
                .build()
                .expect("a valid tool"),
        )
        .expect("registers");
    let mut heard = false;
    while let Some(event) = events.next(LIMIT).await {
        if event["method"] == "notifications/tools/list_changed" {
            heard = true;
            break;
        }
    }
    assert!(heard, "no list_changed on the GET stream");
    let call = session
        .call(2, "tools/call", json!({"name": "late", "arguments": {}}))
        .await;
    assert_eq!(
        call.response(2)["result"]["structuredContent"],
        json!({"late": true})
    );

    // A client that can be asked back: its calls go to the SDK, which asks.
    let mut asking = Session::new(&url, false);
    assert_eq!(asking.open(json!({"elicitation": {}})).await.status, 200);
    asking.initialized().await;
    let call = asking
        .call(2, "tools/call", json!({"name": "whoami", "arguments": {}}))
        .await;
    assert!(
        call.content_type.starts_with("text/event-stream"),
        "{}",
        call.content_type
    );
    assert_eq!(
        call.response(2)["result"]["structuredContent"]["caller"],
        "resting-client"
    );
    assert_eq!(asking.delete().await, 204);
}

/// A session's SDK session brought back by two requests at once (a `GET` stream
/// and a call the SDK serves, as clients send them right after `initialized`):
/// neither reaches the SDK session before its replayed handshake, so both are
/// served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_bring_a_session_back_together_are_both_served() {
    let url = serve_http(Server::new(registry()).router()).await;
    for _ in 0..20 {
        let mut session = Session::new(&url, false);
        assert_eq!(session.open(json!({"sampling": {}})).await.status, 200);
        assert_eq!(session.initialized().await.status, 202);
        let stream = session
            .request(reqwest::Method::GET)
            .header("Accept", "text/event-stream")
            .send();
        let call = session.call(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
        let (stream, call) = tokio::join!(stream, call);
        assert_eq!(stream.expect("the GET is answered").status(), 200);
        assert_eq!(call.status, 200, "{}", call.body);
        assert_eq!(
            call.response(2)["result"]["structuredContent"]["caller"],
            "resting-client"
        );
        assert_eq!(session.delete().await, 204);
    }
}

/// Bad input to a session at rest (a body that is not JSON, a message that is not
/// JSON-RPC, an unknown method, a version header that is not the session's, a
/// call without params) is left to the SDK, which answers it as it answers the
/// same input in a session of its own; the session goes on.
#[tokio::test]
async fn bad_input_to_a_session_at_rest_is_answered_as_the_sdk_answers_it() {
    let url = serve_http(Server::new(registry()).router()).await;
    let mut seen = Vec::new();
    for through_sdk in [false, true] {
        let mut session = Session::new(&url, through_sdk);
        assert_eq!(session.open(json!({})).await.status, 200);
        assert_eq!(session.initialized().await.status, 202);
        let mut answers = Vec::new();
        for body in [
            "{not json".to_owned(),
            json!({"jsonrpc": "1.0", "id": 3, "method": "ping"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/nowhere"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call"}).to_string(),
        ] {
            let request = session
                .request(reqwest::Method::POST)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .body(body.clone());
            let answer = Answer::read(request, LIMIT).await;
            let message = if answer.content_type.starts_with("text/event-stream") {
                answer.messages().into_iter().last()
            } else {
                serde_json::from_str::<Value>(&answer.body).ok()
            };
            let code = message.and_then(|message| message["error"]["code"].as_i64());
            answers.push((body, answer.status, code));
        }
        let other_version = session
            .request(reqwest::Method::POST)
            .header("MCP-Protocol-Version", "2025-03-26")
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}).to_string());
        let answer = Answer::read(other_version, LIMIT).await;
        answers.push(("other version".to_owned(), answer.status, None));
        // The session goes on.
        assert_eq!(session.call(7, "ping", json!({})).await.status, 200);
        assert_eq!(session.delete().await, 204);
        seen.push(answers);
    }
    assert_eq!(seen[0], seen[1]);
}
