//! How calls are kept: the ledger's bounds and defaults ([`LedgerSettings`],
//! [`Retention`]) and how one call is tracked ([`Track`]).

use std::collections::HashMap;
use std::time::Duration;

use crate::options::CallOptions;

/// How long a finished call's result is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// Until it is read once ([`Ledger::poll`] or [`Ledger::wait`] returning it).
    ///
    /// [`Ledger::poll`]: super::Ledger::poll
    /// [`Ledger::wait`]: super::Ledger::wait
    UntilRead,
    /// For this long after the call finished, however often it is read.
    KeepFor(Duration),
    /// Until [`Ledger::remove`].
    ///
    /// [`Ledger::remove`]: super::Ledger::remove
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
    pub(super) id: Option<String>,
    pub(super) retention: Option<Retention>,
    pub(super) options: Option<CallOptions>,
    pub(super) park_questions: bool,
    pub(super) streamed: bool,
    /// Bytes the caller keeps beside the arguments for the call's life (what a
    /// surface captured for it), counted in the caller's quota.
    pub(super) kept: usize,
}

impl Track {
    /// Counts `bytes` more in the call's share of its caller's quota: what the
    /// surface keeps for the call besides its arguments (a client's declared
    /// capabilities, say).
    #[cfg(feature = "mcp")]
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
    /// [`TaskStatus::InputRequired`], with its [`questions`](super::info::TaskInfo::questions) to
    /// read, until [`Ledger::answer`] answers them. This replaces an answering
    /// function set in the options.
    ///
    /// [`TaskStatus::InputRequired`]: super::info::TaskStatus::InputRequired
    /// [`Ledger::answer`]: super::Ledger::answer
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

    /// Runs the call for its items ([`run_stream`]), gathered
    /// into an array within the options' [`CollectLimit`](crate::CollectLimit), and
    /// marks it so ([`TaskInfo::streamed`]): a surface whose caller asked for a
    /// stream answers the result as one (HTTP: NDJSON).
    ///
    /// [`run_stream`]: crate::registry::Registry::run_stream
    /// [`TaskInfo::streamed`]: super::info::TaskInfo::streamed
    #[must_use]
    pub fn streamed(mut self) -> Self {
        self.streamed = true;
        self
    }
}
