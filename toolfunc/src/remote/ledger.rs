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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tokio::sync::{oneshot, watch};

use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::options::{CallOptions, Progress, json_size};
use crate::quota::{Holdings, too_long};
use crate::registry::{Registry, Resolved};
use tokio_util::sync::CancellationToken;

/// How long a finished call's result is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// Until it is read once ([`Ledger::poll`] or [`Ledger::wait`] returning it).
    UntilRead,
    /// For this long after the call finished, however often it is read.
    KeepFor(Duration),
    /// Until [`Ledger::remove`].
    UntilRemoved,
}

/// The ledger's bounds and defaults.
///
/// | bound | default | past it |
/// | --- | --- | --- |
/// | [`max_entries`](Self::max_entries) | 10,000 calls | `BUSY` (503) |
/// | [`max_entries_per_caller`](Self::max_entries_per_caller) | 1,000 calls | `BUSY` (429) for that caller |
/// | [`max_bytes`](Self::max_bytes) | 256 MiB | `BUSY` (503) |
/// | [`max_bytes_per_caller`](Self::max_bytes_per_caller) | 32 MiB | `BUSY` (429) for that caller |
/// | [`max_id_bytes`](Self::max_id_bytes) | 256 bytes | `TOO_LONG` (400) |
/// | [`max_caller_bytes`](Self::max_caller_bytes) | 256 bytes | `TOO_LONG` (400) |
///
/// Calls started for no caller share one caller's share.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LedgerSettings {
    /// How many calls the ledger tracks at once, running or finished (default
    /// 10,000); a call past it is refused with `BUSY` (503).
    pub max_entries: usize,
    /// How many calls one caller may have tracked at once (default 1,000); its call
    /// past it is refused with `BUSY` (429), and other callers' are not.
    pub max_entries_per_caller: usize,
    /// How many bytes the ledger keeps, in all: the ids, tool and caller names of
    /// its calls and the results it keeps, estimated as the length of their JSON
    /// text (default 256 MiB). While it holds that much, a new call is refused with
    /// `BUSY` (503); reading or removing results makes room.
    pub max_bytes: usize,
    /// How many of those bytes one caller's calls may hold (default 32 MiB); while
    /// they hold that much, its new call is refused with `BUSY` (429).
    pub max_bytes_per_caller: usize,
    /// The longest id a caller may choose for its call ([`Track::id`], the HTTP
    /// `req-id`), in bytes (default 256); a longer one is refused with `TOO_LONG`
    /// (400).
    pub max_id_bytes: usize,
    /// The longest caller a call may be kept for (the stated caller, or the verified
    /// subject), in bytes (default 256); a longer one is refused with `TOO_LONG`
    /// (400).
    pub max_caller_bytes: usize,
    /// How long results are kept unless a tool or a call says otherwise (default:
    /// 5 minutes after the call finished).
    pub retention: Retention,
    /// Retention per tool, over the default.
    pub tool_retention: HashMap<String, Retention>,
    /// The longest a tracked call may run; past it, it ends with `TIMEOUT` (default
    /// one hour). The tool's own timeout still applies.
    pub max_run_time: Option<Duration>,
    /// A running call nobody polled for this long is cancelled (default 10 minutes).
    pub unpolled_limit: Option<Duration>,
}

impl Default for LedgerSettings {
    fn default() -> Self {
        Self {
            max_entries: 10_000,
            max_entries_per_caller: 1_000,
            max_bytes: 256 << 20,
            max_bytes_per_caller: 32 << 20,
            max_id_bytes: 256,
            max_caller_bytes: 256,
            retention: Retention::KeepFor(Duration::from_secs(300)),
            tool_retention: HashMap::new(),
            max_run_time: Some(Duration::from_secs(3600)),
            unpolled_limit: Some(Duration::from_secs(600)),
        }
    }
}

impl LedgerSettings {
    /// Sets [`max_entries`](Self::max_entries).
    #[must_use]
    pub fn max_entries(mut self, max: usize) -> Self {
        self.max_entries = max;
        self
    }

    /// Sets [`max_entries_per_caller`](Self::max_entries_per_caller).
    #[must_use]
    pub fn max_entries_per_caller(mut self, max: usize) -> Self {
        self.max_entries_per_caller = max;
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

    /// Sets [`max_id_bytes`](Self::max_id_bytes).
    #[must_use]
    pub fn max_id_bytes(mut self, max: usize) -> Self {
        self.max_id_bytes = max;
        self
    }

    /// Sets [`max_caller_bytes`](Self::max_caller_bytes).
    #[must_use]
    pub fn max_caller_bytes(mut self, max: usize) -> Self {
        self.max_caller_bytes = max;
        self
    }

    /// Sets the default [`retention`](Self::retention).
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Sets the retention of one tool's results.
    #[must_use]
    pub fn tool_retention(mut self, tool: impl Into<String>, retention: Retention) -> Self {
        self.tool_retention.insert(tool.into(), retention);
        self
    }

    /// Sets [`max_run_time`](Self::max_run_time) (`None`: no limit).
    #[must_use]
    pub fn max_run_time(mut self, limit: Option<Duration>) -> Self {
        self.max_run_time = limit;
        self
    }

    /// Sets [`unpolled_limit`](Self::unpolled_limit) (`None`: no limit).
    #[must_use]
    pub fn unpolled_limit(mut self, limit: Option<Duration>) -> Self {
        self.unpolled_limit = limit;
        self
    }
}

/// How one call is tracked: its id, its retention, the options it runs with.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Track {
    id: Option<String>,
    retention: Option<Retention>,
    options: Option<CallOptions>,
    park_questions: bool,
    streamed: bool,
    /// Bytes the caller keeps beside the arguments for the call's life (what a
    /// surface captured for it), counted in the caller's quota.
    kept: usize,
}

impl Track {
    /// Counts `bytes` more in the call's share of its caller's quota: what the
    /// surface keeps for the call besides its arguments (a client's declared
    /// capabilities, say).
    #[must_use]
    pub(crate) fn keeps(mut self, bytes: usize) -> Self {
        self.kept = self.kept.saturating_add(bytes);
        self
    }

    /// The ledger's defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Tracks the call under this id (the ledger makes one otherwise). The id names
    /// the call among its caller's: an id this caller's call still holds is refused
    /// with `CONFLICT`, one another caller's call holds is not (and tells nothing of
    /// it), one longer than [`LedgerSettings::max_id_bytes`] is refused with
    /// `TOO_LONG`.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Keeps this call's result as `retention` says.
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Runs the call with these options (its caller, timeout, cancellation token).
    /// A progress listener set here is called as well as the ledger's own.
    #[must_use]
    pub fn options(mut self, options: CallOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// Keeps what the call asks its caller ([`Ctx::elicit`](crate::Ctx::elicit),
    /// [`Ctx::sample`](crate::Ctx::sample), ..) in the ledger: the call waits,
    /// [`TaskStatus::InputRequired`], with its [`questions`](TaskInfo::questions) to
    /// read, until [`Ledger::answer`] answers them. This replaces an answering
    /// function set in the options.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use toolfunc::ledger::{Ledger, TaskStatus, Track};
    /// use toolfunc::{tool, Ctx, Registry, ToolError};
    ///
    /// /// Deletes a file, once the user says so.
    /// #[tool]
    /// async fn delete_file(ctx: &Ctx, path: String) -> Result<String, ToolError> {
    ///     let schema = json!({"type": "object", "properties": {"sure": {"type": "boolean"}}});
    ///     let answer = ctx.elicit_named("sure", format!("Delete {path}?"), schema).await?;
    ///     let sure = answer.content.is_some_and(|c| c["sure"] == true);
    ///     Ok(if sure { format!("deleted {path}") } else { format!("kept {path}") })
    /// }
    ///
    /// let ledger = Ledger::new(Registry::global());
    /// let track = Track::new().park_questions();
    /// let id = ledger.start_with("delete_file", json!({"path": "a.txt"}), track)?;
    /// // Wait until it asks (or ends), then answer what it asked.
    /// let info = ledger.settle(&id, Duration::from_secs(5)).await?;
    /// assert_eq!(info.status, TaskStatus::InputRequired);
    /// assert_eq!(info.questions[0].key, "sure");
    /// ledger.answer(&id, "sure", json!({"action": "accept", "content": {"sure": true}}))?;
    /// assert_eq!(ledger.wait(&id).await?, json!("deleted a.txt"));
    /// # Ok::<(), ToolError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn park_questions(mut self) -> Self {
        self.park_questions = true;
        self
    }

    /// Runs the call for its items ([`run_stream`](Registry::run_stream)), gathered
    /// into an array within the options' [`CollectLimit`](crate::CollectLimit), and
    /// marks it so ([`TaskInfo::streamed`]): a surface whose caller asked for a
    /// stream answers the result as one (HTTP: NDJSON).
    #[must_use]
    pub fn streamed(mut self) -> Self {
        self.streamed = true;
        self
    }
}

/// Where a tracked call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Still running.
    Working,
    /// Waiting for its caller to answer its [`questions`](TaskInfo::questions)
    /// ([`Track::park_questions`]).
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled (by [`Ledger::cancel`], its token, or for going unpolled).
    Cancelled,
}

impl TaskStatus {
    /// Whether the call has ended.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A question a tracked call waits on ([`Track::park_questions`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Question {
    /// What [`Ledger::answer`] answers it under: the name the tool gave it
    /// ([`Ctx::ask_named`](crate::Ctx::ask_named)), else the capability it needs and
    /// a number (`elicitation_1`).
    pub key: String,
    /// What it asks.
    pub request: ClientRequest,
}

/// What the ledger knows of one tracked call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The call's id.
    pub id: String,
    /// The tool it runs.
    pub tool: String,
    /// The act it runs, when its arguments name one (a service method).
    pub act: Option<String>,
    /// Who started it, when the options said.
    pub caller: Option<String>,
    /// Where it stands.
    pub status: TaskStatus,
    /// When it started.
    pub started: SystemTime,
    /// When its status, progress or questions last changed.
    pub updated: SystemTime,
    /// How long it has run (until it finished).
    pub running_for: Duration,
    /// Its last progress report.
    pub progress: Option<Progress>,
    /// What it waits for its caller to answer, oldest first.
    pub questions: Vec<Question>,
    /// How long its result is kept.
    pub retention: Retention,
    /// Whether it runs for its items ([`Track::streamed`]): its result is their
    /// array.
    pub streamed: bool,
}

/// A poll's answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskPoll {
    /// The call is still running (or waiting for answers).
    Working(TaskInfo),
    /// The call is done: its result.
    Done(Result<Value, ToolError>),
}

/// A ledger of tracked calls on one registry. Clones share the ledger.
///
/// The ledger as made finds any caller's call by its id (of an id several callers
/// chose, the one started for no caller); [`for_caller`](Self::for_caller) makes a
/// view of it that finds only one caller's.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
    scope: Scope,
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
enum Scope {
    /// Any caller's (the ledger as made).
    Any,
    /// One caller's, and those started for no one ([`Ledger::for_caller`]).
    Caller(Option<Arc<str>>),
}

/// Which call of an id a lookup means.
#[derive(Clone, Copy)]
enum Who<'a> {
    /// The one call with the id; of several, the one started for no one.
    Any,
    /// The call of this caller (or of no one, for `None`), nobody else's.
    Exactly(Option<&'a str>),
    /// This caller's call, else one started for no one.
    Sees(Option<&'a str>),
}

impl Who<'_> {
    /// The index of the call meant among the calls of one id.
    fn find(self, calls: &[Entry]) -> Option<usize> {
        let of = |owner: Option<&str>| calls.iter().position(|e| e.caller.as_deref() == owner);
        match self {
            Self::Any if calls.len() == 1 => Some(0),
            Self::Any | Self::Sees(None) => of(None),
            Self::Exactly(owner) => of(owner),
            Self::Sees(owner) => of(owner).or_else(|| of(None)),
        }
    }

    /// Whether the call of `owner` is one this lookup lists.
    fn lists(self, owner: Option<&str>) -> bool {
        match self {
            Self::Any => true,
            Self::Exactly(who) => owner == who,
            Self::Sees(who) => owner.is_none() || owner == who,
        }
    }
}

struct Inner {
    registry: Registry,
    settings: LedgerSettings,
    state: Mutex<State>,
}

struct State {
    /// The calls by id: one id names at most one call of each caller (almost always
    /// just one call).
    entries: HashMap<Box<str>, Vec<Entry>>,
    held: Holdings,
    /// Tells an entry from a later one under the same id and caller.
    next_serial: u64,
    last_sweep: Instant,
}

/// A question waiting for its answer.
struct Waiting {
    question: Question,
    answer: oneshot::Sender<Result<Value, ToolError>>,
}

struct Entry {
    serial: u64,
    tool: String,
    act: Option<String>,
    /// Whose call it is: the owner key of its options.
    caller: Option<String>,
    started: SystemTime,
    started_at: Instant,
    updated: SystemTime,
    last_polled: Instant,
    retention: Retention,
    progress: Option<Progress>,
    token: CancellationToken,
    outcome: Option<(Result<Value, ToolError>, Instant)>,
    waiting: Vec<Waiting>,
    /// Questions asked so far, for their keys.
    asked: usize,
    /// Bumped on every change a waiter may want: a question, an answer, the end.
    changed: watch::Sender<u64>,
    streamed: bool,
    /// What it counts against the byte budgets.
    bytes: usize,
}

impl Entry {
    fn status(&self) -> TaskStatus {
        match &self.outcome {
            Some((result, _)) => status_of(result),
            None if self.waiting.is_empty() => TaskStatus::Working,
            None => TaskStatus::InputRequired,
        }
    }

    fn info(&self, id: &str) -> TaskInfo {
        let running_for = match &self.outcome {
            None => self.started_at.elapsed(),
            Some((_, at)) => at.saturating_duration_since(self.started_at),
        };
        TaskInfo {
            id: id.to_owned(),
            tool: self.tool.clone(),
            act: self.act.clone(),
            caller: self.caller.clone(),
            status: self.status(),
            started: self.started,
            updated: self.updated,
            running_for,
            progress: self.progress.clone(),
            questions: self.waiting.iter().map(|w| w.question.clone()).collect(),
            retention: self.retention,
            streamed: self.streamed,
        }
    }

    fn expired(&self, now: Instant) -> bool {
        match (&self.outcome, self.retention) {
            (Some((_, at)), Retention::KeepFor(keep)) => now.saturating_duration_since(*at) > keep,
            _ => false,
        }
    }

    /// Marks a change and wakes whoever waits on the entry.
    fn touch(&mut self) {
        self.updated = SystemTime::now();
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

fn status_of(result: &Result<Value, ToolError>) -> TaskStatus {
    match result {
        Ok(_) => TaskStatus::Completed,
        Err(ToolError::Cancelled { .. }) => TaskStatus::Cancelled,
        Err(_) => TaskStatus::Failed,
    }
}

/// What a call's result counts against the byte budgets: the length of its JSON
/// text, estimated.
fn result_bytes(result: &Result<Value, ToolError>) -> usize {
    match result {
        Ok(value) => json_size(value),
        Err(err) => err.to_string().len() + err.data().map_or(0, |data| json_size(&data)),
    }
}

/// How often, at most, a ledger in use sweeps its expired entries.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held leaves consistent entries: keep going.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    fn get(&self, who: Who<'_>, id: &str) -> Option<&Entry> {
        let calls = self.entries.get(id)?;
        who.find(calls).map(|at| &calls[at])
    }

    fn get_mut(&mut self, who: Who<'_>, id: &str) -> Option<&mut Entry> {
        let calls = self.entries.get_mut(id)?;
        who.find(calls).map(move |at| &mut calls[at])
    }

    /// The entry `serial` under `id`, if it is still kept.
    fn by_serial(&mut self, id: &str, serial: u64) -> Option<&mut Entry> {
        self.entries
            .get_mut(id)?
            .iter_mut()
            .find(|e| e.serial == serial)
    }

    /// Removes the call meant and gives back what it held.
    fn take(&mut self, who: Who<'_>, id: &str) -> Option<Entry> {
        let calls = self.entries.get_mut(id)?;
        let entry = calls.swap_remove(who.find(calls)?);
        if calls.is_empty() {
            self.entries.remove(id);
        }
        self.held.release(entry.caller.as_deref(), 1, entry.bytes);
        Some(entry)
    }

    /// Removes expired results and cancels calls nobody polled for too long.
    fn sweep(&mut self, settings: &LedgerSettings, force: bool) {
        let now = Instant::now();
        if !force && now.saturating_duration_since(self.last_sweep) < SWEEP_EVERY {
            return;
        }
        self.last_sweep = now;
        let held = &mut self.held;
        self.entries.retain(|_, calls| {
            calls.retain(|entry| {
                let expired = entry.expired(now);
                if expired {
                    held.release(entry.caller.as_deref(), 1, entry.bytes);
                }
                !expired
            });
            !calls.is_empty()
        });
        if let Some(limit) = settings.unpolled_limit {
            for entry in self.entries.values().flatten() {
                if entry.outcome.is_none()
                    && now.saturating_duration_since(entry.last_polled) > limit
                {
                    entry.token.cancel();
                }
            }
        }
    }

    /// Why a new call of `owner` may not be kept now, if it may not.
    fn refusal(&self, settings: &LedgerSettings, owner: Option<&str>) -> Option<ToolError> {
        let mine = self.held.of(owner);
        let whose = owner.map_or_else(
            || "calls started for no caller".to_owned(),
            |o| format!("the caller `{o}`"),
        );
        if mine.entries >= settings.max_entries_per_caller {
            return Some(busy(
                429,
                format!(
                    "{whose} already has {} tracked calls (its limit); read or remove \
                     finished ones, or raise LedgerSettings::max_entries_per_caller",
                    mine.entries
                ),
            ));
        }
        if mine.bytes >= settings.max_bytes_per_caller {
            return Some(busy(
                429,
                format!(
                    "the tracked calls of {whose} already hold {} bytes (its limit); read \
                     or remove finished ones, or raise LedgerSettings::max_bytes_per_caller",
                    mine.bytes
                ),
            ));
        }
        let all = self.held.total();
        if all.entries >= settings.max_entries {
            return Some(busy(
                503,
                format!(
                    "the ledger already tracks {} calls (its limit); read or remove \
                     finished ones, or raise LedgerSettings::max_entries",
                    all.entries
                ),
            ));
        }
        if all.bytes >= settings.max_bytes {
            return Some(busy(
                503,
                format!(
                    "the ledger already holds {} bytes (its limit); read or remove \
                     finished ones, or raise LedgerSettings::max_bytes",
                    all.bytes
                ),
            ));
        }
        None
    }
}

fn busy(status: u16, message: String) -> ToolError {
    ToolError::custom("BUSY", status, message)
}

/// What a tracked call runs: a tool by name, or one already found.
enum Callee<'a> {
    Named(&'a str),
    Found(Resolved),
}

impl Callee<'_> {
    fn name(&self) -> &str {
        match self {
            Self::Named(name) => name,
            Self::Found(found) => found.tool.name(),
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
            scope: Scope::Any,
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
            scope: Scope::Caller(caller.map(Arc::from)),
        }
    }

    /// Which call of an id this ledger (or view) means.
    fn who(&self) -> Who<'_> {
        match &self.scope {
            Scope::Any => Who::Any,
            Scope::Caller(caller) => Who::Sees(caller.as_deref()),
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
    pub(crate) fn start_found(
        &self,
        found: Resolved,
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
                Callee::Found(found) => runner.stream_resolved(found, args),
            };
            crate::exec::start::collect(
                Box::pin(std::future::ready(Ok(Box::pin(items) as _))),
                bound,
                name,
            )
        } else {
            Box::pin(match callee {
                Callee::Named(name) => runner.spawn(name, args),
                Callee::Found(found) => runner.spawn_resolved(found, args),
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

/// Runs the call `id` (`serial`) and keeps its result, counted against the byte
/// budgets, while the ledger is there.
async fn record(
    ledger: Weak<Inner>,
    id: String,
    serial: u64,
    call: futures::future::BoxFuture<'static, Result<Value, ToolError>>,
) {
    let result = call.await;
    let Some(inner) = ledger.upgrade() else {
        return;
    };
    let mut state = inner.lock();
    let added = result_bytes(&result);
    let Some(entry) = state.by_serial(&id, serial) else {
        return;
    };
    entry.outcome = Some((result, Instant::now()));
    entry.bytes += added;
    // Questions left unanswered are moot now.
    entry.waiting.clear();
    entry.touch();
    let owner = entry.caller.clone();
    state.held.add(owner.as_deref(), 0, added);
}

/// Parks a question on `entry` (`None`: the call is not tracked): the answer to
/// come, or its end.
fn ask_entry(
    entry: Option<&mut Entry>,
    name: Option<String>,
    request: ClientRequest,
) -> impl Future<Output = Result<Value, ToolError>> + Send + use<> {
    let (answer, answered) = oneshot::channel();
    let token = entry.map(|entry| {
        entry.asked += 1;
        let key = name.unwrap_or_else(|| format!("{}_{}", request.capability(), entry.asked));
        // A name asked again replaces the older question.
        entry.waiting.retain(|w| w.question.key != key);
        entry.waiting.push(Waiting {
            question: Question { key, request },
            answer,
        });
        entry.touch();
        entry.token.clone()
    });
    async move {
        let Some(token) = token else {
            return Err(ToolError::failed("the call asking is not tracked"));
        };
        match token.run_until_cancelled(answered).await {
            Some(Ok(answer)) => answer,
            Some(Err(_)) => Err(ToolError::Cancelled {
                reason: Some("the question was not answered".into()),
            }),
            None => Err(ToolError::Cancelled {
                reason: Some("the call was cancelled while it waited for an answer".into()),
            }),
        }
    }
}
