//! Accepting connections for the HTTP and MCP servers: HTTP/1 on hyper with
//! `TCP_NODELAY`, a cap on open connections, a deadline for a request's head, an
//! idle timeout, and a lingering close after a request body left unread.
//!
//! The limits keep idle or half-sent connections from piling up until the process
//! runs out of descriptors. The lingering close is for a client still sending a body
//! the server refused without reading it (413 by its `Content-Length`, a 401 or
//! 404 before the body was needed): closing a socket with unread bytes in it makes
//! the kernel send a reset, and a client that is still writing sees "connection
//! reset" or "broken pipe" instead of the answer. So after such an answer the
//! server half-closes (the client reads the answer, then the end) and reads and
//! throws away what the client still sends, up to a limit of bytes and for at most
//! the header timeout, before it closes.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::atomic::AtomicBool;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

/// The default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The default time a client has to send a request's head (line and headers),
/// counted from when the connection is ready for the next request.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time a connection may go without a byte read or written while no
/// request is running on it.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time a client has to send a whole request body, from when its
/// head was read: 30 s. A body that trickles in slower (one byte every few
/// seconds, never quiet long enough for the idle timeout) is cut off then.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of how much of a request body left unread the server reads and
/// throws away after answering, before it closes the connection: 4 MiB.
pub const DEFAULT_DRAIN_LIMIT: usize = 4 * 1024 * 1024;

/// How connections are accepted and when they are closed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    /// How long a request body may take to arrive, whole.
    pub(crate) body_timeout: Duration,
    /// What is read and thrown away of a body left unread before closing.
    pub(crate) drain_limit: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            drain_limit: DEFAULT_DRAIN_LIMIT,
        }
    }
}

/// Serves `app` on `listener` until the process ends. Errors accepting a
/// connection (out of descriptors, a connection reset before it was accepted) are
/// logged and the loop goes on.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        // At the cap, new connections wait in the listen backlog until one closes.
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return Ok(());
        };
        let (stream, _peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!(error = %err, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let app = app.clone();
        tokio::spawn(async move {
            connection(stream, app, limits).await;
            drop(permit);
        });
    }
}

/// What a connection's watchdog reads: bytes moved, and calls running.
#[derive(Default)]
struct Activity {
    /// Bumped on every read or write that moved bytes.
    moved: AtomicU64,
    /// Requests whose response (body included) is not finished.
    running: AtomicUsize,
    /// Of those, the ones whose request body is still being received: a client
    /// that stops sending half-way is idle, not busy.
    receiving: AtomicUsize,
    /// Whether the last request's body was dropped before its end was read: the
    /// client may still be sending it when the connection closes.
    unread: AtomicBool,
}

impl Activity {
    /// Whether a call is running (not merely waiting for its request body).
    fn busy(&self) -> bool {
        self.running.load(Ordering::Relaxed) > self.receiving.load(Ordering::Relaxed)
    }
}

/// One request's share of a counter of [`Activity`], given back on drop.
struct Share(Arc<Activity>, fn(&Activity) -> &AtomicUsize);

impl Share {
    fn enter(activity: &Arc<Activity>, counter: fn(&Activity) -> &AtomicUsize) -> Self {
        counter(activity).fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(activity), counter)
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        (self.1)(&self.0).fetch_sub(1, Ordering::Relaxed);
    }
}

/// Marks the connection's request body as left unread when dropped armed.
struct Unread(Option<Arc<Activity>>);

impl Drop for Unread {
    fn drop(&mut self) {
        if let Some(activity) = self.0.take() {
            activity.unread.store(true, Ordering::Relaxed);
        }
    }
}

pin_project_lite::pin_project! {
    /// A request body that counts as "receiving" until its end is read (or it is
    /// dropped), and as left unread if it is dropped before its end.
    struct Receiving {
        #[pin]
        inner: Incoming,
        share: Option<Share>,
        unread: Unread,
        // When the whole body must be in, and the timer for it, made the first
        // time the body has to wait (a body that came with its head needs none).
        deadline: tokio::time::Instant,
        limit: Duration,
        timer: Option<Pin<Box<Sleep>>>,
    }
}

/// The error of a body that did not arrive whole within the body timeout.
#[derive(Debug)]
struct BodyTimedOut(Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} ms",
            self.0.as_millis()
        )
    }
}

impl std::error::Error for BodyTimedOut {}

/// Whether `err` (or an error it wraps) is a body that did not arrive in time.
#[cfg(feature = "http-server")]
pub(crate) fn timed_out(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(err) = next {
        if err.is::<BodyTimedOut>() {
            return true;
        }
        next = err.source();
    }
    false
}

impl hyper::body::Body for Receiving {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        let polled = match this.inner.as_mut().poll_frame(cx) {
            Poll::Pending => {
                let deadline = *this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if timer.as_mut().poll(cx).is_ready() {
                    this.share.take();
                    return Poll::Ready(Some(Err(Box::new(BodyTimedOut(*this.limit)))));
                }
                Poll::Pending
            }
            Poll::Ready(frame) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
        };
        // The end is read: with the last frame (a reader that stops at
        // `is_end_stream` polls no further), or as the end of the frames.
        let ended = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Ready(Some(Err(_))) => {
                this.share.take();
                false
            }
            Poll::Pending => false,
        };
        if ended {
            this.share.take();
            this.unread.0 = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

async fn connection(stream: TcpStream, app: axum::Router, limits: Limits) {
    // The MCP SDK writes an answer as a short SSE stream in small pieces: with
    // Nagle's algorithm on, the last piece would wait for a delayed ACK (~40 ms).
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(error = %err, "cannot set TCP_NODELAY");
    }
    let activity = Arc::new(Activity::default());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
        drain_limit: limits.drain_limit,
        drain_time: limits.header_timeout,
        drain: None,
    });
    let service = TowerToHyperService::new(app);
    let watched = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let running = Share::enter(&watched, |a| &a.running);
        // A body hyper drained by itself left nothing behind.
        watched.unread.store(false, Ordering::Relaxed);
        let request = request.map(|inner| {
            let receiving = !hyper::body::Body::is_end_stream(&inner);
            let share = receiving.then(|| Share::enter(&watched, |a| &a.receiving));
            let unread = Unread(receiving.then(|| Arc::clone(&watched)));
            Receiving {
                inner,
                share,
                unread,
                deadline: tokio::time::Instant::now() + limits.body_timeout,
                limit: limits.body_timeout,
                timer: None,
            }
        });
        let call = hyper::service::Service::call(&service, request);
        let answered = Arc::clone(&watched);
        async move {
            let mut response: Response = match call.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            // Answered before its body was read (a 401, a 413, a refusal): the
            // connection ends after this response, so say so. A client that
            // took it for kept alive would send its next request into a closing
            // socket and see it cut off.
            if answered.unread.load(Ordering::Relaxed) {
                response.headers_mut().insert(
                    axum::http::header::CONNECTION,
                    axum::http::HeaderValue::from_static("close"),
                );
            }
            // The request counts as running until its body is sent or dropped.
            Ok::<_, Infallible>(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _running = &running;
                    frame
                }))
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    // Checked four times per idle timeout: a quiet connection closes between one
    // and one and a quarter idle timeouts after its last byte.
    let tick = (limits.idle_timeout / 4).max(Duration::from_millis(1));
    let mut quiet_ticks = 0u32;
    let mut last = activity.moved.load(Ordering::Relaxed);
    let mut closing = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                }
                return;
            }
            () = tokio::time::sleep(tick) => {
                let moved = activity.moved.load(Ordering::Relaxed);
                let busy = activity.busy();
                if moved != last || busy {
                    last = moved;
                    quiet_ticks = 0;
                    continue;
                }
                quiet_ticks += 1;
                if quiet_ticks < 4 {
                    continue;
                }
                if closing {
                    // It did not close when asked: drop it.
                    return;
                }
                // Nothing running and nothing moved: close it. A request half
                // sent is dropped; a connection between requests closes cleanly.
                conn.as_mut().graceful_shutdown();
                closing = true;
                quiet_ticks = 0;
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A stream that counts the reads and writes that moved bytes, and lingers
    /// on its shutdown after a request body was left unread.
    struct Watched {
        #[pin]
        inner: TcpStream,
        activity: Arc<Activity>,
        drain_limit: usize,
        drain_time: Duration,
        drain: Option<Drain>,
    }
}

/// A lingering close under way: the write side is shut, what comes in is thrown
/// away until the client closes, `left` bytes are read, or `until` passes.
struct Drain {
    left: usize,
    until: Pin<Box<Sleep>>,
}

impl Watched {
    fn moved(activity: &Activity) {
        activity.moved.fetch_add(1, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let polled = this.inner.poll_read(cx, buf);
        if buf.filled().len() > before {
            Self::moved(this.activity);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            Self::moved(this.activity);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let polled = this.inner.poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            Self::moved(this.activity);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut this = self.project();
        if this.drain.is_none() {
            // The answer is written: the client reads it, then the end of the stream.
            std::task::ready!(this.inner.as_mut().poll_shutdown(cx))?;
            let unread = this.activity.unread.swap(false, Ordering::Relaxed);
            if !unread || *this.drain_limit == 0 {
                return Poll::Ready(Ok(()));
            }
            *this.drain = Some(Drain {
                left: *this.drain_limit,
                until: Box::pin(tokio::time::sleep(*this.drain_time)),
            });
        }
        let Some(drain) = this.drain.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let mut scratch = [0u8; 8 * 1024];
        loop {
            if drain.left == 0 || drain.until.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ok(()));
            }
            let want = drain.left.min(scratch.len());
            let mut buf = ReadBuf::new(&mut scratch[..want]);
            match this.inner.as_mut().poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                // A reset or the client's own end: nothing more to wait for.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    drain.left -= buf.filled().len();
                    Self::moved(this.activity);
                }
            }
        }
    }
}
