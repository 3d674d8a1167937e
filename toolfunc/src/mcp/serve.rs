//! Serving the streamable HTTP endpoint: [`serve`] runs the accept loop
//! `http::Server` runs (a cap on connections, a deadline for request heads, an
//! idle timeout, a lingering close after a body left unread, `TCP_NODELAY`), and
//! [`NoDelay`] is the listener to hand `axum::serve` for an app with MCP in it.
//!
//! The SDK answers a request as a short SSE stream, written in small pieces: with
//! Nagle's algorithm on (the default of a plain `axum::serve`), the last piece waits
//! for the ACK of the one before, which the client delays (about 40 ms on Linux). So
//! every sessionless call would take some 44 ms however fast its tool is. Every
//! connection accepted here has `TCP_NODELAY` set.

use std::net::SocketAddr;

use axum::serve::Listener;
use tokio::net::{TcpListener, TcpStream};

use crate::listen::{self, Limits};

/// A TCP listener whose accepted connections have `TCP_NODELAY` set: what to hand
/// `axum::serve` for an app with MCP in it, when it is served with `axum::serve`'s
/// own options (a graceful shutdown). `axum::serve` has no cap on connections and
/// no header or idle timeout: [`serve`] and [`Server::serve_http`](super::Server::serve_http) do.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use toolfunc::mcp::{self, NoDelay};
/// use toolfunc::{CancellationToken, Registry};
///
/// let stop = CancellationToken::new();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
/// let app = mcp::router(Registry::global());
/// mcp::axum::serve(NoDelay::new(listener), app)
///     .with_graceful_shutdown(stop.cancelled_owned())
///     .await
/// # }
/// ```
#[derive(Debug)]
pub struct NoDelay {
    listener: TcpListener,
}

impl NoDelay {
    /// Wraps `listener`.
    pub fn new(listener: TcpListener) -> Self {
        Self { listener }
    }

    /// The listener back.
    pub fn into_inner(self) -> TcpListener {
        self.listener
    }
}

impl From<TcpListener> for NoDelay {
    fn from(listener: TcpListener) -> Self {
        Self::new(listener)
    }
}

impl Listener for NoDelay {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        // axum's own accept: retries (and backs off on) failed accepts.
        let (stream, addr) = Listener::accept(&mut self.listener).await;
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%addr, "MCP: cannot set TCP_NODELAY: {err}");
        }
        (stream, addr)
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Serves `app` (an axum router with [`router`](super::router) merged in, say) on
/// `listener` until the process ends, every connection with `TCP_NODELAY`, under
/// the default connection limits of [`Server::serve_http`](super::Server::serve_http):
/// [`DEFAULT_MAX_CONNECTIONS`](super::DEFAULT_MAX_CONNECTIONS) open connections,
/// [`DEFAULT_HEADER_TIMEOUT`](super::DEFAULT_HEADER_TIMEOUT) to send a request's
/// head, [`DEFAULT_IDLE_TIMEOUT`](super::DEFAULT_IDLE_TIMEOUT) of silence on a
/// connection with nothing running, and up to
/// [`DEFAULT_DRAIN_LIMIT`](super::DEFAULT_DRAIN_LIMIT) of a body left unread read
/// and thrown away before closing. `toolfunc::http::Server::merge` serves an MCP
/// router beside HTTP APIs with limits of your choosing.
pub async fn serve(listener: impl Into<NoDelay>, app: axum::Router) -> std::io::Result<()> {
    listen::serve(listener.into().into_inner(), app, Limits::default()).await
}
