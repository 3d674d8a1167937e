//! The settings of a [`Client`](super::Client) ([`ClientBuilder`]): the subject
//! prefix, heartbeats, the stream window, attempts, the default deadline, the
//! bearer token.

use std::time::Duration;

/// Sets up a [`Client`]: the subject prefix, how often workers prove they are
/// alive, how far a stream may run ahead, how often an idempotent call is tried,
/// how long a call may take, the bearer token it shows.
///
/// [`Client`]: super::Client
#[derive(Clone)]
#[must_use]
pub struct ClientBuilder {
    pub(super) prefix: Option<String>,
    pub(super) heartbeat: Duration,
    pub(super) window: u32,
    pub(super) attempts: u32,
    pub(super) timeout: Duration,
    pub(super) token: Option<String>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            prefix: None,
            heartbeat: Duration::from_secs(1),
            window: 64,
            attempts: 3,
            timeout: DEFAULT_TIMEOUT,
            token: None,
        }
    }
}

impl std::fmt::Debug for ClientBuilder {
    // The token is a secret: only whether there is one is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("prefix", &self.prefix)
            .field("heartbeat", &self.heartbeat)
            .field("window", &self.window)
            .field("attempts", &self.attempts)
            .field("timeout", &self.timeout)
            .field("token", &self.token.is_some())
            .finish()
    }
}

/// The deadline of a call that sets none of its own.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl ClientBuilder {
    /// The workers' subject prefix (`toolfunc` unless set, or the path of a
    /// `nats://host:port/<prefix>` URL).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// How often a worker sends a heartbeat while it runs a call (1 s unless set;
    /// 50 ms at least). Three missed in a row and the worker is taken for lost.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(50));
        self
    }

    /// How many items a streaming call may send ahead of the consumer (64 unless
    /// set; 1 to 1024).
    pub fn stream_window(mut self, items: u32) -> Self {
        self.window = items.clamp(1, 1024);
        self
    }

    /// How many workers an idempotent call is tried on when one is lost (3 unless
    /// set), all within the call's deadline.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The deadline of every call that has none of its own (from
    /// [`CallOptions::timeout`] or an enclosing call's context): 60 s unless set.
    /// The worker gets it too (`Tf-Timeout`) and stops the call when it passes, so
    /// no call holds a worker for ever; a stream's deadline covers all its items.
    ///
    /// [`CallOptions::timeout`]: crate::options::CallOptions::timeout
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (calls, streams,
    /// discovery, control messages, durable submits and outcome reads), for
    /// workers built with [`WorkerBuilder::authenticate`].
    ///
    /// [`WorkerBuilder::authenticate`]: crate::nats::WorkerBuilder::authenticate
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }
}
