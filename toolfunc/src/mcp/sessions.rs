//! The sessions of the streamable HTTP endpoint: a cap on them (and on one
//! caller's), a lifetime for those that never finish their handshake, an idle
//! lifetime for the others (the SDK's keep-alive), and the parking of quiet ones
//! (their SDK session closed, brought back by the SDK's session restore).

use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, InitializeRequestParams, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState,
    SessionStore, SessionStoreError,
};
use rmcp::transport::{Transport, WorkerTransport};
use tokio_util::sync::CancellationToken;

use super::resting::{Asked, Resting};
use super::server::{Limits, Server, Session};

/// What the serving of one HTTP request tells the session manager, and what the
/// manager and the service factory tell it back.
#[derive(Default)]
pub(super) struct InRequest {
    /// The request is a `DELETE`: a session it closes is gone for good.
    pub(super) deleting: bool,
    /// A session was refused (the cap).
    pub(super) refused: bool,
    /// The log level of the parked session being brought back, for its new handler.
    pub(super) level: Option<u8>,
    /// The handler state the service factory made during this request.
    pub(super) made: Option<Weak<Session>>,
}

tokio::task_local! {
    pub(super) static REQUEST: RefCell<InRequest>;
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
pub(super) struct Busy {
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
pub(super) struct Entry {
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
    pub(super) limits: Limits,
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
pub(super) struct Open {
    pub(super) sessions: HashMap<SessionId, Entry>,
    /// The verified subject each session was opened by, when an authenticator
    /// guards the endpoint: only it may use the session.
    pub(super) owners: HashMap<SessionId, (Box<str>, usize)>,
    /// How many open sessions each caller (the key `owners` holds) has, and the
    /// bytes of `initialize` parameters they keep.
    pub(super) per_caller: HashMap<Box<str>, (usize, usize)>,
    /// Places taken by sessions being created.
    pub(super) reserved: usize,
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

    pub(super) fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> u64 {
        millis(self.epoch)
    }

    pub(super) fn full(&self) -> bool {
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
    pub(super) async fn forget(&self, id: &SessionId) -> Result<(), SessionsError> {
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
    pub(super) fn pin(&self, id: &str) -> Option<Busy> {
        let open = self.open();
        match &open.sessions.get(id)?.life {
            Life::Live(activity) => Some(Busy::new(activity, self.epoch)),
            Life::Parking(..) | Life::Parked { .. } => None,
        }
    }

    /// Notes the handler state made for `id` (a new session, or one brought back).
    pub(super) fn adopt(&self, id: &str, handler: Weak<Session>) {
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
    pub(super) fn open_resting(
        &self,
        params: InitializeRequestParams,
        resting: Resting,
    ) -> Option<SessionId> {
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
    pub(super) fn resting(
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
    pub(super) fn is_resting(&self, id: &str) -> bool {
        matches!(
            self.open().sessions.get(id).map(|entry| &entry.life),
            Some(Life::Parked { .. })
        )
    }

    /// Notes what a session at rest said: its handshake is done, or a call of it
    /// answered in place is cancelled.
    pub(super) fn heard(&self, id: &str, asked: &Asked) {
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
    pub(super) fn calling(
        self: &Arc<Self>,
        id: &str,
        request: &RequestId,
    ) -> (CancellationToken, Calling) {
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
