//! A worker's endpoints: one per served tool, kept in step with the registry
//! (and clients told when they change), discovery, and the control subjects
//! (cancels and stream credit).

use std::collections::HashMap;
use std::sync::Arc;

use async_nats::service;
use futures::StreamExt;

use super::answer::respond_error;
use super::calls::{WINDOW, handle};
use super::shared::{Control, Shared};
use crate::nats::wire::{self, CALL_ID, CALLER, CANCEL, CONTROL_KEY, CREDIT, lock};
use crate::options::{CallOptions, Surface};
use crate::registry::RegistryEvent;
use crate::registry::SubscriptionError;
use crate::remote::{self, Catalog};

/// Adds an endpoint for every callable tool that has none and removes the
/// endpoints of tools that are gone; tells clients when something changed.
pub(super) async fn sync(shared: &Arc<Shared>) {
    let offered = Catalog::of(&shared.registry);
    let wanted: HashMap<&str, &crate::tool::ToolDefinition> = wire::served(&offered)
        .map(|def| (def.name.as_str(), def))
        .collect();
    let mut changed = false;
    {
        let mut endpoints = lock(&shared.endpoints);
        endpoints.retain(|name, task| {
            let keep = wanted.contains_key(name.as_str());
            if !keep {
                task.abort();
                changed = true;
            }
            keep
        });
    }
    for (name, def) in wanted {
        if lock(&shared.endpoints).contains_key(name) {
            continue;
        }
        let mut metadata = HashMap::new();
        metadata.insert("tool".to_owned(), name.to_owned());
        if def.stream {
            metadata.insert("stream".to_owned(), "true".to_owned());
        }
        let subject = wire::call_subject(&shared.prefix, name);
        // Unnamed: the endpoint is known by its subject, unique per tool.
        match shared.endpoint(None, &subject, metadata).await {
            Ok(endpoint) => {
                let task = tokio::spawn(serve_tool(Arc::clone(shared), endpoint, name.to_owned()));
                lock(&shared.endpoints).insert(name.to_owned(), task);
                changed = true;
            }
            Err(err) => {
                tracing::warn!(tool = %name, error = %err, "cannot serve the tool over NATS");
            }
        }
    }
    if changed {
        // Only which worker changed: clients ask it (`<prefix>.tools.<worker>`) and
        // any worker for the definitions, and take none from an event, which
        // anyone allowed to publish there could have sent.
        let event = serde_json::json!({"worker": shared.id});
        let _ = shared
            .client
            .publish(
                wire::events_subject(&shared.prefix),
                event.to_string().into(),
            )
            .await;
    }
}

/// Follows the registry: every change to the catalog re-syncs the endpoints.
pub(super) async fn watch(shared: Arc<Shared>, mut events: crate::registry::Subscription) {
    loop {
        match events.recv().await {
            Ok(
                RegistryEvent::Added { .. }
                | RegistryEvent::Removed { .. }
                | RegistryEvent::Cleared,
            )
            | Err(SubscriptionError::Lagged(_)) => sync(&shared).await,
            Ok(_) => {}
            Err(SubscriptionError::Closed) => return,
        }
    }
}

pub(super) async fn serve_discovery(
    shared: Arc<Shared>,
    mut endpoint: service::endpoint::Endpoint,
) {
    while let Some(request) = endpoint.next().await {
        if shared.trust.reply(&request.message).is_none() {
            continue;
        }
        let headers = request.message.headers.as_ref();
        if let Err(err) = shared.trust.screen(headers) {
            respond_error(&request, &err).await;
            continue;
        }
        let identity = match shared.trust.identity(headers).await {
            Ok(identity) => identity,
            Err(err) => {
                respond_error(&request, &err).await;
                continue;
            }
        };
        if let Some(reply) = request.message.reply.as_deref()
            && !shared.trust.fits(reply, identity.as_ref())
        {
            continue;
        }
        // Listed as the layers and its scopes show them to this caller: a tool it
        // may not see is not in its list (and calling it is `NOT_FOUND`, or 403
        // `INSUFFICIENT_SCOPE` for one it lacks the scopes for).
        let mut viewer = CallOptions::new().surface(Surface::Nats);
        if let Some(identity) = identity {
            viewer = viewer.identity(identity);
        }
        if let Some(caller) = wire::header(headers, CALLER) {
            viewer = viewer.caller(caller);
        }
        let body = wire::discovery(
            &shared.registry,
            &remote::Sight::of(&shared.registry, Some(&viewer)),
        )
        .to_string();
        let _ = request.respond(Ok(body.into())).await;
    }
}

pub(super) async fn serve_control(shared: Arc<Shared>, mut subscriber: async_nats::Subscriber) {
    while let Some(message) = subscriber.next().await {
        let headers = message.headers.as_ref();
        let Some(id) = wire::header(headers, CALL_ID) else {
            continue;
        };
        if !lock(&shared.calls).contains_key(id) {
            continue;
        }
        // With an authenticator, a control message proves who sends it too.
        let Ok(who) = shared.trust.identity(headers).await else {
            continue;
        };
        let key = wire::header(headers, CONTROL_KEY);
        let controls: Vec<Arc<Control>> = lock(&shared.calls)
            .get(id)
            .map(|all| {
                all.iter()
                    .filter(|c| c.obeys(key, who.as_ref()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for control in controls {
            *lock(&control.heard) = tokio::time::Instant::now();
            if let Some(credit) = wire::header(headers, CREDIT).and_then(|c| c.parse::<u32>().ok())
            {
                let room =
                    (*WINDOW.end() as usize).saturating_sub(control.credit.available_permits());
                control.credit.add_permits((credit as usize).min(room));
            }
            if wire::header(headers, CANCEL).is_some() {
                control.cancel.cancel();
            }
        }
    }
}

async fn serve_tool(shared: Arc<Shared>, mut endpoint: service::endpoint::Endpoint, tool: String) {
    while let Some(request) = endpoint.next().await {
        tokio::spawn(handle(Arc::clone(&shared), request, tool.clone()));
    }
}
