//! Log messages from a running tool ([`Ctx::log`](crate::Ctx::log)): their
//! [`LogLevel`] and the [`LogMessage`] a caller's listener receives.
//!
//! Every log call is a `tracing` event (target `toolfunc::log`) at the matching
//! `tracing` level, with the tool's name; a caller that listens
//! ([`CallOptions::on_log`](crate::CallOptions::on_log)), such as the MCP server, also
//! receives each message.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The severity of a log message: the eight syslog levels of RFC 5424, which MCP uses
/// too, from the least to the most severe (they compare in that order).
///
/// ```
/// use toolfunc::LogLevel;
///
/// assert!(LogLevel::Warning > LogLevel::Info);
/// assert_eq!(LogLevel::Notice.as_str(), "notice");
/// assert_eq!(serde_json::to_value(LogLevel::Critical).unwrap(), "critical");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed information for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// An operation failed.
    Error,
    /// A component failed.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, from the least to the most severe.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level's name as MCP spells it: `"debug"`, `"info"`, ... `"emergency"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log message from a running tool, as a listener
/// ([`CallOptions::on_log`](crate::CallOptions::on_log)) receives it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogMessage {
    /// The tool that logged it.
    pub tool: String,
    /// The call's id, when it has one.
    pub call_id: Option<String>,
    /// Its severity.
    pub level: LogLevel,
    /// The name of the logger within the tool, when it gave one.
    pub logger: Option<String>,
    /// What was logged: a string for [`Ctx::log`](crate::Ctx::log), any JSON value for
    /// [`Ctx::log_data`](crate::Ctx::log_data).
    pub data: Value,
}

impl LogMessage {
    /// A message from `tool` at `level`.
    pub fn new(tool: impl Into<String>, level: LogLevel, data: impl Into<Value>) -> Self {
        Self {
            tool: tool.into(),
            call_id: None,
            level,
            logger: None,
            data: data.into(),
        }
    }
}

/// A log message's data as text: a string as it is, anything else as JSON.
pub(crate) struct DataText<'a>(pub(crate) &'a Value);

impl fmt::Display for DataText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::String(text) => f.write_str(text),
            other => fmt::Display::fmt(other, f),
        }
    }
}

/// The `tracing` event of one log call: `debug` at DEBUG, `info` and `notice` at
/// INFO, `warning` at WARN, the rest at ERROR; the MCP level is the `severity` field.
pub(crate) fn trace(
    tool: &str,
    call_id: Option<&str>,
    level: LogLevel,
    logger: Option<&str>,
    message: &dyn fmt::Display,
) {
    macro_rules! event {
        ($level:expr) => {
            tracing::event!(
                $level,
                tool,
                call_id,
                logger,
                severity = level.as_str(),
                "{message}"
            )
        };
    }
    match level {
        LogLevel::Debug => event!(tracing::Level::DEBUG),
        LogLevel::Info | LogLevel::Notice => event!(tracing::Level::INFO),
        LogLevel::Warning => event!(tracing::Level::WARN),
        LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
            event!(tracing::Level::ERROR);
        }
    }
}
