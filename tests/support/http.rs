//! A small HTTP/1.1 client over raw TCP for the server tests: requests are written
//! by hand, so malformed input reaches the server exactly as sent.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::time::timeout;
use toolfunc::http::{Api, Server};

/// Long enough for any healthy exchange, short enough that a broken one fails
/// with a message instead of hanging.
pub const LIMIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// A small HTTP/1.1 client over raw TCP.
// ---------------------------------------------------------------------------

/// A parsed response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// Header names lower-cased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {:?}", self.text()))
    }

    /// Asserts a `200` JSON answer and returns its value.
    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "body: {}", self.text());
        assert_eq!(self.header("content-type"), Some("application/json"));
        self.json()
    }

    /// Asserts an error answer of the documented shape and returns its body.
    pub fn error(&self, status: u16, code: &str) -> Value {
        assert_eq!(self.status, status, "body: {}", self.text());
        assert_eq!(self.header("content-type"), Some("application/json"));
        let body = self.json();
        assert_eq!(body["code"], status, "body: {body}");
        assert_eq!(body["errorCode"], code, "body: {body}");
        assert!(
            body["error"].as_str().is_some_and(|m| !m.is_empty()),
            "an error message is expected: {body}"
        );
        body
    }
}

/// One connection, with what was read but not consumed yet.
pub struct Conn {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// A connection with a small receive buffer (no kernel autotuning), so that a
    /// client that reads nothing soon stops accepting data.
    pub async fn open_small(addr: SocketAddr) -> Self {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(32 * 1024).expect("SO_RCVBUF");
        let stream = socket.connect(addr).await.expect("connect");
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("send");
    }

    /// Whether the server ends the connection (or resets it) within `wait`; what
    /// it sends meanwhile is kept.
    pub async fn closes_within(&mut self, wait: Duration) -> bool {
        self.buf.reserve(16 * 1024);
        matches!(
            timeout(wait, self.stream.read_buf(&mut self.buf)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    /// Sends `bytes`; `false` when the server has closed its side.
    pub async fn try_send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).await.is_ok()
    }

    /// Reads more bytes into the buffer; `false` at the end of the stream.
    pub async fn fill(&mut self) -> bool {
        self.buf.reserve(16 * 1024);
        let n = timeout(LIMIT, self.stream.read_buf(&mut self.buf))
            .await
            .unwrap_or_else(|_| panic!("the server sent nothing within {LIMIT:?}"))
            .expect("read");
        n > 0
    }

    pub async fn more(&mut self) {
        assert!(
            self.fill().await,
            "the server closed the connection early; received: {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    /// One CRLF-terminated line, without the CRLF.
    pub async fn line(&mut self) -> String {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..pos + 2).collect();
                return String::from_utf8_lossy(&line[..pos]).into_owned();
            }
            self.more().await;
        }
    }

    pub async fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            self.more().await;
        }
        self.buf.drain(..n).collect()
    }

    /// The status line and the headers.
    pub async fn head(&mut self) -> (u16, Vec<(String, String)>) {
        let status_line = self.line().await;
        let mut parts = status_line.splitn(3, ' ');
        assert_eq!(
            parts.next(),
            Some("HTTP/1.1"),
            "status line {status_line:?}"
        );
        let status = parts
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status code in {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.line().await;
            if line.is_empty() {
                return (status, headers);
            }
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("bad header line {line:?}"));
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }

    /// The next chunk of a chunked body; `None` after the last one (trailers read).
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line().await;
        let size = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .unwrap_or_else(|_| panic!("bad chunk size line {size_line:?}"));
        if size == 0 {
            while !self.line().await.is_empty() {}
            return None;
        }
        let data = self.take(size).await;
        assert_eq!(self.take(2).await, b"\r\n", "a chunk ends with CRLF");
        Some(data)
    }

    /// A whole response, framed by `Content-Length`, chunked encoding, or the end
    /// of the connection.
    pub async fn response(&mut self, to_head: bool) -> Reply {
        let (status, headers) = self.head().await;
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if to_head || status == 204 || status == 304 || (100..200).contains(&status) {
            return reply;
        }
        if reply
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        {
            while let Some(data) = self.chunk().await {
                reply.body.extend(data);
            }
        } else if let Some(len) = reply.header("content-length") {
            let len = len.parse().expect("content-length");
            reply.body = self.take(len).await;
        } else {
            while self.fill().await {}
            reply.body = std::mem::take(&mut self.buf);
        }
        reply
    }
}

/// The bytes of a request; a body gets a `Content-Length` (and a JSON
/// `Content-Type` unless `headers` set one).
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for (name, value) in headers {
        write!(head, "{name}: {value}\r\n").unwrap();
    }
    if let Some(body) = body {
        write!(head, "content-length: {}\r\n", body.len()).unwrap();
        // A body is JSON unless the test says otherwise.
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            head.push_str("content-type: application/json\r\n");
        }
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    bytes
}

/// One request on a new connection, and its response.
pub async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut all = headers.to_vec();
    all.push(("connection", "close"));
    let mut conn = Conn::open(addr).await;
    conn.send(&request(method, path, &all, body.map(str::as_bytes)))
        .await;
    conn.response(method == "HEAD").await
}

pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    call(addr, "GET", path, &[], None).await
}

pub async fn post(addr: SocketAddr, path: &str, body: &str) -> Reply {
    call(
        addr,
        "POST",
        path,
        &[("content-type", "application/json")],
        Some(body),
    )
    .await
}

/// Percent-encodes everything but unreserved characters; a space becomes `space`.
pub fn encode(text: &str, space: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            b' ' => out.push_str(space),
            _ => write!(out, "%{byte:02X}").unwrap(),
        }
    }
    out
}

/// Serves `server` on a free loopback port; its address.
pub async fn start_server(server: Server) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(server.serve(listener));
    addr
}

/// Serves one API on a free loopback port; its address.
pub async fn start(api: Api) -> SocketAddr {
    start_server(Server::new().mount(api).expect("mount")).await
}

/// Sends `head` (a request's line and headers, without the blank line) declaring a
/// body of `declared` bytes, and then the whole body at a steady pace, as most HTTP
/// clients do (they read the answer once their request is sent, or as curl does,
/// while sending it). The answer is read as it comes. The exchange fails when the
/// connection breaks before the whole body is sent and the whole answer read: a
/// reset or a broken pipe is what a client reports then, not the server's answer.
pub async fn answer_while_sending(
    addr: SocketAddr,
    head: &str,
    declared: usize,
) -> Result<Reply, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut read, mut write) = stream.into_split();
    let head = format!("{head}content-length: {declared}\r\n\r\n");
    let writer = tokio::spawn(async move {
        write
            .write_all(head.as_bytes())
            .await
            .map_err(|e| format!("sending the head: {e}"))?;
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while sent < declared {
            let n = chunk.len().min(declared - sent);
            write
                .write_all(&chunk[..n])
                .await
                .map_err(|e| format!("sending the body after {sent} bytes: {e}"))?;
            sent += n;
            // About 64 MB/s: a client on a fast link, not a flood.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok::<_, String>(write)
    });
    let reading = async {
        let mut buf = Vec::new();
        let (status, headers, body_at) = loop {
            let n = read
                .read_buf(&mut buf)
                .await
                .map_err(|e| format!("reading the answer: {e}"))?;
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let text = String::from_utf8_lossy(&buf[..end]).into_owned();
                let mut lines = text.split("\r\n");
                let status = lines
                    .next()
                    .and_then(|l| l.split(' ').nth(1))
                    .and_then(|s| s.parse::<u16>().ok())
                    .ok_or_else(|| format!("no status line in {text:?}"))?;
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                    .collect();
                break (status, headers, end + 4);
            }
            if n == 0 {
                return Err(format!(
                    "the connection ended before an answer: {:?}",
                    String::from_utf8_lossy(&buf)
                ));
            }
        };
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .ok_or_else(|| format!("no content-length in {headers:?}"))?;
        while buf.len() < body_at + length {
            let n = read
                .read_buf(&mut buf)
                .await
                .map_err(|e| format!("reading the body of a {status}: {e}"))?;
            if n == 0 {
                return Err(format!("the body of a {status} was cut short"));
            }
        }
        Ok(Reply {
            status,
            headers,
            body: buf[body_at..body_at + length].to_vec(),
        })
    };
    let reply = timeout(LIMIT, reading)
        .await
        .map_err(|_| format!("no answer within {LIMIT:?}"))?;
    let sent = timeout(LIMIT, writer)
        .await
        .map_err(|_| format!("the body was not taken within {LIMIT:?}"))?
        .map_err(|e| format!("the writer: {e}"))?;
    let reply = reply?;
    // Sent in full: the connection is closed with the request done.
    drop(sent?);
    Ok(reply)
}
