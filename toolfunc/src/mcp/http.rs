//! Limits around the SDK's streamable HTTP server: a cap on sessions, a lifetime for
//! sessions that never finish their handshake, an idle lifetime for the others
//! (the SDK's keep-alive), the parking of quiet sessions (their SDK session closed,
//! brought back by the SDK's session restore), the Origin check, and an `id` on
//! every JSON-RPC error.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::{FutureExt, Stream, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, InitializeRequestParams, JsonRpcMessage,
    ProtocolVersion, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState,
    SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{Transport, WorkerTransport};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::{Authenticator, web};
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::registry::Registry;
use crate::remote::{self, Lookup};

use super::direct::Direct;
use super::resting::{self, Asked, Resting};
use super::server::{Server, Session};

/// Which browser origins may call the endpoint.
#[derive(Clone, Debug)]
pub(super) enum Origins {
    /// Only these (the SDK's syntax: `scheme://host[:port|:*]`, or `null`).
    Only(Vec<String>),
    Any,
}

impl Origins {
    /// Loopback pages, on any port.
    pub(super) fn loopback() -> Self {
        let origins = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|host| ["http", "https"].map(|scheme| format!("{scheme}://{host}:*")))
            .collect();
        Self::Only(origins)
    }

    /// `config` with these origins, unless it names its own.
    pub(super) fn apply(&self, config: StreamableHttpServerConfig) -> StreamableHttpServerConfig {
        if !config.allowed_origins.is_empty() {
            return config;
        }
        match self {
            Self::Only(origins) if origins.is_empty() => config.enforce_origin_validation(),
            Self::Only(origins) => config.with_allowed_origins(origins.iter().cloned()),
            Self::Any => config,
        }
    }
}

/// The session limits of one HTTP endpoint.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) max_sessions: usize,
    /// The most sessions one caller (subject, else client label) holds at once;
    /// `None`: all but a reserve for others.
    pub(super) max_per_caller: Option<usize>,
    /// The most bytes of `initialize` parameters one session keeps.
    pub(super) initialize_bytes: usize,
    /// The most bytes of `initialize` parameters one caller's sessions keep.
    pub(super) caller_bytes: usize,
    pub(super) uninitialized_lifetime: Duration,
    pub(super) idle_lifetime: Duration,
    /// How long a session stays quiet (nothing in flight, no stream open) before
    /// its SDK session is closed and only what brings it back is kept; at or past
    /// the idle lifetime a running session ends before it would be parked.
    pub(super) park_after: Duration,
    /// Whether sessions may be at rest (this server keeps what brings them back:
    /// no session store of the caller's own).
    pub(super) parks: bool,
}

impl Limits {
    /// The most sessions one caller may hold at once.
    pub(super) fn per_caller(&self) -> usize {
        self.max_per_caller.unwrap_or_else(|| {
            let reserve = self.max_sessions * super::server::DEFAULT_SESSIONS_RESERVE_PERCENT / 100;
            self.max_sessions.saturating_sub(reserve).max(1)
        })
    }
}

/// What the serving of one HTTP request tells the session manager, and what the
/// manager and the service factory tell it back.
#[derive(Default)]
struct InRequest {
    /// The request is a `DELETE`: a session it closes is gone for good.
    deleting: bool,
    /// A session was refused (the cap).
    refused: bool,
    /// The log level of the parked session being brought back, for its new handler.
    level: Option<u8>,
    /// The handler state the service factory made during this request.
    made: Option<Weak<Session>>,
}

tokio::task_local! {
    static REQUEST: RefCell<InRequest>;
}

/// The handler `server` made for a new or returning session: given the log level
/// of the parked session it continues, and noted for the session manager.
pub(super) fn made(server: Server) -> Server {
    let _ = REQUEST.try_with(|request| {
        let mut request = request.borrow_mut();
        if let Some(level) = request.level.take() {
            server.session.log_level.store(level, Ordering::Relaxed);
        }
        request.made = Some(Arc::downgrade(&server.session));
    });
    server
}

/// What the parking of quiet sessions watches of a running one.
struct Activity {
    /// When the last message went either way, in milliseconds since
    /// [`Sessions::epoch`].
    last: AtomicU64,
    /// Requests being served, response streams open, calls not yet answered.
    busy: AtomicUsize,
    /// Cancelled when the SDK's session ends (its transport is dropped).
    ended: CancellationToken,
}

impl Activity {
    fn new(now: u64) -> Arc<Self> {
        Arc::new(Self {
            last: AtomicU64::new(now),
            busy: AtomicUsize::new(0),
            ended: CancellationToken::new(),
        })
    }

    fn touch(&self, now: u64) {
        self.last.fetch_max(now, Ordering::Relaxed);
    }

    /// One less thing in flight (never below zero: an error the server sends
    /// without a request to answer is not counted).
    fn settle(&self) {
        let _ = self
            .busy
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }
}

/// Something in flight in a session (a request being served, a stream open): the
/// session is not parked while it lasts.
struct Busy {
    activity: Arc<Activity>,
    epoch: Instant,
}

impl Busy {
    fn new(activity: &Arc<Activity>, epoch: Instant) -> Self {
        activity.busy.fetch_add(1, Ordering::Relaxed);
        activity.touch(millis(epoch));
        Self {
            activity: Arc::clone(activity),
            epoch,
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.activity.touch(millis(self.epoch));
        self.activity.settle();
    }
}

fn millis(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn duration_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How long parking waits for a closed SDK session's task to end.
const PARK_WAIT: Duration = Duration::from_secs(5);

/// The SDK's transport of one session, watched for activity: every message either
/// way counts, and a request counts as in flight until its answer is sent.
pub(super) struct Tracked {
    inner: WorkerTransport<LocalSessionWorker>,
    activity: Arc<Activity>,
    epoch: Instant,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.activity.ended.cancel();
    }
}

impl Transport<RoleServer> for Tracked {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.activity.touch(millis(self.epoch));
        if matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) {
            self.activity.settle();
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await?;
        self.activity.touch(millis(self.epoch));
        if matches!(message, JsonRpcMessage::Request(_)) {
            self.activity.busy.fetch_add(1, Ordering::Relaxed);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Where a session is in its life.
enum Life {
    /// Its SDK session runs.
    Live(Arc<Activity>),
    /// Its SDK session is being closed to park it, with its log level.
    Parking(Arc<Activity>, u8),
    /// Only what brings it back is kept: its `initialize` (in [`Entry::params`]),
    /// its log level, and when it last heard or said anything.
    Parked { last: u64, level: u8 },
}

/// One open session.
struct Entry {
    /// Whether its handshake is done.
    done: bool,
    /// Whether its SDK session is being brought back: the handshake replayed, not
    /// yet done. The SDK does not have the session until then, so a request that
    /// comes meanwhile waits for the restore instead of reaching the SDK session
    /// before its handshake.
    restoring: bool,
    life: Life,
    /// The client's `initialize`, replayed to bring the session back from parking.
    params: Option<Box<InitializeRequestParams>>,
    /// What its requests are read with while it is at rest, made on first need.
    resting: Option<Arc<Resting>>,
    /// Its calls being answered in place, each with its request id and the token
    /// that cancels it.
    calls: Vec<(u64, RequestId, CancellationToken)>,
    /// The handler state of its SDK session, while it runs.
    handler: Weak<Session>,
    /// The task that closes it if its handshake is not done in time; stopped when
    /// the handshake is done or the session goes, so no timer outlives either.
    expiry: Option<tokio::task::AbortHandle>,
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(expiry) = self.expiry.take() {
            expiry.abort();
        }
        // The session is over: so are its calls.
        for (_, _, call) in &self.calls {
            call.cancel();
        }
    }
}

/// The SDK's in-memory session manager with a cap on sessions, a deadline for the
/// `notifications/initialized` that ends each handshake, and parking: a session
/// quiet for [`Limits::park_after`] has its SDK session (channels, tasks, handler)
/// closed and keeps only its `initialize`, brought back through the SDK's session
/// restore on its next request; a parked session expires after the idle lifetime.
pub(super) struct Sessions {
    inner: LocalSessionManager,
    /// Open sessions.
    open: Mutex<Open>,
    limits: Limits,
    /// The sessions open on every endpoint of one server (what
    /// `Server::open_sessions` reads).
    count: Arc<AtomicUsize>,
    /// The zero of [`Activity::last`].
    epoch: Instant,
    /// Whether the sweeper (parking, expiry of parked sessions) runs.
    sweeping: AtomicBool,
    /// The key of the next call answered in place.
    next_call: AtomicU64,
    me: Weak<Sessions>,
}

#[derive(Default)]
struct Open {
    sessions: HashMap<SessionId, Entry>,
    /// The verified subject each session was opened by, when an authenticator
    /// guards the endpoint: only it may use the session.
    owners: HashMap<SessionId, (Box<str>, usize)>,
    /// How many open sessions each caller (the key `owners` holds) has, and the
    /// bytes of `initialize` parameters they keep.
    per_caller: HashMap<Box<str>, (usize, usize)>,
    /// Places taken by sessions being created.
    reserved: usize,
}

impl Open {
    /// Forgets whose session `id` was.
    fn disown(&mut self, id: &str) {
        if let Some((owner, bytes)) = self.owners.remove(id)
            && let Some((count, kept)) = self.per_caller.get_mut(&owner)
        {
            *count -= 1;
            *kept = kept.saturating_sub(bytes);
            if *count == 0 {
                self.per_caller.remove(&owner);
            }
        }
    }
}

impl Sessions {
    pub(super) fn new(limits: Limits, count: Arc<AtomicUsize>) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle_lifetime);
        Arc::new_cyclic(|me| Self {
            inner,
            open: Mutex::default(),
            limits,
            count,
            epoch: Instant::now(),
            sweeping: AtomicBool::new(false),
            next_call: AtomicU64::new(0),
            me: Weak::clone(me),
        })
    }

    /// The store the SDK restores parked sessions from.
    pub(super) fn store(&self) -> Arc<dyn SessionStore> {
        Arc::new(Store(Weak::clone(&self.me)))
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> u64 {
        millis(self.epoch)
    }

    fn full(&self) -> bool {
        let open = self.open();
        open.sessions.len() + open.reserved >= self.limits.max_sessions
    }

    /// Records `id` as running (`done`: its handshake is over) on `transport`.
    fn insert(
        &self,
        id: SessionId,
        done: bool,
        transport: WorkerTransport<LocalSessionWorker>,
        params: Option<Box<InitializeRequestParams>>,
    ) -> Tracked {
        let activity = Activity::new(self.now());
        let entry = Entry {
            done,
            restoring: false,
            life: Life::Live(Arc::clone(&activity)),
            params,
            resting: None,
            calls: Vec::new(),
            handler: Weak::new(),
            expiry: None,
        };
        {
            let mut open = self.open();
            match open.sessions.entry(id) {
                std::collections::hash_map::Entry::Vacant(vacant) => {
                    vacant.insert(entry);
                    self.count.fetch_add(1, Ordering::Relaxed);
                }
                // Back from parking: the handshake deadline, if any, and the calls
                // answered in place carry over.
                std::collections::hash_map::Entry::Occupied(mut occupied) => {
                    let mut entry = entry;
                    let old = occupied.get_mut();
                    entry.expiry = old.expiry.take();
                    entry.calls = std::mem::take(&mut old.calls);
                    entry.resting = old.resting.take();
                    entry.restoring = true;
                    occupied.insert(entry);
                }
            }
        }
        self.sweep_from_now();
        Tracked {
            inner: transport,
            activity,
            epoch: self.epoch,
        }
    }

    /// Forgets `id` and closes its SDK session, if it runs.
    async fn forget(&self, id: &SessionId) -> Result<(), SessionsError> {
        {
            let mut open = self.open();
            if open.sessions.remove(id).is_some() {
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
            open.disown(id);
        }
        Ok(self.inner.close_session(id).await?)
    }

    /// Marks `id` busy while a request naming it is served.
    fn pin(&self, id: &str) -> Option<Busy> {
        let open = self.open();
        match &open.sessions.get(id)?.life {
            Life::Live(activity) => Some(Busy::new(activity, self.epoch)),
            Life::Parking(..) | Life::Parked { .. } => None,
        }
    }

    /// Notes the handler state made for `id` (a new session, or one brought back).
    fn adopt(&self, id: &str, handler: Weak<Session>) {
        if let Some(entry) = self.open().sessions.get_mut(id) {
            entry.handler = handler;
        }
    }

    /// `stream` of `id`, keeping the session busy while it is open.
    fn held<S>(&self, id: &SessionId, stream: S) -> impl Stream<Item = S::Item> + use<S>
    where
        S: Stream,
    {
        let busy = match self.open().sessions.get(id).map(|entry| &entry.life) {
            Some(Life::Live(activity)) => Some(Busy::new(activity, self.epoch)),
            _ => None,
        };
        stream.map(move |item| {
            let _held = &busy;
            item
        })
    }

    /// Closes `id` if it has not finished its handshake by the deadline.
    fn expire_unless_initialized(&self, id: SessionId) {
        let me = Weak::clone(&self.me);
        let lifetime = self.limits.uninitialized_lifetime;
        let key = id.clone();
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(lifetime).await;
            let Some(sessions) = me.upgrade() else {
                return;
            };
            let pending = match sessions.open().sessions.get_mut(&id) {
                Some(entry) if !entry.done => {
                    // This task closes it: forgetting the entry must not stop it.
                    entry.expiry = None;
                    true
                }
                _ => false,
            };
            if pending {
                tracing::debug!(session = %id, "MCP: closing a session that never finished initializing");
                let _ = sessions.forget(&id).await;
            }
        });
        match self.open().sessions.get_mut(&key) {
            Some(entry) if !entry.done => entry.expiry = Some(expiry.abort_handle()),
            // Done or gone already: nothing to wait for.
            _ => expiry.abort(),
        }
    }

    /// Starts the sweeper, once: it parks quiet sessions and ends parked ones past
    /// the idle lifetime.
    fn sweep_from_now(&self) {
        if !self.limits.parks || self.sweeping.swap(true, Ordering::Relaxed) {
            return;
        }
        let me = Weak::clone(&self.me);
        let tick = (self
            .limits
            .park_after
            .min(self.limits.idle_lifetime)
            .min(self.limits.uninitialized_lifetime)
            / 4)
        .clamp(Duration::from_millis(20), Duration::from_secs(5));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(tick).await;
                let Some(sessions) = me.upgrade() else {
                    return;
                };
                sessions.sweep().await;
            }
        });
    }

    async fn sweep(&self) {
        let now = self.now();
        let park_after = duration_millis(self.limits.park_after);
        let idle = duration_millis(self.limits.idle_lifetime);
        let handshake = duration_millis(self.limits.uninitialized_lifetime);
        // A running session quiet past the idle lifetime ends (the SDK's
        // keep-alive) before it would be parked.
        let parks_running = park_after < idle;
        let mut parking = Vec::new();
        {
            let mut open = self.open();
            let mut expired = Vec::new();
            for (id, entry) in &mut open.sessions {
                match &entry.life {
                    Life::Live(activity)
                        if parks_running
                            && entry.params.is_some()
                            && activity.busy.load(Ordering::Relaxed) == 0
                            && now.saturating_sub(activity.last.load(Ordering::Relaxed))
                                >= park_after =>
                    {
                        let level = entry
                            .handler
                            .upgrade()
                            .map_or(0, |handler| handler.log_level.load(Ordering::Relaxed));
                        let activity = Arc::clone(activity);
                        entry.life = Life::Parking(Arc::clone(&activity), level);
                        parking.push((id.clone(), activity));
                    }
                    // A session at rest with a call running stays; one that
                    // never finished its handshake goes sooner.
                    Life::Parked { last, .. }
                        if entry.calls.is_empty()
                            && now.saturating_sub(*last)
                                >= if entry.done { idle } else { handshake } =>
                    {
                        expired.push(id.clone());
                    }
                    _ => {}
                }
            }
            for id in &expired {
                open.sessions.remove(id);
                open.disown(id);
                self.count.fetch_sub(1, Ordering::Relaxed);
                tracing::debug!(session = %id, "MCP: a parked session expired");
            }
        }
        // All at once: each waits for its SDK session's task to end.
        let parked = parking.into_iter().map(|(id, activity)| async move {
            tracing::debug!(session = %id, "MCP: parking a quiet session");
            let _ = self.inner.close_session(&id).await;
            let _ = tokio::time::timeout(PARK_WAIT, activity.ended.cancelled()).await;
            self.parked(&id, &activity);
        });
        futures::future::join_all(parked).await;
    }

    /// Records `id`, whose SDK session ran on `activity`, as parked.
    fn parked(&self, id: &str, activity: &Arc<Activity>) {
        if let Some(entry) = self.open().sessions.get_mut(id)
            && let Life::Parking(parking, level) = &entry.life
            && Arc::ptr_eq(parking, activity)
        {
            entry.life = Life::Parked {
                last: activity.last.load(Ordering::Relaxed),
                level: *level,
            };
            entry.handler = Weak::new();
        }
    }

    /// Whether sessions may rest (be served without an SDK session), whatever the
    /// idle lifetime: the server keeps what brings a session back.
    pub(super) fn rest(&self) -> bool {
        self.limits.parks
    }

    /// Opens a session at rest for a plain `initialize`: its id, or `None` at the
    /// cap. Its handshake is done when the client says `initialized`, and it ends
    /// unless that comes within the handshake lifetime.
    fn open_resting(&self, params: InitializeRequestParams, resting: Resting) -> Option<SessionId> {
        let id = SessionId::from(crate::id::random_hex());
        {
            let mut open = self.open();
            if open.sessions.len() + open.reserved >= self.limits.max_sessions {
                return None;
            }
            let entry = Entry {
                done: false,
                restoring: false,
                life: Life::Parked {
                    last: self.now(),
                    level: 0,
                },
                params: Some(Box::new(params)),
                resting: Some(Arc::new(resting)),
                calls: Vec::new(),
                handler: Weak::new(),
                expiry: None,
            };
            open.sessions.insert(id.clone(), entry);
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        self.sweep_from_now();
        Some(id)
    }

    /// Session `id`, when it is at rest: what its requests are read with (made by
    /// `make` on first need) and its log level. It was last active now.
    fn resting(
        &self,
        id: &str,
        make: impl FnOnce(&InitializeRequestParams) -> Option<Resting>,
    ) -> Option<(Arc<Resting>, u8)> {
        let now = self.now();
        let mut open = self.open();
        let entry = open.sessions.get_mut(id)?;
        let Life::Parked { last, level } = &mut entry.life else {
            return None;
        };
        *last = (*last).max(now);
        let level = *level;
        if entry.resting.is_none() {
            entry.resting = Some(Arc::new(make(entry.params.as_deref()?)?));
        }
        Some((Arc::clone(entry.resting.as_ref()?), level))
    }

    /// Whether session `id` is at rest.
    fn is_resting(&self, id: &str) -> bool {
        matches!(
            self.open().sessions.get(id).map(|entry| &entry.life),
            Some(Life::Parked { .. })
        )
    }

    /// Notes what a session at rest said: its handshake is done, or a call of it
    /// answered in place is cancelled.
    fn heard(&self, id: &str, asked: &Asked) {
        let mut open = self.open();
        let Some(entry) = open.sessions.get_mut(id) else {
            return;
        };
        match asked {
            Asked::Initialized => entry.done = true,
            Asked::Cancelled(request) => {
                for (_, _, call) in entry.calls.iter().filter(|(_, r, _)| r == request) {
                    call.cancel();
                }
            }
            Asked::Request(..) => {}
        }
    }

    /// Call `request` of session `id`, answered in place: the token that cancels
    /// it, and what keeps it known to the session until dropped.
    fn calling(self: &Arc<Self>, id: &str, request: &RequestId) -> (CancellationToken, Calling) {
        let token = CancellationToken::new();
        let key = self.next_call.fetch_add(1, Ordering::Relaxed);
        let session = {
            let mut open = self.open();
            let session = open
                .sessions
                .get_key_value(id)
                .map(|(session, _)| session.clone());
            if let Some(entry) = open.sessions.get_mut(id) {
                entry.calls.push((key, request.clone(), token.clone()));
            }
            session
        };
        let calling = Calling {
            sessions: Arc::downgrade(self),
            session,
            key,
        };
        (token, calling)
    }

    /// The `initialize` of parked `id` to bring it back with, once its SDK session
    /// is closed; `None` unless it is parked. Its log level goes to the new handler.
    async fn load(&self, id: &str) -> Option<InitializeRequestParams> {
        let parking = match &self.open().sessions.get(id)?.life {
            Life::Live(_) => return None,
            Life::Parking(activity, _) => Some(Arc::clone(activity)),
            Life::Parked { .. } => None,
        };
        if let Some(activity) = parking {
            let _ = tokio::time::timeout(PARK_WAIT, activity.ended.cancelled()).await;
            self.parked(id, &activity);
        }
        let (params, level) = {
            let open = self.open();
            let entry = open.sessions.get(id)?;
            let Life::Parked { level, .. } = entry.life else {
                return None;
            };
            (entry.params.as_deref().cloned()?, level)
        };
        let _ = REQUEST.try_with(|request| request.borrow_mut().level = Some(level));
        Some(params)
    }
}

/// Where the SDK finds what brings a parked session back.
struct Store(Weak<Sessions>);

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

// The trait is declared with `async_trait`; these are its methods written out.
impl SessionStore for Store {
    fn load<'a, 'b, 'c>(&'a self, session_id: &'b str) -> StoreFuture<'c, Option<SessionState>>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        Box::pin(async move {
            let Some(sessions) = self.0.upgrade() else {
                return Ok(None);
            };
            Ok(sessions.load(session_id).await.map(SessionState::new))
        })
    }

    fn store<'a, 'b, 'c, 'd>(
        &'a self,
        session_id: &'b str,
        state: &'c SessionState,
    ) -> StoreFuture<'d, ()>
    where
        'a: 'd,
        'b: 'd,
        'c: 'd,
        Self: 'd,
    {
        if let Some(sessions) = self.0.upgrade()
            && let Some(entry) = sessions.open().sessions.get_mut(session_id)
        {
            entry.params = Some(Box::new(state.initialize_params.clone()));
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn delete<'a, 'b, 'c>(&'a self, _session_id: &'b str) -> StoreFuture<'c, ()>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        // `close_session` has forgotten it already.
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A call of a session at rest, answered in place: known to the session (which
/// stays, and can cancel it) until this is dropped.
pub(super) struct Calling {
    sessions: Weak<Sessions>,
    session: Option<SessionId>,
    key: u64,
}

impl Drop for Calling {
    fn drop(&mut self) {
        let (Some(sessions), Some(session)) = (self.sessions.upgrade(), &self.session) else {
            return;
        };
        let now = sessions.now();
        if let Some(entry) = sessions.open().sessions.get_mut(session) {
            entry.calls.retain(|(key, _, _)| *key != self.key);
            if let Life::Parked { last, .. } = &mut entry.life {
                *last = (*last).max(now);
            }
        }
    }
}

/// A place reserved for a session being created; given back unless kept.
struct Reservation<'a>(&'a Sessions);

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.0.open().reserved -= 1;
    }
}

#[derive(Debug)]
pub(super) enum SessionsError {
    Full(usize),
    Local(LocalSessionManagerError),
}

impl std::fmt::Display for SessionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(max) => write!(f, "the server has its limit of {max} sessions open"),
            Self::Local(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for SessionsError {}

impl From<LocalSessionManagerError> for SessionsError {
    fn from(err: LocalSessionManagerError) -> Self {
        Self::Local(err)
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = Tracked;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let reservation = {
            let mut open = self.open();
            if open.sessions.len() + open.reserved >= self.limits.max_sessions {
                drop(open);
                let _ = REQUEST.try_with(|request| request.borrow_mut().refused = true);
                return Err(SessionsError::Full(self.limits.max_sessions));
            }
            open.reserved += 1;
            Reservation(self)
        };
        let (id, transport) = self.inner.create_session().await?;
        let transport = self.insert(id.clone(), false, transport, None);
        drop(reservation);
        self.expire_unless_initialized(id.clone());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        // A parked session is not in the SDK's store: the SDK brings it back (and a
        // request that comes while it does waits for it).
        let live = matches!(
            self.open().sessions.get(id),
            Some(Entry {
                life: Life::Live(_),
                restoring: false,
                ..
            })
        );
        Ok(live && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let deleting = REQUEST
            .try_with(|request| request.borrow().deleting)
            .unwrap_or(false);
        if deleting {
            return self.forget(id).await;
        }
        // The SDK's session ended on its own (idle, or its transport failed), or
        // was closed to be parked, or is an earlier run of a session since brought
        // back: only the first is the end of the session.
        let ended = matches!(
            self.open().sessions.get(id).map(|entry| &entry.life),
            Some(Life::Live(activity)) if activity.ended.is_cancelled()
        );
        if ended {
            return self.forget(id).await;
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.held(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let initialized = matches!(
            &message,
            JsonRpcMessage::Notification(notification)
                if matches!(notification.notification, ClientNotification::InitializedNotification(_))
        );
        if !initialized {
            return Ok(self.inner.accept_message(id, message).await?);
        }
        let restoring = {
            let mut open = self.open();
            open.sessions.get_mut(id).is_some_and(|entry| {
                entry.done = true;
                if let Some(expiry) = entry.expiry.take() {
                    expiry.abort();
                }
                entry.restoring
            })
        };
        self.inner.accept_message(id, message).await?;
        // Queued after the replayed `initialize`: what comes next is served after
        // the handshake.
        if restoring && let Some(entry) = self.open().sessions.get_mut(id) {
            entry.restoring = false;
        }
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.held(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.held(id, stream))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let (params, done) = {
            let open = self.open();
            match open.sessions.get(&id) {
                Some(
                    entry @ Entry {
                        life: Life::Parked { .. },
                        ..
                    },
                ) => (entry.params.clone(), entry.done),
                _ => return Ok(RestoreOutcome::NotSupported),
            }
        };
        Ok(match self.inner.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(transport) => {
                tracing::debug!(session = %id, "MCP: a parked session is back");
                RestoreOutcome::Restored(self.insert(id, done, transport, params))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// What the middleware in front of the SDK's service needs.
#[derive(Clone)]
pub(super) struct Guard {
    pub(super) sessions: Arc<Sessions>,
    pub(super) max_body: usize,
    /// Verifies every request's bearer token, when set.
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    /// The resource URI of the endpoint, when set.
    pub(super) resource: Option<String>,
    /// Where the endpoint is mounted, when known (the request's path otherwise).
    pub(super) path: Option<&'static str>,
    /// The tools served, for the scopes a call needs.
    pub(super) registry: Registry,
    /// Whether the server is in search mode: a `call_tool` is judged by the
    /// function it names.
    pub(super) search_mode: bool,
}

impl Guard {
    /// The identity of the request, or the 401 that refuses it; and whether the
    /// session it names belongs to someone else (answered as an unknown session).
    async fn authenticate(&self, request: &mut Request) -> Result<Option<Identity>, Response> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        let (parts, body) = std::mem::take(request).into_parts();
        let resource = || {
            let path = self.path.unwrap_or_else(|| parts.uri.path());
            web::resource(
                self.resource.as_deref(),
                authenticator.as_ref(),
                &parts.headers,
                path,
            )
        };
        let identity = web::check(authenticator.as_ref(), &parts, resource, |err| {
            json_response(
                StatusCode::from_u16(err.status()).unwrap_or(StatusCode::UNAUTHORIZED),
                &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": err.to_string()}}),
            )
        })
        .await?;
        if let Some(id) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            let open = self.sessions.open();
            if open
                .owners
                .get(id)
                .is_some_and(|(owner, _)| **owner != *identity.key())
            {
                return Err(json_response(
                    StatusCode::NOT_FOUND,
                    &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "Session not found"}}),
                ));
            }
        }
        let mut parts = parts;
        parts.extensions.insert(identity.clone());
        *request = Request::from_parts(parts, body);
        Ok(Some(identity))
    }

    /// `request`, its body read when it may be a `subscriptions/listen` that names
    /// resources its caller may not see (there are layers or scoped resources), and
    /// those left out ([`narrow_listen`](Self::narrow_listen)).
    async fn narrowed(
        &self,
        request: Request,
        identity: Option<&Identity>,
    ) -> Result<Request, Response> {
        if request.method() != Method::POST
            || !(self.registry.has_layers()
                || identity.is_some() && remote::any_scoped(&self.registry))
        {
            return Ok(request);
        }
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Err(too_large(self.max_body));
        };
        let bytes = self
            .narrow_listen(&parts, identity, &bytes)
            .map_or(bytes, axum::body::Bytes::from);
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }

    /// `request`, and when it is an `initialize` (a POST naming no session, and
    /// no sessionless method) the caller it opens a session for with the bytes of
    /// its parameters; or the refusal of one ([`opener`](Self::opener)).
    async fn screen_initialize(
        &self,
        request: Request,
        identity: Option<&Identity>,
    ) -> Result<(Request, Option<(Box<str>, usize)>), Response> {
        let maybe = request.method() == Method::POST
            && !request.headers().contains_key("mcp-session-id")
            && request
                .headers()
                .get("mcp-method")
                .is_none_or(|method| method == "initialize");
        if !maybe {
            return Ok((request, None));
        }
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, self.max_body).await else {
            return Err(too_large(self.max_body));
        };
        let opener = match self.opener(identity, &bytes) {
            Some(Opener::Refused(refusal)) => return Err(refusal),
            Some(Opener::Opens(key, size)) => Some((key, size)),
            None => None,
        };
        Ok((Request::from_parts(parts, Body::from(bytes)), opener))
    }

    /// The body of a `subscriptions/listen` in `body` with the resources its
    /// caller may not see (hidden by layers, or needing scopes its token lacks)
    /// left out of `resourceSubscriptions`, so the acknowledgement names none of
    /// them and no update of theirs is sent; `None` when there is nothing to leave
    /// out (or it is no listen).
    fn narrow_listen(
        &self,
        parts: &Parts,
        identity: Option<&Identity>,
        body: &[u8],
    ) -> Option<Vec<u8>> {
        const LISTEN: &[u8] = b"subscriptions/listen";
        if !body.windows(LISTEN.len()).any(|w| w == LISTEN) {
            return None;
        }
        let mut message: Value = serde_json::from_slice(body).ok()?;
        if message.get("method").and_then(Value::as_str) != Some("subscriptions/listen") {
            return None;
        }
        let mut options = CallOptions::new().surface(Surface::Mcp);
        if let Some(identity) = identity {
            options = options.identity(identity.clone());
        }
        if self.registry.has_layers() {
            options = options.insert(parts.headers.clone());
        }
        let uris = message
            .pointer_mut("/params/notifications/resourceSubscriptions")?
            .as_array_mut()?;
        let before = uris.len();
        uris.retain(|uri| {
            uri.as_str().is_some_and(|uri| {
                remote::find_resource(&self.registry, uri, Some(&options)).is_ok()
            })
        });
        (uris.len() != before).then(|| serde_json::to_vec(&message).unwrap_or_default())
    }

    /// The 403 refusing a `tools/call` in `body` whose tool needs scopes the
    /// caller's token lacks (the MCP specification's step-up: the challenge names
    /// them), or nothing.
    fn lacks_scopes(&self, parts: &Parts, identity: &Identity, body: &[u8]) -> Option<Response> {
        let message: Value = serde_json::from_slice(body).ok()?;
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let mut name = message.pointer("/params/name").and_then(Value::as_str)?;
        if self.search_mode && name == super::search::CALL_TOOL {
            name = message
                .pointer("/params/arguments/name")
                .and_then(Value::as_str)?;
        }
        let mut options = CallOptions::new()
            .surface(Surface::Mcp)
            .identity(identity.clone());
        if self.registry.has_layers() {
            options = options.insert(parts.headers.clone());
        }
        let err = remote::find(&self.registry, name, Lookup::FUNCTION, Some(&options)).err()?;
        if err.code() != remote::INSUFFICIENT_SCOPE {
            return None;
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32003,
            "message": err.to_string(),
            "data": {"code": err.code(), "scope": err.data().and_then(|d| d.get("scope").cloned())},
        }});
        let authenticator = self.authenticator.as_ref()?;
        Some(web::with_scope_challenge(
            json_response(StatusCode::FORBIDDEN, &body),
            &err,
            || {
                let path = self.path.unwrap_or_else(|| parts.uri.path());
                web::metadata_url(&web::resource(
                    self.resource.as_deref(),
                    authenticator.as_ref(),
                    &parts.headers,
                    path,
                ))
            },
        ))
    }

    /// Records who opened the session a response names, if it is a new one.
    /// Records whose the session a response names is, if it is a new one:
    /// `caller`, the verified subject (else the client's label) that opened it.
    fn own(&self, response: &Response, caller: Option<&(Box<str>, usize)>) {
        let (Some((caller, bytes)), Some(id)) = (
            caller,
            response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok()),
        ) else {
            return;
        };
        let mut open = self.sessions.open();
        let known = open
            .sessions
            .get_key_value(id)
            .map(|(s, _)| SessionId::clone(s));
        if let Some(session) = known
            && !open.owners.contains_key(&session)
        {
            open.owners.insert(session, (caller.clone(), *bytes));
            let held = open.per_caller.entry(caller.clone()).or_default();
            held.0 += 1;
            held.1 += bytes;
        }
    }

    /// The caller an `initialize` in `body` opens a session for, and whether it
    /// holds its share of sessions already: the verified subject, else the
    /// client's label (`clientInfo.name`, at most 256 bytes of it); `None` when
    /// `body` is no `initialize`.
    fn opener(&self, identity: Option<&Identity>, body: &[u8]) -> Option<Opener> {
        #[derive(serde::Deserialize)]
        struct Init<'a> {
            #[serde(borrow)]
            method: std::borrow::Cow<'a, str>,
            #[serde(default)]
            id: Value,
            // Walked, not kept: the body's size bounds it first.
            #[serde(default)]
            params: Option<serde::de::IgnoredAny>,
        }
        let init: Init<'_> = serde_json::from_slice(body).ok()?;
        if init.method != "initialize" {
            return None;
        }
        let _ = init.params;
        let limits = &self.sessions.limits;
        // What a session keeps of it is at most what came: the body, less its
        // envelope.
        let size = body.len();
        if size > limits.initialize_bytes.saturating_add(ENVELOPE) {
            let why = format!(
                "the initialize request is {size} bytes; a session keeps at most {} of its \
                 parameters",
                limits.initialize_bytes
            );
            return Some(Opener::Refused(refused_params(&init.id, &why)));
        }
        let whole: Value = serde_json::from_slice(body).ok()?;
        let params = whole.get("params").unwrap_or(&Value::Null);
        if let Some(why) = oversized(params) {
            return Some(Opener::Refused(refused_params(&init.id, &why)));
        }
        let key: Box<str> = if let Some(identity) = identity {
            identity.key().into()
        } else {
            let mut label = params
                .pointer("/clientInfo/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if label.len() > 256 {
                let mut end = 256;
                while !label.is_char_boundary(end) {
                    end -= 1;
                }
                label.truncate(end);
            }
            format!("label:{label}").into()
        };
        // At the cap everyone is refused alike (503); below it, a caller past its
        // share of sessions, or of the bytes they keep, is (429).
        let (count, kept) = {
            let open = self.sessions.open();
            let room = open.sessions.len() + open.reserved < limits.max_sessions;
            let held = open.per_caller.get(&key).copied().unwrap_or_default();
            (
                room && held.0 >= limits.per_caller(),
                held.1 + size > limits.caller_bytes,
            )
        };
        if count {
            return Some(Opener::Refused(refused_caller(
                &init.id,
                limits.per_caller(),
            )));
        }
        if kept {
            return Some(Opener::Refused(refused_bytes(
                &init.id,
                limits.caller_bytes,
            )));
        }
        Some(Opener::Opens(key, size))
    }
}

/// The largest error body the SDK writes that is checked for an `id`.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The SDK's streamable HTTP service behind [`guard`]: served as an axum handler,
/// so a request costs no middleware layer of its own (no boxed clone of the service
/// and its future per request).
pub(super) struct Guarded {
    pub(super) service: StreamableHttpService<Server, Sessions>,
    pub(super) guard: Guard,
    /// Plain sessionless tool calls, answered without the SDK's per-request service.
    pub(super) direct: Direct,
}

/// Answers an `initialize` the session cap refuses with 503 and a JSON-RPC error,
/// and gives each JSON-RPC error body from the SDK an `id`.
pub(super) async fn guard(State(guarded): State<Arc<Guarded>>, request: Request) -> Response {
    let guard = &guarded.guard;
    let mut request = request;
    let identity = match guard.authenticate(&mut request).await {
        Ok(identity) => identity,
        Err(refused) => return refused,
    };
    // A call its token lacks the scopes for is refused at the HTTP level (403).
    if let Some(identity) = &identity
        && request.method() == Method::POST
        && !remote::Catalog::of(&guard.registry).scopes().is_empty()
    {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return too_large(guard.max_body);
        };
        if let Some(refused) = guard.lacks_scopes(&parts, identity, &bytes) {
            return refused;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    // A listen is acknowledged only for resources its caller may see.
    request = match guard.narrowed(request, identity.as_ref()).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    // A plain sessionless tool call is answered here, past the SDK's service.
    if request.method() == Method::POST && Direct::takes(request.headers(), &guarded.service.config)
    {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return too_large(guard.max_body);
        };
        if let Some(call) = guarded.direct.read(&parts.headers, &bytes) {
            let id = call.0.clone();
            return answered_in_place(guarded.direct.answer(parts, call), &id).await;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    // An `initialize` is refused when its caller holds its share of sessions
    // already, or its parameters are more than a session keeps.
    let opener;
    (request, opener) = match guard.screen_initialize(request, identity.as_ref()).await {
        Ok(screened) => screened,
        Err(refused) => return refused,
    };
    // A plain request of a session at rest (or an `initialize` opening one) is
    // answered here too, without an SDK session.
    if guard.sessions.rest()
        && resting::takes(request.method(), request.headers(), &guarded.service.config)
    {
        match at_rest(&guarded, opener.as_ref(), request).await {
            Ok(response) => return response,
            Err(back) => request = back,
        }
    }
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    let closes_session = request.method() == Method::DELETE;
    if opens_session && guard.sessions.full() {
        // At the cap: read the body to answer the initialize by its id.
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
            return too_large(guard.max_body);
        };
        let message: Option<Value> = serde_json::from_slice(&bytes).ok();
        if let Some(message) = &message
            && message.get("method").and_then(Value::as_str) == Some("initialize")
        {
            let id = message.get("id").cloned().unwrap_or(Value::Null);
            return refused(guard, &id);
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    // The session a request names stays running while the request is served.
    let named = request.headers().get("mcp-session-id").cloned();
    let pinned = named
        .as_ref()
        .and_then(|id| id.to_str().ok())
        .and_then(|id| guard.sessions.pin(id));
    let in_request = InRequest {
        deleting: closes_session,
        ..InRequest::default()
    };
    let (response, served) = REQUEST
        .scope(RefCell::new(in_request), async {
            let response = guarded.service.handle(request).await.map(Body::new);
            (response, REQUEST.with(RefCell::take))
        })
        .await;
    drop(pinned);
    if served.refused {
        return refused(guard, &Value::Null);
    }
    let mut response = response;
    if let Some(made) = served.made {
        // A new session names itself in the response; one brought back from
        // parking was named by the request.
        let id = response.headers().get("mcp-session-id").or(named.as_ref());
        if let Some(id) = id.and_then(|id| id.to_str().ok()) {
            guard.sessions.adopt(id, made);
        }
    }
    if closes_session && response.status() == StatusCode::ACCEPTED {
        // A closed session has nothing more to say: `204 No Content`, which
        // clients take as done (the SDK's `202` reads as a failure to some).
        *response.status_mut() = StatusCode::NO_CONTENT;
        response.headers_mut().remove(header::CONTENT_LENGTH);
        *response.body_mut() = Body::empty();
    }
    guard.own(&response, opener.as_ref());
    with_error_ids(response).await
}

/// Answers a request of a session at rest, or an `initialize` that opens one, when
/// it is plain (see [`resting`]); gives the request back otherwise.
async fn at_rest(
    guarded: &Guarded,
    opener: Option<&(Box<str>, usize)>,
    request: Request,
) -> Result<Response, Request> {
    let guard = &guarded.guard;
    let sessions = &guard.sessions;
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    if request.method() == Method::DELETE {
        let known_version = request
            .headers()
            .get("mcp-protocol-version")
            .is_none_or(|version| {
                ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|known| known.as_str().as_bytes() == version.as_bytes())
            });
        return match session {
            Some(id) if known_version && sessions.is_resting(&id) => {
                let _ = sessions.forget(&SessionId::from(id)).await;
                Ok(no_content())
            }
            _ => Err(request),
        };
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
        return Ok(too_large(guard.max_body));
    };
    let server = guarded.direct.server();
    match session {
        None => {
            if let Some((id, params)) = resting::opening(&parts.headers, &bytes)
                && let Some((resting, result)) = Resting::opened(server, &params)
            {
                let Some(session) = sessions.open_resting(params, resting) else {
                    return Ok(refused(
                        guard,
                        &serde_json::to_value(&id).unwrap_or_default(),
                    ));
                };
                let response = resting::opened(id, result, &session);
                guard.own(&response, opener);
                return Ok(response);
            }
        }
        Some(session) => {
            if let Some((resting, level)) =
                sessions.resting(&session, |params| Resting::of(server, params))
                && let Some(asked) = resting::read(&resting, &parts.headers, &bytes)
            {
                let Asked::Request(id, request, meta) = asked else {
                    // A notification: noted, and accepted.
                    sessions.heard(&session, &asked);
                    return Ok(resting::accepted());
                };
                // A request the client may cancel, known to its session until
                // answered.
                let (ct, held) = sessions.calling(&session, &id);
                let answer = guarded.direct.answer_resting(
                    parts,
                    (id.clone(), *request, meta),
                    (&resting, level),
                    (ct, held),
                );
                return Ok(answered_in_place(answer, &id).await);
            }
        }
    }
    Err(Request::from_parts(parts, Body::from(bytes)))
}

/// The answer of a request the server answers itself, run in the request's task:
/// a panic is answered as the SDK answers a handler that gave no answer (500 with
/// the request's id), not with a dropped connection.
async fn answered_in_place(answer: impl Future<Output = Response>, id: &RequestId) -> Response {
    AssertUnwindSafe(answer)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Internal error"}}),
            )
        })
}

/// `204 No Content`: how a closed session is answered.
fn no_content() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

fn refused(guard: &Guard, id: &Value) -> Response {
    let max = guard.sessions.limits.max_sessions;
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!("Server busy: the server has its limit of {max} sessions open; retry later"),
        "data": {"maxSessions": max},
    }});
    json_response(StatusCode::SERVICE_UNAVAILABLE, &body)
}

/// What the guard makes of an `initialize`: the caller it opens a session for
/// and the bytes of its parameters, or its refusal.
enum Opener {
    Opens(Box<str>, usize),
    Refused(Response),
}

/// The most bytes of an `initialize` request besides its parameters (the
/// JSON-RPC envelope).
const ENVELOPE: usize = 1024;

/// Why the `initialize` parameters are more than a session keeps, if they are:
/// nested past [`MAX_INITIALIZE_DEPTH`] or holding more than
/// [`MAX_INITIALIZE_ENTRIES`] members and items (their bytes are bounded before).
fn oversized(params: &Value) -> Option<String> {
    let (mut entries, mut deepest) = (0usize, 0usize);
    let mut stack = vec![(params, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match value {
            Value::Object(map) => {
                entries += map.len();
                stack.extend(map.values().map(|v| (v, depth + 1)));
            }
            Value::Array(items) => {
                entries += items.len();
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    if deepest > MAX_INITIALIZE_DEPTH {
        return Some(format!(
            "the initialize parameters nest {deepest} levels deep; a session keeps at most \
             {MAX_INITIALIZE_DEPTH}"
        ));
    }
    (entries > MAX_INITIALIZE_ENTRIES).then(|| {
        format!(
            "the initialize parameters hold {entries} entries; a session keeps at most \
             {MAX_INITIALIZE_ENTRIES}"
        )
    })
}

/// The deepest nesting of `initialize` parameters a session keeps.
const MAX_INITIALIZE_DEPTH: usize = 16;

/// The most members and items (all levels) of `initialize` parameters a session
/// keeps.
const MAX_INITIALIZE_ENTRIES: usize = 512;

/// The answer to an `initialize` whose parameters are more than a session keeps.
fn refused_params(id: &Value, why: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32602,
        "message": format!("Invalid params: {why}"),
        "data": {"code": "TOO_LARGE", "path": "/params"},
    }});
    json_response(StatusCode::PAYLOAD_TOO_LARGE, &body)
}

/// The answer to an `initialize` of a caller whose sessions keep its share of
/// bytes already.
fn refused_bytes(id: &Value, max: usize) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!(
            "Too many sessions: this caller's sessions keep {max} bytes of initialize \
             parameters, its limit; close one (DELETE) or let one expire"
        ),
        "data": {"code": "BUSY", "maxInitializeBytesPerCaller": max},
    }});
    json_response(StatusCode::TOO_MANY_REQUESTS, &body)
}

/// The answer to an `initialize` of a caller that holds its share of sessions.
fn refused_caller(id: &Value, max: usize) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32000,
        "message": format!(
            "Too many sessions: this caller has {max} sessions open, its limit; close one \
             (DELETE) or let one expire"
        ),
        "data": {"code": "BUSY", "maxSessionsPerCaller": max},
    }});
    json_response(StatusCode::TOO_MANY_REQUESTS, &body)
}

fn too_large(max: usize) -> Response {
    let mut response = Response::new(Body::from(format!(
        "Payload Too Large: request body exceeds {max} bytes"
    )));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An error response's JSON-RPC body with `"id": null` when the SDK left it out.
async fn with_error_ids(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !is_json || !(response.status().is_client_error() || response.status().is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ERROR_BODY_LIMIT).await else {
        let body = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32603, "message": "Internal error"}});
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(body.to_string()));
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut object))
            if object.contains_key("error") && !object.contains_key("id") =>
        {
            object.insert("id".into(), Value::Null);
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(Value::Object(object).to_string()))
        }
        _ => Response::from_parts(parts, Body::from(bytes)),
    }
}
