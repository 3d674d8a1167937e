//! The newline-delimited JSON-RPC transport behind [`Server::serve_io`]: a line
//! screen in front of the SDK.
//!
//! The SDK's own stream transport answers malformed requests without their id, and
//! its handshake ends the connection on a message that is not a request. Here every
//! line is read (bounded) and checked against JSON-RPC 2.0 first:
//!
//! - not JSON: `-32700` with `"id": null`;
//! - not a valid request: `-32600` with the request's id when it is a valid one,
//!   else `null`; positional (array) params: `-32602`;
//! - a batch: MCP has none since 2025-06-18, so each request in it is refused with
//!   `-32600` by id, in one array (an empty batch is one `-32600`);
//! - a line longer than the limit: `-32600` with `null`, and the rest of the line is
//!   skipped unread into memory;
//! - notifications and responses the SDK cannot read, or that come before the
//!   lifecycle has begun (the SDK would end the connection on them): dropped.
//!
//! - a request whose id is that of a request still being answered: `-32600` with
//!   that id (the SDK would answer only one of the two); the first still gets its
//!   answer.
//!
//! Everything else goes to the SDK as a typed message. The screen runs inside the
//! SDK's own `receive`, so a request reaches the handler without a hop between
//! tasks. One writer, behind a lock, takes both the screen's answers and the SDK's
//! messages, a whole line at a time, and gives every JSON-RPC error an `id` member.
//!
//! [`Server::serve_io`]: super::server::Server::serve_io

use std::borrow::Cow;
use std::collections::HashSet;
use std::io;
use std::sync::{Arc, PoisonError};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, ErrorCode, GetMeta, JsonRpcMessage,
    ProtocolVersion, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The read buffer; a line may be longer (up to the limit), it is collected.
const READ_BUFFER: usize = 64 * 1024;

/// A line buffer grown beyond this is given back after its line.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// The SDK's transport: screened messages in, whole lines out.
pub(super) struct LineTransport<R, W> {
    lines: LineReader<R>,
    writer: Arc<LineWriter<W>>,
    /// The ids of the requests forwarded and not answered yet.
    in_flight: InFlight,
    /// The SDK has left its handshake loop: it takes any message from now on.
    started: bool,
    /// The protocol versions the server accepts (for requests that begin a
    /// sessionless lifecycle).
    versions: Cow<'static, [ProtocolVersion]>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads `reader` as the SDK asks for messages.
    pub(super) fn new(
        reader: R,
        writer: W,
        max_line_length: usize,
        versions: Cow<'static, [ProtocolVersion]>,
    ) -> Self {
        let writer = Arc::new(LineWriter {
            inner: Mutex::new(Some(writer)),
        });
        let lines = LineReader {
            reader: BufReader::with_capacity(READ_BUFFER, reader),
            line: Vec::new(),
            max: max_line_length,
            skipping: false,
        };
        Self {
            lines,
            writer,
            in_flight: InFlight::default(),
            started: false,
            versions,
        }
    }

    /// The next message for the SDK: lines are read and screened, and the screen's
    /// answers written, until one is, or the input ends.
    ///
    /// Cancel safe: the only wait is for input (the line read so far is kept), and
    /// an answer is written on a task of its own, so none is lost or cut when the
    /// SDK stops waiting for a message.
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let screened = match self.lines.next().await {
                Ok(Read::Line) => screen(&self.lines.line),
                Ok(Read::TooLong) => Screened::Answer(error_response(
                    &Value::Null,
                    ErrorCode::INVALID_REQUEST,
                    &format!(
                        "Invalid request: the message is longer than {} bytes",
                        self.lines.max
                    ),
                )),
                Ok(Read::Eof) => return None,
                Err(err) => {
                    tracing::debug!("MCP: reading the input failed: {err}");
                    return None;
                }
            };
            self.lines.line.clear();
            if self.lines.line.capacity() > KEEP_CAPACITY {
                self.lines.line.shrink_to(READ_BUFFER);
            }
            match admit(screened, &self.in_flight) {
                Screened::Forward(message) => return Some(*message),
                Screened::Answer(answer) => {
                    let Ok(mut line) = serde_json::to_vec(&answer) else {
                        continue;
                    };
                    line.push(b'\n');
                    let writer = Arc::clone(&self.writer);
                    tokio::spawn(async move {
                        if let Err(err) = writer.write_line(&line).await {
                            tracing::debug!("MCP: writing an answer failed: {err}");
                        }
                    });
                }
                Screened::Ignore => {}
            }
        }
    }

    /// Whether the SDK, still in its handshake loop, leaves it for `request`: for
    /// `initialize`, or for a request carrying the per-request metadata of a
    /// sessionless (2026-07-28) client in a version the server serves. `ping` and
    /// `server/discover` are answered inside the loop.
    fn starts_lifecycle(&self, request: &ClientRequest) -> bool {
        match request {
            ClientRequest::InitializeRequest(_) => true,
            ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
            other => {
                let meta = other.get_meta();
                meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty()
                    && meta
                        .protocol_version()
                        .is_some_and(|version| self.versions.contains(&version))
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Response(response) => self.in_flight.settle(&response.id),
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.in_flight.settle(id);
                }
            }
            _ => {}
        }
        let writer = Arc::clone(&self.writer);
        async move {
            let line = encode(&item)?;
            writer.write_line(&line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        // Cancel safe: `next_message` is, and nothing after it awaits.
        loop {
            let message = self.next_message().await?;
            if self.started {
                return Some(message);
            }
            if let JsonRpcMessage::Request(request) = &message {
                self.started = self.starts_lifecycle(&request.request);
                return Some(message);
            }
            tracing::debug!("MCP: a notification or response before initialize, ignored");
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let taken = self.writer.inner.lock().await.take();
        if let Some(mut writer) = taken {
            writer.flush().await?;
        }
        Ok(())
    }
}

/// The ids of requests the SDK has and has not answered yet.
#[derive(Clone, Default)]
struct InFlight(Arc<std::sync::Mutex<HashSet<RequestId>>>);

impl InFlight {
    /// Takes `id` for a new request; `false` when a request with it is running.
    fn start(&self, id: &RequestId) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone())
    }

    fn settle(&self, id: &RequestId) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// The output, shared by the line screen and the SDK.
struct LineWriter<W> {
    inner: Mutex<Option<W>>,
}

impl<W: AsyncWrite + Unpin> LineWriter<W> {
    /// Writes one whole line (`line` ends with `\n`) and flushes it; no other line
    /// starts before it is out.
    async fn write_line(&self, line: &[u8]) -> io::Result<()> {
        let mut guard = self.inner.lock().await;
        let writer = guard
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "transport closed"))?;
        writer.write_all(line).await?;
        writer.flush().await
    }
}

/// One message as a line; an error without an id gets `"id": null`.
fn encode(message: &ServerJsonRpcMessage) -> io::Result<Vec<u8>> {
    let mut line = match message {
        JsonRpcMessage::Error(error) if error.id.is_none() => {
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": null, "error": error.error}))?
        }
        message => serde_json::to_vec(message)?,
    };
    line.push(b'\n');
    Ok(line)
}

/// A screened message as the SDK may take it: a request whose id is still being
/// answered is refused; a cancellation frees its request's id.
fn admit(screened: Screened, in_flight: &InFlight) -> Screened {
    let Screened::Forward(message) = screened else {
        return screened;
    };
    match &*message {
        JsonRpcMessage::Request(request) if !in_flight.start(&request.id) => {
            let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
            Screened::Answer(invalid_request(
                &id,
                "a request with this id is still being answered",
            ))
        }
        JsonRpcMessage::Notification(note) => {
            // A cancelled request may never be answered: its id is free again.
            if let ClientNotification::CancelledNotification(cancelled) = &note.notification
                && let Some(id) = &cancelled.params.request_id
            {
                in_flight.settle(id);
            }
            Screened::Forward(message)
        }
        _ => Screened::Forward(message),
    }
}

enum Read {
    /// A whole line (without its `\n`) is in `line`.
    Line,
    /// The line passed the limit; it was dropped, and its rest will be.
    TooLong,
    Eof,
}

/// Newline-delimited lines, never holding more than `max` bytes of one.
struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of a line that was too long.
    skipping: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    async fn next(&mut self) -> io::Result<Read> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                // A last line without its newline still counts.
                self.skipping = false;
                return Ok(if self.line.is_empty() {
                    Read::Eof
                } else {
                    Read::Line
                });
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let (content, taken) = match newline {
                Some(at) => (at, at + 1),
                None => (available.len(), available.len()),
            };
            if self.skipping {
                self.skipping = newline.is_none();
                self.reader.consume(taken);
                continue;
            }
            if self.line.len().saturating_add(content) > self.max {
                self.line.clear();
                self.skipping = newline.is_none();
                self.reader.consume(taken);
                return Ok(Read::TooLong);
            }
            self.line.extend_from_slice(&available[..content]);
            self.reader.consume(taken);
            if newline.is_some() {
                return Ok(Read::Line);
            }
        }
    }
}

/// What to do with one line.
enum Screened {
    Forward(Box<ClientJsonRpcMessage>),
    /// Answer it with this (an error response, or an array of them).
    Answer(Value),
    Ignore,
}

/// UTF-8 byte order mark, which JSON parsers may skip (RFC 8259 §8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

fn screen(line: &[u8]) -> Screened {
    let line = line.strip_prefix(BOM).unwrap_or(line).trim_ascii();
    if line.is_empty() {
        return Screened::Ignore;
    }
    if let Some(request) = well_formed_request(line) {
        return Screened::Forward(Box::new(request));
    }
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Screened::Answer(error_response(
            &Value::Null,
            ErrorCode::PARSE_ERROR,
            "Parse error",
        ));
    };
    match value {
        Value::Object(object) => match check(object) {
            Checked::Forward(message) => Screened::Forward(message),
            Checked::Refuse(answer) => Screened::Answer(answer),
            Checked::Ignore => Screened::Ignore,
        },
        Value::Array(items) => batch(items),
        _ => Screened::Answer(invalid_request(&Value::Null, "a message must be an object")),
    }
}

/// The common case read once, straight into the SDK's type: a request the checks
/// below would forward unchanged. Anything else (notifications, responses, custom
/// methods with params that are no object) takes the careful path.
fn well_formed_request(line: &[u8]) -> Option<ClientJsonRpcMessage> {
    let message: ClientJsonRpcMessage = serde_json::from_slice(line).ok()?;
    let JsonRpcMessage::Request(request) = &message else {
        return None;
    };
    match &request.request {
        ClientRequest::CustomRequest(custom)
            if !matches!(custom.params, None | Some(Value::Object(_) | Value::Null)) =>
        {
            None
        }
        _ => Some(message),
    }
}

/// A batch: each request in it is refused by id; the invalid ones without an id get
/// one answer between them, so a long batch of junk is not answered item by item.
fn batch(items: Vec<Value>) -> Screened {
    if items.is_empty() {
        return Screened::Answer(invalid_request(&Value::Null, "an empty batch"));
    }
    let mut answers = Vec::new();
    let mut anonymous = false;
    for item in items {
        let Value::Object(object) = item else {
            anonymous = true;
            continue;
        };
        match check(object) {
            Checked::Forward(message) => {
                if let JsonRpcMessage::Request(request) = *message {
                    answers.push(invalid_request(
                        &request.id.into_json_value(),
                        "batches are not supported",
                    ));
                }
            }
            Checked::Ignore => {}
            Checked::Refuse(answer) if answer.get("id").is_some_and(Value::is_null) => {
                anonymous = true;
            }
            Checked::Refuse(answer) => answers.push(answer),
        }
    }
    if anonymous {
        answers.push(invalid_request(
            &Value::Null,
            "an invalid message in a batch",
        ));
    }
    if answers.is_empty() {
        Screened::Ignore
    } else {
        Screened::Answer(Value::Array(answers))
    }
}

enum Checked {
    Forward(Box<ClientJsonRpcMessage>),
    Refuse(Value),
    Ignore,
}

/// One message object against JSON-RPC 2.0 and what the SDK can read.
fn check(object: Map<String, Value>) -> Checked {
    let is_response = !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"));
    if is_response {
        // Never answered: an answer to an answer could start an endless exchange.
        return match serde_json::from_value(Value::Object(object)) {
            Ok(message) => Checked::Forward(Box::new(message)),
            Err(err) => {
                tracing::debug!("MCP: an unreadable response, ignored: {err}");
                Checked::Ignore
            }
        };
    }
    let id = object.get("id");
    let answer_id = match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let refuse = |message: &str| Checked::Refuse(invalid_request(&answer_id, message));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse("jsonrpc must be \"2.0\"");
    }
    if id.is_some() && answer_id.is_null() {
        return refuse("id must be a string or a number");
    }
    match object.get("method") {
        Some(Value::String(_)) => {}
        Some(_) => return refuse("method must be a string"),
        None => return refuse("a request needs a method"),
    }
    // A notification (a version, a method, no id) is never answered, even when its
    // params are wrong.
    let notification = id.is_none();
    match object.get("params") {
        None | Some(Value::Object(_) | Value::Null) => {}
        Some(_) if notification => {
            tracing::debug!("MCP: a notification with unreadable params, ignored");
            return Checked::Ignore;
        }
        Some(Value::Array(_)) => {
            return Checked::Refuse(error_response(
                &answer_id,
                ErrorCode::INVALID_PARAMS,
                "Invalid params: params must be an object",
            ));
        }
        Some(_) => return refuse("params must be an object or an array"),
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(object)) {
        Ok(message) => Checked::Forward(Box::new(message)),
        Err(err) if notification => {
            tracing::debug!("MCP: an unreadable notification, ignored: {err}");
            Checked::Ignore
        }
        Err(err) => {
            tracing::debug!("MCP: an unreadable request: {err}");
            refuse("the request cannot be read (an id must be an integer or a string)")
        }
    }
}

fn invalid_request(id: &Value, detail: &str) -> Value {
    error_response(
        id,
        ErrorCode::INVALID_REQUEST,
        &format!("Invalid request: {detail}"),
    )
}

fn error_response(id: &Value, code: ErrorCode, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}})
}
