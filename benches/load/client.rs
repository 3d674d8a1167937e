//! The load client: `clients` tasks call the three tools in turn, each answer
//! checked against what the store and the rates service hold, every HTTP request
//! timed into an HDR histogram (µs). A warm-up runs first and is not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};

use super::backend::{CURRENCIES, CartLine, PRODUCTS, Product, Rate, product, rate_of};

/// How a client reaches a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// MCP with a session per call, as the public "MCP server performance benchmark
    /// v2" does: `initialize` → `notifications/initialized` → `tools/call` →
    /// `DELETE`, and a `tools/list` session the same way, each iteration.
    Session,
    /// One sessionless (2026-07-28) MCP request per call.
    Sessionless,
    /// One toolfunc HTTP RPC request per call (`POST /api/<tool>`).
    Rpc,
}

impl Mode {
    /// Its name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Session => "session per call",
            Self::Sessionless => "sessionless",
            Self::Rpc => "HTTP RPC",
        }
    }
}

/// The protocol revision of the session mode (the latest with sessions).
const LEGACY: &str = "2025-11-25";
/// The protocol revision of sessionless requests.
const MODERN: &str = "2026-07-28";

/// What one load run measured.
pub struct Sample {
    /// HTTP requests answered in the measured window.
    pub requests: u64,
    /// Tool calls answered (and checked) in the measured window.
    pub calls: u64,
    /// Iterations that failed (a request failed, or an answer was wrong).
    pub errors: u64,
    /// The first few errors' messages.
    pub first_errors: Vec<String>,
    /// Each request's latency, µs.
    pub latency: Histogram<u64>,
    /// The measured window.
    pub secs: f64,
}

const WARM: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// One client task's tally.
struct Tally {
    latency: Histogram<u64>,
    requests: u64,
    calls: u64,
    errors: u64,
    first_errors: Vec<String>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// One request's exchange: sends it, times it, and counts it when it both started
/// and ended in the measured window.
struct Exchange<'a> {
    client: &'a reqwest::Client,
    url: &'a reqwest::Url,
    phase: &'a AtomicU8,
    tally: &'a mut Tally,
}

/// An answer: status, session header, body.
struct Reply {
    status: u16,
    session: Option<String>,
    content_type: String,
    body: Vec<u8>,
}

impl Exchange<'_> {
    async fn send(&mut self, request: reqwest::RequestBuilder) -> Result<Reply, String> {
        let measured = self.phase.load(Ordering::Relaxed) == MEASURE;
        let start = Instant::now();
        let response = request.send().await.map_err(|e| e.to_string())?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let session = header("mcp-session-id");
        let content_type = header("content-type").unwrap_or_default();
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(|e| e.to_string())?.to_vec();
        if measured && self.phase.load(Ordering::Relaxed) == MEASURE {
            let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.tally.latency.saturating_record(micros.max(1));
            self.tally.requests += 1;
        }
        Ok(Reply {
            status,
            session,
            content_type,
            body,
        })
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.post_text(body.to_string())
    }

    fn post_text(&self, body: impl Into<reqwest::Body>) -> reqwest::RequestBuilder {
        self.client
            .post(self.url.clone())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body)
    }
}

/// The JSON-RPC response with `id` in an answer: an SSE stream's `data:` lines, or
/// one JSON body; its result read as `T` (which need only name what is checked).
fn response<T: serde::de::DeserializeOwned>(reply: &Reply, id: i64) -> Result<T, String> {
    /// One message, read no further than the check needs.
    #[derive(serde::Deserialize)]
    struct Message<T> {
        #[serde(default)]
        id: Option<i64>,
        #[serde(default = "none")]
        result: Option<T>,
        #[serde(default)]
        error: Option<Value>,
    }
    fn none<T>() -> Option<T> {
        None
    }
    let text = std::str::from_utf8(&reply.body).map_err(|e| e.to_string())?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("status {}: {text}", reply.status));
    }
    let read = |data: &str| serde_json::from_str::<Message<T>>(data);
    let message = if reply.content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .filter(|data| !data.is_empty())
            .filter_map(|data| read(data).ok())
            .find(|m| m.id == Some(id))
    } else {
        Some(read(text).map_err(|e| format!("{e}: {text}"))?)
    };
    let message = message
        .filter(|m| m.id == Some(id))
        .ok_or_else(|| format!("no response {id} in {text}"))?;
    if let Some(error) = message.error {
        return Err(format!("error: {error}"));
    }
    message.result.ok_or_else(|| format!("no result in {text}"))
}

/// What a check reads of a `tools/list` result: the tools' names.
#[derive(serde::Deserialize)]
struct Listed {
    tools: Vec<Named>,
}

#[derive(serde::Deserialize)]
struct Named {
    name: String,
}

/// A `tools/call` result's value: its `structuredContent`, else its text as JSON.
fn call_value(result: &Value) -> Result<Value, String> {
    if result["isError"] == true {
        return Err(format!("tool error: {result}"));
    }
    if let Some(value) = result.get("structuredContent") {
        return Ok(value.clone());
    }
    let text = result["content"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("no text in {result}"))?;
    serde_json::from_str(text).map_err(|e| format!("{e}: {text}"))
}

/// One call of the iteration: the tool, its arguments, and a check of its answer.
struct Call {
    tool: &'static str,
    args: Value,
    check: Box<dyn Fn(Value) -> Result<(), String> + Send>,
}

fn call_for(task: usize, iteration: u64) -> Call {
    let seed = u64::try_from(task).unwrap_or(0) * 7_919 + iteration;
    match (task as u64 + iteration) % 3 {
        0 => {
            let id = u32::try_from(seed % u64::from(PRODUCTS)).unwrap_or(0);
            Call {
                tool: "get_product",
                args: json!({"id": id}),
                check: Box::new(move |value| {
                    let got: Product = serde_json::from_value(value).map_err(|e| e.to_string())?;
                    (got == product(id))
                        .then_some(())
                        .ok_or_else(|| format!("get_product {id} answered {got:?}"))
                }),
            }
        }
        1 => {
            let user = u32::try_from(task).unwrap_or(0);
            let item = u32::try_from(iteration % 50).unwrap_or(0);
            let quantity = u32::try_from(1 + iteration % 3).unwrap_or(1);
            Call {
                tool: "add_to_cart",
                args: json!({"user": user, "product": item, "quantity": quantity}),
                check: Box::new(move |value| {
                    let got: CartLine = serde_json::from_value(value).map_err(|e| e.to_string())?;
                    let right = got.user == user
                        && got.product == item
                        && got.quantity >= i64::from(quantity)
                        && got.lines >= 1;
                    right
                        .then_some(())
                        .ok_or_else(|| format!("add_to_cart answered {got:?}"))
                }),
            }
        }
        _ => {
            let currency = CURRENCIES[usize::try_from(seed).unwrap_or(0) % CURRENCIES.len()];
            Call {
                tool: "get_rate",
                args: json!({"currency": currency}),
                check: Box::new(move |value| {
                    let got: Rate = serde_json::from_value(value).map_err(|e| e.to_string())?;
                    let right = got.currency == currency
                        && (got.rate - rate_of(currency)).abs() < f64::EPSILON;
                    right
                        .then_some(())
                        .ok_or_else(|| format!("get_rate {currency} answered {got:?}"))
                }),
            }
        }
    }
}

/// The `initialize` every session of the load opens with.
const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    r#""capabilities":{},"clientInfo":{"name":"toolfunc-load","version":"1"}}}"#
);
/// The notification that ends each session's handshake.
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// One session: `initialize`, `notifications/initialized`, one request, `DELETE`;
/// the request's result.
async fn session<T: serde::de::DeserializeOwned>(
    x: &mut Exchange<'_>,
    request: String,
) -> Result<T, String> {
    let reply = x.send(x.post_text(INITIALIZE)).await?;
    response::<serde::de::IgnoredAny>(&reply, 1)?;
    let id = reply
        .session
        .ok_or_else(|| "initialize answered no session id".to_owned())?;
    let reply = x
        .send(
            x.post_text(INITIALIZED)
                .header("Mcp-Session-Id", &id)
                .header("MCP-Protocol-Version", LEGACY),
        )
        .await?;
    if !(200..300).contains(&reply.status) {
        return Err(format!(
            "notifications/initialized: status {}",
            reply.status
        ));
    }
    let reply = x
        .send(
            x.post_text(request)
                .header("Mcp-Session-Id", &id)
                .header("MCP-Protocol-Version", LEGACY),
        )
        .await?;
    let result = response(&reply, 2);
    let close = x
        .client
        .delete(x.url.clone())
        .header("Mcp-Session-Id", &id)
        .header("MCP-Protocol-Version", LEGACY);
    let reply = x.send(close).await?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("DELETE: status {}", reply.status));
    }
    result
}

/// One iteration of a task; `Ok` when every answer was right.
async fn iteration(x: &mut Exchange<'_>, mode: Mode, call: Call) -> Result<(), String> {
    let value = match mode {
        Mode::Session => {
            let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
            let listed: Listed = session(x, list.to_owned()).await?;
            for tool in ["get_product", "add_to_cart", "get_rate"] {
                if !listed.tools.iter().any(|listed| listed.name == tool) {
                    return Err(format!("tools/list lacks {tool}"));
                }
            }
            let request = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": call.tool, "arguments": call.args}});
            call_value(&session(x, request.to_string()).await?)?
        }
        Mode::Sessionless => {
            let body = json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {
                    "name": call.tool, "arguments": call.args,
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": MODERN,
                        "io.modelcontextprotocol/clientInfo":
                            {"name": "toolfunc-load", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            });
            let request = x
                .post(&body)
                .header("MCP-Protocol-Version", MODERN)
                .header("Mcp-Method", "tools/call")
                .header("Mcp-Name", call.tool);
            let reply = x.send(request).await?;
            call_value(&response::<Value>(&reply, 1)?)?
        }
        Mode::Rpc => {
            let request = x
                .client
                .post(format!(
                    "{}/{}",
                    x.url.as_str().trim_end_matches('/'),
                    call.tool
                ))
                .header("Content-Type", "application/json")
                .body(call.args.to_string());
            let reply = x.send(request).await?;
            if !(200..300).contains(&reply.status) {
                return Err(format!(
                    "status {}: {}",
                    reply.status,
                    String::from_utf8_lossy(&reply.body)
                ));
            }
            serde_json::from_slice(&reply.body).map_err(|e| e.to_string())?
        }
    };
    (call.check)(value)
}

/// A client for `clients` tasks: one connection pool, `TCP_NODELAY`.
pub fn http_client(clients: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(clients)
        .build()
        .expect("a reqwest client with plain settings")
}

/// Runs `clients` tasks against `url` for `warmup`, then for `measure` (counted),
/// calling `between` with `true` at the start of the measured window and `false`
/// at its end (to read the processes' CPU time).
pub async fn drive(
    client: &reqwest::Client,
    url: &str,
    mode: Mode,
    clients: usize,
    warmup: Duration,
    measure: Duration,
    mut between: impl FnMut(bool),
) -> Sample {
    let phase = Arc::new(AtomicU8::new(WARM));
    // Parsed once: each request takes a copy.
    let url = reqwest::Url::parse(url).expect("the server printed a URL");
    let tasks: Vec<_> = (0..clients)
        .map(|task| {
            let client = client.clone();
            let url = url.clone();
            let phase = Arc::clone(&phase);
            tokio::spawn(async move {
                let mut tally = Tally {
                    latency: histogram(),
                    requests: 0,
                    calls: 0,
                    errors: 0,
                    first_errors: Vec::new(),
                };
                let mut n = 0;
                loop {
                    let now = phase.load(Ordering::Relaxed);
                    if now == STOP {
                        break;
                    }
                    let call = call_for(task, n);
                    n += 1;
                    let mut x = Exchange {
                        client: &client,
                        url: &url,
                        phase: &phase,
                        tally: &mut tally,
                    };
                    let outcome = iteration(&mut x, mode, call).await;
                    let counted = now == MEASURE && phase.load(Ordering::Relaxed) == MEASURE;
                    match outcome {
                        Ok(()) if counted => tally.calls += 1,
                        Ok(()) => {}
                        Err(message) => {
                            // A wrong answer counts whenever it comes.
                            tally.errors += 1;
                            if tally.first_errors.len() < 3 {
                                tally.first_errors.push(message);
                            }
                        }
                    }
                }
                tally
            })
        })
        .collect();
    tokio::time::sleep(warmup).await;
    between(true);
    let start = Instant::now();
    phase.store(MEASURE, Ordering::Relaxed);
    tokio::time::sleep(measure).await;
    phase.store(STOP, Ordering::Relaxed);
    let secs = start.elapsed().as_secs_f64();
    between(false);
    let mut sample = Sample {
        requests: 0,
        calls: 0,
        errors: 0,
        first_errors: Vec::new(),
        latency: histogram(),
        secs,
    };
    for task in tasks {
        match task.await {
            Ok(tally) => {
                sample.requests += tally.requests;
                sample.calls += tally.calls;
                sample.errors += tally.errors;
                let _ = sample.latency.add(&tally.latency);
                for message in tally.first_errors {
                    if sample.first_errors.len() < 5 {
                        sample.first_errors.push(message);
                    }
                }
            }
            Err(err) => {
                sample.errors += 1;
                sample
                    .first_errors
                    .push(format!("a client task failed: {err}"));
            }
        }
    }
    sample
}
