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
//! key made for each server and bound to the tool's name: a forged or altered state, or one
//! of another tool, is refused (`-32602`). Parked calls are kept in this server
//! process, at most [`MAX_PARKED`], each for at most [`PARK_TTL`] between rounds;
//! past that the call is cancelled and its state is refused.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{InputRequest, InputRequests, RequestStateCodec, SealOptions};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::ask::ClientRequest;
use crate::error::ToolError;

use super::report::{Monotonic, Report};
use super::shape::Shape;

/// How many calls may wait for their client's answers at once.
pub(super) const MAX_PARKED: usize = 1000;

/// How long a parked call waits for the client's next round.
pub(super) const PARK_TTL: Duration = Duration::from_secs(300);

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

struct Parked {
    held: Held,
    since: Instant,
}

/// The parked calls of one server.
pub(super) struct Rounds {
    codec: RequestStateCodec,
    parked: Mutex<HashMap<String, Parked>>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds").finish_non_exhaustive()
    }
}

/// Why a retry's state is refused.
#[derive(Clone, Copy)]
pub(super) enum Refused {
    /// Forged, altered, or of another tool.
    Integrity,
    /// Sealed by this server, but its call is gone (answered, expired).
    Gone,
    /// Too many calls are waiting already.
    Full,
}

/// A retry's `requestState` refused.
pub(super) fn refused(why: Refused) -> ErrorData {
    match why {
        Refused::Integrity => ErrorData::invalid_params(
            "requestState integrity check failed: it was not made by this server for this tool",
            None,
        ),
        Refused::Gone => ErrorData::invalid_params(
            "requestState names a call that no longer waits for input (answered, or \
             unanswered for too long)",
            None,
        ),
        Refused::Full => ErrorData::internal_error(
            "too many calls are waiting for their clients' input; try again later",
            None,
        ),
    }
}

impl Rounds {
    /// Parked calls under a fresh random key.
    pub(super) fn new() -> Self {
        let mut key = [0u8; 32];
        crate::id::random_bytes(&mut key);
        Self {
            // 32 bytes meets the codec's minimum, so `try_new` accepts it.
            codec: RequestStateCodec::try_new(key.to_vec())
                .unwrap_or_else(|_| RequestStateCodec::new_unchecked(key.to_vec())),
            parked: Mutex::new(HashMap::new()),
        }
    }

    /// Parks `running` until the client's next round; the sealed state to send.
    pub(super) fn park(&self, running: Running) -> Result<String, Refused> {
        let tool = running.tool.clone();
        self.hold(&tool, Held::Call(running))
    }

    /// Parks a tracked call of `tool` (by the name the client called) until the
    /// client's next round.
    pub(super) fn park_task(
        &self,
        tool: &str,
        parked: super::tracked::Parked,
    ) -> Result<String, Refused> {
        self.hold(tool, Held::Task(parked))
    }

    fn hold(&self, tool: &str, held: Held) -> Result<String, Refused> {
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        parked.retain(|_, p| now.saturating_duration_since(p.since) <= PARK_TTL);
        if parked.len() >= MAX_PARKED {
            return Err(Refused::Full);
        }
        let id = crate::id::random_hex();
        let state = self.codec.seal_with(
            id.as_bytes(),
            &SealOptions::new().associated_data(tool.as_bytes()),
        );
        parked.insert(id, Parked { held, since: now });
        Ok(state)
    }

    /// The call a retry of `tool` resumes, from its `requestState`.
    pub(super) fn resume(&self, tool: &str, state: &str) -> Result<Held, Refused> {
        let id = self
            .codec
            .open_with(state, tool.as_bytes())
            .map_err(|_| Refused::Integrity)?;
        let id = String::from_utf8(id).map_err(|_| Refused::Integrity)?;
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = parked.remove(&id).ok_or(Refused::Gone)?;
        if entry.since.elapsed() > PARK_TTL {
            return Err(Refused::Gone);
        }
        Ok(entry.held)
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
