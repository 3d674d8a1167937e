//! rmcp's streamable HTTP client transport on toolfunc's reqwest: the requests
//! the transport asks for (a POST of a message, a GET of an event stream, a
//! DELETE of a session), sent and read with bounds.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::{Error as SseError, Sse, SseStream};

use super::credentials::Tokens;

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// The HTTP client of an MCP mount: the mount's reqwest client (its headers
/// among its default headers), and its own tokens when it has a
/// client-credentials grant.
#[derive(Debug, Clone)]
pub(super) struct Http {
    pub(super) client: reqwest::Client,
    pub(super) tokens: Option<Arc<Tokens>>,
}

impl Http {
    /// The bearer token to send: the mount's own, else the transport's.
    async fn bearer(&self, given: Option<String>) -> Result<Option<String>, Failed> {
        match &self.tokens {
            Some(tokens) => tokens
                .token()
                .await
                .map(Some)
                .map_err(|e| StreamableHttpError::Client(HttpError(e.to_string()))),
            None => Ok(given),
        }
    }

    /// After a refusal of the mount's token: the next request asks for a new one.
    async fn refused(&self, failed: &Failed) {
        if let (Some(tokens), StreamableHttpError::AuthRequired(_)) = (&self.tokens, failed) {
            tokens.forget().await;
        }
    }
}

/// A failure of the HTTP exchange itself.
#[derive(Debug)]
pub(super) struct HttpError(String);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpError {}

type Failed = StreamableHttpError<HttpError>;

fn client(err: &reqwest::Error) -> Failed {
    StreamableHttpError::Client(HttpError(super::cause(err)))
}

/// Whether a `Content-Type` names `kind`.
fn is(headers: &HeaderMap, kind: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(kind))
}

fn request(
    builder: reqwest::RequestBuilder,
    session: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    let mut builder = builder;
    if let Some(auth) = auth {
        builder = builder.bearer_auth(auth);
    }
    for (name, value) in custom {
        builder = builder.header(name, value);
    }
    if let Some(session) = session {
        builder = builder.header(SESSION_ID, session);
    }
    builder
}

/// A 401 or 403 with a challenge, as the transport's auth errors.
fn challenge(response: &reqwest::Response) -> Option<Failed> {
    let header = response
        .headers()
        .get(WWW_AUTHENTICATE)?
        .to_str()
        .ok()?
        .to_owned();
    match response.status() {
        StatusCode::UNAUTHORIZED => Some(StreamableHttpError::AuthRequired(
            AuthRequiredError::new(header),
        )),
        StatusCode::FORBIDDEN => {
            let scope = header
                .split("scope=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(str::to_owned);
            Some(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(header, scope),
            ))
        }
        _ => None,
    }
}

/// Reads a body of at most `limit` bytes.
async fn bounded(response: reqwest::Response, limit: usize) -> Result<Bytes, Failed> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
    }
    let mut body = BytesMut::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| client(&e))?;
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// An event stream whose events are each at most `limit` bytes.
fn events(response: reqwest::Response, limit: usize) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut pending = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()))?;
        // Bytes since the last blank line: an event that grows past the limit ends
        // the stream.
        match chunk.windows(2).rposition(|w| w == b"\n\n") {
            Some(at) => pending = chunk.len() - at - 2,
            None => pending += chunk.len(),
        }
        if pending > limit {
            return Err(std::io::Error::other(format!(
                "an event of the stream is over {limit} bytes"
            )));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// A `server/discover` that a server of an earlier revision refused: the
/// refusal as the answer, so the transport falls back to a session.
fn refused_discovery(
    message: &ClientJsonRpcMessage,
    with_session: bool,
    status: StatusCode,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if with_session
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_str::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!("server/discover refused with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

/// A message as the bytes of its POST. A mounted tool reports no progress, so a
/// request goes without the progress token rmcp's client gives each one: a
/// server answers a request that can report no progress with one JSON body
/// rather than an event stream.
fn body_of(message: &ClientJsonRpcMessage) -> Result<Vec<u8>, Failed> {
    let mut json = serde_json::to_value(message)?;
    if matches!(message, ClientJsonRpcMessage::Request(_))
        && let Some(Value::Object(meta)) = json.pointer_mut("/params/_meta")
    {
        meta.remove("progressToken");
        if meta.is_empty()
            && let Some(Value::Object(params)) = json.get_mut("params")
        {
            params.remove("_meta");
        }
    }
    Ok(serde_json::to_vec(&json)?)
}

impl StreamableHttpClient for Http {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let body = body_of(&message)?;
        let with_session = session_id.is_some();
        let auth_header = self.bearer(auth_header).await?;
        let sent = request(
            self.client.post(uri.as_ref()),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        )
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, JSON)
        .body(body)
        .send()
        .await
        .map_err(|e| client(&e))?;
        if let Some(refused) = challenge(&sent) {
            self.refused(&refused).await;
            return Err(refused);
        }
        let status = sent.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && with_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = sent
            .headers()
            .get(SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let json = is(sent.headers(), JSON);
        if !status.is_success() {
            let limit = if json {
                limits.max_json_response_size
            } else {
                limits.max_error_response_size
            };
            let text = match bounded(sent, limit).await {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(_) => String::new(),
            };
            if let Some(answer) = refused_discovery(&message, with_session, status, &text) {
                return Ok(answer);
            }
            if json
                && let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_str::<ServerJsonRpcMessage>(&text)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {text}"),
            )));
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if is(sent.headers(), EVENT_STREAM) {
            return Ok(StreamableHttpPostResponse::Sse(
                events(sent, limits.max_sse_event_size),
                session,
            ));
        }
        if json {
            let bytes = bounded(sent, limits.max_json_response_size).await?;
            if bytes.is_empty() && awaits_nothing {
                return Ok(StreamableHttpPostResponse::Accepted);
            }
            let answer: ServerJsonRpcMessage = serde_json::from_slice(&bytes)?;
            return Ok(StreamableHttpPostResponse::Json(answer, session));
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let kind = sent
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Err(StreamableHttpError::UnexpectedContentType(kind))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        let auth_header = self.bearer(auth_header).await?;
        let sent = request(
            self.client.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        )
        .send()
        .await
        .map_err(|e| client(&e))?;
        // A server that keeps no sessions, or forgot this one, has nothing to end.
        if sent.status().is_success()
            || matches!(
                sent.status(),
                StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_FOUND
            )
        {
            return Ok(());
        }
        Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("DELETE answered {}", sent.status()),
        )))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let auth_header = self.bearer(auth_header).await?;
        let mut builder = request(
            self.client.get(uri.as_ref()),
            session_id.as_deref(),
            auth_header,
            custom_headers,
        )
        .header(ACCEPT, "text/event-stream, application/json");
        if let Some(last) = last_event_id {
            builder = builder.header(LAST_EVENT_ID, last);
        }
        let sent = builder.send().await.map_err(|e| client(&e))?;
        if sent.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if let Some(refused) = challenge(&sent) {
            self.refused(&refused).await;
            return Err(refused);
        }
        if !sent.status().is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("GET answered {}", sent.status()),
            )));
        }
        if !is(sent.headers(), EVENT_STREAM) && !is(sent.headers(), JSON) {
            let kind = sent
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            return Err(StreamableHttpError::UnexpectedContentType(kind));
        }
        Ok(events(sent, max_sse_event_size))
    }
}
