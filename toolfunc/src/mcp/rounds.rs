//! Questions to a sessionless (2026-07-28) client, as input-required results
//! (SEP-2322, multi round-trip requests).
//!
//! Such a client cannot be sent a request mid-call. So a call that asks its
//! caller something ([`Ctx::elicit`](crate::Ctx::elicit), [`Ctx::sample`](crate::Ctx::sample),
//! [`Ctx::roots`](crate::Ctx::roots)) runs on in the server, parked, while the
//! `tools/call` answers `resultType: "input_required"` with the questions and a
//! `requestState`; the client's retry, with `inputResponses` and that state,
//! answers the questions and the call goes on, to its result or to the next
//! questions (with a new state).
//!
//! The state names the parked call and is sealed with HMAC-SHA256 under a random
//! key made for each server, bound to the tool's name and to the caller (the
//! verified subject, else the client's name): a forged or altered state, one of
//! another tool, or one replayed by another caller is refused alike (`-32602`), and
//! takes nothing from the call it names.
//!
//! Parked calls are kept in this server process, bounded as [`RoundLimits`] says:
//! in number and bytes, in all and per caller (past a caller's share, only that
//! caller is refused), with caller names capped; each waits at most
//! [`RoundLimits::lifetime`] between rounds, after which a timer cancels the call
//! and its state is refused, whether or not any request comes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{InputRequest, InputRequests, RequestStateCodec, SealOptions};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::options::json_size;
use crate::quota::{Holdings, too_long};

use super::report::{Monotonic, Report};
use super::shape::{Shape, error_data};

/// The bounds on calls parked between rounds, set with
/// [`Server::round_limits`](super::Server::round_limits).
///
/// | bound | default | past it |
/// | --- | --- | --- |
/// | [`max_parked`](Self::max_parked) | 1,000 calls | `-32603`, data code `BUSY` |
/// | [`max_parked_per_caller`](Self::max_parked_per_caller) | 100 calls | `-32603`, `BUSY`, for that caller |
/// | [`max_bytes`](Self::max_bytes) | 64 MiB | `-32603`, `BUSY` |
/// | [`max_bytes_per_caller`](Self::max_bytes_per_caller) | 8 MiB | `-32603`, `BUSY`, for that caller |
/// | [`max_caller_bytes`](Self::max_caller_bytes) | 256 bytes | `-32602`, data code `TOO_LONG` |
/// | [`lifetime`](Self::lifetime) | 5 minutes | the call is cancelled; its state is refused |
///
/// The bytes counted are the names, the arguments, the questions and the answers a parked call
/// keeps (the client's answers given before their questions were asked included),
/// estimated as the length of their JSON text.
///
/// ```
/// use std::time::Duration;
/// use toolfunc::Registry;
/// use toolfunc::mcp::{RoundLimits, Server};
///
/// let limits = RoundLimits::default()
///     .max_parked_per_caller(10)
///     .lifetime(Duration::from_secs(60));
/// let server = Server::new(Registry::new()).round_limits(limits);
/// # let _ = server;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoundLimits {
    /// How many calls may wait for their clients' answers at once (default 1,000).
    pub max_parked: usize,
    /// How many of them one caller's calls may be (default 100).
    pub max_parked_per_caller: usize,
    /// How many bytes the parked calls may keep, in all (default 64 MiB).
    pub max_bytes: usize,
    /// How many of those bytes one caller's parked calls may keep (default 8 MiB).
    pub max_bytes_per_caller: usize,
    /// The longest caller name a call is parked for, in bytes (default 256).
    pub max_caller_bytes: usize,
    /// How long a parked call waits for the client's next round (default 5
    /// minutes).
    pub lifetime: Duration,
}

impl Default for RoundLimits {
    fn default() -> Self {
        Self {
            max_parked: 1000,
            max_parked_per_caller: 100,
            max_bytes: 64 << 20,
            max_bytes_per_caller: 8 << 20,
            max_caller_bytes: 256,
            lifetime: Duration::from_secs(300),
        }
    }
}

impl RoundLimits {
    /// Sets [`max_parked`](Self::max_parked).
    #[must_use]
    pub fn max_parked(mut self, max: usize) -> Self {
        self.max_parked = max;
        self
    }

    /// Sets [`max_parked_per_caller`](Self::max_parked_per_caller).
    #[must_use]
    pub fn max_parked_per_caller(mut self, max: usize) -> Self {
        self.max_parked_per_caller = max;
        self
    }

    /// Sets [`max_bytes`](Self::max_bytes).
    #[must_use]
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }

    /// Sets [`max_bytes_per_caller`](Self::max_bytes_per_caller).
    #[must_use]
    pub fn max_bytes_per_caller(mut self, max: usize) -> Self {
        self.max_bytes_per_caller = max;
        self
    }

    /// Sets [`max_caller_bytes`](Self::max_caller_bytes).
    #[must_use]
    pub fn max_caller_bytes(mut self, max: usize) -> Self {
        self.max_caller_bytes = max;
        self
    }

    /// Sets [`lifetime`](Self::lifetime).
    #[must_use]
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }
}

/// A question a running call asked, and where its answer goes.
pub(super) struct Question {
    /// The name the tool gave it, which the client answers under.
    pub(super) name: Option<String>,
    pub(super) request: ClientRequest,
    pub(super) answer: oneshot::Sender<Result<Value, ToolError>>,
}

/// A call running across rounds.
pub(super) struct Running {
    pub(super) tool: String,
    /// Whose call it is: the owner key of its options.
    pub(super) owner: Option<String>,
    pub(super) outcome: Outcome,
    pub(super) questions: mpsc::UnboundedReceiver<Question>,
    pub(super) reports: mpsc::UnboundedReceiver<Report>,
    pub(super) progress: Monotonic,
    pub(super) shape: Shape,
    /// Cancels the call when it is given up on.
    pub(super) cancel: CancellationToken,
    /// The questions of the last round, by the key the client answers under.
    pub(super) pending: Vec<(String, Question)>,
    /// Answers the client gave before the questions were asked, by name.
    pub(super) answered: rmcp::model::InputResponses,
    /// The trace context of the request whose round parked it, which the request
    /// that resumes it links to (with `otel`).
    pub(super) parked_by: Option<crate::trace::TraceContext>,
    /// The size of the arguments the call holds (its JSON text, estimated).
    pub(super) args_bytes: usize,
}

impl Drop for Running {
    /// A call given up on (expired, its round failed) ends rather than waits for
    /// answers that will not come; a finished call is not affected.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A call's result still to come: the call itself, polled by the request that
/// started it, until it asks a question and must run on while it is parked.
pub(super) enum Outcome {
    /// Polled in place (no task of its own, so the common call that asks nothing
    /// pays no spawn).
    InPlace(BoxFuture<'static, Result<Value, ToolError>>),
    /// Running on as its own task, its result sent here.
    Detached(oneshot::Receiver<Result<Value, ToolError>>),
}

impl Outcome {
    /// Moves a call polled in place onto a task of its own, so that it runs on
    /// between rounds (its deadline, its other work) while no request polls it.
    pub(super) fn detach(&mut self) {
        if matches!(self, Self::Detached(_)) {
            return;
        }
        let (sent, receiver) = oneshot::channel();
        if let Self::InPlace(call) = std::mem::replace(self, Self::Detached(receiver)) {
            tokio::spawn(async move {
                let _ = sent.send(call.await);
            });
        }
    }
}

impl Future for Outcome {
    type Output = Result<Value, ToolError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Self::InPlace(call) => call.as_mut().poll(cx),
            Self::Detached(receiver) => std::pin::Pin::new(receiver).poll(cx).map(|sent| {
                sent.unwrap_or_else(|_| Err(ToolError::failed("the call ended without an answer")))
            }),
        }
    }
}

/// What waits for a client's next round.
pub(super) enum Held {
    /// A call that is no task.
    Call(Running),
    /// A tracked call, before it became a task.
    Task(super::tracked::Parked),
}

impl Held {
    /// What it counts against the byte budgets, besides its names.
    fn bytes(&self) -> usize {
        match self {
            Self::Call(running) => {
                let asked: usize = running
                    .pending
                    .iter()
                    .map(|(key, q)| key.len() + request_size(&q.request))
                    .sum();
                let answered: usize = running
                    .answered
                    .iter()
                    .map(|(key, answer)| key.len() + json_size(answer))
                    .sum();
                asked + answered + running.args_bytes
            }
            Self::Task(parked) => parked.id.len(),
        }
    }
}

/// The length of a question's JSON text, estimated.
fn request_size(request: &ClientRequest) -> usize {
    match request {
        ClientRequest::Elicit { message, schema } => message.len() + json_size(schema),
        ClientRequest::Sample(params) => json_size(params),
        ClientRequest::ListRoots => 0,
    }
}

struct Parked {
    held: Held,
    owner: Option<String>,
    since: Instant,
    /// What it counts against the byte budgets.
    bytes: usize,
}

/// The parked calls of one server, and what each caller holds of them.
#[derive(Default)]
struct Table {
    parked: HashMap<String, Parked>,
    held: Holdings,
    /// Whether a timer reaps expired calls (it stops when none is left).
    reaping: bool,
}

impl Table {
    /// Takes out the parked call `id`, giving back what it held.
    fn take(&mut self, id: &str) -> Option<Parked> {
        let parked = self.parked.remove(id)?;
        self.held.release(parked.owner.as_deref(), 1, parked.bytes);
        Some(parked)
    }

    /// Takes out every call parked longer than `lifetime`, to be dropped (which
    /// cancels them) once the lock is released.
    fn expired(&mut self, lifetime: Duration, now: Instant) -> Vec<Parked> {
        let ids: Vec<String> = self
            .parked
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.since) > lifetime)
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| self.take(id)).collect()
    }

    /// When the oldest parked call expires.
    fn next_expiry(&self, lifetime: Duration) -> Option<Instant> {
        self.parked.values().map(|p| p.since + lifetime).min()
    }
}

/// The parked calls of one server.
pub(super) struct Rounds {
    codec: RequestStateCodec,
    limits: RoundLimits,
    table: Arc<Mutex<Table>>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why a round's call is not parked, or a retry's state is refused.
#[derive(Clone)]
pub(super) enum Refused {
    /// Forged, altered, of another tool, or of another caller.
    Integrity,
    /// Sealed by this server, but its call is gone (answered, expired).
    Gone,
    /// Too many calls (or bytes) are waiting already, or this caller's share is
    /// full: the `BUSY` error that says which.
    Full(ToolError),
    /// The caller's name is longer than a parked call keeps.
    TooLong(ToolError),
}

/// A round's call not parked, or a retry's `requestState` refused.
pub(super) fn refused(why: Refused) -> ErrorData {
    match why {
        Refused::Integrity => ErrorData::invalid_params(
            "requestState integrity check failed: it was not made by this server for this \
             tool and this caller",
            None,
        ),
        Refused::Gone => ErrorData::invalid_params(
            "requestState names a call that no longer waits for input (answered, or \
             unanswered for too long)",
            None,
        ),
        Refused::Full(err) => ErrorData::internal_error(err.to_string(), Some(error_data(&err))),
        Refused::TooLong(err) => ErrorData::invalid_params(err.to_string(), Some(error_data(&err))),
    }
}

/// What a state is sealed for: the tool's name and the caller, each told apart from
/// what follows it.
fn bound_to(tool: &str, owner: Option<&str>) -> Vec<u8> {
    let mut data = Vec::with_capacity(tool.len() + owner.map_or(0, str::len) + 10);
    data.extend_from_slice(&(tool.len() as u64).to_le_bytes());
    data.extend_from_slice(tool.as_bytes());
    match owner {
        None => data.push(0),
        Some(owner) => {
            data.push(1);
            data.extend_from_slice(owner.as_bytes());
        }
    }
    data
}

impl Rounds {
    /// Parked calls under a fresh random key, bounded by `limits`.
    pub(super) fn new(limits: RoundLimits) -> Self {
        let mut key = [0u8; 32];
        crate::id::random_bytes(&mut key);
        Self {
            // 32 bytes meets the codec's minimum, so `try_new` accepts it.
            codec: RequestStateCodec::try_new(key.to_vec())
                .unwrap_or_else(|_| RequestStateCodec::new_unchecked(key.to_vec())),
            limits,
            table: Arc::default(),
        }
    }

    /// Parks `running` until its caller's next round; the sealed state to send.
    pub(super) fn park(&self, running: Running) -> Result<String, Refused> {
        let tool = running.tool.clone();
        let owner = running.owner.clone();
        self.hold(&tool, owner, Held::Call(running))
    }

    /// Parks a tracked call of `tool` (by the name the client called) for `owner`
    /// until its next round.
    pub(super) fn park_task(
        &self,
        tool: &str,
        owner: Option<&str>,
        parked: super::tracked::Parked,
    ) -> Result<String, Refused> {
        self.hold(tool, owner.map(str::to_owned), Held::Task(parked))
    }

    fn hold(&self, tool: &str, owner: Option<String>, held: Held) -> Result<String, Refused> {
        let limits = self.limits;
        if let Some(err) = owner
            .as_deref()
            .and_then(|o| too_long("caller", o, limits.max_caller_bytes))
        {
            return Err(Refused::TooLong(err));
        }
        let now = Instant::now();
        let bytes = 32 + tool.len() + owner.as_ref().map_or(0, String::len) + held.bytes();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        // Given up on at once: dropped after the lock is released.
        let expired = table.expired(limits.lifetime, now);
        if let Some(err) = full(&table.held, owner.as_deref(), limits) {
            drop(table);
            drop(expired);
            return Err(Refused::Full(err));
        }
        let id = crate::id::random_hex();
        let state = self.codec.seal_with(
            id.as_bytes(),
            &SealOptions::new().associated_data(&bound_to(tool, owner.as_deref())),
        );
        table.held.add(owner.as_deref(), 1, bytes);
        table.parked.insert(
            id,
            Parked {
                held,
                owner,
                since: now,
                bytes,
            },
        );
        if !table.reaping
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            // Outside a runtime (never, for a server) the next park reaps instead.
            table.reaping = true;
            runtime.spawn(reap(Arc::downgrade(&self.table), limits.lifetime));
        }
        drop(table);
        drop(expired);
        Ok(state)
    }

    /// The call a retry of `tool` by `owner` resumes, from its `requestState`.
    pub(super) fn resume(
        &self,
        tool: &str,
        owner: Option<&str>,
        state: &str,
    ) -> Result<Held, Refused> {
        let id = self
            .codec
            .open_with(state, &bound_to(tool, owner))
            .map_err(|_| Refused::Integrity)?;
        let id = String::from_utf8(id).map_err(|_| Refused::Integrity)?;
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = table.take(&id).ok_or(Refused::Gone)?;
        drop(table);
        if entry.since.elapsed() > self.limits.lifetime {
            return Err(Refused::Gone);
        }
        Ok(entry.held)
    }
}

/// The `BUSY` refusal of one more parked call of `owner`, if it is one too many.
fn full(held: &Holdings, owner: Option<&str>, limits: RoundLimits) -> Option<ToolError> {
    let mine = held.of(owner);
    let all = held.total();
    let (status, what) = if mine.entries >= limits.max_parked_per_caller {
        (429, format!("{} of this caller's calls", mine.entries))
    } else if mine.bytes >= limits.max_bytes_per_caller {
        (
            429,
            format!("this caller's calls, with {} bytes,", mine.bytes),
        )
    } else if all.entries >= limits.max_parked {
        (503, format!("{} calls", all.entries))
    } else if all.bytes >= limits.max_bytes {
        (503, format!("calls with {} bytes", all.bytes))
    } else {
        return None;
    };
    Some(ToolError::custom(
        "BUSY",
        status,
        format!("{what} already wait for their clients' input (the limit); try again later"),
    ))
}

/// Cancels parked calls as they pass their lifetime, with or without requests
/// coming; stops when none is left (the next park starts it again) or the rounds
/// are gone.
async fn reap(table: Weak<Mutex<Table>>, lifetime: Duration) {
    loop {
        let next = {
            let Some(table) = table.upgrade() else {
                return;
            };
            let mut table = table.lock().unwrap_or_else(PoisonError::into_inner);
            let expired = table.expired(lifetime, Instant::now());
            let next = table.next_expiry(lifetime);
            if next.is_none() {
                table.reaping = false;
            }
            drop(table);
            // Dropping a parked call cancels it.
            drop(expired);
            match next {
                Some(at) => at,
                None => return,
            }
        };
        // A moment past the expiry, so the call is past its lifetime, not at it.
        tokio::time::sleep_until((next + Duration::from_millis(1)).into()).await;
    }
}

/// The key the `n`-th question of a round is answered under.
pub(super) fn key(n: usize, request: &ClientRequest) -> String {
    format!("{}_{n}", capability(request))
}

/// The request the client gets for a question.
pub(super) fn input_request(request: &ClientRequest) -> Option<InputRequest> {
    let (method, params) = match request {
        ClientRequest::Elicit { message, schema } => (
            "elicitation/create",
            json!({"mode": "form", "message": message, "requestedSchema": schema}),
        ),
        ClientRequest::Sample(params) => ("sampling/createMessage", params.clone()),
        ClientRequest::ListRoots => ("roots/list", json!({})),
    };
    serde_json::from_value(json!({"method": method, "params": params})).ok()
}

/// Whether `answer` is an answer of the kind `request` asks for.
pub(super) fn fits(request: &ClientRequest, answer: &Value) -> bool {
    match request {
        ClientRequest::Elicit { .. } => answer
            .get("action")
            .and_then(Value::as_str)
            .is_some_and(|a| matches!(a, "accept" | "decline" | "cancel")),
        ClientRequest::Sample(_) => answer
            .get("content")
            .is_some_and(|c| c.is_object() || c.is_array()),
        ClientRequest::ListRoots => answer.get("roots").is_some_and(Value::is_array),
    }
}

/// The capability a question needs the client to have declared.
pub(super) fn capability(request: &ClientRequest) -> &'static str {
    request.capability()
}

/// The questions of a round, as the client gets them.
pub(super) fn requests(pending: &[(String, Question)]) -> InputRequests {
    pending
        .iter()
        .filter_map(|(key, q)| input_request(&q.request).map(|r| (key.clone(), r)))
        .collect()
}
