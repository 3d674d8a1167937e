//! What a running call reports while it runs (its progress, a streaming tool's
//! items, its log messages), and each report as MCP sends it.

#[allow(deprecated)] // Logging is deprecated in the SDK (SEP-2577), yet in both revisions.
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ProgressNotificationParam, ProgressToken, ServerNotification};
use serde_json::Value;

use crate::log::{LogLevel, LogMessage};
use crate::options::Progress;

/// The progress reports of one call, kept increasing as MCP requires: a streaming
/// tool's items count as progress until the tool reports its own; a report that
/// would not go forward is left out.
pub(super) struct Monotonic {
    token: Option<ProgressToken>,
    last: f64,
    own: bool,
}

impl Monotonic {
    pub(super) fn new(token: Option<ProgressToken>) -> Self {
        Self {
            token,
            last: f64::NEG_INFINITY,
            own: false,
        }
    }

    pub(super) fn admit(&mut self, step: Step) -> Option<ProgressNotificationParam> {
        let token = self.token.clone()?;
        if matches!(step, Step::Progress(_)) {
            self.own = true;
        } else if self.own {
            return None;
        }
        let param = step.into_param(token);
        (param.progress > self.last).then(|| {
            self.last = param.progress;
            param
        })
    }
}

/// What a running call reports while it runs.
pub(super) enum Report {
    Step(Step),
    Log(LogMessage),
}

/// How far a call has come.
pub(super) enum Step {
    Progress(Progress),
    /// The n-th item of a streaming tool.
    Item(usize, Value),
}

impl Step {
    #[allow(clippy::cast_precision_loss)]
    fn into_param(self, token: ProgressToken) -> ProgressNotificationParam {
        match self {
            Self::Progress(progress) => {
                let mut param = ProgressNotificationParam::new(token, progress.done);
                if let Some(total) = progress.total {
                    param = param.with_total(total);
                }
                if let Some(message) = progress.message {
                    param = param.with_message(message);
                }
                param
            }
            Self::Item(n, item) => {
                ProgressNotificationParam::new(token, n as f64).with_message(item.to_string())
            }
        }
    }
}

#[allow(deprecated)]
pub(super) fn from_mcp(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

#[allow(deprecated)]
fn to_mcp(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A log message as MCP sends it: the logger is the tool unless it named one.
#[allow(deprecated)]
pub(super) fn log_param(message: LogMessage) -> LoggingMessageNotificationParam {
    let logger = message.logger.unwrap_or(message.tool);
    LoggingMessageNotificationParam::new(to_mcp(message.level), message.data).with_logger(logger)
}

/// Where the reports of a call go when the server answers its request itself, not
/// through the SDK's session: to the answer being written, in the request's
/// extensions. Without one, reports go to the request's peer.
#[derive(Clone)]
pub(super) struct Outbox(pub(super) tokio::sync::mpsc::UnboundedSender<ServerNotification>);
