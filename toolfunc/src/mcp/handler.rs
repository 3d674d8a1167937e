//! The [`ServerHandler`] of [`Server`]: what it answers to each MCP request (tools,
//! prompts, resources, completions, the logging level, tasks, the handshake,
//! subscriptions), and the watch that tells clients of the catalogue's changes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

#[allow(deprecated)] // Logging is deprecated in the SDK (SEP-2577), yet in both revisions.
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    SetLevelRequestMethod, SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter,
    Tool, UnsubscribeRequestMethod, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing::field::Empty;

use crate::propagate;
use crate::remote;

use super::caller::{sessionless, trace_of};
use super::prompts_resources;
use super::report::from_mcp;
use super::server::Server;
use super::tool_list::ToolList;

/// The span of a `tools/call`, named and filled as OpenTelemetry's conventions for
/// MCP say; the child of the caller's span when the request's `_meta` carries a
/// W3C `traceparent` (SEP-414) and OpenTelemetry records spans.
fn call_span(tool: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp_call",
        otel.name = Empty,
        otel.kind = "server",
        mcp.method.name = "tools/call",
        mcp.session.id = Empty,
        jsonrpc.request.id = Empty,
        gen_ai.tool.name = tool,
    );
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("tools/call {tool}"));
    span.record("jsonrpc.request.id", request_id(&context.id));
    let session = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get(SESSION_ID))
        .and_then(|id| id.to_str().ok());
    if let Some(session) = session {
        span.record("mcp.session.id", session);
    }
    propagate::adopt(&span, trace_of(context).as_ref());
    span
}

/// The header of the session a streamable HTTP request belongs to.
const SESSION_ID: &str = "mcp-session-id";

/// A JSON-RPC id as text: a number's digits, a string as it is.
fn request_id(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
        rmcp::model::NumberOrString::String(s) => s.to_string(),
    }
}

impl Server {
    /// The tool list, kept until a registry changes.
    fn catalog(&self) -> Arc<ToolList> {
        ToolList::of(&self.shared.registry)
    }

    /// Whether MCP lists `name` and its input schema asks `asks` of it: the kept
    /// entry, read in place (`get_tool` copies it).
    pub(super) fn listed_schema(
        &self,
        name: &str,
        asks: impl FnOnce(&rmcp::model::JsonObject) -> bool,
    ) -> Option<bool> {
        if let Some(tool) = self.shared.search.tool(name) {
            return Some(asks(&tool.input_schema));
        }
        self.catalog()
            .get(name)
            .map(|tool| asks(&tool.input_schema))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        self.shared.config.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.shared.search.on {
            return self.list_search_mode(request.as_ref(), &context);
        }
        let catalog = self.catalog();
        let cursor = request.and_then(|r| r.cursor);
        let Some((page, next)) = catalog.page(cursor.as_deref(), self.shared.page_size) else {
            return Err(ErrorData::invalid_params(
                "tools/list: invalid cursor (pass back a nextCursor this server gave)",
                Some(json!({"cursor": cursor})),
            ));
        };
        let mut tools = page;
        let registry = &self.shared.registry;
        if registry.has_layers() || self.shared.authenticator.is_some() {
            // What this client may not see is left out (the page may come out short;
            // the cursor still follows the whole list).
            let options = self.caller_options(&context);
            let sight = remote::Sight::of(registry, Some(&options));
            let offered = remote::Catalog::of(registry);
            tools.retain(|tool| sight.function(&offered, &tool.name).is_some());
        }
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Asked on every sessionless HTTP request (for header checks): from the kept
        // list.
        self.shared
            .search
            .tool(name)
            .or_else(|| self.catalog().get(name).cloned())
    }

    #[allow(deprecated)] // Logging: deprecated in the SDK (SEP-2577), yet in 2025-11-25.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Sessionless clients give the level with each request instead.
        if sessionless(&context) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        let level = from_mcp(request.level) as u8;
        self.session.log_level.store(level, Ordering::Relaxed);
        Ok(())
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        // Boxed: the SDK moves the future of every request it serves (into its
        // task, between its stages), so the call's large state machine stays out of
        // those moves.
        // In search mode its two tools answer here, `call_tool` going on as the
        // call it names.
        let span = call_span(&request.name, &context);
        Box::pin(
            async move {
                match self.search_mode_call(request, &context) {
                    Ok(request) => self.call(request, context).await,
                    Err(answer) => Ok(answer.into()),
                }
            }
            .instrument(span),
        )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        // Sessions that begin with `initialize` hear of tool list changes as plain
        // notifications, from the client's `initialized` until the session (this
        // handler) ends. Subscribing now misses no change made in between.
        // The task holds only the session's tokens, never the session itself.
        let peer = context.peer;
        let initialized = self.session.initialized().clone();
        let closed = self.session.closed().clone();
        let changes = self.shared.registry.subscribe_tool_changes();
        let subscriptions = Arc::clone(&self.session.subscriptions);
        tokio::spawn(async move {
            tokio::select! {
                () = initialized.cancelled() => {}
                () = closed.cancelled() => return,
            }
            prompts_resources::watch(peer, changes, closed, subscriptions).await;
        });
        Ok(result)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.get_task_result(&request, &context)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.update_task_answers(&request, &context)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.cancel_task_now(&request, &context)
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        self.session.initialized().cancel();
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        // The SDK hands over a known method whose params it could not read.
        let expected = match request.method.as_str() {
            "tools/call" => "{\"name\": string, \"arguments\"?: object}",
            "tools/list" => "{\"cursor\"?: string}",
            "logging/setLevel" if !sessionless(&context) => {
                "{\"level\": \"debug\" | \"info\" | \"notice\" | \"warning\" | \"error\" | \"critical\" | \"alert\" | \"emergency\"}"
            }
            "subscriptions/listen" if sessionless(&context) => {
                "{\"notifications\": {\"toolsListChanged\"?: boolean, \"promptsListChanged\"?: boolean, \"resourcesListChanged\"?: boolean, \"resourceSubscriptions\"?: [string]}}"
            }
            _ => {
                return Err(ErrorData::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    request.method,
                    None,
                ));
            }
        };
        Err(ErrorData::invalid_params(
            format!("{}: params must be {expected}", request.method),
            None,
        ))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|on| *on);
        accepted.prompts_list_changed = requested.prompts_list_changed.filter(|on| *on);
        accepted.resources_list_changed = requested.resources_list_changed.filter(|on| *on);
        // Resources this server could read, up to the per-session bound.
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| uri.len() <= remote::MAX_URI_BYTES)
                .filter(|uri| self.shared.registry.get_resource(uri).is_some())
                .take(self.shared.max_subscriptions)
                .cloned()
                .collect()
        });
        if accepted != SubscriptionFilter::new() {
            let mut listening = self
                .session
                .listening
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // A listen that failed to start leaves its subscription here: keep a few.
            if listening.len() >= 8 {
                listening.remove(0);
            }
            listening.push(self.shared.registry.subscribe_tool_changes());
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // Sessionless clients subscribe with `subscriptions/listen`; the stream lasts
        // as long as that request.
        let accepted = context.accepted().clone();
        if accepted == SubscriptionFilter::new() {
            // Nothing to send; the client ends it.
            context.cancelled().await;
            return Ok(());
        }
        let taken = self
            .session
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut changes = taken.unwrap_or_else(|| self.shared.registry.subscribe_tool_changes());
        let watched: Vec<String> = accepted.resource_subscriptions.clone().unwrap_or_default();
        let closed = CancellationToken::new();
        loop {
            let batch = tokio::select! {
                () = context.cancelled() => break,
                batch = prompts_resources::next_changes(&mut changes, &closed) => batch,
            };
            let Some(batch) = batch else { break };
            let sink = context.sink();
            if (batch.tools
                && accepted.tools_list_changed == Some(true)
                && sink.notify_tool_list_changed().await.is_err())
                || (batch.prompts
                    && accepted.prompts_list_changed == Some(true)
                    && sink.notify_prompt_list_changed().await.is_err())
                || (batch.resources
                    && accepted.resources_list_changed == Some(true)
                    && sink.notify_resource_list_changed().await.is_err())
            {
                break;
            }
            for uri in &watched {
                if (batch.lagged || batch.updated.contains(uri))
                    && sink.notify_resource_updated(uri.clone()).await.is_err()
                {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.prompt_page(request.as_ref(), &context)
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>> + Send + '_ {
        Box::pin(self.get_prompt_now(request, context))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resource_page(request.as_ref(), &context)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.template_page(request.as_ref(), &context)
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + Send + '_ {
        Box::pin(self.read_resource_now(request, context))
    }

    #[allow(deprecated)] // resources/subscribe: legacy in the SDK, yet in 2025-11-25.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Sessionless clients subscribe with `subscriptions/listen` instead.
        if sessionless(&context) {
            return Err(ErrorData::method_not_found::<SubscribeRequestMethod>());
        }
        self.subscribe_now(&request.uri, &context)
    }

    #[allow(deprecated)] // resources/unsubscribe: legacy in the SDK, yet in 2025-11-25.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if sessionless(&context) {
            return Err(ErrorData::method_not_found::<UnsubscribeRequestMethod>());
        }
        self.unsubscribe_now(&request.uri);
        Ok(())
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, ErrorData>> + Send + '_ {
        Box::pin(self.complete_now(request, context))
    }
}
