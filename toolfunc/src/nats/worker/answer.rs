//! A worker's answers: a value, an error (trimmed to what the server takes), or a
//! stream of items sent no further ahead of the consumer than its credit.

use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::service::{self, Request};
use futures::StreamExt;
use serde_json::Value;

use super::shared::{Control, Shared};
use crate::error::ToolError;
use crate::nats::spans::failed;
use crate::nats::wire::{self, CONTROL, KIND, lock};
use crate::options::CallOptions;
use crate::remote::Found;

/// How long a stream may wait for its consumer.
#[derive(Clone, Copy)]
pub(super) struct StreamLimits {
    /// The caller's deadline.
    pub(super) deadline: Option<tokio::time::Instant>,
    /// How long the consumer may stay silent while the stream waits for credit.
    pub(super) idle: Duration,
}

/// A consumer that asked for no heartbeats may stay silent this long.
pub(super) const STREAM_IDLE: Duration = Duration::from_secs(60);

/// Runs a streaming call: each item one message, never more ahead of the consumer
/// than its credits, then an end marker or the error.
pub(super) async fn stream(
    shared: &Shared,
    (request, reply): (&Request, &str),
    (found, args): (Found, Value),
    options: CallOptions,
    control: &Control,
    limits: StreamLimits,
) {
    let tool = found.name().to_owned();
    let tool = tool.as_str();
    let mut items = found.stream(&shared.registry.with(options), args);
    loop {
        let next = tokio::select! {
            next = items.next() => next,
            () = control.cancel.cancelled() => return,
        };
        match next {
            None => {
                let mut headers = HeaderMap::new();
                headers.insert(KIND, wire::KIND_END);
                let _ = request
                    .respond_with_headers(Ok(bytes::Bytes::new()), headers)
                    .await;
                return;
            }
            Some(Err(err)) => return respond_error(request, &err).await,
            Some(Ok(item)) => {
                // Wait for credit, but not past the deadline, nor for a consumer
                // that has gone quiet (a live one sends a credit or a keep-alive
                // every heartbeat).
                let credit = loop {
                    let quiet = *lock(&control.heard) + limits.idle;
                    let until = limits.deadline.map_or(quiet, |d| d.min(quiet));
                    tokio::select! {
                        credit = control.credit.acquire() => break credit,
                        () = control.cancel.cancelled() => return,
                        () = tokio::time::sleep_until(until) => {
                            let now = tokio::time::Instant::now();
                            if limits.deadline.is_some_and(|d| now >= d) {
                                let err = ToolError::Timeout { after_ms: None };
                                return respond_error(request, &err).await;
                            }
                            if now >= *lock(&control.heard) + limits.idle {
                                tracing::debug!(tool, "a stream's consumer went quiet; stopping");
                                return;
                            }
                        }
                    }
                };
                match credit {
                    Ok(permit) => permit.forget(),
                    Err(_) => return,
                }
                let body = match encode(shared, &item) {
                    Ok(body) => body,
                    Err(err) => return respond_error(request, &err).await,
                };
                let mut headers = HeaderMap::new();
                headers.insert(KIND, wire::KIND_ITEM);
                headers.insert(CONTROL, wire::header_value(&shared.control));
                if let Err(err) = shared
                    .client
                    .publish_with_headers(reply.to_owned(), headers, body)
                    .await
                {
                    tracing::debug!(tool, error = %err, "a stream's consumer is gone");
                    return;
                }
            }
        }
    }
}

/// A value as a payload, refused when it is larger than the server takes.
fn encode(shared: &Shared, value: &Value) -> Result<bytes::Bytes, ToolError> {
    wire::payload(&shared.client, value, "the answer")
}

pub(super) async fn respond_value(shared: &Shared, request: &Request, value: &Value) {
    match encode(shared, value) {
        Ok(body) => {
            let _ = request.respond(Ok(body)).await;
        }
        Err(err) => respond_error(request, &err).await,
    }
}

/// Answers `err`; the call's span (when it runs in one) records it.
pub(super) async fn respond_error(request: &Request, err: &ToolError) {
    failed(&tracing::Span::current(), Some(err));
    let status = service::error::Error {
        status: wire::short(&err.to_string(), wire::MAX_ERROR_TEXT),
        code: usize::from(err.status()),
    };
    let sent = request
        .respond_with_headers(Err(status.clone()), wire::error_headers(err))
        .await;
    if sent.is_err() {
        // Too large even trimmed (or the connection is gone): the code and status
        // alone still tell the caller what happened.
        let mut headers = HeaderMap::new();
        headers.insert(wire::ERROR_CODE, wire::header_value(err.code()));
        let _ = request.respond_with_headers(Err(status), headers).await;
    }
}
