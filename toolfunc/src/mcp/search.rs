//! The search mode ([`Server::search_mode`]): for clients without a tool search of
//! their own, `tools/list` offers two tools in place of a large catalogue,
//! `search_tools` (the functions the caller may run that best match a query, as
//! their MCP definitions) and `call_tool` (runs one of them by name, exactly as a
//! direct `tools/call` of it does), with the tools marked always listed.

use rmcp::model::{CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::remote;

use super::search_mode::{CALL_TOOL, SEARCH_TOOLS, SearchMode};
use super::server::Server;
use super::shape::{Shape, into_result};
use super::tool_list::ToolList;

/// What `call_tool` asks for: the call to make in its place, or the error result
/// refusing its own arguments.
enum Unwrapped {
    Call(CallToolRequestParams),
    Refused(CallToolResult),
}

impl Server {
    /// `tools/list` in search mode: the two tools, then the always-listed functions
    /// the caller may see, in the order they were given. There is one page.
    pub(super) fn list_search_mode(
        &self,
        request: Option<&PaginatedRequestParams>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if let Some(cursor) = request.and_then(|r| r.cursor.as_ref()) {
            return Err(ErrorData::invalid_params(
                "tools/list: invalid cursor (pass back a nextCursor this server gave)",
                Some(json!({"cursor": cursor})),
            ));
        }
        let mode = &self.shared.search;
        let mut tools = mode.tools();
        if !mode.always_listed.is_empty() {
            let registry = &self.shared.registry;
            let listed = ToolList::of(registry);
            let offered = remote::Catalog::of(registry);
            let options = self.caller_options(context);
            let sight = remote::Sight::of(registry, Some(&options));
            for name in &mode.always_listed {
                let shown = sight.function(&offered, name).is_some();
                if let Some(tool) = listed.get(name).filter(|_| shown)
                    && !tools.iter().any(|t| t.name == tool.name)
                {
                    tools.push(tool.clone());
                }
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// A `tools/call` in search mode: the call to make (`call_tool`'s in its
    /// place, any other as it is), or the answer of `search_tools` or of a
    /// `call_tool` whose own arguments are refused. Off the mode, `request` as it is.
    pub(super) fn search_mode_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolRequestParams, CallToolResult> {
        if !self.shared.search.on {
            return Ok(request);
        }
        match request.name.as_ref() {
            SEARCH_TOOLS => Err(self.search_tools(request.arguments.as_ref(), context)),
            CALL_TOOL => match unwrap_call(request) {
                Unwrapped::Call(call) => Ok(call),
                Unwrapped::Refused(result) => Err(result),
            },
            _ => Ok(request),
        }
    }

    /// `search_tools`: the functions the caller may run that best match its query,
    /// or the error result refusing its arguments.
    fn search_tools(
        &self,
        arguments: Option<&Map<String, Value>>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let shape = Shape {
            content: false,
            any_structured: true,
        };
        let mode = &self.shared.search;
        let (query, limit) = match search_arguments(arguments, mode) {
            Ok(asked) => asked,
            Err(err) => return into_result(Err(err), shape),
        };
        let registry = &self.shared.registry;
        let listed = ToolList::of(registry);
        let offered = remote::Catalog::of(registry);
        let options = self.caller_options(context);
        let sight = remote::Sight::of(registry, Some(&options));
        let mut tools = Vec::new();
        // Ranked by tool; a service answers the acts its caller may run.
        'hits: for def in remote::search(registry, query, limit, &sight) {
            let names: Vec<String> = if def.acts.is_empty() {
                vec![def.name.clone()]
            } else {
                def.acts
                    .iter()
                    .map(|act| format!("{}_{}", def.name, act.method()))
                    .collect()
            };
            for name in names {
                let runnable = sight
                    .function(&offered, &name)
                    .is_some_and(|function| function.tool == def.name);
                let Some(tool) = listed.get(&name).filter(|_| runnable) else {
                    continue;
                };
                tools.push(json!({
                    "name": tool.name,
                    "description": tool.description,
                    "inputSchema": tool.input_schema,
                }));
                if tools.len() >= limit {
                    break 'hits;
                }
            }
        }
        into_result(Ok(json!({"tools": tools})), shape)
    }
}

/// The call `call_tool`'s arguments ask for, keeping the request's `_meta` and
/// round state; or the error result when its own arguments are not of its form.
fn unwrap_call(request: CallToolRequestParams) -> Unwrapped {
    let refuse = |path: &str, message: &str| {
        Unwrapped::Refused(into_result(
            Err(ToolError::arguments(path, message)),
            Shape {
                content: false,
                any_structured: false,
            },
        ))
    };
    let mut outer = request.arguments.clone().unwrap_or_default();
    let name = match outer.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => return refuse("/name", "`name` must be a string: the tool to call"),
        None => return refuse("/name", "`name` is required: the tool to call"),
    };
    let arguments = match outer.remove("arguments") {
        Some(Value::Object(arguments)) => Some(arguments),
        None | Some(Value::Null) => None,
        Some(_) => {
            return refuse(
                "/arguments",
                "`arguments` must be an object: the tool's arguments",
            );
        }
    };
    let mut call = request;
    call.name = name.into();
    call.arguments = arguments;
    Unwrapped::Call(call)
}

/// The query and limit of a `search_tools` call.
fn search_arguments<'a>(
    arguments: Option<&'a Map<String, Value>>,
    mode: &SearchMode,
) -> Result<(&'a str, usize), ToolError> {
    let limit = match arguments.and_then(|a| a.get("limit")) {
        None | Some(Value::Null) => mode.bounds.limit(false, None)?,
        Some(limit) => mode.bounds.limit(true, limit.as_u64())?,
    };
    let query = match arguments.and_then(|a| a.get("query")) {
        Some(Value::String(query)) => query,
        Some(_) => {
            return Err(ToolError::arguments(
                "/query",
                "`query` must be a string: words that say what the tool should do",
            ));
        }
        None => {
            return Err(ToolError::arguments(
                "/query",
                "`query` is required: words that say what the tool should do",
            ));
        }
    };
    mode.bounds.query("query", query)?;
    Ok((query, limit))
}
