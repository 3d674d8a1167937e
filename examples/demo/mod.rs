//! The demo catalog shared by the examples (`server`, `mcp_server`) and the tests:
//! `add`, the `greeter` service, the `users` REST resource, the streaming
//! `countdown`, `fail` and `sleep`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::Stream;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolfunc::{Ctx, ToolError, tool, tool_service};

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

/// A user record: an `id`, a `name`, and any other fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct User {
    /// The user's id.
    pub(crate) id: String,
    /// Every other field (`name`, `role`, ...).
    #[serde(flatten)]
    pub(crate) fields: Map<String, Value>,
}

/// An in-memory user store, served as a REST resource.
#[derive(Debug)]
pub(crate) struct Users {
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    next: u64,
    rows: BTreeMap<u64, Map<String, Value>>,
}

impl Default for Users {
    fn default() -> Self {
        let mut rows = BTreeMap::new();
        for (id, name) in [(1, "Alice"), (2, "Bob")] {
            let mut fields = Map::new();
            fields.insert("name".into(), Value::from(name));
            rows.insert(id, fields);
        }
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

fn user(id: u64, fields: &Map<String, Value>) -> User {
    User {
        id: id.to_string(),
        fields: fields.clone(),
    }
}

impl Users {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// User resource.
#[tool_service(name = "users")]
impl Users {
    /// Every user.
    pub(crate) fn list(&self) -> Vec<User> {
        let table = self.lock();
        table
            .rows
            .iter()
            .map(|(id, fields)| user(*id, fields))
            .collect()
    }

    /// One user by id.
    pub(crate) fn get(&self, id: String) -> Result<User, ToolError> {
        let table = self.lock();
        let n = key(&id)?;
        table
            .rows
            .get(&n)
            .map(|f| user(n, f))
            .ok_or_else(|| missing(&id))
    }

    /// Create a user from `val`; returns it with its new id.
    pub(crate) fn post(&self, val: Map<String, Value>) -> User {
        let mut table = self.lock();
        let id = table.next;
        table.next += 1;
        let mut fields = val;
        fields.remove("id");
        table.rows.insert(id, fields.clone());
        user(id, &fields)
    }

    /// Update user `id` with the fields of `val`.
    pub(crate) fn put(&self, id: String, val: Map<String, Value>) -> Result<User, ToolError> {
        let mut table = self.lock();
        let n = key(&id)?;
        let fields = table.rows.get_mut(&n).ok_or_else(|| missing(&id))?;
        for (k, v) in val {
            if k != "id" {
                fields.insert(k, v);
            }
        }
        Ok(user(n, fields))
    }

    /// Delete user `id`.
    pub(crate) fn delete(&self, id: String) -> Result<Value, ToolError> {
        let mut table = self.lock();
        let n = key(&id)?;
        table.rows.remove(&n).ok_or_else(|| missing(&id))?;
        Ok(serde_json::json!({"deleted": id}))
    }

    /// Make user `id` an admin.
    pub(crate) fn promote(&self, id: String) -> Result<User, ToolError> {
        self.put(id, Map::from_iter([("role".into(), Value::from("admin"))]))
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
#[tool]
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
    let end = start + Duration::from_millis(ms);
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
