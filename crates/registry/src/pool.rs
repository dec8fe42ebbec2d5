//! Our own connection pool, on hyper 1's low-level client connections
//! (`hyper::client::conn::{http1, http2}`) over tokio TCP and rustls.
//!
//! Why not reqwest's: hyper-util's pool behind reqwest cannot cap the connections to
//! a host (a request waiting for a connection starts a new one, and that one joins the
//! pool even when an idle one came back first: up to 5 more than `--concurrency` were
//! seen), and it opens a connection only for a request, so a group of images cannot
//! have its connections opened while its first request is in flight (issue 27).
//!
//! What it does, per origin (scheme, host, port):
//! - at most [`crate::ClientOptions::max_connections_per_host`] connections open at
//!   once: each connection holds a semaphore permit for its whole life (the permit is
//!   freed when the connection's task ends: closed by either side, broken, or idle
//!   too long), and a request waits for an idle connection or a free permit;
//! - over TLS, ALPN offers `h2` and `http/1.1` (as reqwest does); while the first
//!   handshake to an origin is under way no other connection is opened to it, and when
//!   ALPN picked `h2` every request shares that one connection;
//! - an HTTP/1.1 connection goes back to the idle list once its answer is read to the
//!   end (hyper's `ready`), and is reused newest first; idle for more than
//!   [`IDLE_TIMEOUT`] it is closed (reqwest's `pool_idle_timeout` here was 90 s);
//! - a request that an idle connection could not take (it closed meanwhile, so hyper
//!   hands the request back unsent) is sent once more on another connection, as
//!   hyper-util's pool retries a canceled request;
//! - [`Pool::pre_open`] opens connections with no request, up to a count;
//! - [`Pool::pre_connect`] opens one bare TCP connection to a plain origin (no TLS, no
//!   byte sent), the *spare*, while the first request of an endpoint allowed plain
//!   HTTP tries `https://`. It is one of that origin's connections: it holds one of
//!   its permits (none is opened when the bound is 1, which the https attempt's
//!   connection fills), and the next connection opened to the origin takes it, permit
//!   and all, before acquiring another. Each first request owns its spare (an id),
//!   and [`Pool::settle_spare`] acts on that one only when the request ends: closed
//!   when unused, or, when https won over HTTP/1.1 on the same host and port with
//!   more connections to open, turned at once into one of them (its TLS handshake
//!   started on it). Never the origin's first TLS handshake: while it runs, the
//!   spare is the plain attempt's;
//! - each TLS connection tells its origin when the server has sent its first byte
//!   ([`Pool::tls_heard`]): a first request uses a plain answer only while the TLS
//!   port has said nothing.
//!
//! Names are resolved with the system's resolver (`getaddrinfo` through tokio) and
//! every address is checked by the egress policy before any is connected to; the
//! addresses are tried in the resolver's order. Nothing here knows the registry
//! protocol; redirects, timeouts of the whole request and their wording are
//! `transport.rs`'s.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::EgressPolicy;
use crate::EgressRefusal;
use crate::tls::{Identity, Root};
use crate::transport::{MAX_HEADER_FIELDS, MAX_HTTP2_HEADER_BYTES};

/// An idle HTTP/1.1 connection older than this is closed, not reused.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// A spare TCP connection ([`Pool::pre_connect`]) older than this is not used (it is
/// closed, and the connection that would have taken it connects anew): a server may
/// have given up on a connection that sent nothing for that long. A spare lives no
/// longer than its first request in any case ([`Pool::settle_spare`]).
pub(crate) const SPARE_TTL: Duration = Duration::from_secs(5);

/// How many times a checkout yields for a connection coming back before it opens
/// another.
const RETURN_YIELDS: usize = 8;

/// A request's body as the pool sends it: whole, in memory (token forms at most).
pub(crate) type ReqBody = Full<Bytes>;

/// Where a connection goes: scheme, host (a name or an IP literal, without brackets)
/// and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    /// `https` (TLS) or plain `http`.
    pub tls: bool,
    /// A name or an IP literal, without brackets.
    pub host: String,
    /// The port, the scheme's default when the URL has none.
    pub port: u16,
}

impl Origin {
    /// The origin of an `http` or `https` URL with a host; `None` for anything else.
    pub fn of(url: &url::Url) -> Option<Origin> {
        let tls = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_string(),
            url::Host::Ipv4(v4) => v4.to_string(),
            url::Host::Ipv6(v6) => v6.to_string(),
        };
        Some(Origin {
            tls,
            host,
            port: url.port_or_known_default()?,
        })
    }
}

/// Why the pool could not get an answer head. The transport classifies it.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// The egress policy refused an address the name resolved to.
    Refused(EgressRefusal),
    /// The name did not resolve.
    Dns(io::Error),
    /// TCP connect or TLS handshake failed (a TLS failure is an `io::Error` wrapping
    /// the `rustls::Error`, as tokio-rustls reports it).
    Connect(io::Error),
    /// The HTTP handshake or the exchange failed.
    Http(hyper::Error),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Refused(r) => write!(f, "{r}"),
            PoolError::Dns(e) => write!(f, "DNS lookup failed: {e}"),
            PoolError::Connect(e) => write!(f, "connection failed: {e}"),
            PoolError::Http(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Refused(r) => Some(r),
            PoolError::Dns(e) | PoolError::Connect(e) => Some(e),
            PoolError::Http(e) => Some(e),
        }
    }
}

/// The TLS client configuration of a pool (and of the reqwest client kept for proxied
/// requests): the platform verifier over the system's roots plus `extra_roots`, or no
/// verification at all, an optional client certificate, ALPN `h2` then `http/1.1`.
/// The same choices as reqwest 0.13.5's rustls backend (`async_impl/client.rs`,
/// `ClientBuilder::build`): aws-lc-rs unless a process default provider is installed,
/// TLS 1.2 and 1.3, `rustls_platform_verifier::Verifier::new_with_extra_roots`.
///
/// # Errors
/// The reason the verifier or the client certificate cannot be used.
pub(crate) fn tls_config(
    extra_roots: &[Root],
    identity: Option<&Identity>,
    skip_verify: bool,
) -> Result<rustls::ClientConfig, String> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerifier(Arc::clone(&provider))))
    } else {
        let verifier = if extra_roots.is_empty() {
            rustls_platform_verifier::Verifier::new(provider)
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                extra_roots.iter().cloned(),
                provider,
            )
        }
        .map_err(|e| e.to_string())?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
    };
    let mut config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.certs.clone(), id.key.clone_key())
            .map_err(|e| format!("the client certificate cannot be used ({e})"))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Accepts every certificate and handshake signature ([`crate::Endpoint::skip_verify`]),
/// as reqwest's own `NoVerifier` does; offers the provider's signature schemes.
#[derive(Debug)]
struct NoVerifier(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &rustls_pki_types::CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &rustls_pki_types::CertificateDer<'_>,
        _dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connection able to take a request.
enum Sender {
    H1(http1::SendRequest<ReqBody>),
    H2(http2::SendRequest<ReqBody>),
}

/// An idle HTTP/1.1 connection.
struct Idle {
    sender: http1::SendRequest<ReqBody>,
    since: Instant,
}

/// What is known of one origin's connections.
#[derive(Default)]
struct State {
    /// Idle HTTP/1.1 connections, the newest last.
    idle: Vec<Idle>,
    /// The shared HTTP/2 connection, when ALPN picked `h2`.
    h2: Option<http2::SendRequest<ReqBody>>,
    /// A TLS handshake is under way whose ALPN is not known yet: no other connection
    /// is opened meanwhile (it might be `h2`, which is one connection).
    probing: bool,
    /// A handshake with this origin ended in HTTP/1.1 (always so for plain HTTP):
    /// connections may be opened side by side.
    http1: bool,
    /// HTTP/1.1 connections whose answer was handed out and that are not idle yet:
    /// a checkout lets them come back before it opens another.
    returning: usize,
    /// Connections to open ahead once this origin is known to be the endpoint's
    /// ([`Pool::want`], [`Pool::open_wanted`]).
    wanted: usize,
    /// A TLS connection to this origin has received a byte from the server (the
    /// answer to its hello, or a plain server's error): its port answers.
    heard: bool,
}

/// One origin's connections.
struct HostPool {
    state: Mutex<State>,
    /// One permit per open connection (or one being opened).
    permits: Arc<Semaphore>,
    /// Told when a connection becomes idle or closes, or a handshake ends.
    changed: Notify,
}

impl HostPool {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Resets `probing` and wakes the waiters when a connection attempt ends, however it
/// ends (finished, failed, or dropped with its request's timeout).
struct Opening {
    host: Arc<HostPool>,
    probe: bool,
}

impl Drop for Opening {
    fn drop(&mut self) {
        if self.probe {
            self.host.lock().probing = false;
        }
        self.host.changed.notify_waiters();
    }
}

/// The pool of one HTTP client: its TLS configuration, the egress policy applied to
/// resolved addresses, the per-origin bound, and the connections.
pub(crate) struct Pool {
    tls: tokio_rustls::TlsConnector,
    egress: Arc<EgressPolicy>,
    max_per_host: usize,
    /// Bounds the TCP connect and TLS handshake; `None`: the request's own budget.
    connect_timeout: Option<Duration>,
    hosts: Mutex<HashMap<Origin, Arc<HostPool>>>,
    /// The spare TCP connections not taken yet, by the id of the first request that
    /// opened each ([`Pool::pre_connect`]).
    spares: Mutex<HashMap<u64, Spare>>,
    /// Numbers the spares: each first request settles its own.
    spare_ids: AtomicU64,
    /// Connections opened so far (TCP connected; a spare once taken), for tests and
    /// `Debug`.
    opened: AtomicU64,
}

/// A TCP connection opened ahead of any request ([`Pool::pre_connect`]) to a plain
/// origin: its connect, under way or done, and the origin's permit it holds.
struct Spare {
    /// The plain origin it was opened to.
    origin: Origin,
    since: Instant,
    connect: Connecting,
    permit: OwnedSemaphorePermit,
}

/// A TCP connect under way or done; dropped, it is ended (a finished one's stream is
/// dropped with the task's output).
struct Connecting(tokio::task::JoinHandle<Result<TcpStream, PoolError>>);

impl Drop for Connecting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("max_per_host", &self.max_per_host)
            .field("opened", &self.opened.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A pool with `config` for TLS, at most `max_per_host` (at least 1) connections per
    /// origin.
    pub fn new(
        config: rustls::ClientConfig,
        egress: Arc<EgressPolicy>,
        max_per_host: usize,
        connect_timeout: Option<Duration>,
    ) -> Pool {
        Pool {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            egress,
            max_per_host: max_per_host.max(1),
            connect_timeout,
            hosts: Mutex::new(HashMap::new()),
            spares: Mutex::new(HashMap::new()),
            spare_ids: AtomicU64::new(0),
            opened: AtomicU64::new(0),
        }
    }

    fn host(&self, origin: &Origin) -> Arc<HostPool> {
        let mut hosts = self
            .hosts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(hosts.entry(origin.clone()).or_insert_with(|| {
            Arc::new(HostPool {
                state: Mutex::new(State::default()),
                permits: Arc::new(Semaphore::new(self.max_per_host)),
                changed: Notify::new(),
            })
        }))
    }

    /// Sends `request` (its URI in origin form for HTTP/1.1 with a `Host` header; the
    /// pool makes it absolute for HTTP/2) to `origin` on an idle or new connection,
    /// waiting for one when `max_per_host` are busy; returns the answer head with its
    /// body still to be read. Not bounded in time: the caller bounds it.
    ///
    /// # Errors
    /// [`PoolError`]: the name, the connection or the exchange failed.
    pub async fn send(
        self: &Arc<Self>,
        origin: &Origin,
        request: http::Request<ReqBody>,
    ) -> Result<http::Response<Incoming>, PoolError> {
        let host = self.host(origin);
        let mut request = request;
        // One retry: a request an idle connection handed back unsent.
        for reused_try in [true, false] {
            let (sender, reused) = self.checkout(origin, &host).await?;
            match sender {
                Sender::H2(mut h2) => {
                    let request = absolute(request, origin);
                    return h2.send_request(request).await.map_err(PoolError::Http);
                }
                Sender::H1(mut h1) => match h1.try_send_request(request).await {
                    Ok(response) => {
                        self.check_in_when_ready(&host, h1);
                        return Ok(response);
                    }
                    Err(mut e) => match e.take_message() {
                        Some(unsent) if reused && reused_try => {
                            tracing::debug!(host = %origin.host, "an idle connection had closed; sending again");
                            request = unsent;
                        }
                        _ => return Err(PoolError::Http(e.into_error())),
                    },
                },
            }
        }
        unreachable!("the second try returns")
    }

    /// Opens connections to `origin`, with no request, until it has `wanted` (at most
    /// `max_per_host`) or one is HTTP/2; each goes to the idle list. Returns at once;
    /// the connections open in the background and failures are only logged (the
    /// requests that follow meet them again).
    pub fn pre_open(self: &Arc<Self>, origin: &Origin, wanted: usize) {
        let host = self.host(origin);
        let open = self.max_per_host - host.permits.available_permits();
        let more = wanted.min(self.max_per_host).saturating_sub(open);
        if more == 0 {
            return;
        }
        tracing::debug!(host = %origin.host, port = origin.port, more, "opening connections ahead");
        for _ in 0..more {
            let pool = Arc::clone(self);
            let origin = origin.clone();
            let host = Arc::clone(&host);
            tokio::spawn(async move {
                let opened = pool.open_idle(&origin, &host);
                let limited = match pool.connect_timeout {
                    Some(t) => tokio::time::timeout(t, opened).await.ok(),
                    None => Some(opened.await),
                };
                if let Some(Err(e)) = limited {
                    tracing::debug!(host = %origin.host, error = %e, "opening ahead failed");
                }
            });
        }
    }

    /// Opens one TCP connection to the plain `origin` and keeps it, sending nothing on
    /// it, for the next connection opened to that origin (see the module's notes);
    /// returns at once, with the spare's id for [`Pool::settle_spare`]. The spare
    /// holds one of the origin's permits: `None` (no spare) when none is free, when
    /// the bound is 1 (the first request's https connection is the one connection
    /// then), or when an idle connection to the origin is there to be used (or is
    /// coming back).
    pub fn pre_connect(self: &Arc<Self>, origin: &Origin) -> Option<u64> {
        if self.max_per_host < 2 || origin.tls {
            return None;
        }
        let host = self.host(origin);
        // An idle connection to the origin (or one coming back) does better than a
        // spare.
        {
            let state = host.lock();
            if state.returning > 0 || state.idle.iter().any(|i| !i.sender.is_closed()) {
                return None;
            }
        }
        let permit = Arc::clone(&host.permits).try_acquire_owned().ok()?;
        let id = self.spare_ids.fetch_add(1, Ordering::Relaxed);
        let pool = Arc::clone(self);
        let target = origin.clone();
        let connect = tokio::spawn(async move {
            let tcp = pool.tcp(&target);
            match pool.connect_timeout {
                Some(t) => tokio::time::timeout(t, tcp).await.unwrap_or_else(|_| {
                    Err(PoolError::Connect(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connecting timed out",
                    )))
                }),
                None => tcp.await,
            }
        });
        tracing::debug!(host = %origin.host, port = origin.port, "a spare TCP connection ahead of the first request");
        self.spares().insert(
            id,
            Spare {
                origin: origin.clone(),
                since: Instant::now(),
                connect: Connecting(connect),
                permit,
            },
        );
        Some(id)
    }

    /// The first request that opened spare `id` is over: when no connection took it,
    /// it is closed, unless `https` is on the same host and port, spoke HTTP/1.1, and
    /// has at least one more connection to open ([`Pool::want`]): then it becomes one
    /// of them at once (its TLS handshake starts on it, under a permit of `https`; the
    /// plain origin's is freed), and [`Pool::open_wanted`] counts it. An HTTP/2
    /// registry keeps its one connection; a port 443 cannot use a connection to
    /// port 80. Other first requests' spares are left alone.
    pub fn settle_spare(self: &Arc<Self>, id: u64, https: &Origin) {
        let Some(spare) = self.spares().remove(&id) else {
            return;
        };
        let same = https.host == spare.origin.host && https.port == spare.origin.port;
        let host = self.host(https);
        let keep = same && https.tls && {
            let state = host.lock();
            state.http1 && state.h2.is_none() && state.wanted >= 2
        };
        let permit = keep
            .then(|| Arc::clone(&host.permits).try_acquire_owned().ok())
            .flatten();
        let Some(permit) = permit else {
            tracing::debug!(host = %spare.origin.host, port = spare.origin.port, "the spare TCP connection is not needed; closed");
            return;
        };
        tracing::debug!(host = %https.host, port = https.port, "the spare TCP connection becomes an HTTP/1.1 TLS connection");
        let Spare { since, connect, .. } = spare;
        let pool = Arc::clone(self);
        let https = https.clone();
        tokio::spawn(async move {
            let opened = pool.connect(&https, &host, permit, false, Some((since, connect)));
            let limited = match pool.connect_timeout {
                Some(t) => tokio::time::timeout(t, opened).await.ok(),
                None => Some(opened.await),
            };
            match limited {
                Some(Ok(Sender::H1(h1))) => {
                    host.lock().idle.push(Idle {
                        sender: h1,
                        since: Instant::now(),
                    });
                    host.changed.notify_waiters();
                }
                Some(Ok(Sender::H2(_))) | None => {}
                Some(Err(e)) => {
                    tracing::debug!(host = %https.host, error = %e, "the spare's TLS handshake failed");
                }
            }
        });
    }

    fn spares(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Spare>> {
        self.spares
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A spare of the plain `origin` not taken yet, taken (the oldest first).
    fn spare_for(&self, origin: &Origin) -> Option<Spare> {
        if origin.tls {
            return None;
        }
        let mut spares = self.spares();
        let id = spares
            .iter()
            .filter(|(_, s)| s.origin == *origin)
            .min_by_key(|(_, s)| s.since)
            .map(|(id, _)| *id)?;
        spares.remove(&id)
    }

    /// Whether a TLS connection to `origin` has heard from the server (a byte of any
    /// kind, or a finished handshake): its port answers.
    pub fn tls_heard(&self, origin: &Origin) -> bool {
        let host = self.host(origin);
        let state = host.lock();
        state.heard || state.http1 || state.h2.is_some()
    }

    /// The TCP stream of a spare opened at `since`, when it connected, is not too old,
    /// and the peer has neither closed it nor sent anything; `None` otherwise.
    async fn spare_stream(
        origin: &Origin,
        since: Instant,
        mut connect: Connecting,
    ) -> Option<TcpStream> {
        if since.elapsed() >= SPARE_TTL {
            return None;
        }
        let tcp = match (&mut connect.0).await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => {
                tracing::debug!(host = %origin.host, error = %e, "the spare TCP connection failed");
                return None;
            }
            Err(_) => return None,
        };
        let mut byte = [0u8; 1];
        match tcp.try_read(&mut byte) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                tracing::debug!(host = %origin.host, port = origin.port, tls = origin.tls, "using the spare TCP connection");
                Some(tcp)
            }
            _ => None,
        }
    }

    /// Keeps `wanted` connections to open to `origin` when [`Pool::open_wanted`] says
    /// it is the one (an endpoint whose scheme is not known yet).
    pub fn want(&self, origin: &Origin, wanted: usize) {
        self.host(origin).lock().wanted = wanted;
    }

    /// Opens what [`Pool::want`] kept for `origin` ([`Pool::pre_open`]), less `coming`
    /// (requests about to open their own), and forgets it; `forget` loses what it kept
    /// for another origin.
    pub fn open_wanted(self: &Arc<Self>, origin: &Origin, forget: &Origin, coming: usize) {
        let wanted = std::mem::take(&mut self.host(origin).lock().wanted);
        self.host(forget).lock().wanted = 0;
        if wanted > coming {
            self.pre_open(origin, wanted - coming);
        }
    }

    /// One connection opened ahead, left idle; nothing when one is HTTP/2 or the
    /// origin has all its connections.
    async fn open_idle(&self, origin: &Origin, host: &Arc<HostPool>) -> Result<(), PoolError> {
        loop {
            let changed = host.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let step = {
                let mut state = host.lock();
                if state.h2.as_ref().is_some_and(|h2| !h2.is_closed()) {
                    return Ok(());
                }
                match self.may_open(origin, &mut state, host) {
                    Open::Yes(permit, probe, spare) => Some((permit, probe, spare)),
                    Open::Full => return Ok(()),
                    Open::Wait => None,
                }
            };
            if let Some((permit, probe, spare)) = step {
                let sender = self.connect(origin, host, permit, probe, spare).await?;
                if let Sender::H1(h1) = sender {
                    host.lock().idle.push(Idle {
                        sender: h1,
                        since: Instant::now(),
                    });
                    host.changed.notify_waiters();
                }
                return Ok(());
            }
            changed.await;
        }
    }

    /// A connection for one request: the HTTP/2 one, an idle HTTP/1.1 one (`true`:
    /// reused), or a new one when a permit is free; otherwise waits for one of them.
    async fn checkout(
        &self,
        origin: &Origin,
        host: &Arc<HostPool>,
    ) -> Result<(Sender, bool), PoolError> {
        // A connection whose answer was just read comes back within a few polls of its
        // task: yield that long before opening another (a caller checking one image
        // after the other keeps one connection).
        let mut yields = 0;
        loop {
            let changed = host.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let step = {
                let mut state = host.lock();
                if let Some(h2) = &state.h2 {
                    if !h2.is_closed() {
                        return Ok((Sender::H2(h2.clone()), true));
                    }
                    state.h2 = None;
                }
                while let Some(idle) = state.idle.pop() {
                    if !idle.sender.is_closed() && idle.since.elapsed() < IDLE_TIMEOUT {
                        return Ok((Sender::H1(idle.sender), true));
                    }
                }
                if state.returning > 0 && yields < RETURN_YIELDS {
                    None
                } else {
                    match self.may_open(origin, &mut state, host) {
                        Open::Yes(permit, probe, spare) => Some((permit, probe, spare)),
                        Open::Full | Open::Wait => None,
                    }
                }
            };
            if step.is_none() && yields < RETURN_YIELDS && host.lock().returning > 0 {
                yields += 1;
                tokio::task::yield_now().await;
                continue;
            }
            if let Some((permit, probe, spare)) = step {
                let opened = self.connect(origin, host, permit, probe, spare);
                let opened = match self.connect_timeout {
                    Some(t) => tokio::time::timeout(t, opened).await.unwrap_or_else(|_| {
                        Err(PoolError::Connect(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "connecting timed out",
                        )))
                    }),
                    None => opened.await,
                };
                return opened.map(|s| (s, false));
            }
            changed.await;
        }
    }

    /// Resolves, connects (or uses `spare`, a spare's opening instant and connect,
    /// when it is still good), shakes hands (TLS, then HTTP/1.1 or HTTP/2 as ALPN
    /// says) and starts the connection's task, which holds `permit` until the
    /// connection ends.
    async fn connect(
        &self,
        origin: &Origin,
        host: &Arc<HostPool>,
        permit: OwnedSemaphorePermit,
        probe: bool,
        spare: Option<(Instant, Connecting)>,
    ) -> Result<Sender, PoolError> {
        let _opening = Opening {
            host: Arc::clone(host),
            probe,
        };
        let spare = match spare {
            Some((since, connect)) => Pool::spare_stream(origin, since, connect).await,
            None => None,
        };
        let tcp = match spare {
            Some(tcp) => tcp,
            None => self.tcp(origin).await?,
        };
        self.opened.fetch_add(1, Ordering::Relaxed);
        if !origin.tls {
            let sender = self.http1(TokioIo::new(tcp), host, permit).await?;
            host.lock().http1 = true;
            return Ok(sender);
        }
        let tcp = Heard {
            inner: tcp,
            host: Some(Arc::clone(host)),
        };
        let name = match origin.host.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(origin.host.clone())
                .map_err(|e| PoolError::Connect(io::Error::new(io::ErrorKind::InvalidInput, e)))?,
        };
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(PoolError::Connect)?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        let io = TokioIo::new(tls);
        if h2 {
            let (sender, conn) = http2::Builder::new(TokioExecutor::new())
                .max_header_list_size(MAX_HTTP2_HEADER_BYTES)
                .handshake(io)
                .await
                .map_err(PoolError::Http)?;
            let watched = Arc::clone(host);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "HTTP/2 connection ended");
                }
                drop(permit);
                watched.lock().h2 = None;
                watched.changed.notify_waiters();
            });
            host.lock().h2 = Some(sender.clone());
            Ok(Sender::H2(sender))
        } else {
            let sender = self.http1(io, host, permit).await?;
            host.lock().http1 = true;
            Ok(sender)
        }
    }

    /// The HTTP/1.1 handshake over `io`, and the connection's task.
    async fn http1<T>(
        &self,
        io: TokioIo<T>,
        host: &Arc<HostPool>,
        permit: OwnedSemaphorePermit,
    ) -> Result<Sender, PoolError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let (sender, conn) = http1::Builder::new()
            .max_headers(MAX_HEADER_FIELDS)
            .handshake(io)
            .await
            .map_err(PoolError::Http)?;
        let watched = Arc::clone(host);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "HTTP/1.1 connection ended");
            }
            drop(permit);
            watched.changed.notify_waiters();
        });
        Ok(Sender::H1(sender))
    }

    /// Puts an HTTP/1.1 connection back in the idle list once its answer is read to the
    /// end; drops it when it closes instead.
    fn check_in_when_ready(&self, host: &Arc<HostPool>, mut sender: http1::SendRequest<ReqBody>) {
        let host = Arc::clone(host);
        host.lock().returning += 1;
        tokio::spawn(async move {
            let ready = sender.ready().await.is_ok();
            {
                let mut state = host.lock();
                state.returning -= 1;
                if ready {
                    state.idle.push(Idle {
                        sender,
                        since: Instant::now(),
                    });
                }
            }
            host.changed.notify_waiters();
        });
    }

    /// A TCP connection to `origin`: its address, or its name's addresses once the
    /// egress policy allowed every one, tried in order.
    async fn tcp(&self, origin: &Origin) -> Result<TcpStream, PoolError> {
        let addresses: Vec<SocketAddr> = match origin.host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, origin.port)],
            Err(_) => {
                let found: Vec<SocketAddr> =
                    tokio::net::lookup_host((origin.host.as_str(), origin.port))
                        .await
                        .map_err(PoolError::Dns)?
                        .collect();
                let ips: Vec<IpAddr> = found.iter().map(SocketAddr::ip).collect();
                self.egress
                    .check_resolved(&origin.host, &ips)
                    .map_err(|refusal| {
                        tracing::debug!(host = %origin.host, %refusal, "refused after resolving");
                        PoolError::Refused(refusal)
                    })?;
                found
            }
        };
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
        for address in addresses {
            match TcpStream::connect(address).await {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    return Ok(tcp);
                }
                Err(e) => last = e,
            }
        }
        Err(PoolError::Connect(last))
    }
}

/// Whether a connection may be opened to an origin now.
enum Open {
    /// Yes, with its permit; `true`: its handshake decides ALPN for the origin; and a
    /// spare's opening instant and connect to use (whose permit it is).
    Yes(OwnedSemaphorePermit, bool, Option<(Instant, Connecting)>),
    /// No: every permit is taken.
    Full,
    /// Not yet: the first TLS handshake has not said whether it is HTTP/2.
    Wait,
}

impl Pool {
    /// [`Open`] for `origin` in `state`, marking the probe when it is one: a plain
    /// origin's spare first (it holds a permit of the origin's), then a free permit.
    fn may_open(&self, origin: &Origin, state: &mut State, host: &HostPool) -> Open {
        if let Some(spare) = self.spare_for(origin) {
            return Open::Yes(spare.permit, false, Some((spare.since, spare.connect)));
        }
        if origin.tls && !state.http1 && state.probing {
            return Open::Wait;
        }
        match Arc::clone(&host.permits).try_acquire_owned() {
            Ok(permit) => {
                let probe = origin.tls && !state.http1;
                state.probing |= probe;
                Open::Yes(permit, probe, None)
            }
            Err(_) => Open::Full,
        }
    }
}

/// A TLS connection's TCP stream, which marks its origin [`State::heard`] when the
/// server's first byte arrives.
struct Heard {
    inner: TcpStream,
    /// The origin to mark; `None` once marked.
    host: Option<Arc<HostPool>>,
}

impl tokio::io::AsyncRead for Heard {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(())))
            && buf.filled().len() > before
            && let Some(host) = self.host.take()
        {
            host.lock().heard = true;
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Heard {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The request with an absolute URI (`scheme://authority/path?query`), as HTTP/2's
/// pseudo-headers need; its `Host` header dropped (HTTP/2 has `:authority`).
fn absolute(request: http::Request<ReqBody>, origin: &Origin) -> http::Request<ReqBody> {
    let (mut parts, body) = request.into_parts();
    let authority = parts
        .headers
        .remove(http::header::HOST)
        .and_then(|h| h.to_str().ok().map(str::to_string))
        .unwrap_or_else(|| origin.host.clone());
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str)
        .to_string();
    if let Ok(uri) = http::Uri::builder()
        .scheme(if origin.tls { "https" } else { "http" })
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
    {
        parts.uri = uri;
    }
    http::Request::from_parts(parts, body)
}
