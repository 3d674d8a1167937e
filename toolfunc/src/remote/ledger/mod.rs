//! Tracked calls: a call started now and read later, by id, from any task or thread.
//!
//! A [`Ledger`] starts calls on a registry and keeps each one under an id: while it
//! runs, its status, progress, caller and age; once done, its result, for as long as
//! its [`Retention`] says. A tracked call can be cancelled by id, and one nobody
//! asks about for too long is cancelled for them.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use toolfunc::ledger::{Ledger, TaskPoll};
//! use toolfunc::{Registry, tool};
//!
//! /// Adds two numbers.
//! #[tool]
//! fn add(a: f64, b: f64) -> f64 {
//!     a + b
//! }
//!
//! let ledger = Ledger::new(Registry::global());
//! let id = ledger.start("add", json!({"a": 1, "b": 2}))?;
//! // ... later, anywhere:
//! assert_eq!(ledger.wait(&id).await?, json!(3.0));
//! # Ok::<(), toolfunc::ToolError>(())
//! # }).unwrap();
//! ```
//!
//! A call started for a caller ([`CallOptions::caller`], or the verified subject of
//! [`CallOptions::identity`]) belongs to it, and is found by its id **and** its
//! caller: an id the caller chose ([`Track::id`], the HTTP `req-id`) names one call
//! per caller, so two callers may use the same id, and one caller learns nothing of
//! another's ids. A surface that reads the ledger for others (HTTP `rpcTask`, MCP
//! `tasks/get`) reads it through [`Ledger::for_caller`], which finds only that
//! caller's calls (and calls started for no one); any other id is unknown to it.
//! Ids the ledger makes are 128 random bits, so they cannot be guessed.
//!
//! The ledger is bounded, in entries and in bytes (ids, names and kept results),
//! in all and per caller, so one caller filling its share is refused (`BUSY`, 429)
//! while others still get in; a full ledger refuses everyone (`BUSY`, 503). Ids a
//! caller chose and caller names longer than their caps are refused with
//! `TOO_LONG` (400). See [`LedgerSettings`] for the defaults.
//!
//! Expired entries are swept when the ledger is used (at most once a second), so an
//! idle ledger holds what it held; its size is bounded either way.

mod info;
mod settings;
mod state;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::options::{CallOptions, json_size};
use crate::quota::{Holdings, too_long};
use crate::registry::{Registry, Resolved};

pub use info::{Question, TaskInfo, TaskPoll, TaskStatus};
pub use settings::{LedgerSettings, Retention, Track};
use state::{Entry, Inner, State, Who, ask_entry, record};

/// A ledger of tracked calls on one registry. Clones share the ledger.
///
/// The ledger as made finds any caller's call by its id (of an id several callers
/// chose, the one started for no caller); [`for_caller`](Self::for_caller) makes a
/// view of it that finds only one caller's.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
    finds: Finds,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.inner.lock().held.total();
        f.debug_struct("Ledger")
            .field("settings", &self.inner.settings)
            .field("entries", &held.entries)
            .field("bytes", &held.bytes)
            .finish_non_exhaustive()
    }
}

/// Whose calls a [`Ledger`] finds by id.
#[derive(Clone)]
enum Finds {
    /// Any caller's (the ledger as made).
    Any,
    /// One caller's, and those started for no one ([`Ledger::for_caller`]).
    Caller(Option<Arc<str>>),
}

/// What a tracked call runs: a tool by name, or one already found.
enum Callee<'a> {
    Named(&'a str),
    #[cfg_attr(
        not(any(feature = "http-server", feature = "mcp")),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    /// A call found on the remote floor, and whether its layers already let its
    /// caller see it.
    Found((Resolved, bool)),
}

impl Callee<'_> {
    fn name(&self) -> &str {
        match self {
            Self::Named(name) => name,
            Self::Found((found, _)) => found.tool.name(),
        }
    }
}

fn unknown(id: &str) -> ToolError {
    ToolError::not_found_because(
        id,
        "no tracked call has this id: it is unknown, or its result expired or was read",
    )
}

fn fresh_id() -> String {
    let mut id = String::from("task-");
    id.push_str(&crate::id::random_hex());
    id
}

impl Ledger {
    /// A ledger on `registry` with the default settings.
    pub fn new(registry: impl Into<Registry>) -> Self {
        Self::with_settings(registry, LedgerSettings::default())
    }

    /// A ledger on `registry` with `settings`.
    pub fn with_settings(registry: impl Into<Registry>, settings: LedgerSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry: registry.into(),
                settings,
                state: Mutex::new(State {
                    entries: HashMap::new(),
                    held: Holdings::default(),
                    next_serial: 0,
                    last_sweep: Instant::now(),
                }),
            }),
            finds: Finds::Any,
        }
    }

    /// This ledger as `caller` sees it: every id names `caller`'s call of that id,
    /// else one started for no caller, and no other caller's call; [`list`](Self::list)
    /// lists only those. `caller` is whose a call is, as [`TaskInfo::caller`] says:
    /// the verified subject, else the stated caller (`None`: calls started for no
    /// one). What a surface reads the ledger through for its caller.
    ///
    /// ```rust,standalone_crate
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use serde_json::json;
    /// use toolfunc::ledger::{Ledger, Track};
    /// use toolfunc::{tool, CallOptions, Registry};
    ///
    /// /// Adds two numbers.
    /// #[tool]
    /// fn add(a: f64, b: f64) -> f64 {
    ///     a + b
    /// }
    ///
    /// let ledger = Ledger::new(Registry::global());
    /// let ann = Track::new().id("sum").options(CallOptions::new().caller("ann"));
    /// ledger.start_with("add", json!({"a": 1, "b": 2}), ann)?;
    /// // Bob may use the same id: it names his own call.
    /// let bob = Track::new().id("sum").options(CallOptions::new().caller("bob"));
    /// ledger.start_with("add", json!({"a": 5, "b": 5}), bob)?;
    /// assert_eq!(ledger.for_caller(Some("ann")).wait("sum").await?, json!(3.0));
    /// assert_eq!(ledger.for_caller(Some("bob")).wait("sum").await?, json!(10.0));
    /// assert!(ledger.for_caller(Some("eve")).status("sum").is_none());
    /// # Ok::<(), toolfunc::ToolError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn for_caller(&self, caller: Option<&str>) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            finds: Finds::Caller(caller.map(Arc::from)),
        }
    }

    /// Which call of an id this ledger (or view) means.
    fn who(&self) -> Who<'_> {
        match &self.finds {
            Finds::Any => Who::Any,
            Finds::Caller(caller) => Who::Sees(caller.as_deref()),
        }
    }

    /// The ledger's settings.
    pub fn settings(&self) -> &LedgerSettings {
        &self.inner.settings
    }

    /// The registry its calls run on.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Starts `name` with `args` and returns its id at once.
    pub fn start(&self, name: &str, args: Value) -> Result<String, ToolError> {
        self.start_with(name, args, Track::new())
    }

    /// Starts `name` with `args`, tracked as `track` says, and returns its id. The
    /// call belongs to the caller of its options, whichever view starts it.
    ///
    /// Refused with `BUSY` when the ledger, or the caller's share of it, is full
    /// (see [`LedgerSettings`]), `CONFLICT` when the caller's call of that id is
    /// still tracked, `TOO_LONG` for an id or a caller past its cap, `FAILED`
    /// outside a tokio runtime. An unknown tool or bad arguments are the call's
    /// result, read like any other.
    pub fn start_with(&self, name: &str, args: Value, track: Track) -> Result<String, ToolError> {
        self.start_call(Callee::Named(name), args, track)
    }

    /// [`start_with`](Self::start_with) for a tool already found (a remote call,
    /// found once on the remote floor): it runs without a second lookup.
    #[cfg(any(feature = "http-server", feature = "mcp"))]
    pub(crate) fn start_found(
        &self,
        found: (Resolved, bool),
        args: Value,
        track: Track,
    ) -> Result<String, ToolError> {
        self.start_call(Callee::Found(found), args, track)
    }

    fn start_call(
        &self,
        target: Callee<'_>,
        args: Value,
        track: Track,
    ) -> Result<String, ToolError> {
        let name = target.name().to_owned();
        let name = name.as_str();
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| ToolError::failed("a tracked call needs a tokio runtime to run on"))?;
        let settings = &self.inner.settings;
        if let Some(too_long) = track
            .id
            .as_deref()
            .and_then(|id| too_long("id", id, settings.max_id_bytes))
        {
            return Err(too_long);
        }
        let id = track.id.unwrap_or_else(fresh_id);
        let retention = track.retention.unwrap_or_else(|| {
            settings
                .tool_retention
                .get(name)
                .copied()
                .unwrap_or(settings.retention)
        });
        let mut options = track.options.unwrap_or_default();
        let caller = options.owner().map(str::to_owned);
        if let Some(too_long) = caller
            .as_deref()
            .and_then(|c| too_long("caller", c, settings.max_caller_bytes))
        {
            return Err(too_long);
        }
        if let Some(limit) = settings.max_run_time {
            options = options.timeout(limit);
        }
        let act = args.get("act").and_then(Value::as_str).map(str::to_owned);
        // Everything the entry and its running call keep: the arguments too (held
        // by the call until it ends), and what the surface kept for it.
        let bytes = id.len()
            + name.len()
            + caller.as_ref().map_or(0, String::len)
            + act.as_ref().map_or(0, String::len)
            + json_size(&args)
            + track.kept;
        let token = CancellationToken::new();
        let serial = {
            let mut state = self.inner.lock();
            state.sweep(settings, false);
            let owner = caller.as_deref();
            if state.get(Who::Exactly(owner), &id).is_some() {
                return Err(ToolError::conflict(format!(
                    "a tracked call with the id `{id}` is still kept"
                )));
            }
            if state.refusal(settings, owner).is_some() {
                state.sweep(settings, true);
            }
            if let Some(refused) = state.refusal(settings, owner) {
                return Err(refused);
            }
            let serial = state.next_serial;
            state.next_serial += 1;
            let now = Instant::now();
            let started = SystemTime::now();
            state.held.add(owner, 1, bytes);
            state
                .entries
                .entry(id.as_str().into())
                .or_default()
                .push(Entry {
                    serial,
                    tool: name.to_owned(),
                    act,
                    caller: caller.clone(),
                    started,
                    started_at: now,
                    updated: started,
                    last_polled: now,
                    retention,
                    progress: None,
                    token: token.clone(),
                    outcome: None,
                    waiting: Vec::new(),
                    asked: 0,
                    changed: watch::Sender::new(0),
                    streamed: track.streamed,
                    bytes,
                });
            serial
        };
        options = self.reporting(options.cancel_on(token), &id, serial);
        if track.park_questions {
            options = self.parking(options, &id, serial);
        }
        let call = self.run(target, args, options, track.streamed);
        runtime.spawn(record(
            Arc::downgrade(&self.inner),
            id.clone(),
            serial,
            call,
        ));
        Ok(id)
    }

    /// The call itself: its result, or the array of its items.
    fn run(
        &self,
        callee: Callee<'_>,
        args: Value,
        options: CallOptions,
        streamed: bool,
    ) -> futures::future::BoxFuture<'static, Result<Value, ToolError>> {
        let bound = options.collect_limit.unwrap_or_default();
        let runner = self.inner.registry.with(options);
        let name = callee.name().to_owned();
        if streamed {
            let items = match callee {
                Callee::Named(name) => runner.run_stream(name, args),
                Callee::Found((found, shown)) => runner.stream_resolved(found, args, shown),
            };
            crate::exec::start::collect(
                Box::pin(std::future::ready(Ok(Box::pin(items) as _))),
                bound,
                name,
            )
        } else {
            Box::pin(match callee {
                Callee::Named(name) => runner.spawn(name, args),
                Callee::Found((found, shown)) => runner.spawn_resolved(found, args, shown),
            })
        }
    }

    /// `options` whose progress is kept on the call `id` (`serial`).
    fn reporting(&self, options: CallOptions, id: &str, serial: u64) -> CallOptions {
        let weak = Arc::downgrade(&self.inner);
        let id = id.to_owned();
        options.also_on_progress(move |progress| {
            if let Some(inner) = weak.upgrade()
                && let Some(entry) = inner.lock().by_serial(&id, serial)
            {
                entry.progress = Some(progress);
                entry.touch();
            }
        })
    }

    /// `options` whose questions wait in this ledger, on the call `id` (`serial`).
    fn parking(&self, options: CallOptions, id: &str, serial: u64) -> CallOptions {
        let ledger = Arc::downgrade(&self.inner);
        let id = id.to_owned();
        options.on_named_client_request(move |name, request| {
            let asked = ledger.upgrade().map(|inner| {
                let mut state = inner.lock();
                ask_entry(state.by_serial(&id, serial), name, request)
            });
            async move {
                match asked {
                    Some(answer) => answer.await,
                    None => Err(ToolError::Cancelled {
                        reason: Some("the ledger is gone".into()),
                    }),
                }
            }
        })
    }

    /// Whether `caller` may read or cancel the call `id`: it is tracked, and it was
    /// started for `caller` or for no caller. What [`for_caller`](Self::for_caller)
    /// finds.
    pub fn visible_to(&self, id: &str, caller: Option<&str>) -> bool {
        self.inner.lock().get(Who::Sees(caller), id).is_some()
    }

    /// The tool the call `id` runs (`None` when it is not tracked), without
    /// counting as a poll: what a surface checks its caller may see.
    pub fn tool_of(&self, id: &str) -> Option<String> {
        self.inner
            .lock()
            .get(self.who(), id)
            .map(|e| e.tool.clone())
    }

    /// What the ledger knows of `id`; `None` when it tracks no such call. Counts as
    /// a poll.
    pub fn status(&self, id: &str) -> Option<TaskInfo> {
        let mut state = self.inner.lock();
        state.sweep(&self.inner.settings, false);
        let entry = state.get_mut(self.who(), id)?;
        entry.last_polled = Instant::now();
        Some(entry.info(id))
    }

    /// The call's result if it is done (removed when its retention is
    /// [`Retention::UntilRead`]), else where it stands. `NOT_FOUND` for an id the
    /// ledger does not track.
    pub fn poll(&self, id: &str) -> Result<TaskPoll, ToolError> {
        let who = self.who();
        let mut state = self.inner.lock();
        state.sweep(&self.inner.settings, false);
        let entry = state.get_mut(who, id).ok_or_else(|| unknown(id))?;
        entry.last_polled = Instant::now();
        let Some((result, _)) = &entry.outcome else {
            return Ok(TaskPoll::Working(entry.info(id)));
        };
        let result = result.clone();
        if entry.retention == Retention::UntilRead {
            state.take(who, id);
        }
        Ok(TaskPoll::Done(result))
    }

    /// Waits for the call to finish and returns its result, as [`poll`](Self::poll)
    /// reads it. `NOT_FOUND` for an id the ledger does not track.
    pub async fn wait(&self, id: &str) -> Result<Value, ToolError> {
        self.wait_until(id, None, |entry| entry.outcome.is_some())
            .await?;
        match self.poll(id)? {
            TaskPoll::Done(result) => result,
            TaskPoll::Working(_) => Err(ToolError::failed(
                "the tracked call stopped without a result",
            )),
        }
    }

    /// Waits at most `within` for the call to finish or to ask its caller
    /// something ([`Track::park_questions`]), and tells where it stands then
    /// (its result stays to be read). `NOT_FOUND` for an id the ledger does not
    /// track. Counts as a poll.
    pub async fn settle(&self, id: &str, within: Duration) -> Result<TaskInfo, ToolError> {
        self.wait_until(id, Some(within), |entry| {
            entry.outcome.is_some() || !entry.waiting.is_empty()
        })
        .await?;
        self.status(id).ok_or_else(|| unknown(id))
    }

    /// Waits (at most `within`) until `done` holds of the entry, or it is gone.
    async fn wait_until(
        &self,
        id: &str,
        within: Option<Duration>,
        done: impl Fn(&Entry) -> bool,
    ) -> Result<(), ToolError> {
        let deadline = within.map(|within| tokio::time::Instant::now() + within);
        loop {
            let mut changed = {
                let mut state = self.inner.lock();
                let entry = state.get_mut(self.who(), id).ok_or_else(|| unknown(id))?;
                entry.last_polled = Instant::now();
                if done(entry) {
                    return Ok(());
                }
                // Subscribed under the lock every change is made under: none is missed.
                entry.changed.subscribe()
            };
            let next = changed.changed();
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, next).await.is_err() {
                        return Ok(());
                    }
                }
                None => {
                    // The entry was removed: the next look says so.
                    let _ = next.await;
                }
            }
        }
    }

    /// Parks a question of the call `id` until [`answer`](Self::answer) answers
    /// it, or the call is cancelled or removed. [`Track::park_questions`] routes a
    /// call's questions here; a surface that answers for the caller may too.
    pub fn ask(
        &self,
        id: &str,
        name: Option<String>,
        request: ClientRequest,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + use<> {
        let mut state = self.inner.lock();
        ask_entry(state.get_mut(self.who(), id), name, request)
    }

    /// Answers the question `key` of the call `id` (see [`TaskInfo::questions`]).
    /// Whether such a question was waiting; `NOT_FOUND` for an id the ledger does
    /// not track. The answer is what the caller would have answered the tool's
    /// [`Ctx::ask`](crate::Ctx::ask): for an elicitation, `{"action", "content"}`.
    pub fn answer(&self, id: &str, key: &str, answer: Value) -> Result<bool, ToolError> {
        let mut state = self.inner.lock();
        let entry = state.get_mut(self.who(), id).ok_or_else(|| unknown(id))?;
        entry.last_polled = Instant::now();
        let Some(at) = entry.waiting.iter().position(|w| w.question.key == key) else {
            return Ok(false);
        };
        let waiting = entry.waiting.remove(at);
        let _ = waiting.answer.send(Ok(answer));
        entry.touch();
        Ok(true)
    }

    /// Cancels a running call (its token fires, its cleanups run; its result becomes
    /// `CANCELLED`). A finished call stays as it was: cancelling it again is not an
    /// error. `NOT_FOUND` for an id the ledger does not track.
    pub fn cancel(&self, id: &str) -> Result<(), ToolError> {
        let state = self.inner.lock();
        let entry = state.get(self.who(), id).ok_or_else(|| unknown(id))?;
        if entry.outcome.is_none() {
            entry.token.cancel();
        }
        Ok(())
    }

    /// Forgets a call; a running one is cancelled first. Whether it was tracked.
    pub fn remove(&self, id: &str) -> bool {
        let entry = self.inner.lock().take(self.who(), id);
        match entry {
            Some(entry) => {
                if entry.outcome.is_none() {
                    entry.token.cancel();
                }
                true
            }
            None => false,
        }
    }

    /// How many calls the ledger tracks, running or finished and not yet
    /// forgotten, of every caller (a [`for_caller`](Self::for_caller) view counts
    /// the whole ledger too): what a `toolfunc.ledger.entries` gauge reads.
    pub fn len(&self) -> usize {
        let mut state = self.inner.lock();
        state.sweep(&self.inner.settings, false);
        state.held.total().entries
    }

    /// Whether the ledger tracks no call (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every tracked call, running or finished, oldest first (of a
    /// [`for_caller`](Self::for_caller) view, that caller's and those started for
    /// no one).
    pub fn list(&self) -> Vec<TaskInfo> {
        let who = self.who();
        let mut state = self.inner.lock();
        state.sweep(&self.inner.settings, false);
        let mut all: Vec<TaskInfo> = state
            .entries
            .iter()
            .flat_map(|(id, calls)| calls.iter().map(move |entry| (id, entry)))
            .filter(|(_, entry)| who.lists(entry.caller.as_deref()))
            .map(|(id, entry)| entry.info(id))
            .collect();
        all.sort_by_key(|info| info.started);
        all
    }
}
