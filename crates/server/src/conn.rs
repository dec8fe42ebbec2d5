//! The listener: our own accept loop on hyper-util's connections (HTTP/1.1 and HTTP/2),
//! with TLS by tokio-rustls, so that every connection has time limits and the service a
//! cap and a drain it controls, as nginx, envoy and the Kubernetes API server have them.
//!
//! Per connection:
//! - the TLS handshake must finish within the header read timeout;
//! - HTTP/1.1: once the first byte of a request head arrives, the whole head must
//!   arrive within `ConnLimits::header_read_timeout` (Go's `ReadHeaderTimeout`);
//!   without a request in flight and no byte of a new head, the connection is closed
//!   after `ConnLimits::idle_timeout` (Go's `IdleTimeout`, nginx's
//!   `keepalive_timeout`);
//! - HTTP/2: closed after the idle timeout without a stream in flight; pinged every
//!   `ConnLimits::keep_alive_interval` and closed when a ping is not answered within
//!   [`KEEP_ALIVE_TIMEOUT`];
//! - the body has its own deadline, in the router's body reader (`body`), before a check
//!   slot is taken.
//!
//! At most `ConnLimits::max_connections` are open: a new one over the cap closes the
//! connection idle longest (no request in flight), or, when every one has a request in
//! flight, is itself closed. `accept` failing for want of file descriptors (EMFILE,
//! ENFILE) lowers the cap to 64 below what is open, closes idle
//! connections down to it, pauses briefly and is logged once per interval; it never
//! ends the listener. So silent connections cannot keep
//! `/healthz` from being answered.
//!
//! An HTTP/2 request answered before its body was read (401, 413, 415) keeps its body
//! read and discarded in the background, up to [`DRAIN_BYTES`] and [`DRAIN_TIME`]. The
//! handler drops the request body before the answer's END_STREAM is sent; h2 then resets
//! the stream with CANCEL (its RST_STREAM(NO_ERROR) of RFC 9113 §8.1 is only for a body
//! dropped after the answer was sent), and curl 7.88 (nghttp2) reports that reset as
//! "(92) Stream error in the HTTP/2 framing layer" instead of the answer, in most tries.
//! Kept alive, the stream ends with the client's END_STREAM, or with NO_ERROR at the
//! bound.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, watch};
use tower::ServiceExt as _;

use crate::logging::RateLimited;

/// How long an HTTP/2 keep-alive ping may go unanswered before the connection is closed.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest request head, in bytes: HTTP/1.1's read buffer (a longer head gets 431)
/// and HTTP/2's header list (`SETTINGS_MAX_HEADER_LIST_SIZE`, RFC 9113 §6.5.2). 64 KiB,
/// as nginx's `large_client_header_buffers` 4 × 8 KiB with room for long tokens.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most bytes of an unread HTTP/2 request body read and discarded after its answer.
pub const DRAIN_BYTES: usize = 1 << 20;
/// Longest time an unread HTTP/2 request body is read and discarded after its answer.
pub const DRAIN_TIME: Duration = Duration::from_secs(2);
/// How long the connections get to write their last answers at the end of a shutdown.
const FLUSH_TIME: Duration = Duration::from_secs(1);
/// Back-off after `accept` failed (out of file descriptors, or another error).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// Connections kept below the count at which `accept` ran out of file descriptors (for
/// registry connections, files and the next accepts).
const FD_HEADROOM: usize = 64;
/// The pause after closing idle connections for want of file descriptors, for their
/// tasks to close them.
const EVICT_PAUSE: Duration = Duration::from_millis(5);
/// At most one log line per interval for the cap and for `accept` errors.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The time limits and the cap of connections ([`crate::ServeOptions`]' fields).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub keep_alive_interval: Duration,
    pub max_connections: usize,
}

/// What the admission routes learn of a TLS connection: the client's certificate chain
/// (leaf first; empty when the client sent none). Verified by rustls against
/// `--admission-client-ca` before the first request.
#[derive(Debug, Clone)]
pub struct TlsInfo {
    /// The client's certificates, DER, leaf first.
    pub peer_certificates: Vec<rustls::pki_types::CertificateDer<'static>>,
}

/// The serving TLS configuration, replaced in place when the files change; every new
/// connection takes the current one.
pub(crate) type TlsConfig = Arc<RwLock<Arc<rustls::ServerConfig>>>;

/// The service's lifecycle, shared by the listener and the router's layers.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// Set at the shutdown signal: new requests are refused, connections drain.
    draining: watch::Sender<bool>,
    /// Set when the shutdown grace ended: checks still running answer 503.
    grace_over: watch::Sender<bool>,
}

impl Lifecycle {
    pub(crate) fn new() -> Lifecycle {
        Lifecycle {
            draining: watch::channel(false).0,
            grace_over: watch::channel(false).0,
        }
    }

    pub(crate) fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Completes when the shutdown grace has ended (never before the shutdown signal).
    pub(crate) async fn grace_over(&self) {
        let mut over = self.grace_over.subscribe();
        let _ = over.wait_for(|o| *o).await;
    }
}

/// Timing of one connection, for its deadline.
#[derive(Debug)]
struct Timing {
    /// The last time a request finished (or the connection was accepted).
    last_active: Instant,
    /// When the first byte of an HTTP/1.1 request head arrived, while none is in flight.
    head_started: Option<Instant>,
}

/// One open connection, as the accept loop and its requests see it.
#[derive(Debug)]
struct Conn {
    in_flight: AtomicUsize,
    timing: Mutex<Timing>,
    /// HTTP/2 (ALPN `h2`, or the client's preface on plain HTTP): no head deadline.
    h2: AtomicBool,
    /// Whether any byte was read yet (the plain-HTTP preface is looked for in the first).
    read_any: AtomicBool,
    /// The deadline may have moved.
    changed: Notify,
    /// Close now (evicted, or the end of shutdown).
    close: Notify,
    /// Requests answered on it.
    served: AtomicUsize,
}

impl Conn {
    fn new(h2: bool) -> Conn {
        Conn {
            in_flight: AtomicUsize::new(0),
            timing: Mutex::new(Timing {
                last_active: Instant::now(),
                head_started: None,
            }),
            h2: AtomicBool::new(h2),
            read_any: AtomicBool::new(false),
            changed: Notify::new(),
            close: Notify::new(),
            served: AtomicUsize::new(0),
        }
    }

    fn timing(&self) -> std::sync::MutexGuard<'_, Timing> {
        self.timing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes arrived (`first` the start of them).
    fn read_some(&self, first: &[u8]) {
        if !self.read_any.swap(true, Ordering::Relaxed) && first.starts_with(b"PRI * HTTP/2.0") {
            self.h2.store(true, Ordering::Relaxed);
        }
        if self.in_flight.load(Ordering::Relaxed) == 0 && !self.h2.load(Ordering::Relaxed) {
            let mut timing = self.timing();
            if timing.head_started.is_none() {
                timing.head_started = Some(Instant::now());
                drop(timing);
                self.changed.notify_one();
            }
        }
    }

    /// When the connection is to be closed: `None` while a request is in flight.
    fn deadline(&self, limits: &ConnLimits) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let timing = self.timing();
        Some(match timing.head_started {
            Some(started) => started + limits.header_read_timeout,
            None => timing.last_active + limits.idle_timeout,
        })
    }

    /// When it was last busy, if it is idle now (for eviction).
    fn idle_since(&self) -> Option<Instant> {
        (self.in_flight.load(Ordering::SeqCst) == 0).then(|| self.timing().last_active)
    }
}

/// The open connections and the requests in flight over all of them.
#[derive(Debug, Default)]
struct Conns {
    /// The cap learnt from `accept` running out of file descriptors (0: none yet).
    fd_cap: AtomicUsize,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    requests: AtomicUsize,
    request_done: Notify,
}

impl Conns {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the connection idle longest, and stops counting it at once (its task
    /// ends soon); whether there was one.
    fn evict_idle(&self) -> bool {
        let mut open = self.open();
        let oldest = open
            .iter()
            .filter_map(|(id, c)| c.idle_since().map(|t| (t, *id)))
            .min_by_key(|(t, _)| *t)
            .map(|(_, id)| id);
        match oldest.and_then(|id| open.remove(&id)) {
            Some(conn) => {
                conn.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Counts a request in flight on its connection and over all, until dropped.
struct InFlight {
    conn: Arc<Conn>,
    conns: Arc<Conns>,
}

impl InFlight {
    fn new(conn: Arc<Conn>, conns: Arc<Conns>) -> InFlight {
        conn.in_flight.fetch_add(1, Ordering::SeqCst);
        conn.timing().head_started = None;
        conns.requests.fetch_add(1, Ordering::SeqCst);
        InFlight { conn, conns }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut timing = self.conn.timing();
            timing.last_active = Instant::now();
            timing.head_started = None;
        }
        self.conn.served.fetch_add(1, Ordering::SeqCst);
        self.conn.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.conn.changed.notify_one();
        self.conns.requests.fetch_sub(1, Ordering::SeqCst);
        self.conns.request_done.notify_waiters();
    }
}

/// The connection's IO, reporting reads to its [`Conn`].
struct Watched<T> {
    io: T,
    conn: Arc<Conn>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled
            && buf.filled().len() > before
        {
            self.conn.read_some(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// A request body that, dropped unread on HTTP/2, is read and discarded in the
/// background (up to [`DRAIN_BYTES`] and [`DRAIN_TIME`]) so that the stream ends with
/// the client's END_STREAM instead of a reset while it is still sending.
struct Drained {
    inner: Option<Incoming>,
    drain: bool,
}

impl http_body::Body for Drained {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.inner.as_mut() {
            Some(inner) => Pin::new(inner).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        let Some(mut body) = self.inner.take() else {
            return;
        };
        if !self.drain || body.is_end_stream() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(DRAIN_TIME, async move {
                let mut read = 0usize;
                while let Some(Ok(frame)) =
                    std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
                {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    if read > DRAIN_BYTES {
                        break;
                    }
                }
            })
            .await;
        });
    }
}

/// The accept loop, until the shutdown grace ends or every request is answered.
pub(crate) struct Listener {
    pub listener: std::net::TcpListener,
    pub tls: Option<TlsConfig>,
    pub limits: ConnLimits,
    pub lifecycle: Arc<Lifecycle>,
    pub router: Router,
}

static CAP_LOG: RateLimited = RateLimited::new(LOG_INTERVAL);
static ACCEPT_LOG: RateLimited = RateLimited::new(LOG_INTERVAL);

impl Listener {
    /// Serves until `shutdown` completes; then refuses new requests (503), lets those in
    /// flight finish for up to `grace`, answers those still running 503, and returns.
    pub(crate) async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
        grace: Duration,
    ) -> std::io::Result<()> {
        let Listener {
            listener,
            tls,
            limits,
            lifecycle,
            router,
        } = self;
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(None)
            // A request head is at most MAX_HEAD bytes (431 over it), so that
            // --max-connections heads stay small (hyper's default is ~400 KiB each).
            .max_buf_size(MAX_HEAD);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_header_list_size(MAX_HEAD as u32)
            .keep_alive_interval(Some(limits.keep_alive_interval))
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
        let builder = Arc::new(builder);
        let conns = Arc::new(Conns::default());
        let mut tasks = tokio::task::JoinSet::new();
        let shutdown = async move {
            shutdown.await;
        };
        tokio::pin!(shutdown);
        let mut drain_started: Option<tokio::time::Instant> = None;
        loop {
            let grace_end = drain_started.map(|t| t + grace);
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        admit(&conns, limits.max_connections, &mut tasks, |conn| {
                            connection(
                                stream,
                                conn,
                                conns.clone(),
                                peer,
                                tls.clone(),
                                builder.clone(),
                                limits,
                                lifecycle.clone(),
                                router.clone(),
                            )
                        });
                    }
                    Err(e) => accept_failed(&conns, limits.max_connections, &e).await,
                },
                () = &mut shutdown, if drain_started.is_none() => {
                    tracing::info!(
                        grace_seconds = grace.as_secs_f64(),
                        requests_in_flight = conns.requests.load(Ordering::SeqCst),
                        "shutting down: new requests get 503; requests in flight may finish \
                         within the grace"
                    );
                    lifecycle.draining.send_replace(true);
                    drain_started = Some(tokio::time::Instant::now());
                }
                () = async {
                    match grace_end {
                        Some(end) => tokio::time::sleep_until(end).await,
                        None => std::future::pending().await,
                    }
                } => {
                    break;
                }
                () = conns.request_done.notified(), if drain_started.is_some() => {}
                Some(_) = tasks.join_next() => {}
            }
            if drain_started.is_some() && conns.requests.load(Ordering::SeqCst) == 0 {
                break;
            }
        }
        drop(listener);
        let cut = conns.requests.load(Ordering::SeqCst);
        if cut > 0 {
            tracing::warn!(
                requests = cut,
                "the shutdown grace ended with requests in flight: they are answered 503 \
                 (their checks count as abandoned)"
            );
        }
        lifecycle.grace_over.send_replace(true);
        // Connections that never had a request (silent, or a half-sent head) close now;
        // the others get a moment to write their last answers.
        for conn in conns.open().values() {
            if conn.in_flight.load(Ordering::SeqCst) == 0 && conn.served.load(Ordering::SeqCst) == 0
            {
                conn.close.notify_one();
            }
        }
        let _ = tokio::time::timeout(FLUSH_TIME, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        tasks.abort_all();
        Ok(())
    }
}

/// Starts a connection's task unless the cap is reached and no idle one can make room.
/// The connection counts against the cap from its accept on (TLS handshake included).
fn admit<F, Fut>(conns: &Arc<Conns>, max: usize, tasks: &mut tokio::task::JoinSet<()>, start: F)
where
    F: FnOnce(Arc<Conn>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let open = conns.open().len();
    let max = match conns.fd_cap.load(Ordering::Relaxed) {
        0 => max,
        fd_cap => max.min(fd_cap),
    };
    if open >= max {
        let evicted = conns.evict_idle();
        if let Some(left_out) = CAP_LOG.allow() {
            if evicted {
                tracing::warn!(
                    max_connections = max,
                    similar_since_last = left_out,
                    "connection cap reached: closed the connection idle longest for a new one"
                );
            } else {
                tracing::warn!(
                    max_connections = max,
                    similar_since_last = left_out,
                    "connection cap reached and every connection has a request in flight: \
                     a new connection is closed"
                );
            }
        }
        if !evicted {
            return;
        }
    }
    let id = conns.next.fetch_add(1, Ordering::Relaxed);
    let conn = Arc::new(Conn::new(false));
    conns.open().insert(id, conn.clone());
    let conns = conns.clone();
    let served = start(conn.clone());
    tasks.spawn(async move {
        tokio::select! {
            () = served => {}
            () = conn.close.notified() => {}
        }
        conns.open().remove(&id);
    });
}

/// `accept` failed. Out of file descriptors (EMFILE, ENFILE): the cap is lowered to
/// [`FD_HEADROOM`] below the connections open now (for this process's life), as many
/// idle connections are closed, and the loop goes on after a short pause (so that the
/// connections waiting in the backlog, a health probe among them, are reached at once);
/// on any other error, or with nothing to close, it backs off. Logged once per
/// interval; the listener never ends.
async fn accept_failed(conns: &Conns, max: usize, error: &std::io::Error) {
    let out_of_files = matches!(error.raw_os_error(), Some(24 | 23)); // EMFILE, ENFILE
    let mut closed = 0;
    let mut cap = 0;
    if out_of_files {
        let open = conns.open().len();
        cap = open.saturating_sub(FD_HEADROOM).max(1).min(max);
        conns.fd_cap.store(cap, Ordering::Relaxed);
        while conns.open().len() > cap && conns.evict_idle() {
            closed += 1;
        }
    }
    if let Some(left_out) = ACCEPT_LOG.allow() {
        if out_of_files {
            tracing::warn!(
                connection_cap = cap,
                closed_idle = closed,
                similar_since_last = left_out,
                "cannot accept a connection: out of file descriptors ({error}); the \
                 connection cap is now {cap} and idle connections were closed; raise the \
                 limit (ulimit -n) or lower the connection cap"
            );
        } else {
            tracing::warn!(
                similar_since_last = left_out,
                "cannot accept a connection: {error}"
            );
        }
    }
    let pause = if closed > 0 {
        EVICT_PAUSE
    } else {
        ACCEPT_BACKOFF
    };
    tokio::time::sleep(pause).await;
}

/// The TLS handshake (if any) within the header read timeout, then the connection
/// served under its deadlines.
#[allow(clippy::too_many_arguments)]
async fn connection(
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
    conns: Arc<Conns>,
    peer: SocketAddr,
    tls: Option<TlsConfig>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    limits: ConnLimits,
    lifecycle: Arc<Lifecycle>,
    router: Router,
) {
    let _ = stream.set_nodelay(true);
    let Some(config) = tls else {
        let io = Watched {
            io: stream,
            conn: conn.clone(),
        };
        let builder = (*builder).clone();
        return serve(io, conn, conns, None, builder, limits, lifecycle, router).await;
    };
    let config = config.read().unwrap_or_else(|e| e.into_inner()).clone();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let stream =
        match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::debug!(%peer, "TLS handshake failed: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake not finished within the header read timeout");
                return;
            }
        };
    let (_, session) = stream.get_ref();
    let h2 = session.alpn_protocol() == Some(b"h2");
    let info = TlsInfo {
        peer_certificates: session
            .peer_certificates()
            .map(<[_]>::to_vec)
            .unwrap_or_default(),
    };
    let builder = if h2 {
        (*builder).clone().http2_only()
    } else {
        (*builder).clone().http1_only()
    };
    conn.h2.store(h2, Ordering::Relaxed);
    // The handshake's bytes are not a request head.
    conn.read_any.store(true, Ordering::Relaxed);
    conn.timing().head_started = None;
    let io = Watched {
        io: stream,
        conn: conn.clone(),
    };
    let info = Some(Arc::new(info));
    serve(io, conn, conns, info, builder, limits, lifecycle, router).await;
}

/// Serves one connection: its requests through the router, closed at its deadline,
/// when evicted, or drained at shutdown.
#[allow(clippy::too_many_arguments)]
async fn serve<T>(
    io: Watched<T>,
    conn: Arc<Conn>,
    conns: Arc<Conns>,
    tls: Option<Arc<TlsInfo>>,
    builder: auto::Builder<TokioExecutor>,
    limits: ConnLimits,
    lifecycle: Arc<Lifecycle>,
    router: Router,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = {
        let conn = conn.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let in_flight = InFlight::new(conn.clone(), conns.clone());
            let router = router.clone();
            let tls = tls.clone();
            async move {
                let _in_flight = in_flight;
                let drain = request.version() == hyper::Version::HTTP_2;
                let mut request = request.map(|body| {
                    axum::body::Body::new(Drained {
                        inner: Some(body),
                        drain,
                    })
                });
                if let Some(info) = tls {
                    request.extensions_mut().insert(info);
                }
                let response = match router.oneshot(request).await {
                    Ok(r) => r,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response)
            }
        })
    };
    let served = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(served);
    let mut draining = lifecycle.draining.subscribe();
    // A connection accepted during the drain first gets its request answered (503).
    let opened_draining = lifecycle.is_draining();
    let mut shutting_down = false;
    loop {
        if !shutting_down
            && opened_draining
            && conn.served.load(Ordering::SeqCst) > 0
            && conn.in_flight.load(Ordering::SeqCst) == 0
        {
            shutting_down = true;
            served.as_mut().graceful_shutdown();
        }
        let deadline = conn.deadline(&limits);
        tokio::select! {
            _ = served.as_mut() => return,
            () = conn.close.notified() => return,
            _ = draining.wait_for(|d| *d), if !shutting_down && !opened_draining => {
                // An HTTP/1.1 connection without a request in flight is idle or holds a
                // half-sent head: closed now, whatever else is still running (hyper's
                // graceful shutdown would wait for the head).
                if !conn.h2.load(Ordering::Relaxed) && conn.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                shutting_down = true;
                served.as_mut().graceful_shutdown();
            }
            () = conn.changed.notified() => {}
            () = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                    None => std::future::pending().await,
                }
            } => {
                if conn.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    return;
                }
            }
        }
    }
}
