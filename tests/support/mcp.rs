//! Helpers for the MCP test binaries over streamable HTTP: a server on a loopback
//! port, and one HTTP answer read as JSON-RPC messages (SSE or plain JSON).
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use serde_json::Value;
use toolfunc::mcp::axum;

/// A server on a loopback port; its `/mcp` URL.
pub async fn serve_http(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}{}", toolfunc::mcp::PATH)
}

/// One HTTP answer.
pub struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub content_type: String,
    pub body: String,
}

impl Answer {
    /// Sends `request` and reads the whole answer, within `limit`.
    pub async fn read(request: reqwest::RequestBuilder, limit: std::time::Duration) -> Self {
        let exchange = async {
            let response = request.send().await.expect("the server answers");
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let session = header("mcp-session-id");
            let content_type = header("content-type").unwrap_or_default();
            let status = response.status().as_u16();
            let body = response.text().await.expect("a body");
            Self {
                status,
                session,
                content_type,
                body,
            }
        };
        tokio::time::timeout(limit, exchange)
            .await
            .expect("answered in time")
    }

    /// The JSON-RPC messages of the body: an SSE stream's `data:` lines, or JSON.
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type.starts_with("text/event-stream") {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .filter(|data| !data.is_empty())
                .map(|data| serde_json::from_str(data).expect("JSON data"))
                .collect()
        } else {
            vec![serde_json::from_str(&self.body).expect("a JSON body")]
        }
    }

    /// The response with this id among the messages.
    pub fn response(&self, id: i64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response {id} in {:?}", self.body))
    }
}
