//! What the ledger tells of a tracked call: where it stands ([`TaskStatus`]), what
//! it asks ([`Question`]), all it knows of it ([`TaskInfo`]) and a poll's answer
//! ([`TaskPoll`]).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::settings::Retention;
use crate::ask::ClientRequest;
use crate::error::ToolError;
use crate::options::Progress;

/// Where a tracked call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Still running.
    Working,
    /// Waiting for its caller to answer its [`questions`](TaskInfo::questions)
    /// ([`Track::park_questions`]).
    ///
    /// [`Track::park_questions`]: super::settings::Track::park_questions
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled (by [`Ledger::cancel`], its token, or for going unpolled).
    ///
    /// [`Ledger::cancel`]: super::Ledger::cancel
    Cancelled,
}

impl TaskStatus {
    /// Whether the call has ended.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A question a tracked call waits on ([`Track::park_questions`]).
///
/// [`Track::park_questions`]: super::settings::Track::park_questions
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Question {
    /// What [`Ledger::answer`] answers it under: the name the tool gave it
    /// ([`Ctx::ask_named`](crate::Ctx::ask_named)), else the capability it needs and
    /// a number (`elicitation_1`).
    ///
    /// [`Ledger::answer`]: super::Ledger::answer
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
    ///
    /// [`Track::streamed`]: super::settings::Track::streamed
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
