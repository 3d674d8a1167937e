//! The client's side of the wire: the reply router, one attempt of a call (its
//! reply token, control messages, heartbeats), plain and streaming calls with
//! their retries, and the items of a stream granted as they are read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::{HeaderMap, Message, StatusCode};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::builder::ClientBuilder;
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::id::random_hex;
use crate::nats::spans::{failed, send_span};
use crate::nats::wire::{
    self, AUTHORIZATION, Abort, CALL_ID, CALLER, CANCEL, CONTROL, CONTROL_KEY, CREDIT, HEARTBEAT,
    KIND, STREAM, lock,
};
use crate::propagate;
use crate::tool::ItemStream;
use crate::tool::ToolDefinition;
use crate::trace::TraceContext;

/// Calls waiting for messages, by the last token of their reply subject.
pub(super) type Pending = Arc<Mutex<HashMap<String, Slot>>>;

/// Where the router puts what comes for one attempt: answers and items into a
/// bounded channel (a worker sends no more than its credits allow), signs of life
/// into `seen`, so heartbeats never pile up behind a paused consumer.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    sender: mpsc::Sender<Message>,
    seen: Arc<Seen>,
}

/// The last sign of life of an attempt's worker, and its control subject.
#[derive(Debug)]
struct Seen {
    at: Mutex<Instant>,
    control: Mutex<Option<String>>,
}

impl Seen {
    fn touch(&self, message: &Message) {
        *lock(&self.at) = Instant::now();
        if let Some(control) = wire::header(message.headers.as_ref(), CONTROL) {
            let mut known = lock(&self.control);
            if known.as_deref() != Some(control) {
                *known = Some(control.to_owned());
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct Remote {
    pub(super) nats: async_nats::Client,
    pub(super) prefix: String,
    /// `_INBOX.<id>`: every reply comes to `<inbox>.<token>`.
    pub(super) inbox: String,
    pub(super) pending: Pending,
    /// The next reply token.
    pub(super) next: AtomicU64,
    pub(super) settings: ClientBuilder,
    pub(super) _mux: Abort,
}

pub(super) fn unreachable(what: &str, err: &dyn std::fmt::Display) -> ToolError {
    ToolError::custom("UNREACHABLE", 503, format!("NATS: cannot {what}: {err}"))
}

fn worker_lost(tool: &str, after: Duration) -> ToolError {
    ToolError::custom(
        "WORKER_LOST",
        503,
        format!(
            "the worker running `{tool}` stopped answering ({} ms without a heartbeat); the call may or may not have run",
            after.as_millis()
        ),
    )
}

/// Routes every reply to the call waiting for it.
pub(super) async fn route(mut replies: async_nats::Subscriber, skip: usize, pending: Pending) {
    while let Some(message) = replies.next().await {
        let token = message.subject.get(skip..).unwrap_or_default();
        let Some(slot) = lock(&pending).get(token).cloned() else {
            continue;
        };
        slot.seen.touch(&message);
        if wire::header(message.headers.as_ref(), KIND) == Some(wire::KIND_HEARTBEAT) {
            continue;
        }
        // Full only if a worker sends past its credits: such a message is dropped.
        let _ = slot.sender.try_send(message);
    }
}

/// Whether the tool (or the act called) has a `stream` parameter.
fn declares_stream(def: &ToolDefinition, args: &serde_json::Map<String, Value>) -> bool {
    let act = args.get("act").and_then(Value::as_str);
    let params = act
        .and_then(|a| def.act_named(a))
        .map_or(def.params.value(), |(_, a)| &a.params);
    params
        .get("properties")
        .and_then(|p| p.get("stream"))
        .is_some()
}

/// Whether a call may be run again on another worker: its tool (or act) says it
/// is idempotent.
fn idempotent(def: &ToolDefinition, args: &Value) -> bool {
    let act = args.get("act").and_then(Value::as_str);
    let act = act.and_then(|a| def.act_named(a));
    act.and_then(|(_, a)| a.annotations.idempotent)
        .or(def.annotations.idempotent)
        .unwrap_or(false)
}

/// How a wait for the next message ended.
enum Next {
    Message(Message),
    /// No worker is subscribed to the subject.
    NoResponders,
    /// No message for three heartbeats.
    Lost(Duration),
    Timeout,
}

/// One attempt of a call: its reply token and call id (both new for every attempt,
/// so a cancel or credit can only reach this attempt), its messages, and the cancel
/// it sends if it is dropped before the answer.
struct Attempt {
    remote: Arc<Remote>,
    token: String,
    call_id: String,
    /// The secret the attempt's control messages show (`Tf-Control-Key`).
    key: String,
    messages: mpsc::Receiver<Message>,
    seen: Arc<Seen>,
    armed: bool,
}

impl Attempt {
    fn open(remote: &Arc<Remote>) -> Self {
        let token = remote.next.fetch_add(1, Ordering::Relaxed).to_string();
        let (sender, messages) = mpsc::channel(remote.settings.window as usize + 8);
        let seen = Arc::new(Seen {
            at: Mutex::new(Instant::now()),
            control: Mutex::new(None),
        });
        lock(&remote.pending).insert(
            token.clone(),
            Slot {
                sender,
                seen: Arc::clone(&seen),
            },
        );
        Self {
            remote: Arc::clone(remote),
            token,
            call_id: random_hex(),
            key: random_hex(),
            messages,
            seen,
            armed: true,
        }
    }

    /// The call has its answer: nothing to cancel.
    fn disarm(&mut self) {
        self.armed = false;
    }

    fn reply(&self) -> String {
        format!("{}.{}", self.remote.inbox, self.token)
    }

    /// The next message that is not a heartbeat; `Lost` after three heartbeats
    /// with no sign of life.
    async fn next(&mut self, deadline: Option<Instant>) -> Next {
        let patience = self.remote.settings.heartbeat * 3;
        loop {
            let quiet = *lock(&self.seen.at) + patience;
            let until = deadline.map_or(quiet, |d| d.min(quiet));
            match tokio::time::timeout_at(until, self.messages.recv()).await {
                Ok(Some(message)) => {
                    if message.status == Some(StatusCode::NO_RESPONDERS) {
                        return Next::NoResponders;
                    }
                    return Next::Message(message);
                }
                // The router is gone: the client is being dropped.
                Ok(None) => return Next::Lost(patience),
                Err(_) => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now >= d) {
                        return Next::Timeout;
                    }
                    if now >= *lock(&self.seen.at) + patience {
                        return Next::Lost(patience);
                    }
                    // A heartbeat came meanwhile: wait on.
                }
            }
        }
    }

    fn control_subject(&self) -> String {
        lock(&self.seen.control)
            .clone()
            .unwrap_or_else(|| wire::control_subject(&self.remote.prefix, None))
    }

    fn control(&self, headers: HeaderMap) {
        let subject = self.control_subject();
        let nats = self.remote.nats.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = nats
                .publish_with_headers(subject, headers, bytes::Bytes::new())
                .await;
        });
    }

    /// The headers of a control message for this attempt: the call id, the
    /// secret that shows the message is the requester's, the bearer token.
    fn control_headers(&self) -> HeaderMap {
        control_headers(&self.remote, &self.call_id, &self.key)
    }

    fn credit(&self, items: u32) {
        let mut headers = self.control_headers();
        headers.insert(CREDIT, items.to_string().as_str());
        self.control(headers);
    }

    /// Tells the worker every heartbeat that the consumer is still there, for as
    /// long as the returned guard lives (a stream waiting on a slow reader).
    fn keep_alive(&self) -> Abort {
        let nats = self.remote.nats.clone();
        let every = self.remote.settings.heartbeat;
        let seen = Arc::clone(&self.seen);
        let prefix = self.remote.prefix.clone();
        let base = self.control_headers();
        Abort(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let subject = lock(&seen.control)
                    .clone()
                    .unwrap_or_else(|| wire::control_subject(&prefix, None));
                let mut headers = base.clone();
                headers.insert(CREDIT, "0");
                if nats
                    .publish_with_headers(subject, headers, bytes::Bytes::new())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }))
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        lock(&self.remote.pending).remove(&self.token);
        if self.armed {
            let mut headers = self.control_headers();
            headers.insert(CANCEL, "the caller gave up");
            self.control(headers);
        }
    }
}

/// The headers of a control message: the call id, the requester's secret, the
/// bearer token.
fn control_headers(remote: &Remote, call_id: &str, key: &str) -> HeaderMap {
    let mut headers = remote.auth_headers();
    headers.insert(CALL_ID, wire::header_value(call_id));
    headers.insert(CONTROL_KEY, wire::header_value(key));
    headers
}

impl Remote {
    /// Headers with the bearer token, when the client has one.
    pub(super) fn auth_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(token) = &self.settings.token {
            headers.insert(
                AUTHORIZATION,
                wire::header_value(&format!("Bearer {token}")),
            );
        }
        headers
    }

    /// A request to the workers (a durable submit or outcome read): its answer,
    /// or the error it carries; `NO_WORKER` when no worker takes such requests.
    pub(super) async fn ask(
        &self,
        subject: String,
        headers: HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<Message, ToolError> {
        let answer = self
            .nats
            .request_with_headers(subject, headers, payload)
            .await
            .map_err(|e| match e.kind() {
                async_nats::RequestErrorKind::NoResponders => ToolError::custom(
                    "NO_WORKER",
                    503,
                    format!("no worker takes durable calls under `{}`", self.prefix),
                ),
                _ => unreachable("reach a durable worker", &e),
            })?;
        if let Some(headers) = answer.headers.as_ref().filter(|h| wire::is_error(Some(h))) {
            return Err(wire::error_from_headers(headers, "durable"));
        }
        Ok(answer)
    }

    /// A call's deadline: its context's, else the client's default.
    fn deadline(&self, ctx: Option<&Ctx>) -> Instant {
        ctx.and_then(Ctx::deadline)
            .map_or_else(|| Instant::now() + self.settings.timeout, Instant::from_std)
    }

    pub(super) fn payload(&self, args: &Value) -> Result<bytes::Bytes, ToolError> {
        if !matches!(args, Value::Object(_) | Value::Null) {
            return Err(ToolError::arguments(
                "",
                "expected an object of named arguments",
            ));
        }
        wire::payload(&self.nats, args, "the arguments")
    }

    /// Whether a failed attempt may be followed by another: attempts left, and
    /// time before the deadline.
    fn may_try_again(&self, tries: u32, deadline: Option<Instant>) -> bool {
        tries < self.settings.attempts && deadline.is_none_or(|d| Instant::now() < d)
    }

    fn headers(
        &self,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        attempt: &Attempt,
        deadline: Option<Instant>,
    ) -> HeaderMap {
        let mut headers = control_headers(self, &attempt.call_id, &attempt.key);
        headers.insert(
            HEARTBEAT,
            self.settings.heartbeat.as_millis().to_string().as_str(),
        );
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            headers.insert(wire::TIMEOUT, left.as_millis().max(1).to_string().as_str());
        }
        if let Some(caller) = ctx.and_then(Ctx::caller) {
            headers.insert(CALLER, wire::header_value(caller));
        }
        for (field, value) in trace.into_iter().flat_map(TraceContext::entries) {
            headers.insert(field, wire::header_value(value));
        }
        headers
    }

    async fn publish(
        &self,
        tool: &str,
        attempt: &Attempt,
        headers: HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<(), ToolError> {
        self.nats
            .publish_with_reply_and_headers(
                wire::call_subject(&self.prefix, tool),
                attempt.reply(),
                headers,
                payload,
            )
            .await
            .map_err(|e| unreachable(&format!("send the call to `{tool}`"), &e))
    }

    /// A call, tried again on another worker when its worker is lost and the
    /// call is idempotent.
    pub(super) async fn call(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let span = send_span(&self.prefix, tool);
        let trace = propagate::outgoing(&span, ctx);
        let result = self.call_traced(ctx, trace.as_ref(), tool, args).await;
        failed(&span, result.as_ref().err());
        result
    }

    async fn call_traced(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let payload = self.payload(&args)?;
        let retry = ctx.is_some_and(|ctx| idempotent(ctx.definition(), &args));
        let deadline = Some(self.deadline(ctx));
        let mut tries = 0;
        loop {
            tries += 1;
            let mut attempt = Attempt::open(self);
            let headers = self.headers(ctx, trace, &attempt, deadline);
            self.publish(tool, &attempt, headers, payload.clone())
                .await?;
            match attempt.next(deadline).await {
                Next::Message(message) => {
                    attempt.armed = false;
                    let result = answer(&message, tool);
                    // A worker at its cap ran nothing: any call may go elsewhere.
                    if let Err(err) = &result
                        && err.code() == "OVERLOADED"
                        && self.may_try_again(tries, deadline)
                    {
                        tokio::time::sleep(Duration::from_millis(20 * u64::from(tries))).await;
                        continue;
                    }
                    return result;
                }
                Next::NoResponders => {
                    attempt.armed = false;
                    return Err(no_worker(tool, ctx.is_some()));
                }
                Next::Lost(after) => {
                    if retry && self.may_try_again(tries, deadline) {
                        tracing::debug!(tool, tries, "a worker was lost; trying another");
                        continue;
                    }
                    return Err(worker_lost(tool, after));
                }
                Next::Timeout => return Err(ToolError::Timeout { after_ms: None }),
            }
        }
    }

    /// A streaming call: the first message decides between an error and a stream;
    /// a worker lost before the first item of an idempotent call is replaced.
    pub(super) async fn open_stream(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        tool: &str,
        args: Value,
    ) -> Result<ItemStream, ToolError> {
        // The span covers the call up to its first answer; the items follow.
        let span = send_span(&self.prefix, tool);
        let trace = propagate::outgoing(&span, ctx);
        let opened = self
            .open_stream_traced(ctx, trace.as_ref(), tool, args)
            .await;
        failed(&span, opened.as_ref().err());
        opened
    }

    async fn open_stream_traced(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        tool: &str,
        args: Value,
    ) -> Result<ItemStream, ToolError> {
        let mut args = args;
        // A tool with a `stream` parameter streams only when asked to.
        if let Some(map) = args.as_object_mut()
            && ctx.is_some_and(|ctx| declares_stream(ctx.definition(), map))
        {
            map.insert("stream".into(), Value::Bool(true));
        }
        let payload = self.payload(&args)?;
        let retry = ctx.is_some_and(|ctx| idempotent(ctx.definition(), &args));
        let deadline = Some(self.deadline(ctx));
        let window = self.settings.window;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut attempt = Attempt::open(self);
            let mut headers = self.headers(ctx, trace, &attempt, deadline);
            headers.insert(STREAM, window.to_string().as_str());
            self.publish(tool, &attempt, headers, payload.clone())
                .await?;
            let first = match attempt.next(deadline).await {
                Next::Message(message) => message,
                Next::NoResponders => {
                    attempt.armed = false;
                    return Err(no_worker(tool, ctx.is_some()));
                }
                Next::Lost(after) => {
                    if retry && self.may_try_again(tries, deadline) {
                        continue;
                    }
                    return Err(worker_lost(tool, after));
                }
                Next::Timeout => return Err(ToolError::Timeout { after_ms: None }),
            };
            return Ok(items(attempt, first, tool.to_owned(), deadline, window));
        }
    }
}

fn no_worker(tool: &str, known: bool) -> ToolError {
    if known {
        ToolError::custom("NO_WORKER", 503, format!("no worker serves `{tool}` now"))
    } else {
        ToolError::not_found_because(tool, "no NATS worker serves a tool by this name")
    }
}

/// The answer of a plain call.
fn answer(message: &Message, tool: &str) -> Result<Value, ToolError> {
    match &message.headers {
        Some(headers) if wire::is_error(Some(headers)) => {
            Err(wire::error_from_headers(headers, tool))
        }
        _ => wire::result(&message.payload),
    }
}

/// What one message of a stream says.
enum Part {
    Item(Value),
    End,
    Failed(ToolError),
}

fn part(message: &Message, tool: &str) -> Part {
    let headers = message.headers.as_ref();
    if let Some(headers) = headers.filter(|h| wire::is_error(Some(h))) {
        return Part::Failed(wire::error_from_headers(headers, tool));
    }
    match wire::header(headers, KIND) {
        Some(wire::KIND_END) => Part::End,
        // An item, or a worker that answered with one value: the stream of it.
        _ => match wire::result(&message.payload) {
            Ok(value) => Part::Item(value),
            Err(err) => Part::Failed(err),
        },
    }
}

/// The items of a stream, granting the worker credit as they are consumed.
fn items(
    attempt: Attempt,
    first: Message,
    tool: String,
    deadline: Option<Instant>,
    window: u32,
) -> ItemStream {
    struct State {
        attempt: Attempt,
        first: Option<Message>,
        tool: String,
        deadline: Option<Instant>,
        /// Items taken since the last credit.
        taken: u32,
        batch: u32,
        done: bool,
        /// Whether the worker sent kinds (a plain answer is one item, then done).
        framed: bool,
        /// Tells the worker the consumer is alive while it reads slowly.
        _alive: Option<Abort>,
    }
    let framed = wire::header(first.headers.as_ref(), KIND).is_some()
        || wire::is_error(first.headers.as_ref());
    let alive = framed.then(|| attempt.keep_alive());
    let state = State {
        _alive: alive,
        attempt,
        first: Some(first),
        tool,
        deadline,
        taken: 0,
        batch: (window / 2).max(1),
        done: false,
        framed,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let message = match state.first.take() {
            Some(message) => message,
            None => match state.attempt.next(state.deadline).await {
                Next::Message(message) => message,
                Next::NoResponders => {
                    state.done = true;
                    state.attempt.armed = false;
                    return Some((Err(no_worker(&state.tool, true)), state));
                }
                Next::Lost(after) => {
                    state.done = true;
                    return Some((Err(worker_lost(&state.tool, after)), state));
                }
                Next::Timeout => {
                    state.done = true;
                    return Some((Err(ToolError::Timeout { after_ms: None }), state));
                }
            },
        };
        match part(&message, &state.tool) {
            Part::Item(value) => {
                if !state.framed {
                    state.done = true;
                    state.attempt.armed = false;
                    return Some((Ok(value), state));
                }
                state.taken += 1;
                if state.taken >= state.batch {
                    state.attempt.credit(state.taken);
                    state.taken = 0;
                }
                Some((Ok(value), state))
            }
            Part::End => {
                state.attempt.disarm();
                None
            }
            Part::Failed(err) => {
                state.done = true;
                state.attempt.armed = false;
                Some((Err(err), state))
            }
        }
    })
    .boxed()
}
