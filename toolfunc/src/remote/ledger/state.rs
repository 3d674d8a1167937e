//! The ledger's entries under its lock: finding a call by id and caller, sweeping
//! expired ones, refusing calls past the bounds, keeping a result, parking a
//! question.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::info::{Question, TaskInfo, TaskStatus};
use super::settings::{LedgerSettings, Retention};
use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::options::{Progress, json_size};
use crate::quota::Holdings;
use crate::registry::Registry;

/// Which call of an id a lookup means.
#[derive(Clone, Copy)]
pub(super) enum Who<'a> {
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
    pub(super) fn lists(self, owner: Option<&str>) -> bool {
        match self {
            Self::Any => true,
            Self::Exactly(who) => owner == who,
            Self::Sees(who) => owner.is_none() || owner == who,
        }
    }
}

pub(super) struct Inner {
    pub(super) registry: Registry,
    pub(super) settings: LedgerSettings,
    pub(super) state: Mutex<State>,
}

pub(super) struct State {
    /// The calls by id: one id names at most one call of each caller (almost always
    /// just one call).
    pub(super) entries: HashMap<Box<str>, Vec<Entry>>,
    pub(super) held: Holdings,
    /// Tells an entry from a later one under the same id and caller.
    pub(super) next_serial: u64,
    pub(super) last_sweep: Instant,
}

/// A question waiting for its answer.
pub(super) struct Waiting {
    pub(super) question: Question,
    pub(super) answer: oneshot::Sender<Result<Value, ToolError>>,
}

pub(super) struct Entry {
    pub(super) serial: u64,
    pub(super) tool: String,
    pub(super) act: Option<String>,
    /// Whose call it is: the owner key of its options.
    pub(super) caller: Option<String>,
    pub(super) started: SystemTime,
    pub(super) started_at: Instant,
    pub(super) updated: SystemTime,
    pub(super) last_polled: Instant,
    pub(super) retention: Retention,
    pub(super) progress: Option<Progress>,
    pub(super) token: CancellationToken,
    pub(super) outcome: Option<(Result<Value, ToolError>, Instant)>,
    pub(super) waiting: Vec<Waiting>,
    /// Questions asked so far, for their keys.
    pub(super) asked: usize,
    /// Bumped on every change a waiter may want: a question, an answer, the end.
    pub(super) changed: watch::Sender<u64>,
    pub(super) streamed: bool,
    /// What it counts against the byte budgets.
    pub(super) bytes: usize,
}

impl Entry {
    fn status(&self) -> TaskStatus {
        match &self.outcome {
            Some((result, _)) => status_of(result),
            None if self.waiting.is_empty() => TaskStatus::Working,
            None => TaskStatus::InputRequired,
        }
    }

    pub(super) fn info(&self, id: &str) -> TaskInfo {
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
    pub(super) fn touch(&mut self) {
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
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held leaves consistent entries: keep going.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl State {
    pub(super) fn get(&self, who: Who<'_>, id: &str) -> Option<&Entry> {
        let calls = self.entries.get(id)?;
        who.find(calls).map(|at| &calls[at])
    }

    pub(super) fn get_mut(&mut self, who: Who<'_>, id: &str) -> Option<&mut Entry> {
        let calls = self.entries.get_mut(id)?;
        who.find(calls).map(move |at| &mut calls[at])
    }

    /// The entry `serial` under `id`, if it is still kept.
    pub(super) fn by_serial(&mut self, id: &str, serial: u64) -> Option<&mut Entry> {
        self.entries
            .get_mut(id)?
            .iter_mut()
            .find(|e| e.serial == serial)
    }

    /// Removes the call meant and gives back what it held.
    pub(super) fn take(&mut self, who: Who<'_>, id: &str) -> Option<Entry> {
        let calls = self.entries.get_mut(id)?;
        let entry = calls.swap_remove(who.find(calls)?);
        if calls.is_empty() {
            self.entries.remove(id);
        }
        self.held.release(entry.caller.as_deref(), 1, entry.bytes);
        Some(entry)
    }

    /// Removes expired results and cancels calls nobody polled for too long.
    pub(super) fn sweep(&mut self, settings: &LedgerSettings, force: bool) {
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
    pub(super) fn refusal(
        &self,
        settings: &LedgerSettings,
        owner: Option<&str>,
    ) -> Option<ToolError> {
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

/// Runs the call `id` (`serial`) and keeps its result, counted against the byte
/// budgets, while the ledger is there.
pub(super) async fn record(
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
pub(super) fn ask_entry(
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
