//! One call to a worker: what its headers ask for, a slot (within the caller's
//! share), its control entry, running it in its span, and watching that its
//! caller still listens (heartbeats, probes).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service::Request;
use async_nats::{HeaderMap, RequestErrorKind};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::answer::{STREAM_IDLE, StreamLimits, respond_error, respond_value, stream};
use super::shared::{Control, Shared};
use crate::error::ToolError;
use crate::identity::Identity;
#[allow(deprecated)] // Still filled in for the code that reads it.
use crate::nats::TraceParent;
use crate::nats::share::Place;
use crate::nats::spans::process_span;
use crate::nats::wire::{
    self, CALL_ID, CALLER, CONTROL, CONTROL_KEY, HEARTBEAT, KIND, STREAM, lock,
};
use crate::options::CallOptions;
use crate::propagate;
use crate::remote::{self, Lookup, RemoteCall};
use crate::trace::TraceContext;

/// Bounds on what a caller may ask for.
const HEARTBEAT_MS: std::ops::RangeInclusive<u64> = 50..=60_000;
pub(super) const WINDOW: std::ops::RangeInclusive<u32> = 1..=1024;

/// What a call asked for in its headers.
struct Asked {
    call_id: String,
    key: Option<String>,
    timeout: Option<Duration>,
    options: CallOptions,
    heartbeat: Option<Duration>,
    window: Option<u32>,
    /// The caller's W3C trace context, if it sent one.
    trace: Option<TraceContext>,
}

/// Numbers the calls that came without an id.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn asked(
    headers: Option<&HeaderMap>,
    (worker, default_deadline): (&str, Duration),
    identity: Option<Identity>,
) -> Result<Asked, ToolError> {
    let number = |name: &str| -> Result<Option<u64>, ToolError> {
        wire::header(headers, name)
            .map(|text| {
                text.parse::<u64>().map_err(|_| {
                    ToolError::custom(
                        "INVALID_HEADER",
                        400,
                        format!("`{name}` must be a whole number, not `{text}`"),
                    )
                })
            })
            .transpose()
    };
    let mut options = wire::caller_options(headers, identity);
    let timeout = number(wire::TIMEOUT)?.map(Duration::from_millis);
    // A call that names no deadline gets the worker's (a stream ends by its own
    // idle rule): a caller that has gone without a word holds no slot for ever.
    let streams = wire::header(headers, STREAM).is_some();
    if let Some(timeout) = timeout.or((!streams).then_some(default_deadline)) {
        options = options.timeout(timeout);
    }
    if let Some(parent) = wire::header(headers, wire::TRACEPARENT) {
        #[allow(deprecated)] // Still there for the code that reads it.
        {
            options = options.insert(TraceParent(parent.to_owned()));
        }
    }
    let trace = TraceContext::read(|name| wire::header(headers, name));
    if let Some(incoming) = &trace {
        options = options.insert(incoming.clone());
    }
    let heartbeat = number(HEARTBEAT)?
        .map(|ms| Duration::from_millis(ms.clamp(*HEARTBEAT_MS.start(), *HEARTBEAT_MS.end())));
    let window = number(STREAM)?.map(|n| {
        u32::try_from(n)
            .unwrap_or(u32::MAX)
            .clamp(*WINDOW.start(), *WINDOW.end())
    });
    let call_id = wire::header(headers, CALL_ID).map_or_else(
        || {
            format!(
                "{}-{}",
                worker,
                NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )
        },
        str::to_owned,
    );
    Ok(Asked {
        call_id,
        key: wire::header(headers, CONTROL_KEY).map(str::to_owned),
        timeout,
        options,
        heartbeat,
        window,
        trace,
    })
}

/// A slot of the worker for a call of `subject` (else the caller `headers`
/// name): `OVERLOADED` (503) when the worker runs its `max_in_flight` calls,
/// `BUSY` (429) when this caller runs its share.
fn slot(
    shared: &Shared,
    subject: Option<&str>,
    headers: Option<&HeaderMap>,
) -> Result<(tokio::sync::OwnedSemaphorePermit, Place), ToolError> {
    let Ok(permit) = Arc::clone(&shared.in_flight).try_acquire_owned() else {
        return Err(ToolError::custom(
            "OVERLOADED",
            503,
            format!(
                "the worker runs {} calls already; try again or another worker",
                shared.max_in_flight
            ),
        ));
    };
    Ok((permit, caller_place(shared, subject, headers)?))
}

/// A place for a call of the caller `subject` verified, else the one its
/// `Tf-Caller` names; `BUSY` (429) when it runs its share already.
fn caller_place(
    shared: &Shared,
    subject: Option<&str>,
    headers: Option<&HeaderMap>,
) -> Result<Place, ToolError> {
    let key = match subject {
        Some(subject) => format!("sub:{subject}"),
        None => {
            wire::header(headers, CALLER).map_or_else(String::new, |label| format!("label:{label}"))
        }
    };
    shared.shares.take(&key).ok_or_else(|| {
        ToolError::custom(
            "BUSY",
            429,
            format!(
                "this caller runs {} calls on this worker already, its share; wait for one \
                 to end",
                shared.shares.max()
            ),
        )
    })
}

/// Removes a call's control entry when the call ends, however it ends.
struct Registered<'a> {
    shared: &'a Shared,
    id: String,
    control: Arc<Control>,
    heartbeat: Option<JoinHandle<()>>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Some(task) = self.heartbeat.take() {
            task.abort();
        }
        let mut calls = lock(&self.shared.calls);
        if let Some(all) = calls.get_mut(&self.id) {
            all.retain(|c| !Arc::ptr_eq(c, &self.control));
            if all.is_empty() {
                calls.remove(&self.id);
            }
        }
    }
}

pub(super) async fn handle(shared: Arc<Shared>, request: Request, tool: String) {
    // A publish with nowhere to answer, or with an answer meant for a subject that
    // is no inbox: nothing is run for it.
    let Some(reply) = shared.trust.reply(&request.message).map(str::to_owned) else {
        return;
    };
    let headers = request.message.headers.as_ref();
    if let Err(err) = shared.trust.screen(headers) {
        return respond_error(&request, &err).await;
    }
    let identity = match shared.trust.identity(headers).await {
        Ok(identity) => identity,
        Err(err) => return respond_error(&request, &err).await,
    };
    if !shared.trust.fits(&reply, identity.as_ref()) {
        return;
    }
    let subject = identity.as_ref().map(|who| who.key().to_owned());
    let asked = match asked(headers, (&shared.id, shared.default_deadline), identity) {
        Ok(asked) => asked,
        Err(err) => return respond_error(&request, &err).await,
    };
    let args = match wire::arguments(&request.message.payload) {
        Ok(args) => args,
        Err(err) => return respond_error(&request, &err).await,
    };
    // Found once, for this caller: the endpoint's tool may have gone since, or a
    // layer may hide it from this caller.
    // The act the arguments name needs its scopes too.
    let call = RemoteCall::new(&tool, Lookup::TOOL)
        .caller(&asked.options)
        .args(&args);
    let found = match remote::admit(&shared.registry, &call) {
        Ok(admitted) => admitted.found,
        Err(refused) => return respond_error(&request, &refused.into_error()).await,
    };
    let _slot = match slot(&shared, subject.as_deref(), headers) {
        Ok(slot) => slot,
        Err(err) => return respond_error(&request, &err).await,
    };
    let control = Arc::new(Control {
        cancel: CancellationToken::new(),
        credit: Semaphore::new(asked.window.unwrap_or(0) as usize),
        heard: Mutex::new(tokio::time::Instant::now()),
        key: asked.key.clone(),
        subject,
    });
    lock(&shared.calls)
        .entry(asked.call_id.clone())
        .or_default()
        .push(Arc::clone(&control));
    let heartbeat = watch_caller(&shared, asked.heartbeat, &reply, &control.cancel);
    let registered = Registered {
        shared: &shared,
        id: asked.call_id.clone(),
        control: Arc::clone(&control),
        heartbeat,
    };
    let options = asked
        .options
        .cancel_on(control.cancel.clone())
        .call_id(asked.call_id.clone());
    let span = process_span(&request.message.subject, &asked.call_id);
    propagate::adopt(&span, asked.trace.as_ref());
    let work = async {
        if asked.window.is_some() {
            let limits = StreamLimits {
                deadline: asked.timeout.map(|t| tokio::time::Instant::now() + t),
                idle: asked.heartbeat.map_or(STREAM_IDLE, |every| every * 3),
            };
            stream(
                &shared,
                (&request, &reply),
                (found, args),
                options,
                &control,
                limits,
            )
            .await;
        } else {
            match found.run(&shared.registry.with(options), args).await {
                Ok(value) => respond_value(&shared, &request, &value).await,
                Err(err) => respond_error(&request, &err).await,
            }
        }
    };
    tracing::Instrument::instrument(work, span).await;
    drop(registered);
}

/// Sends the caller a heartbeat every `every` while its call runs. Each is a
/// request that nobody answers: the server says at once when no one listens on the
/// caller's inbox any more (the caller has gone), and the call is cancelled.
fn heartbeat(
    shared: &Shared,
    reply: String,
    cancel: CancellationToken,
    every: Duration,
) -> JoinHandle<()> {
    heartbeat_with(shared, reply, cancel, every, true)
}

/// Watches whether the caller still listens while its call runs: the heartbeats
/// it asked for, else probes beside its inbox; `None` when neither can be done.
fn watch_caller(
    shared: &Shared,
    asked: Option<Duration>,
    reply: &str,
    cancel: &CancellationToken,
) -> Option<JoinHandle<()>> {
    match asked {
        Some(every) => Some(heartbeat(shared, reply.to_owned(), cancel.clone(), every)),
        // No heartbeats asked: whether the caller's inbox still listens is asked
        // of a subject beside it, which the caller ignores.
        None => shared.probe_every.and_then(|every| {
            let probe = sibling(reply)?;
            Some(heartbeat_with(shared, probe, cancel.clone(), every, false))
        }),
    }
}

/// A subject beside `reply` under the same inbox (its last token replaced):
/// a client that multiplexes its requests over one wildcard subscription
/// (`_INBOX.<id>.*`: async-nats, nats-py, the `nats` CLI) hears it and drops it as
/// no answer of its own; `None` for an inbox of one request alone (`_INBOX.<id>`),
/// which has no such subject.
fn sibling(reply: &str) -> Option<String> {
    let (inbox, last) = reply.rsplit_once('.')?;
    (inbox.contains('.') && !last.is_empty()).then(|| format!("{inbox}.tf-probe"))
}

/// Sends `to` a request every `every` while a call runs (a heartbeat the caller
/// reads when `tell` is on, an empty probe otherwise); cancels the call when the
/// server says no one listens there any more.
fn heartbeat_with(
    shared: &Shared,
    to: String,
    cancel: CancellationToken,
    every: Duration,
    tell: bool,
) -> JoinHandle<()> {
    let client = shared.client.clone();
    let control_subject = shared.control.clone();
    let reply = to;
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let mut headers = HeaderMap::new();
            if tell {
                headers.insert(KIND, wire::KIND_HEARTBEAT);
                headers.insert(CONTROL, wire::header_value(&control_subject));
            }
            let probe = async_nats::Request::new()
                .headers(headers)
                .timeout(Some(every));
            match client.send_request(reply.clone(), probe).await {
                Err(err) if err.kind() == RequestErrorKind::NoResponders => {
                    tracing::debug!("a NATS caller has gone; cancelling its call");
                    cancel.cancel();
                    return;
                }
                Err(err) if err.kind() == RequestErrorKind::TimedOut => {}
                Err(_) => return,
                Ok(_) => {}
            }
        }
    })
}
