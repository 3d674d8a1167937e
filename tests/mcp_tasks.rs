//! The MCP tasks extension (SEP-2663) on the ledger, over sessionless streamable
//! HTTP: a `background` tool past its soft deadline answers with a task, read with
//! `tasks/get`, answered with `tasks/update`, stopped with `tasks/cancel`; a task is
//! only its own client's; a client without the extension is served as before.

#[path = "support/mcp.rs"]
mod mcp_support;

use std::time::Duration;

use serde_json::{Value, json};
use toolfunc::ledger::{Ledger, TaskStatus};
use toolfunc::mcp::{RoundLimits, Server};
use toolfunc::{Ctx, Registry, ToolError, ToolFunc, layer};

use mcp_support::{Answer, LIMIT, modern_request, serve_http};

/// The capabilities of a client that takes tasks (and answers elicitations).
fn takes_tasks(name: &str) -> Value {
    json!({
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    })
}

fn registry() -> Registry {
    let registry = Registry::new();
    let tools = [
        // Works `ms` milliseconds; a task past 50 ms.
        ToolFunc::builder("work")
            .timeout(Duration::from_millis(50))
            .background(true)
            .handler(|ctx: Ctx, args: Value| async move {
                let ms = args["ms"].as_u64().unwrap_or(0);
                ctx.progress(0.0, Some(1.0), Some("working"));
                tokio::time::sleep(Duration::from_millis(ms)).await;
                if args["fail"] == true {
                    return Err(ToolError::failed("work failed, as asked"));
                }
                Ok(json!({"ms": ms}))
            })
            .build(),
        // A task at once, which asks before it answers.
        ToolFunc::builder("confirm")
            .timeout(Duration::ZERO)
            .background(true)
            .handler(|ctx: Ctx, _args: Value| async move {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
                let answer = ctx.elicit_named("ok", "Go on?", schema).await?;
                Ok(json!(format!(
                    "answered {}",
                    answer.content.unwrap_or_default()
                )))
            })
            .build(),
        // Always a task, however soon it ends; asks first, within its soft deadline.
        ToolFunc::builder("only")
            .timeout(Duration::from_secs(2))
            .background_only(true)
            .handler(|ctx: Ctx, args: Value| async move {
                if args["ask"] == true {
                    let schema =
                        json!({"type": "object", "properties": {"name": {"type": "string"}}});
                    let answer = ctx.elicit_named("name", "Who?", schema).await?;
                    let content = answer.content.unwrap_or_default();
                    return Ok(json!(format!(
                        "Hello, {}!",
                        content["name"].as_str().unwrap_or("?")
                    )));
                }
                Ok(json!("done"))
            })
            .build(),
        ToolFunc::builder("boom")
            .timeout(Duration::ZERO)
            .background_only(true)
            .handler_sync(|_ctx, _args| panic!("boom"))
            .build(),
        ToolFunc::builder("plain")
            .handler_sync(|_ctx, _args| Ok(json!("plain")))
            .build(),
        // No task: asks its caller in a round, then greets.
        ToolFunc::builder("greet")
            .handler(|ctx: Ctx, _args: Value| async move {
                let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
                let answer = ctx.elicit_named("name", "Who?", schema).await?;
                let content = answer.content.unwrap_or_default();
                Ok(json!(format!(
                    "Hello, {}!",
                    content["name"].as_str().unwrap_or("?")
                )))
            })
            .build(),
    ];
    for tool in tools {
        registry.register(tool.expect("a valid tool")).unwrap();
    }
    registry
}

struct Client {
    http: reqwest::Client,
    url: String,
    meta: Value,
    next: i64,
}

impl Client {
    fn new(url: &str, meta: Value) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            meta,
            next: 0,
        }
    }

    /// The JSON-RPC response to `method` with `params`.
    async fn send(&mut self, method: &str, mut params: Value) -> Value {
        self.next += 1;
        params["_meta"] = self.meta.clone();
        let request = modern_request(&self.http, &self.url, self.next, method, params);
        Answer::read(request, LIMIT).await.response(self.next)
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.send(method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    async fn error(&mut self, method: &str, params: Value) -> Value {
        let response = self.send(method, params).await;
        assert!(response.get("result").is_none(), "{method}: {response}");
        response["error"].clone()
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.result("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    async fn get(&mut self, task: &str) -> Value {
        self.result("tasks/get", json!({"taskId": task})).await
    }

    /// `tasks/get` until the task is in `status` (or ended).
    async fn until(&mut self, task: &str, status: &str) -> Value {
        for _ in 0..200 {
            let got = self.get(task).await;
            let now = got["status"].as_str().unwrap_or_default().to_owned();
            if now == status || ["completed", "failed", "cancelled"].contains(&now.as_str()) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("task {task} never reached {status}");
    }
}

async fn serve(server: Server) -> String {
    serve_http(server.router()).await
}

fn is_timestamp(value: &Value) -> bool {
    value.as_str().is_some_and(|t| {
        t.len() >= 20 && t.as_bytes()[4] == b'-' && t.as_bytes()[10] == b'T' && t.ends_with('Z')
    })
}

#[tokio::test]
async fn the_server_declares_the_extension_and_which_tools_take_tasks() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let found = client.result("server/discover", json!({})).await;
    assert_eq!(
        found["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let listed = client.result("tools/list", json!({})).await;
    let support = |name: &str| {
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["_meta"][toolfunc::mcp::tasks::TASK_SUPPORT_KEY].clone())
            .unwrap()
    };
    assert_eq!(support("work"), json!("optional"));
    assert_eq!(support("only"), json!("required"));
    assert_eq!(support("plain"), Value::Null);
}

#[tokio::test]
async fn a_call_past_its_soft_deadline_becomes_a_task_read_by_id() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let created = client.call("work", json!({"ms": 300})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(created["ttlMs"], 300_000);
    assert_eq!(created["pollIntervalMs"], 1000);
    assert!(is_timestamp(&created["createdAt"]), "{created}");
    assert!(is_timestamp(&created["lastUpdatedAt"]), "{created}");
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = created["taskId"].as_str().unwrap().to_owned();
    // Durable at once.
    let working = client.get(&id).await;
    assert_eq!(working["taskId"], id.as_str());
    assert_eq!(working["resultType"], "complete");
    assert_eq!(working["statusMessage"], "working");
    let done = client.until(&id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"], json!({"ms": 300}));
    assert_eq!(done["result"]["isError"], false);
    // Kept for its TTL: read again.
    assert_eq!(client.get(&id).await["status"], "completed");
}

#[tokio::test]
async fn a_call_that_ends_within_its_soft_deadline_is_answered_at_once() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let answered = client.call("work", json!({"ms": 0})).await;
    assert!(answered.get("taskId").is_none(), "{answered}");
    assert_eq!(answered["structuredContent"], json!({"ms": 0}));
    // A tool failure is a task that completed with `isError`.
    let failing = client.call("work", json!({"ms": 100, "fail": true})).await;
    let id = failing["taskId"].as_str().expect("a task").to_owned();
    let done = client.until(&id, "completed").await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["isError"], true);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("failed, as asked")
    );
}

#[tokio::test]
async fn a_client_without_the_extension_gets_no_task() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, json!({}));
    // Runs to its end in one round.
    let answered = client.call("work", json!({"ms": 120})).await;
    assert_eq!(
        answered["structuredContent"],
        json!({"ms": 120}),
        "{answered}"
    );
    // A tool that only runs as a task is refused, saying what to declare.
    let refused = client
        .error("tools/call", json!({"name": "only", "arguments": {}}))
        .await;
    assert_eq!(refused["code"], -32021, "{refused}");
    assert_eq!(
        refused["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    // And the tasks methods are not for it.
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = client.error(method, json!({"taskId": "x"})).await;
        assert_eq!(refused["code"], -32021, "{method}: {refused}");
    }
}

#[tokio::test]
async fn a_task_asks_and_is_answered_with_tasks_update() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let created = client.call("confirm", json!({})).await;
    let id = created["taskId"]
        .as_str()
        .expect("a task at once")
        .to_owned();
    let asking = client.until(&id, "input_required").await;
    assert_eq!(asking["status"], "input_required", "{asking}");
    assert_eq!(
        asking["inputRequests"]["ok"]["method"],
        "elicitation/create"
    );
    assert_eq!(asking["inputRequests"]["ok"]["params"]["message"], "Go on?");
    // A key it does not wait on, or an answer of the wrong kind, changes nothing.
    let ack = client
        .result(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"other": {"ignored": true}, "ok": {"nonsense": 1}}}),
        )
        .await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(client.get(&id).await["status"], "input_required");
    client
        .result(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}}}),
        )
        .await;
    let done = client.until(&id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "answered {\"ok\":true}"
    );
}

#[tokio::test]
async fn questions_before_the_soft_deadline_are_rounds_then_the_task() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let round = client.call("only", json!({"ask": true})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert!(round.get("taskId").is_none());
    let state = round["requestState"].as_str().expect("a state").to_owned();
    let created = client
        .result(
            "tools/call",
            json!({
                "name": "only",
                "arguments": {"ask": true},
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": state,
            }),
        )
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert!(created.get("requestState").is_none());
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = client.until(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");
    // The state was for one retry.
    let again = client
        .error(
            "tools/call",
            json!({"name": "only", "arguments": {"ask": true}, "inputResponses": {}, "requestState": state}),
        )
        .await;
    assert_eq!(again["code"], -32602, "{again}");
}

#[tokio::test]
async fn cancel_panics_and_unknown_ids() {
    let url = serve(Server::new(registry())).await;
    let mut client = Client::new(&url, takes_tasks("a"));
    let created = client.call("work", json!({"ms": 30_000})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let ack = client.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(client.until(&id, "cancelled").await["status"], "cancelled");
    // Idempotent.
    let ack = client.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack, json!({"resultType": "complete"}));

    let created = client.call("boom", json!({})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let failed = client.until(&id, "failed").await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(failed["error"]["data"]["code"], "PANICKED");
    assert!(failed.get("result").is_none());

    for method in ["tasks/get", "tasks/cancel"] {
        let unknown = client.error(method, json!({"taskId": "task-nope"})).await;
        assert_eq!(unknown["code"], -32602, "{method}: {unknown}");
    }
    let unknown = client
        .error(
            "tasks/update",
            json!({"taskId": "task-nope", "inputResponses": {}}),
        )
        .await;
    assert_eq!(unknown["code"], -32602);
    // The methods SEP-2663 removed.
    for method in ["tasks/result", "tasks/list"] {
        let gone = client.error(method, json!({"taskId": id})).await;
        assert_eq!(gone["code"], -32601, "{method}: {gone}");
    }
}

#[tokio::test]
async fn a_task_is_only_its_own_clients() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // A layer that hides `work` while `hide` is set.
    let hide = Arc::new(AtomicBool::new(false));
    let hiding = hide.clone();
    let registry = registry()
        .isolate()
        .layer(layer::visibility(move |tool, _viewer| {
            !(tool.name == "work" && hiding.load(Ordering::Relaxed))
        }));
    let ledger = Ledger::new(&registry);
    let url = serve(Server::new(&registry).ledger(ledger.clone())).await;
    let mut owner = Client::new(&url, takes_tasks("owner"));
    let created = owner.call("work", json!({"ms": 30_000})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    // The shared ledger lists it, for its caller.
    let listed = ledger.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].caller.as_deref(), Some("owner"));
    assert_eq!(listed[0].status, TaskStatus::Working);

    let mut other = Client::new(&url, takes_tasks("intruder"));
    // Exactly what an id that does not exist gets, with its id in place.
    let unknown = format!("task-{}", "0".repeat(32));
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = |task: &str| json!({"taskId": task, "inputResponses": {}});
        let refused = other.error(method, params(&id)).await;
        assert_eq!(refused["code"], -32602, "{method}: {refused}");
        let none = other.error(method, params(&unknown)).await;
        let none = serde_json::to_string(&none).unwrap().replace(&unknown, &id);
        assert_eq!(serde_json::to_string(&refused).unwrap(), none, "{method}");
    }
    // Nor can anyone list tasks.
    let listed = other.error("tasks/list", json!({})).await;
    assert_eq!(listed["code"], -32601, "{listed}");
    assert_eq!(owner.get(&id).await["status"], "working");

    // While the layers hide its tool, its own client cannot read it either.
    hide.store(true, Ordering::Relaxed);
    let refused = owner.error("tasks/get", json!({"taskId": id})).await;
    assert_eq!(refused["code"], -32602, "{refused}");
    hide.store(false, Ordering::Relaxed);

    owner.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(owner.until(&id, "cancelled").await["status"], "cancelled");
}

/// The capabilities of a 2026-07-28 client that answers elicitations (no tasks).
fn asks(name: &str) -> Value {
    json!({
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}
    })
}

/// A retry of `greet` answering its question with `name`, under `state`.
fn greet_retry(state: &str, name: &str) -> Value {
    json!({
        "name": "greet",
        "arguments": {},
        "inputResponses": {"name": {"action": "accept", "content": {"name": name}}},
        "requestState": state,
    })
}

#[tokio::test]
async fn a_request_state_is_bound_to_its_caller() {
    let url = serve(Server::new(registry())).await;
    let mut alice = Client::new(&url, asks("alice"));
    let round = alice.call("greet", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    let state = round["requestState"].as_str().expect("a state").to_owned();
    // Someone else replaying it is refused as for a forged state, and takes nothing.
    let mut mallory = Client::new(&url, asks("mallory"));
    let replayed = mallory
        .error("tools/call", greet_retry(&state, "Mallory"))
        .await;
    assert_eq!(replayed["code"], -32602, "{replayed}");
    let forged = mallory
        .error("tools/call", greet_retry("not-a-state", "Mallory"))
        .await;
    assert_eq!(replayed["message"], forged["message"]);
    // Its own caller's retry still answers it.
    let done = alice
        .result("tools/call", greet_retry(&state, "Alice"))
        .await;
    assert_eq!(done["content"][0]["text"], "Hello, Alice!", "{done}");
}

#[tokio::test]
async fn a_parked_round_past_its_lifetime_is_reaped_without_traffic() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Set when the call it lives in ends or is dropped.
    struct Ended(Arc<AtomicBool>);
    impl Drop for Ended {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("wait")
                .handler(move |ctx: Ctx, _args: Value| {
                    let guard = Ended(flag.clone());
                    async move {
                        let _guard = guard;
                        ctx.elicit("Still there?", json!({"type": "object"}))
                            .await?;
                        Ok(json!("answered"))
                    }
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    let limits = RoundLimits::default().lifetime(Duration::from_millis(200));
    let url = serve(Server::new(registry).round_limits(limits)).await;
    let mut client = Client::new(&url, asks("a"));
    let round = client.call("wait", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    let state = round["requestState"].as_str().unwrap().to_owned();
    assert!(!ended.load(Ordering::SeqCst));
    // No request comes; the round is reaped all the same, and its call ended.
    for _ in 0..100 {
        if ended.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ended.load(Ordering::SeqCst), "the parked call still runs");
    let late = client
        .error(
            "tools/call",
            json!({"name": "wait", "arguments": {}, "inputResponses": {}, "requestState": state}),
        )
        .await;
    assert_eq!(late["code"], -32602, "{late}");
}

#[tokio::test]
async fn parked_rounds_are_bounded_per_caller() {
    let limits = RoundLimits::default()
        .max_parked_per_caller(1)
        .max_caller_bytes(64);
    let url = serve(Server::new(registry()).round_limits(limits)).await;
    let mut alice = Client::new(&url, asks("alice"));
    let round = alice.call("greet", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    // Alice floods: her second parked round is refused ...
    let refused = alice
        .error("tools/call", json!({"name": "greet", "arguments": {}}))
        .await;
    assert_eq!(refused["data"]["code"], "BUSY", "{refused}");
    // ... while Bob still gets in.
    let mut bob = Client::new(&url, asks("bob"));
    let round = bob.call("greet", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    // A caller name past the cap is refused with a clear code, not kept.
    let mut long = Client::new(&url, asks(&"x".repeat(65)));
    let refused = long
        .error("tools/call", json!({"name": "greet", "arguments": {}}))
        .await;
    assert_eq!(refused["data"]["code"], "TOO_LONG", "{refused}");
}

/// A parked round counts the arguments its call holds in the byte budgets: a
/// caller whose parked calls hold large arguments is refused past its share
/// (`BUSY`), while another caller still parks its own.
#[tokio::test]
async fn the_arguments_of_a_parked_round_count_in_its_budget() {
    let limits = RoundLimits::default().max_bytes_per_caller(8 * 1024);
    let url = serve(Server::new(registry()).round_limits(limits)).await;
    let mut alice = Client::new(&url, asks("alice"));
    let big = json!({"padding": "x".repeat(10 * 1024)});
    let round = alice.call("greet", big.clone()).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
    let refused = alice
        .error("tools/call", json!({"name": "greet", "arguments": big}))
        .await;
    assert_eq!(refused["data"]["code"], "BUSY", "{refused}");
    let mut bob = Client::new(&url, asks("bob"));
    let round = bob.call("greet", json!({})).await;
    assert_eq!(round["resultType"], "input_required", "{round}");
}
