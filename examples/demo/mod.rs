//! The demo catalog shared by the examples (`server`, `mcp_server`) and the tests:
//! `add`, the `greeter` service, the `users` REST resource, the streaming
//! `countdown`, `fail`, `sleep`, and `report`, which moves to the background past
//! its 1 s soft deadline; the `review` prompt, the `demo://readme` resource and the
//! `demo://users/{id}` template.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::Stream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolfunc::complete::{Completion, CompletionRequest};
use toolfunc::prompt::PromptMessage;
use toolfunc::{Ctx, Registry, ToolError, prompt, resource, tool, tool_service};

/// The catalog in a registry of its own, with a fresh `users` store. (The global
/// registry holds the same tools, sharing one store for the whole program.)
#[allow(dead_code)] // the examples serve the global registry
pub(crate) fn catalog() -> Registry {
    let registry = Registry::new();
    for name in ["add", "countdown", "fail", "report", "sleep"] {
        if let Some(tool) = Registry::global().get(name) {
            let _ = registry.register(tool);
        }
    }
    let _ = registry.register_service(Greeter);
    let _ = registry.register_service(Users::default());
    if let Some(review) = Registry::global().get_prompt("review") {
        let _ = registry.register_prompt(review.as_ref().clone());
    }
    for uri in ["demo://readme", "demo://users/1"] {
        if let Some(resource) = Registry::global().get_resource(uri) {
            let _ = registry.register_resource(resource.as_ref().clone());
        }
    }
    registry
}

/// Ask for a review of some code.
#[prompt(title = "Code review", complete(focus = focuses))]
pub(crate) fn review(
    /// The code to review.
    code: String,
    /// What to look for: bugs, style or speed.
    focus: Option<String>,
) -> Vec<PromptMessage> {
    let focus = focus.as_deref().unwrap_or("anything");
    vec![
        PromptMessage::user(format!("Review this code, looking for {focus}:\n{code}")),
        PromptMessage::assistant("I will read it line by line."),
    ]
}

/// Completes `focus`.
fn focuses(request: &CompletionRequest) -> Completion {
    Completion::matching(["bugs", "style", "speed"], &request.value)
}

/// What this demo server offers.
#[resource(uri = "demo://readme", mime_type = "text/markdown")]
pub(crate) fn readme() -> &'static str {
    "# The toolfunc demo\n\nTools: add, greeter, users, countdown, fail, sleep, report.\n"
}

/// One user of the `users` store, as JSON.
#[resource(
    uri = "demo://users/{id}",
    mime_type = "application/json",
    name = "user"
)]
pub(crate) async fn user(ctx: &Ctx, id: String) -> Result<Value, ToolError> {
    ctx.run("users", serde_json::json!({"act": "get", "id": id}))
        .await
}

/// Add two numbers.
#[tool(alias = "plus", tags = ["math"], annotations(read_only, idempotent))]
pub(crate) fn add(
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
) -> f64 {
    a + b
}

/// Greetings and arithmetic, as a service with `$`-methods.
#[derive(Debug, Default)]
pub(crate) struct Greeter;

/// Service with $-methods.
#[tool_service(name = "greeter")]
impl Greeter {
    /// Say hello.
    pub(crate) fn hello(
        &self,
        /// Who to greet.
        name: String,
    ) -> String {
        format!("hello {name}")
    }

    /// Multiply two numbers.
    pub(crate) fn mul(&self, a: f64, b: f64) -> f64 {
        a * b
    }
}

/// A user record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct User {
    /// The user's id.
    pub(crate) id: String,
    /// The user's name.
    pub(crate) name: String,
    /// The user's role, when they have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<String>,
}

/// The fields of a new user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct NewUser {
    /// The user's name.
    pub(crate) name: String,
    /// The user's role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<String>,
}

/// Fields to change; those left out stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct UserChanges {
    /// A new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// A new role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) role: Option<String>,
}

/// An in-memory user store, served as a REST resource.
#[derive(Debug)]
pub(crate) struct Users {
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    next: u64,
    rows: BTreeMap<u64, User>,
}

impl Default for Users {
    fn default() -> Self {
        let rows = [(1, "Alice"), (2, "Bob")]
            .into_iter()
            .map(|(id, name)| {
                let user = User {
                    id: id.to_string(),
                    name: name.to_owned(),
                    role: None,
                };
                (id, user)
            })
            .collect();
        Self {
            table: Mutex::new(Table { next: 3, rows }),
        }
    }
}

fn missing(id: &str) -> ToolError {
    ToolError::custom("USER_NOT_FOUND", 404, format!("Could not find {id}."))
        .with_data(serde_json::json!({"what": id}))
}

fn key(id: &str) -> Result<u64, ToolError> {
    id.parse().map_err(|_| missing(id))
}

impl Users {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

// Behind an authenticator, its writes (`post`, `put`, `delete`, `$promote`) need
// the scope `users:write`.
/// User resource.
#[tool_service(name = "users")]
impl Users {
    /// Every user.
    pub(crate) fn list(&self) -> Vec<User> {
        self.lock().rows.values().cloned().collect()
    }

    /// One user by id.
    pub(crate) fn get(&self, id: String) -> Result<User, ToolError> {
        let n = key(&id)?;
        self.lock()
            .rows
            .get(&n)
            .cloned()
            .ok_or_else(|| missing(&id))
    }

    /// Create a user from `val`; returns it with its new id.
    #[tool(scopes = "users:write")]
    pub(crate) fn post(&self, val: NewUser) -> User {
        let mut table = self.lock();
        let id = table.next;
        table.next += 1;
        let user = User {
            id: id.to_string(),
            name: val.name,
            role: val.role,
        };
        table.rows.insert(id, user.clone());
        user
    }

    /// Update user `id` with the fields of `val`.
    #[tool(scopes = "users:write")]
    pub(crate) fn put(&self, id: String, val: UserChanges) -> Result<User, ToolError> {
        let n = key(&id)?;
        let mut table = self.lock();
        let user = table.rows.get_mut(&n).ok_or_else(|| missing(&id))?;
        if let Some(name) = val.name {
            user.name = name;
        }
        if val.role.is_some() {
            user.role = val.role;
        }
        Ok(user.clone())
    }

    /// Delete user `id`.
    #[tool(scopes = "users:write")]
    pub(crate) fn delete(&self, id: String) -> Result<Value, ToolError> {
        let n = key(&id)?;
        self.lock().rows.remove(&n).ok_or_else(|| missing(&id))?;
        Ok(serde_json::json!({"deleted": id}))
    }

    /// Make user `id` an admin.
    #[tool(scopes = "users:write")]
    pub(crate) fn promote(&self, id: String) -> Result<User, ToolError> {
        let changes = UserChanges {
            name: None,
            role: Some("admin".to_owned()),
        };
        self.put(id, changes)
    }
}

/// One tick of `countdown`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Tick {
    /// The number counted.
    pub(crate) tick: u64,
}

/// Count down from `count` to 1: one `{"tick": n}` item at a time when streamed,
/// an array otherwise.
#[tool(annotations(read_only, idempotent))]
pub(crate) fn countdown(
    /// Where to start.
    count: u64,
    /// Ask for a stream (over HTTP: an NDJSON body).
    #[serde(default)]
    stream: bool,
) -> impl Stream<Item = Tick> {
    let _ = stream;
    futures::stream::iter((1..=count).rev().map(|tick| Tick { tick }))
}

/// Always fails.
#[tool]
pub(crate) fn fail() -> Result<(), ToolError> {
    Err(ToolError::failed("boom"))
}

/// Sleep for `ms` milliseconds (cancellable), reporting progress about every 100 ms.
#[tool]
pub(crate) async fn sleep(
    ctx: &Ctx,
    /// How long, in milliseconds.
    ms: u64,
) -> Value {
    let start = tokio::time::Instant::now();
    // Past what the clock can say, it sleeps until cancelled.
    let end = start
        .checked_add(Duration::from_millis(ms))
        .unwrap_or_else(|| start + Duration::from_secs(86_400 * 365 * 30));
    loop {
        let now = tokio::time::Instant::now();
        if now >= end {
            break;
        }
        #[allow(clippy::cast_precision_loss)] // progress is approximate
        ctx.progress((now - start).as_millis() as f64, Some(ms as f64), None);
        tokio::time::sleep((end - now).min(Duration::from_millis(100))).await;
    }
    serde_json::json!({"slept": ms})
}

/// What `report` answers.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Report {
    /// How long it worked, in milliseconds.
    ms: u64,
}

/// Works for `ms` milliseconds (at most 60 s), reporting progress; fails at the
/// end when asked to. Past its 1 s soft deadline an HTTP call moves to the
/// background: the answer is `202`, and the caller polls `rpcTask/<req-id>`.
#[tool(timeout = "1s", background)]
pub(crate) async fn report(
    ctx: &Ctx,
    /// How long to work, in milliseconds (capped at 60,000).
    ms: u64,
    /// Fail at the end instead of answering.
    #[serde(default)]
    fail: bool,
) -> Result<Report, ToolError> {
    let ms = ms.min(60_000);
    let mut done = 0;
    while done < ms {
        let step = (ms - done).min(100);
        tokio::time::sleep(Duration::from_millis(step)).await;
        done += step;
        #[allow(clippy::cast_precision_loss)] // progress is approximate
        ctx.progress(done as f64, Some(ms as f64), None);
    }
    if fail {
        return Err(ToolError::custom(
            "REPORT_FAILED",
            500,
            "the report failed, as asked",
        ));
    }
    Ok(Report { ms })
}
