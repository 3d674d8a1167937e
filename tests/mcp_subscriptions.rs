//! Registry changes reach MCP clients as `notifications/tools/list_changed`,
//! `notifications/prompts/list_changed`, `notifications/resources/list_changed` and
//! `notifications/resources/updated`: on every open `subscriptions/listen` stream
//! (2026-07-28) that asked for them, tagged with its subscription id, and on a
//! 2025-11-25 session's GET stream. A listen is acknowledged with the part toolfunc
//! honours (URIs no resource reads are left out) and hears only that. Over
//! streamable HTTP and stdio (`serve_io`).

#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::mcp::Server;
use toolfunc::{Registry, ToolFunc};

use mcp_support::{Answer, Events, LIMIT, Pipe, modern_request, serve_http, with_method};

const LIST_CHANGED: &str = "notifications/tools/list_changed";
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a stream must stay quiet to count as silent (a change is announced
/// within about 20 ms).
const QUIET: Duration = Duration::from_millis(500);

fn tool(name: &str) -> ToolFunc {
    ToolFunc::builder(name)
        .description("Answers 1.")
        .handler_sync(|_, _| Ok(json!(1)))
        .build()
        .expect("a valid tool")
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry.register(tool("first")).expect("a fresh registry");
    registry
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client")
}

/// Opens a `subscriptions/listen` stream with request id `id`; the stream and its
/// acknowledgement.
async fn listen(client: &reqwest::Client, url: &str, id: i64, filter: Value) -> (Events, Value) {
    let request = modern_request(
        client,
        url,
        id,
        "subscriptions/listen",
        json!({"notifications": filter}),
    );
    let mut events = Events::open(request).await;
    let ack = events.next(LIMIT).await.expect("an acknowledgement");
    assert_eq!(ack["method"], ACKNOWLEDGED, "{ack}");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id, "{ack}");
    (events, ack)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_for_tool_changes_hears_each_change_tagged_with_its_id() {
    let registry = registry();
    let url = serve_http(Server::new(&registry).router()).await;
    let client = http_client();
    let (mut events, ack) = listen(&client, &url, 7, json!({"toolsListChanged": true})).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );

    // A tool registered while the stream is open, then one removed.
    registry.register(tool("second")).expect("registers");
    let changed = events.next(LIMIT).await.expect("a change");
    assert_eq!(changed["method"], LIST_CHANGED, "{changed}");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], 7, "{changed}");
    registry.unregister("first");
    let changed = events.next(LIMIT).await.expect("a change");
    assert_eq!(changed["method"], LIST_CHANGED, "{changed}");

    // A second stream hears the same change; each keeps its own id.
    let (mut other, _) = listen(&client, &url, 8, json!({"toolsListChanged": true})).await;
    registry.register(tool("third")).expect("registers");
    for (stream, id) in [(&mut events, 7), (&mut other, 8)] {
        let changed = stream.next(LIMIT).await.expect("a change");
        assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], id, "{changed}");
    }
    // A burst of registrations is folded into (about) one notification.
    for i in 0..20 {
        registry
            .register(tool(&format!("burst_{i}")))
            .expect("registers");
    }
    let burst = events.drain(QUIET).await;
    let announced = with_method(&burst, LIST_CHANGED).len();
    assert!((1..3).contains(&announced), "{burst:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listens_hear_only_what_they_asked_for() {
    let registry = registry();
    registry
        .register_resource(resource("file:///motd"))
        .expect("a fresh URI");
    let url = serve_http(Server::new(&registry).router()).await;
    let client = http_client();
    // Nothing asked, or only what the registry cannot serve: acknowledged as
    // nothing, open and silent.
    for (id, filter) in [
        (1, json!({})),
        (2, json!({"resourceSubscriptions": ["file:///nowhere"]})),
        (3, json!({"toolsListChanged": false})),
    ] {
        let (mut events, ack) = listen(&client, &url, id, filter.clone()).await;
        assert_eq!(ack["params"]["notifications"], json!({}), "{filter}: {ack}");
        registry
            .register(tool(&format!("quiet_{id}")))
            .expect("registers");
        registry.notify_resource_updated("file:///nowhere");
        assert!(events.next(QUIET).await.is_none(), "{filter}");
        assert!(!events.ended(), "{filter}: the stream ended");
    }

    // Prompts: their list changes, not the tools'.
    let (mut prompts, ack) = listen(&client, &url, 4, json!({"promptsListChanged": true})).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true})
    );
    registry.register(tool("not_heard")).expect("registers");
    assert!(
        prompts.next(QUIET).await.is_none(),
        "a tool change reached a prompts listen"
    );
    registry
        .register_prompt(prompt("hello"))
        .expect("a fresh name");
    let changed = prompts.next(LIMIT).await.expect("a change");
    assert_eq!(
        changed["method"], "notifications/prompts/list_changed",
        "{changed}"
    );

    // Resources: the list, and the updates of the URIs subscribed to (the unknown
    // one dropped from the acknowledgement).
    let filter = json!({"resourcesListChanged": true,
        "resourceSubscriptions": ["file:///motd", "file:///nowhere"]});
    let (mut resources, ack) = listen(&client, &url, 5, filter).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true, "resourceSubscriptions": ["file:///motd"]})
    );
    registry.notify_resource_updated("file:///nowhere");
    assert!(
        resources.next(QUIET).await.is_none(),
        "an update of another URI was heard"
    );
    registry.notify_resource_updated("file:///motd");
    let updated = resources.next(LIMIT).await.expect("an update");
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], "file:///motd", "{updated}");
    registry
        .register_resource(resource("file:///news"))
        .expect("a fresh URI");
    let changed = resources.next(LIMIT).await.expect("a change");
    assert_eq!(
        changed["method"], "notifications/resources/list_changed",
        "{changed}"
    );

    // Tools and something else: each part as asked.
    let filter = json!({"toolsListChanged": true, "promptsListChanged": true});
    let (mut events, ack) = listen(&client, &url, 6, filter.clone()).await;
    assert_eq!(ack["params"]["notifications"], filter);
    registry.register(tool("loud")).expect("registers");
    let changed = events.next(LIMIT).await.expect("a change");
    assert_eq!(changed["method"], LIST_CHANGED, "{changed}");
}

fn prompt(name: &str) -> toolfunc::prompt::PromptFunc {
    toolfunc::prompt::PromptFunc::builder(name)
        .handler_sync(|_, _| Ok("Say hello."))
        .build()
        .expect("a valid prompt")
}

fn resource(uri: &str) -> toolfunc::resource::ResourceFunc {
    toolfunc::resource::ResourceFunc::builder(uri, "motd")
        .handler_sync(|_, _| Ok("Hello."))
        .build()
        .expect("a valid resource")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_listens_are_invalid_params() {
    let url = serve_http(Server::new(registry()).router()).await;
    let client = http_client();
    for (id, params) in [
        (1, json!({"notifications": {"toolsListChanged": "yes"}})),
        (
            2,
            json!({"notifications": {"resourceSubscriptions": "file:///x"}}),
        ),
        (3, json!({"notifications": 5})),
    ] {
        let request = modern_request(&client, &url, id, "subscriptions/listen", params.clone());
        let answer = Answer::read(request, LIMIT).await;
        assert_eq!(
            answer.response(id)["error"]["code"],
            -32602,
            "{params}: {}",
            answer.body
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_declares_list_changed() {
    let url = serve_http(Server::new(registry()).router()).await;
    let request = modern_request(&http_client(), &url, 1, "server/discover", json!({}));
    let answer = Answer::read(request, LIMIT).await;
    let capabilities = &answer.response(1)["result"]["capabilities"];
    assert_eq!(
        capabilities["tools"]["listChanged"], true,
        "{}",
        answer.body
    );
    assert_eq!(capabilities["logging"], json!({}), "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_over_stdio_lasts_until_it_is_cancelled() {
    let registry = registry();
    let mut pipe = Pipe::spawn(Server::new(&registry));
    let listen = json!({"jsonrpc": "2.0", "id": 40, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true},
                   "_meta": mcp_support::modern_meta(Value::Null)}});
    pipe.send(&listen).await;
    let ack = pipe.try_read(LIMIT).await.expect("an acknowledgement");
    assert_eq!(ack["method"], ACKNOWLEDGED, "{ack}");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 40, "{ack}");

    registry.register(tool("second")).expect("registers");
    let changed = pipe.try_read(LIMIT).await.expect("a change");
    assert_eq!(changed["method"], LIST_CHANGED, "{changed}");
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_ID], 40, "{changed}");

    // Other requests are answered while it is open.
    let list = pipe.request_modern("tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"].as_array().map(Vec::len), Some(2));

    // Cancelled: no more changes on it.
    pipe.notify("notifications/cancelled", json!({"requestId": 40}))
        .await;
    let list = pipe.request_modern("tools/list", json!({})).await;
    assert!(list.get("result").is_some(), "{list}");
    registry.register(tool("third")).expect("registers");
    let after = pipe.drain(QUIET).await;
    assert!(with_method(&after, LIST_CHANGED).is_empty(), "{after:?}");
    pipe.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_hears_changes_on_its_get_stream_and_cannot_listen() {
    let registry = registry();
    let url = serve_http(Server::new(&registry).router()).await;
    let client = http_client();
    let post = |session: Option<&str>, message: Value| {
        let mut request = client
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("Mcp-Session-Id", session)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        Answer::read(request, LIMIT)
    };
    let init = post(
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw-test-client", "version": "0.0.1"}}}),
    )
    .await;
    let result = &init.response(1)["result"];
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    let session = init.session.clone().expect("a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(Some(&session), initialized).await.status, 202);

    let mut stream = Events::open(
        client
            .get(&url)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &session)
            .header("MCP-Protocol-Version", "2025-11-25"),
    )
    .await;
    // The watch begins with `initialized`, which the SDK handles on a task of its
    // own: register until one change is announced, then check that each is.
    let mut announced = false;
    for i in 0..20 {
        registry
            .register(tool(&format!("probe_{i}")))
            .expect("registers");
        if let Some(message) = stream.next(QUIET).await {
            assert_eq!(message["method"], LIST_CHANGED, "{message}");
            announced = true;
            break;
        }
    }
    assert!(announced, "the session never announced a change");
    stream.drain(QUIET).await;
    registry.unregister("first");
    let changed = stream.next(LIMIT).await.expect("a change");
    assert_eq!(changed["method"], LIST_CHANGED, "{changed}");
    // Not tagged: it belongs to no subscription.
    assert!(changed["params"]["_meta"].get(SUBSCRIPTION_ID).is_none());

    // `subscriptions/listen` is not a method of sessions.
    let listen = json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}}});
    let answer = post(Some(&session), listen).await;
    assert_eq!(
        answer.response(2)["error"]["code"],
        -32601,
        "{}",
        answer.body
    );
}

/// Over an authenticated endpoint a listen is acknowledged only for the resources
/// its caller may read: one needing a scope its token lacks is left out (as an
/// unknown URI is), so neither the acknowledgement nor an update tells it the
/// resource exists; a caller with the scope gets both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_names_only_resources_its_caller_may_read() {
    use toolfunc::Identity;
    use toolfunc::auth::ApiKeys;

    let registry = registry();
    registry
        .register_resource(resource("file:///motd"))
        .expect("a fresh URI");
    let secret = toolfunc::resource::ResourceFunc::builder("file:///payroll", "payroll")
        .scopes(["hr"])
        .handler_sync(|_, _| Ok("Salaries."))
        .build()
        .expect("a valid resource");
    registry.register_resource(secret).expect("a fresh URI");
    let keys = ApiKeys::new()
        .key("ann-key", Identity::new("ann"))
        .key("hr-key", Identity::new("hal").with_scopes(["hr"]));
    let url = serve_http(Server::new(&registry).authenticate(keys).router()).await;
    let filter = json!({"resourceSubscriptions": ["file:///motd", "file:///payroll"]});
    for (token, id, seen) in [
        ("ann-key", 1, json!(["file:///motd"])),
        ("hr-key", 2, json!(["file:///motd", "file:///payroll"])),
    ] {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "authorization",
            format!("Bearer {token}").parse().expect("a header"),
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .default_headers(headers)
            .build()
            .expect("a client");
        let (mut events, ack) = listen(&client, &url, id, filter.clone()).await;
        assert_eq!(
            ack["params"]["notifications"]["resourceSubscriptions"], seen,
            "{token}: {ack}"
        );
        registry.notify_resource_updated("file:///payroll");
        let heard = events.next(QUIET).await;
        if token == "ann-key" {
            assert!(heard.is_none(), "an update of a hidden resource: {heard:?}");
        } else {
            let heard = heard.expect("the update");
            assert_eq!(heard["params"]["uri"], "file:///payroll", "{heard}");
        }
    }
}
