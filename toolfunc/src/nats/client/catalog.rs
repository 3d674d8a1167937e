//! The remote tools in the client's registry: loaded from the workers' discovery,
//! kept up to date when a worker says its catalogue changed, each a local tool
//! that calls the workers.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;

use super::remote::{Remote, unreachable};
use crate::error::ToolError;
use crate::nats::wire;
use crate::registry::{Registry, UnregisterOptions};
use crate::tool::{ToolDefinition, ToolFunc};

/// Refreshes the registry whenever a worker says its catalog changed.
pub(super) async fn follow(
    mut events: async_nats::Subscriber,
    remote: Arc<Remote>,
    registry: Registry,
) {
    while let Some(event) = events.next().await {
        // Several changes at once make one reload.
        let mut latest = event;
        while let Some(Some(next)) = futures::FutureExt::now_or_never(events.next()) {
            latest = next;
        }
        // An event only says that a worker's catalogue changed; what the worker
        // now serves is asked of the workers themselves, never taken from it.
        let worker = serde_json::from_slice::<Value>(&latest.payload)
            .ok()
            .and_then(|v| v.get("worker").and_then(Value::as_str).map(str::to_owned))
            .filter(|worker| !worker.contains('.') && wire::subject_safe(worker));
        if let Err(err) = reload(&remote, &registry, worker.as_deref()).await {
            tracing::debug!(error = %err, "cannot reload the NATS service's definitions");
        }
    }
}

/// Loads the definitions from any worker (plus those of `worker`, which said its
/// catalogue changed) and makes the registry hold exactly those.
pub(super) async fn reload(
    remote: &Arc<Remote>,
    registry: &Registry,
    worker: Option<&str>,
) -> Result<(), ToolError> {
    let own = match worker {
        Some(worker) => discover(remote, &wire::worker_tools_subject(&remote.prefix, worker))
            .await
            .ok(),
        None => None,
    };
    let also = own.as_ref();
    let listing = match discover(remote, &wire::tools_subject(&remote.prefix)).await {
        Ok(listing) => listing,
        // A worker's announcement still adds its tools when no worker answers
        // discovery in time; nothing is removed on so little knowledge.
        Err(err) if also.is_some() => {
            tracing::debug!(error = %err, "discovery failed; adding the announced tools only");
            for (name, def) in definitions(also) {
                if !registry.has(&name)
                    && let Err(err) = remote_tool(remote, def).and_then(|t| registry.register(t))
                {
                    tracing::warn!(tool = %name, error = %err, "skipping a remote tool that cannot be registered");
                }
            }
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    let mut wanted = definitions(Some(&listing));
    wanted.extend(definitions(also));
    for name in registry.names() {
        let same = registry
            .get(&name)
            .zip(wanted.get(&name))
            .is_some_and(|(tool, def)| tool.definition() == def);
        if same {
            wanted.remove(&name);
        } else {
            registry.unregister_with(&name, UnregisterOptions::new().force());
        }
    }
    for (name, def) in wanted {
        let registered = remote_tool(remote, def).and_then(|tool| registry.register(tool));
        if let Err(err) = registered {
            tracing::warn!(tool = %name, error = %err, "skipping a remote tool that cannot be registered");
        }
    }
    Ok(())
}

/// The definitions of a worker (any, on `subject` of the queue group; one, on its
/// own), keyed by name.
async fn discover(remote: &Remote, subject: &str) -> Result<Value, ToolError> {
    let answer = remote
        .nats
        .request_with_headers(
            subject.to_owned(),
            remote.auth_headers(),
            bytes::Bytes::new(),
        )
        .await
        .map_err(|e| match e.kind() {
            async_nats::RequestErrorKind::NoResponders => ToolError::custom(
                "NO_WORKER",
                503,
                format!("no worker serves `{}` on this NATS server", remote.prefix),
            ),
            _ => unreachable("load the definitions", &e),
        })?;
    if wire::is_error(answer.headers.as_ref()) {
        let headers = answer.headers.unwrap_or_default();
        return Err(wire::error_from_headers(&headers, "tools"));
    }
    wire::result(&answer.payload)
}

/// The tool definitions of a listing (`{name: definition}`); entries that are not
/// definitions, or whose names cannot be subjects, are skipped.
fn definitions(listing: Option<&Value>) -> HashMap<String, ToolDefinition> {
    let mut found = HashMap::new();
    let Some(entries) = listing.and_then(Value::as_object) else {
        return found;
    };
    for (name, entry) in entries {
        match serde_json::from_value::<ToolDefinition>(entry.clone()) {
            Ok(def) if def.name == *name && wire::subject_safe(name) => {
                found.insert(name.clone(), def);
            }
            _ => {
                tracing::warn!(tool = %name, "skipping a definition that is not a tool definition");
            }
        }
    }
    found
}

/// A local tool standing for a remote one.
fn remote_tool(remote: &Arc<Remote>, def: ToolDefinition) -> Result<ToolFunc, ToolError> {
    let name = def.name.clone();
    let streams = def.stream;
    let builder = ToolFunc::from_definition(def);
    let remote = Arc::clone(remote);
    let builder = if streams {
        builder.stream_handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            async move { remote.open_stream(Some(&ctx), &name, args).await }
        })
    } else {
        builder.handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            async move { remote.call(Some(&ctx), &name, args).await }
        })
    };
    // The worker checks the arguments; a second check here could only disagree.
    builder.unchecked().build()
}
