//! A durable call's outcome as a client reads it: the record a worker answers,
//! as what a poll says, and the error for an id no call has.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::ToolError;
use crate::remote;
use crate::remote::ledger::{TaskInfo, TaskPoll, TaskStatus};

pub(crate) fn unknown(id: &str) -> ToolError {
    ToolError::not_found_because(
        id,
        "no durable call has this id, or its outcome is past retention",
    )
}

/// A record, as a worker's outcome read answers it, as what a poll says.
pub(crate) fn decode(id: &str, bytes: &[u8]) -> TaskPoll {
    let Ok(record) = serde_json::from_slice::<Value>(bytes) else {
        return TaskPoll::Done(Err(ToolError::Output {
            path: None,
            message: format!("the state of the durable call `{id}` is not JSON"),
        }));
    };
    let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
    match record.get("status").and_then(Value::as_str) {
        Some("completed") => {
            TaskPoll::Done(Ok(record.get("result").cloned().unwrap_or(Value::Null)))
        }
        Some("failed") => TaskPoll::Done(Err(record
            .get("error")
            .cloned()
            .and_then(|e| serde_json::from_value::<ToolError>(e).ok())
            .unwrap_or_else(|| ToolError::custom("FAILED", 500, "the durable call failed")))),
        _ => {
            let submitted = record.get("submitted").and_then(Value::as_u64).unwrap_or(0);
            let started = UNIX_EPOCH
                .checked_add(Duration::from_millis(submitted))
                .unwrap_or(UNIX_EPOCH);
            TaskPoll::Working(TaskInfo {
                id: id.to_owned(),
                tool: text("tool").unwrap_or_default(),
                act: None,
                caller: text("caller"),
                status: TaskStatus::Working,
                started,
                updated: started,
                running_for: SystemTime::now()
                    .duration_since(started)
                    .unwrap_or_default(),
                progress: None,
                questions: Vec::new(),
                retention: remote::ledger::Retention::UntilRemoved,
                streamed: false,
            })
        }
    }
}
