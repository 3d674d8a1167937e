//! A tool's questions to its caller ([`Ctx::elicit`](crate::Ctx::elicit),
//! [`Ctx::sample`](crate::Ctx::sample)) as MCP requests to the client:
//! `elicitation/create` and `sampling/createMessage` on the session, for clients
//! that declared the capability. (Sampling is deprecated from 2026-07-28 on, but
//! it is the 2025-11-25 way to ask the client's model.)
#![allow(deprecated)]

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, ServerRequest,
};
use rmcp::service::{Peer, RequestContext, ServiceError};
use serde_json::{Value, json};

use crate::ask::ClientRequest;
use crate::error::ToolError;

/// The answering function of a call of `context`'s session: the client declared its
/// capabilities in the request's `_meta` when the server answers the request
/// itself, else in the session's `initialize`.
pub(super) fn through(
    context: &RequestContext<RoleServer>,
    tool: String,
) -> impl Fn(ClientRequest) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync + 'static
{
    let peer = context.peer.clone();
    let declared = context.meta.client_capabilities();
    move |request: ClientRequest| {
        let peer = peer.clone();
        let tool = tool.clone();
        let declared = declared.clone();
        Box::pin(async move { ask(&peer, declared, &tool, request).await })
    }
}

async fn ask(
    peer: &Peer<RoleServer>,
    declared: Option<ClientCapabilities>,
    tool: &str,
    request: ClientRequest,
) -> Result<Value, ToolError> {
    let capabilities = declared.or_else(|| peer.peer_info().map(|info| info.capabilities.clone()));
    let declared = match &request {
        ClientRequest::Elicit { .. } => capabilities
            .as_ref()
            .is_some_and(|c| c.elicitation.is_some()),
        ClientRequest::Sample(_) => capabilities.as_ref().is_some_and(|c| c.sampling.is_some()),
        ClientRequest::ListRoots => capabilities.as_ref().is_some_and(|c| c.roots.is_some()),
    };
    if !declared {
        return Err(ToolError::custom(
            "CLIENT_CANNOT_ANSWER",
            501,
            format!(
                "`{tool}` asked the MCP client {}, and this client cannot answer: it did \
                 not declare the capability{}",
                request.kind(),
                if capabilities.is_none() {
                    " (a request without a session, on the 2026-07-28 protocol, cannot be \
                     asked back yet)"
                } else {
                    ""
                }
            ),
        ));
    }
    match request {
        ClientRequest::Elicit { message, schema } => {
            let params: ElicitRequestParams = serde_json::from_value(json!({
                "message": message,
                "requestedSchema": schema,
            }))
            .map_err(|e| {
                ToolError::arguments(
                    "/requestedSchema",
                    format!(
                        "an MCP elicitation asks for a flat object of string, number, \
                         boolean and enum properties: {e}"
                    ),
                )
            })?;
            // The request as rmcp's `create_elicitation` sends it, without its
            // `elicitation` feature (whose typed helpers bring `url` and its ICU
            // tables into every MCP server's build).
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            match peer.send_request(request).await {
                Ok(ClientResult::ElicitResult(answer)) => {
                    serde_json::to_value(answer).map_err(|e| ToolError::failed(e.to_string()))
                }
                Ok(_) => Err(failed(
                    tool,
                    "elicitation",
                    &ServiceError::UnexpectedResponse,
                )),
                Err(e) => Err(failed(tool, "elicitation", &e)),
            }
        }
        ClientRequest::ListRoots => {
            let answer = peer
                .list_roots()
                .await
                .map_err(|e| failed(tool, "roots request", &e))?;
            serde_json::to_value(answer).map_err(|e| ToolError::failed(e.to_string()))
        }
        ClientRequest::Sample(params) => {
            let params: CreateMessageRequestParams =
                serde_json::from_value(params).map_err(|e| {
                    ToolError::arguments(
                        "",
                        format!("these are not sampling/createMessage params: {e}"),
                    )
                })?;
            let answer = peer
                .create_message(params)
                .await
                .map_err(|e| failed(tool, "sampling request", &e))?;
            serde_json::to_value(answer).map_err(|e| ToolError::failed(e.to_string()))
        }
    }
}

/// Asks the user, through `ask`, to confirm running a `needs_confirmation` tool
/// with `args`; anything but an accepted `confirm: true` stops the call.
pub(super) async fn confirm<F, Fut>(ask: F, tool: &str, args: &Value) -> Result<(), ToolError>
where
    F: FnOnce(Option<String>, ClientRequest) -> Fut,
    Fut: Future<Output = Result<Value, ToolError>>,
{
    let request = ClientRequest::Elicit {
        message: format!("Run `{tool}` with {args}?"),
        schema: json!({
            "type": "object",
            "properties": {"confirm": {"type": "boolean", "title": "Run it", "default": false}},
            "required": ["confirm"]
        }),
    };
    let answer = crate::ask::read_elicitation(tool, ask(Some("confirm".into()), request).await?)?;
    let yes = answer.action == crate::ask::ElicitAction::Accept
        && answer.content.is_some_and(|c| c["confirm"] == true);
    if yes {
        Ok(())
    } else {
        Err(ToolError::Cancelled {
            reason: Some(format!("the user did not confirm running `{tool}`")),
        })
    }
}

fn failed(tool: &str, what: &str, err: &ServiceError) -> ToolError {
    match err {
        ServiceError::Cancelled { reason } => ToolError::Cancelled {
            reason: reason.clone(),
        },
        ServiceError::Timeout { .. } => ToolError::Timeout { after_ms: None },
        other => ToolError::failed(format!(
            "the MCP client did not answer `{tool}`'s {what}: {other}"
        )),
    }
}
