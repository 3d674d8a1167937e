//! Prompts, resources and completions over MCP: `prompts/list`, `prompts/get`,
//! `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe`, `resources/unsubscribe` and `completion/complete`, each
//! found and admitted on the remote floor as a tool is, and the notifications that
//! tell a session of the catalogue's changes.
//!
//! A prompt's function that asks its client something (elicitation, sampling,
//! roots) asks a session's client through its session, and a sessionless client
//! with an input-required result, as a tool does.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Reference, ResourceTemplate,
    ResourceUpdatedNotificationParam, ResultType,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::complete::{CompletionRef, CompletionRequest};
use crate::error::ToolError;
use crate::options::CallOptions;
use crate::prompt::{PromptFunc, PromptResult};
use crate::registry::{RegistryEvent, Subscription, SubscriptionError};
use crate::remote::{self, Found};
use crate::resource::ResourceFunc;

use super::ask;
use super::call::Driven;
use super::caller::{log_gate, sessionless};
use super::server::Server;
use super::shape::Shape;

/// The longest cursor a list takes back (bytes).
const MAX_CURSOR: usize = 4096;

impl Server {
    /// The caller's options when layers or scopes must judge what it sees.
    fn viewer(&self, context: &RequestContext<RoleServer>) -> Option<CallOptions> {
        (self.shared.registry.has_layers() || self.shared.authenticator.is_some())
            .then(|| self.caller_options(context))
    }

    /// `prompts/list`: the prompts this caller is offered, by name, a page at a time.
    pub(super) fn prompt_page(
        &self,
        request: Option<&PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = remote::prompts(&self.shared.registry, self.viewer(context).as_ref());
        let (page, next) = self.page(&prompts, request, "prompts/list", |p| p.name())?;
        let prompts = page
            .iter()
            .map(|p| listed_prompt(p))
            .collect::<Result<_, _>>()?;
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.next_cursor = next;
        Ok(result)
    }

    /// `resources/list`: the fixed resources this caller is offered, by URI.
    pub(super) fn resource_page(
        &self,
        request: Option<&PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (fixed, _) = remote::resources(&self.shared.registry, self.viewer(context).as_ref());
        let (page, next) = self.page(&fixed, request, "resources/list", |r| r.address())?;
        let resources = page
            .iter()
            .map(|r| listed(r, false))
            .collect::<Result<_, _>>()?;
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = next;
        Ok(result)
    }

    /// `resources/templates/list`: the templates this caller is offered, in the
    /// order they were registered.
    pub(super) fn template_page(
        &self,
        request: Option<&PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let (_, templates) =
            remote::resources(&self.shared.registry, self.viewer(context).as_ref());
        let cursor = cursor_of(request, "resources/templates/list")?;
        // Templates keep their order: the cursor is a position.
        let start = match cursor {
            None => 0,
            Some(at) => at
                .parse::<usize>()
                .map_err(|_| bad_cursor("resources/templates/list", at))?,
        };
        let size = self.shared.page_size.max(1);
        let end = start.saturating_add(size).min(templates.len());
        let page = templates.get(start..end).unwrap_or_default();
        let listed: Vec<ResourceTemplate> = page
            .iter()
            .map(|r| listed(r, true))
            .collect::<Result<_, _>>()?;
        let mut result = ListResourceTemplatesResult::with_all_items(listed);
        result.next_cursor = (end < templates.len()).then(|| end.to_string());
        Ok(result)
    }

    /// One page of `items` (sorted by `key`), after the cursor's key.
    fn page<'a, T>(
        &self,
        items: &'a [T],
        request: Option<&PaginatedRequestParams>,
        method: &str,
        key: impl Fn(&T) -> &str,
    ) -> Result<(&'a [T], Option<String>), ErrorData> {
        let start = match cursor_of(request, method)? {
            None => 0,
            Some(after) => items.partition_point(|item| key(item) <= after),
        };
        let size = self.shared.page_size.max(1);
        let end = start.saturating_add(size).min(items.len());
        let page = &items[start..end];
        let next = (end < items.len())
            .then(|| page.last().map(|last| key(last).to_owned()))
            .flatten();
        Ok((page, next))
    }

    /// `prompts/get`: the prompt found for this caller and rendered, asking its
    /// client what it asks through the session, or in rounds for a sessionless
    /// client.
    pub(super) async fn get_prompt_now(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let registry = &self.shared.registry;
        let viewer = self.viewer(&context);
        let prompt = remote::admit_prompt(registry, &request.name, viewer.as_ref())
            .map_err(|err| refusal(&err, json!({"name": request.name})))?;
        let bound = format!("prompts/get {}", request.name);
        let args = || Ok(prompt.arguments(Value::Object(request.arguments.unwrap_or_default())));
        let asked = (request.request_state.as_deref(), request.input_responses);
        let function = (bound.as_str(), prompt.tool().clone());
        let driven = Box::pin(self.drive_function(function, args, viewer, asked, &context)).await?;
        match driven {
            Driven::Asked(asked) => Ok(GetPromptResponse::InputRequired(asked)),
            Driven::Done(outcome, _) => {
                let result = outcome
                    .and_then(PromptResult::from_value)
                    .map_err(|err| refusal(&err, json!({"name": request.name})))?;
                let mut result: GetPromptResult = convert(&result)?;
                result.result_type = Some(ResultType::COMPLETE);
                Ok(GetPromptResponse::Complete(result))
            }
        }
    }

    /// `resources/read`: the resource found for this caller, read, its contents
    /// bounded.
    pub(super) async fn read_resource_now(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let registry = &self.shared.registry;
        let viewer = self.viewer(&context);
        let uri = request.uri;
        let resource = remote::admit_resource(registry, &uri, viewer.as_ref())
            .map_err(|err| refusal(&err, json!({"uri": uri})))?;
        let bound = format!("resources/read {uri}");
        let args = || {
            resource
                .arguments(&uri)
                .ok_or_else(|| refusal(&ToolError::not_found(&uri), json!({"uri": uri})))
        };
        let asked = (request.request_state.as_deref(), request.input_responses);
        let function = (bound.as_str(), resource.tool().clone());
        let driven = Box::pin(self.drive_function(function, args, viewer, asked, &context)).await?;
        match driven {
            Driven::Asked(asked) => Ok(ReadResourceResponse::InputRequired(asked)),
            Driven::Done(outcome, _) => {
                let contents = outcome
                    .and_then(|value| resource.contents(&uri, value))
                    .and_then(|contents| {
                        remote::bounded_contents(contents, self.shared.collect_limit.bytes)
                    })
                    .map_err(|err| refusal(&err, json!({"uri": uri})))?;
                let mut result: ReadResourceResult = convert(&json!({ "contents": contents }))?;
                result.result_type = Some(ResultType::COMPLETE);
                Ok(ReadResourceResponse::Complete(result))
            }
        }
    }

    /// Drives the function of a prompt get or a resource read (`bound`, the
    /// function's tool): a sessionless client's retry resumes its parked call;
    /// else the function runs with the arguments `args` makes, for the caller of
    /// `viewer` (or of the session).
    async fn drive_function(
        &self,
        (bound, tool): (&str, crate::tool::ToolRef),
        args: impl FnOnce() -> Result<Value, ErrorData>,
        viewer: Option<CallOptions>,
        (state, answers): (Option<&str>, Option<rmcp::model::InputResponses>),
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        let sessionless = sessionless(context);
        let gate = log_gate(context, sessionless)?;
        if let Some(state) = state
            && sessionless
        {
            let answers = answers.unwrap_or_default();
            return Box::pin(self.resume_bound(bound, state, &answers, gate, context)).await;
        }
        let args = args()?;
        let options = viewer.unwrap_or_else(|| self.caller_options(context));
        let found = Found::of_function(&self.shared.registry, tool);
        let answered = answers.unwrap_or_default();
        Box::pin(self.run_function(bound, (found, args), options, answered, context)).await
    }

    /// Runs a prompt's or a resource's function for this client: in rounds for a
    /// sessionless client, else with its questions asked through the session.
    async fn run_function(
        &self,
        bound: &str,
        (found, args): (Found, Value),
        options: CallOptions,
        answered: rmcp::model::InputResponses,
        context: &RequestContext<RoleServer>,
    ) -> Result<Driven, ErrorData> {
        let options = options.collect_limit(self.shared.collect_limit);
        let shape = Shape {
            content: false,
            any_structured: false,
        };
        if sessionless(context) {
            let gate = log_gate(context, true)?;
            return self
                .first_round(
                    bound,
                    (found, args, false),
                    options,
                    None,
                    gate,
                    shape,
                    answered,
                    context,
                )
                .await;
        }
        let asker = ask::through(context, found.name().to_owned());
        let options = options
            .cancel_on(context.ct.clone())
            .on_client_request(asker);
        let runner = self.shared.registry.with(options);
        Ok(Driven::Done(found.run(&runner, args).await, shape))
    }

    /// `resources/subscribe`: the session hears `notifications/resources/updated`
    /// for `uri` (one this caller may read), up to
    /// [`max_subscriptions`](Server::max_subscriptions) URIs.
    pub(super) fn subscribe_now(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        remote::admit_resource(&self.shared.registry, uri, self.viewer(context).as_ref())
            .map_err(|err| refusal(&err, json!({"uri": uri})))?;
        let mut subscribed = self
            .session
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !subscribed.contains(uri) && subscribed.len() >= self.shared.max_subscriptions {
            return Err(ErrorData::invalid_params(
                format!(
                    "resources/subscribe: this session holds {} subscriptions already, the most it may",
                    subscribed.len()
                ),
                Some(json!({"code": "BUSY", "uri": uri})),
            ));
        }
        subscribed.insert(uri.to_owned());
        Ok(())
    }

    /// `resources/unsubscribe`.
    pub(super) fn unsubscribe_now(&self, uri: &str) {
        self.session
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uri);
    }

    /// `completion/complete`: the completer of a prompt's argument or a template's
    /// variable, for a caller that may see it.
    pub(super) async fn complete_now(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let registry = &self.shared.registry;
        let viewer = self.viewer(&context);
        let reference = match &request.r#ref {
            Reference::Prompt(prompt) => {
                remote::admit_prompt(registry, &prompt.name, viewer.as_ref())
                    .map_err(|err| refusal(&err, json!({"name": prompt.name})))?;
                CompletionRef::Prompt(prompt.name.clone())
            }
            Reference::Resource(template) => {
                remote::admit_template(registry, &template.uri, viewer.as_ref())
                    .map_err(|err| refusal(&err, json!({"uri": template.uri})))?;
                CompletionRef::Resource(template.uri.clone())
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete: `ref` must be a ref/prompt or a ref/resource",
                    None,
                ));
            }
        };
        let mut ask = CompletionRequest::new(&request.argument.name, &request.argument.value);
        if let Some(arguments) = request.context.and_then(|c| c.arguments) {
            // Bounded as a prompt's arguments are: by the request's size.
            ask.arguments = arguments.into_iter().collect();
        }
        let options = viewer.unwrap_or_else(|| self.caller_options(&context));
        let runner = registry.with(options.cancel_on(context.ct.clone()));
        let completion = runner
            .complete(&reference, ask)
            .await
            .map_err(|err| refusal(&err, json!({"argument": request.argument.name})))?;
        let mut info = CompletionInfo::new(completion.values).map_err(|err| {
            ErrorData::internal_error(format!("completion/complete: {err}"), None)
        })?;
        info.total = completion
            .total
            .map(|t| u32::try_from(t).unwrap_or(u32::MAX));
        info.has_more = Some(completion.has_more);
        Ok(CompleteResult::new(info))
    }
}

/// The cursor a list request carries, bounded.
fn cursor_of<'a>(
    request: Option<&'a PaginatedRequestParams>,
    method: &str,
) -> Result<Option<&'a str>, ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        Some(cursor) if cursor.len() > MAX_CURSOR => Err(bad_cursor(method, cursor)),
        other => Ok(other),
    }
}

fn bad_cursor(method: &str, cursor: &str) -> ErrorData {
    let shown: String = cursor.chars().take(64).collect();
    ErrorData::invalid_params(
        format!("{method}: invalid cursor (pass back a nextCursor this server gave)"),
        Some(json!({"cursor": shown})),
    )
}

/// A prompt as `prompts/list` shows it.
fn listed_prompt(prompt: &PromptFunc) -> Result<Prompt, ErrorData> {
    let def = prompt.definition();
    convert(&json!({
        "name": def.name,
        "title": def.title,
        "description": def.description,
        "arguments": def.arguments,
    }))
}

/// A resource (or a template) as the lists show it.
fn listed<T: DeserializeOwned>(resource: &ResourceFunc, template: bool) -> Result<T, ErrorData> {
    let def = resource.definition();
    let mut shown = json!({
        "name": def.name,
        "title": def.title,
        "description": def.description,
        "mimeType": def.mime_type,
    });
    let key = if template { "uriTemplate" } else { "uri" };
    shown[key] = json!(def.address());
    convert(&shown)
}

/// `value` as the SDK's type (the nulls of absent fields dropped first).
fn convert<T: DeserializeOwned>(value: &impl serde::Serialize) -> Result<T, ErrorData> {
    let mut value = serde_json::to_value(value)
        .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
    if let Value::Object(object) = &mut value {
        object.retain(|_, v| !v.is_null());
    }
    serde_json::from_value(value)
        .map_err(|err| ErrorData::internal_error(format!("not an MCP value: {err}"), None))
}

/// A refusal of a prompt, a read or a completion as JSON-RPC says it: what is
/// unknown or does not fit is `-32602` (with `what` in its data, the URI of a read
/// among it), a missing scope `-32003`, anything else `-32603`.
fn refusal(err: &ToolError, what: Value) -> ErrorData {
    let mut data = json!({"code": err.code()});
    if let Some(more) = err.data() {
        data["data"] = more.clone();
    }
    if let (Value::Object(data), Value::Object(what)) = (&mut data, what) {
        data.extend(what);
    }
    match err.code() {
        "NOT_FOUND" | "ARGUMENTS" | "UNKNOWN_ACT" => {
            ErrorData::invalid_params(err.to_string(), Some(data))
        }
        remote::INSUFFICIENT_SCOPE => {
            let what = match data {
                Value::Object(data) => data,
                _ => Map::new(),
            };
            super::refusal::lacks_scope(err, what)
        }
        _ => ErrorData::internal_error(err.to_string(), Some(data)),
    }
}

/// What a session hears of the catalogue's changes, gathered over a short while.
#[derive(Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per list a notification names"
)]
pub(super) struct Changes {
    pub(super) tools: bool,
    pub(super) prompts: bool,
    pub(super) resources: bool,
    /// The URIs said to be updated (every subscribed one after a lag).
    pub(super) updated: BTreeSet<String>,
    pub(super) lagged: bool,
}

/// Waits for the next changes of the catalogue and gathers a burst of them into
/// one; `None` when the registry is gone or the session closed.
pub(super) async fn next_changes(
    changes: &mut Subscription,
    closed: &CancellationToken,
) -> Option<Changes> {
    let mut gathered = Changes::default();
    let note =
        |event: Result<RegistryEvent, SubscriptionError>, gathered: &mut Changes| -> Option<bool> {
            match event {
                Ok(
                    RegistryEvent::Added { .. }
                    | RegistryEvent::Removed { .. }
                    | RegistryEvent::Cleared,
                ) => {
                    gathered.tools = true;
                }
                Ok(RegistryEvent::PromptsChanged) => gathered.prompts = true,
                Ok(RegistryEvent::ResourcesChanged) => gathered.resources = true,
                Ok(RegistryEvent::ResourceUpdated { uri }) => {
                    // Bounded by the events a subscription buffers.
                    gathered.updated.insert(uri);
                }
                Err(SubscriptionError::Lagged(_)) => {
                    gathered.tools = true;
                    gathered.prompts = true;
                    gathered.resources = true;
                    gathered.lagged = true;
                }
                Ok(_) => return Some(false),
                Err(SubscriptionError::Closed) => return None,
            }
            Some(true)
        };
    loop {
        let event = tokio::select! {
            () = closed.cancelled() => return None,
            event = changes.recv() => event,
        };
        if note(event, &mut gathered)? {
            break;
        }
    }
    // Registrations often come in bursts; let them settle into one notification.
    tokio::time::sleep(Duration::from_millis(20)).await;
    while let Some(event) = changes.try_recv() {
        note(event, &mut gathered)?;
    }
    Some(gathered)
}

/// Tells a session's client of the catalogue's changes until the session closes:
/// list changes as they come, and updates of the resources it subscribed to.
pub(super) async fn watch(
    peer: Peer<RoleServer>,
    mut changes: Subscription,
    closed: CancellationToken,
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
) {
    while let Some(batch) = next_changes(&mut changes, &closed).await {
        if (batch.tools && peer.notify_tool_list_changed().await.is_err())
            || (batch.prompts && peer.notify_prompt_list_changed().await.is_err())
            || (batch.resources && peer.notify_resource_list_changed().await.is_err())
        {
            return;
        }
        let updated: Vec<String> = {
            let subscribed = subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
            if batch.lagged {
                subscribed.iter().cloned().collect()
            } else {
                batch
                    .updated
                    .into_iter()
                    .filter(|uri| subscribed.contains(uri))
                    .collect()
            }
        };
        for uri in updated {
            if peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_err()
            {
                return;
            }
        }
    }
}
