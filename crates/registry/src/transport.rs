//! The HTTP side: building clients (timeouts, redirects, TLS roots and client
//! certificates), sending one request with its trace event and its share of the
//! deadline, reading bounded bodies, and turning a transport failure into a precise,
//! secret-free reason and a retry verdict.
//!
//! Requests are built with `reqwest`'s builder and, unless an HTTP proxy is configured
//! in the environment, sent through our own connection pool ([`crate::pool`]), which
//! bounds the connections per host and opens them ahead of the requests; this module
//! follows the redirects and bounds the time of what goes through it. With a proxy
//! (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, either case, non-empty) every request
//! goes through `reqwest`, which speaks to the proxy, as before the pool.
//!
//! Invariant: nothing here knows the registry protocol; every byte that leaves or enters
//! the process through this crate goes through [`Http::send`], which sends nothing to a
//! host the egress policy ([`crate::egress`]) refuses: it checks the URL's host first,
//! the redirect policy checks each redirect's, and the client's resolver checks the
//! addresses a name resolves to and hands the connector exactly those (so a name cannot
//! resolve to one address when checked and another when connected).
//!
//! Limits: each request has a total timeout (and optional connect and read timeouts),
//! shortened to what is left before the deadline; at most `max_redirects` redirects,
//! never from `https` to `http`; an answer head of at most 100 header fields and, over
//! HTTP/1, at most hyper's read buffer (about 400 KiB), over HTTP/2 at most 64 KiB of
//! headers; bodies at most the `*_BODY_LIMIT` below.

use std::error::Error as _;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, RequestBuilder, Response};
use url::Url;

use crate::observe::{self, Observer, RequestEvent, RequestKind};
use crate::pool::{Origin, Pool};
use crate::{CertificateProblem, ClientOptions, EgressPolicy, EgressRefusal, Reason};

/// At most this much of an error body is read.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// At most this much of a token reply is read (JWTs of several KiB are common).
pub(crate) const TOKEN_BODY_LIMIT: usize = 1024 * 1024;
/// At most this much of a tag list is read (1000 tags fit many times over).
pub(crate) const TAGS_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// At most this much of a manifest (an index, for the platform check) is read: the
/// size the OCI distribution spec asks registries to accept.
pub(crate) const MANIFEST_BODY_LIMIT: usize = 4 * 1024 * 1024;
/// At most this many header fields in an answer (HTTP/1).
pub(crate) const MAX_HEADER_FIELDS: usize = 100;
/// At most this many bytes of headers in an answer (HTTP/2).
pub(crate) const MAX_HTTP2_HEADER_BYTES: u32 = 64 * 1024;

/// Request counters shared by a [`crate::Client`] and its sessions.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub token_requests: AtomicU64,
}

/// The time limits of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    pub total: Duration,
    pub connect: Option<Duration>,
    pub read: Option<Duration>,
}

impl Limits {
    pub fn from_options(options: &ClientOptions) -> Limits {
        Limits {
            total: options.request_timeout,
            connect: options.connect_timeout,
            read: options.read_timeout,
        }
    }
}

/// One `reqwest` client (the request builder, and the sender when a proxy is
/// configured) and our pool, with the settings a request needs to be described, and
/// who is told of each request.
#[derive(Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
    /// Sends every request when set: `None` when the environment names a proxy.
    pub pool: Option<Arc<Pool>>,
    /// [`crate::ClientOptions::user_agent`], for the requests the pool sends.
    pub user_agent: HeaderValue,
    /// [`crate::ClientOptions::max_redirects`], for the requests the pool sends.
    pub max_redirects: usize,
    pub limits: Limits,
    pub counters: Arc<Counters>,
    /// [`crate::ClientOptions::observer`].
    pub observer: Option<Arc<dyn Observer>>,
    /// [`crate::ClientOptions::egress`], checked before each request is sent.
    pub egress: Arc<EgressPolicy>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("limits", &self.limits)
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

/// The TLS settings of one client.
#[derive(Default)]
pub(crate) struct TlsSetup {
    /// Roots trusted in addition to the system's.
    pub extra_roots: Vec<crate::tls::Root>,
    /// A client certificate for mutual TLS.
    pub identity: Option<crate::tls::Identity>,
    /// Certificates are not verified at all.
    pub skip_verify: bool,
}

/// Whether the environment names an HTTP proxy that reqwest would use
/// (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, in either case, not empty): then every
/// request goes through reqwest, not the pool.
pub(crate) fn proxy_configured() -> bool {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Builds a client: `tls` (rustls with the platform verifier, [`crate::pool::tls_config`]),
/// HTTP/2 when ALPN offers it, keep-alive pooling, the timeouts of `limits`, the
/// redirect policy described in the module docs, and a resolver that applies `egress`
/// to the addresses of every name.
pub(crate) fn build_client(
    user_agent: &str,
    limits: Limits,
    max_redirects: usize,
    egress: &Arc<EgressPolicy>,
    tls: rustls::ClientConfig,
) -> reqwest::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .user_agent(user_agent)
        .timeout(limits.total)
        .connect_timeout(limits.connect.unwrap_or(limits.total).min(limits.total))
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .http1_max_headers(MAX_HEADER_FIELDS)
        .http2_max_header_list_size(MAX_HTTP2_HEADER_BYTES)
        .redirect(redirect_policy(max_redirects, Arc::clone(egress)))
        .dns_resolver(PolicyResolver {
            egress: Arc::clone(egress),
        })
        .tls_backend_preconfigured(tls);
    if let Some(read) = limits.read {
        builder = builder.read_timeout(read);
    }
    builder.build()
}

/// At most `max` redirects; none from `https` to `http`; none to a host `egress`
/// refuses (the error is the [`EgressRefusal`], found again by [`refusal_of`]). reqwest
/// itself drops `Authorization` (and cookies) when a redirect changes host, port or
/// scheme.
fn redirect_policy(max: usize, egress: Arc<EgressPolicy>) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if let Err(refusal) = check_url(&egress, attempt.url()) {
            return attempt.error(refusal);
        }
        // `previous` holds the first URL and every URL redirected from so far.
        if attempt.previous().len() > max {
            let message = format!("too many redirects (more than {max})");
            return attempt.error(message);
        }
        let downgrade = attempt
            .previous()
            .last()
            .is_some_and(|p| p.scheme() == "https")
            && attempt.url().scheme() == "http";
        if downgrade {
            let message = format!(
                "a redirect from https to plain http ({}) was refused",
                attempt.url().host_str().unwrap_or("?")
            );
            return attempt.error(message);
        }
        attempt.follow()
    })
}

/// Applies `egress` to a URL's host and port (its scheme's default when it has none).
/// A URL without a host is left to reqwest, which refuses it.
pub(crate) fn check_url(egress: &EgressPolicy, url: &Url) -> Result<(), EgressRefusal> {
    let port = url.port_or_known_default().unwrap_or(0);
    match url.host() {
        Some(url::Host::Domain(name)) => egress.check_host(name, port),
        Some(url::Host::Ipv4(v4)) => egress.check_host(&v4.to_string(), port),
        Some(url::Host::Ipv6(v6)) => egress.check_host(&v6.to_string(), port),
        None => Ok(()),
    }
}

/// The resolver of every client: the system's (`getaddrinfo`, through tokio), then the
/// egress policy over every address; a name with a refused address fails with the
/// [`EgressRefusal`], and otherwise the connector gets exactly the addresses checked.
/// reqwest does not call it for IP literal hosts (checked by [`check_url`]).
struct PolicyResolver {
    egress: Arc<EgressPolicy>,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let egress = Arc::clone(&self.egress);
        let name = name.as_str().to_string();
        Box::pin(async move {
            // Port 0: the connector puts the URL's port in.
            let found: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let addresses: Vec<std::net::IpAddr> = found.iter().map(|a| a.ip()).collect();
            egress
                .check_resolved(&name, &addresses)
                .map_err(|refusal| {
                    tracing::debug!(host = %name, %refusal, "refused after resolving");
                    Box::new(refusal) as Box<dyn std::error::Error + Send + Sync>
                })?;
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// The [`EgressRefusal`] under a failure: a redirect or a resolved address the
/// policy refused.
fn refusal_of(err: &Failure<'_>) -> Option<EgressRefusal> {
    err.causes
        .iter()
        .find_map(|e| e.downcast_ref::<EgressRefusal>())
        .cloned()
}

/// When a request was sent and the time it had, kept in its response's extensions for
/// the wording of a timeout while its body is read.
#[derive(Debug, Clone, Copy)]
struct Sent {
    started: Instant,
    budget: Duration,
    /// Through the pool: [`read_limited`] bounds the body's reads itself (reqwest does
    /// for its own responses).
    pooled: bool,
}

/// A request that failed, through reqwest or through the pool.
#[derive(Debug)]
enum Failed {
    Reqwest(reqwest::Error),
    Pool(crate::pool::PoolError),
    /// The request's time (or its read timeout) ran out.
    Timeout,
    /// A redirect not followed; the message says why.
    Redirect(Message),
}

/// An error that is only its message (a refused redirect).
#[derive(Debug)]
struct Message(String);

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Message {}

/// What is known of a failure, whichever sent the request: the same questions reqwest's
/// error answers, and the errors under it.
struct Failure<'a> {
    timeout: bool,
    connect: bool,
    redirect: bool,
    dns: bool,
    body: bool,
    /// Every error under it ([`causes`]).
    causes: Vec<&'a (dyn std::error::Error + 'static)>,
    /// The innermost error of the `source` chain, worded.
    innermost: Option<String>,
}

impl<'a> Failure<'a> {
    fn of_reqwest(err: &'a reqwest::Error) -> Failure<'a> {
        Failure {
            timeout: err.is_timeout(),
            connect: err.is_connect(),
            redirect: err.is_redirect(),
            dns: err.is_dns(),
            body: err.is_body() || err.is_decode(),
            causes: causes(err.source()),
            innermost: innermost(err.source()),
        }
    }

    fn of(failed: &'a Failed) -> Failure<'a> {
        use crate::pool::PoolError as P;
        let top: &'a (dyn std::error::Error + 'static) = match failed {
            Failed::Reqwest(e) => return Failure::of_reqwest(e),
            Failed::Pool(P::Refused(r)) => r,
            Failed::Pool(P::Dns(e) | P::Connect(e)) => e,
            Failed::Pool(P::Http(e)) => e,
            Failed::Timeout => {
                return Failure {
                    timeout: true,
                    connect: false,
                    redirect: false,
                    dns: false,
                    body: false,
                    causes: Vec::new(),
                    innermost: None,
                };
            }
            Failed::Redirect(m) => m,
        };
        let causes = causes(Some(top));
        let timeout = match failed {
            Failed::Pool(P::Http(h)) => h.is_timeout(),
            Failed::Pool(P::Connect(e)) => e.kind() == io::ErrorKind::TimedOut,
            _ => false,
        };
        Failure {
            timeout,
            connect: matches!(failed, Failed::Pool(P::Dns(_) | P::Connect(_))),
            redirect: matches!(failed, Failed::Redirect(_)),
            dns: matches!(failed, Failed::Pool(P::Dns(_))),
            body: false,
            causes,
            innermost: innermost(Some(top)),
        }
    }
}

/// A request that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SendError {
    /// The precise reason, without URL or secrets; after a redirect to another host
    /// that failed, followed by that host: `connection refused (redirected to
    /// storage.example:9000)`, so every report of it (the ping's, the retries', the
    /// platform check's) names where it failed.
    pub reason: String,
    /// The same as data: [`Reason::Timeout`], [`Reason::TlsUntrusted`], …
    pub kind: Reason,
    /// Worth another attempt: the connection was refused, reset or closed early.
    pub retryable: bool,
    /// Failed before any HTTP answer (DNS, TCP, TLS, connect timeout), which allows the
    /// plain-HTTP fallback of the ping.
    pub connection_level: bool,
    /// The egress policy refused the host (of the URL, a redirect, or the addresses its
    /// name resolved to); nothing was sent to it.
    pub refusal: Option<EgressRefusal>,
    /// For [`Reason::TlsUntrusted`]: what is wrong with the certificate.
    pub certificate: Option<CertificateProblem>,
    /// When redirects took the request to another host or port than its URL's (a
    /// registry's redirect of a manifest or blob to its storage) and it failed there:
    /// the redirect target refused the connection, timed out, or was refused by the
    /// egress policy. Through the connection pool only: with an HTTP proxy, reqwest
    /// (0.13) reports such a failure under the first URL, and this is `None`.
    pub redirected_to: Option<Redirected>,
}

/// A request that failed at a redirect target ([`SendError::redirected_to`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirected {
    /// The target's `host[:port]`.
    pub to: String,
    /// The reason alone, without the target ([`SendError::reason`] names it).
    pub why: String,
}

impl SendError {
    /// A failure that is neither retryable, nor at the connection level, nor a refusal.
    fn final_failure(reason: String, kind: Reason) -> SendError {
        SendError {
            reason,
            kind,
            retryable: false,
            connection_level: false,
            refusal: None,
            certificate: None,
            redirected_to: None,
        }
    }
}

/// `host[:port]` of `url`, as an endpoint's host is written (the port only when the
/// URL has one; an IPv6 address in brackets).
fn host_port(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// The time a request may take: the total timeout, or less when the deadline is nearer.
/// `None` when the deadline has passed.
pub(crate) fn budget(limits: &Limits, deadline: Option<Instant>, now: Instant) -> Option<Duration> {
    match deadline {
        None => Some(limits.total),
        Some(d) => {
            let left = d.saturating_duration_since(now);
            (!left.is_zero()).then(|| left.min(limits.total))
        }
    }
}

impl Http {
    /// Sends `request` (built from `self.client`) within its time budget, counting it,
    /// emitting a debug event with the method, the URL without its query, the status
    /// and the time taken, and telling the observer (as `host`, the endpoint's host or
    /// the token realm's).
    pub async fn send(
        &self,
        request: RequestBuilder,
        method: &Method,
        url: &Url,
        target: (RequestKind, &str),
        deadline: Option<Instant>,
    ) -> Result<Response, SendError> {
        self.send_or_fall_back(request, method, url, target, deadline, false)
            .await
    }

    /// [`Http::send`]; with `may_fall_back` (the `https://` ping of an endpoint allowed
    /// plain HTTP) a failure before any HTTP answer is told to the observer as
    /// [`RequestEvent::falls_back_to_http`].
    pub async fn send_or_fall_back(
        &self,
        request: RequestBuilder,
        method: &Method,
        url: &Url,
        (purpose, host): (RequestKind, &str),
        deadline: Option<Instant>,
        may_fall_back: bool,
    ) -> Result<Response, SendError> {
        let started = Instant::now();
        if let Err(refusal) = check_url(&self.egress, url) {
            tracing::debug!(url = %loggable_url(url), %refusal, ?purpose, "not sent");
            return Err(SendError {
                reason: refusal.to_string(),
                kind: Reason::EgressDenied,
                retryable: false,
                connection_level: false,
                refusal: Some(refusal),
                certificate: None,
                redirected_to: None,
            });
        }
        let Some(budget) = budget(&self.limits, deadline, started) else {
            return Err(SendError::final_failure(
                "the deadline passed before the request could be sent".to_string(),
                Reason::DeadlineExceeded,
            ));
        };
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        if purpose == RequestKind::Token {
            self.counters.token_requests.fetch_add(1, Ordering::Relaxed);
        }
        let shown = loggable_url(url);
        let pooled = self.pool.is_some();
        // The URL last asked: the redirect target when the pool followed a redirect.
        let mut reached = url.clone();
        let result = match (request.timeout(budget).build(), &self.pool) {
            (Err(e), _) => Err(Failed::Reqwest(e)),
            (Ok(request), None) => self.client.execute(request).await.map_err(Failed::Reqwest),
            (Ok(request), Some(pool)) => {
                // Boxed: the pool's future is large, and tests poll on small stacks.
                let head = Box::pin(self.through_pool(pool, request, &mut reached));
                let head = async {
                    match self.limits.read {
                        Some(read) => tokio::time::timeout(read, head)
                            .await
                            .unwrap_or(Err(Failed::Timeout)),
                        None => head.await,
                    }
                };
                tokio::time::timeout(budget, head)
                    .await
                    .unwrap_or(Err(Failed::Timeout))
            }
        };
        let elapsed = started.elapsed();
        let elapsed_ms = elapsed.as_millis() as u64;
        if let Some(observer) = &self.observer {
            let answered = result.as_ref().ok();
            observer.request(&RequestEvent {
                host,
                kind: purpose,
                code: answered.map(|r| r.status().as_u16()),
                duration: elapsed,
                ratelimit_remaining: answered
                    .and_then(|r| observe::ratelimit_remaining(r.headers())),
                falls_back_to_http: may_fall_back
                    && result
                        .as_ref()
                        .err()
                        .is_some_and(|e| is_connection_level(&Failure::of(e))),
            });
        }
        match result {
            Ok(mut response) => {
                response.extensions_mut().insert(Sent {
                    started,
                    budget,
                    pooled,
                });
                tracing::debug!(
                    method = %method,
                    url = %shown,
                    status = response.status().as_u16(),
                    version = ?response.version(),
                    elapsed_ms,
                    ?purpose,
                    "registry request"
                );
                // The headers that decide the answer, none of them a secret; of a
                // challenge only its scheme (its parameters are in the debug events of
                // the token request, without the query).
                let headers = response.headers();
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-")
                        .to_string()
                };
                tracing::trace!(
                    url = %shown,
                    content_type = %header("content-type"),
                    digest = %header("docker-content-digest"),
                    challenge = %header("www-authenticate")
                        .split_whitespace()
                        .next()
                        .unwrap_or("-"),
                    retry_after = %header("retry-after"),
                    "registry response headers"
                );
                Ok(response)
            }
            Err(e) => {
                let redirected_to = Some(host_port(&reached)).filter(|at| *at != host_port(url));
                let e = Failure::of(&e);
                let refusal = refusal_of(&e);
                let why = match &refusal {
                    Some(r) => r.to_string(),
                    None => describe(&e, &self.limits, budget, elapsed),
                };
                let failure = SendError {
                    reason: match &redirected_to {
                        Some(to) => format!("{why} (redirected to {to})"),
                        None => why.clone(),
                    },
                    // A timeout cut short by the deadline is the deadline's.
                    kind: match (&refusal, kind_of(&e)) {
                        (Some(_), _) => Reason::EgressDenied,
                        (None, Reason::Timeout) if budget < self.limits.total => {
                            Reason::DeadlineExceeded
                        }
                        (None, kind) => kind,
                    },
                    retryable: refusal.is_none() && is_retryable(&e),
                    connection_level: refusal.is_none() && is_connection_level(&e),
                    certificate: refusal.is_none().then(|| certificate_of(&e)).flatten(),
                    refusal,
                    redirected_to: redirected_to.map(|to| Redirected { to, why }),
                };
                tracing::debug!(
                    method = %method,
                    url = %shown,
                    error = %failure.reason,
                    elapsed_ms,
                    ?purpose,
                    "registry request failed"
                );
                Err(failure)
            }
        }
    }

    /// Reads at most `limit` bytes of the body of a response from [`Http::send`].
    pub async fn read_limited(&self, response: Response, limit: usize) -> Body {
        read_limited(response, limit, &self.limits).await
    }

    /// Opens up to `wanted` connections to `base`'s origin ahead of the requests
    /// ([`Pool::pre_open`]); nothing without the pool (a proxy is configured) or for a
    /// URL the egress policy refuses.
    pub fn pre_open(&self, base: &Url, wanted: usize) {
        if let (Some(pool), Some(origin)) = (&self.pool, Origin::of(base))
            && check_url(&self.egress, base).is_ok()
        {
            pool.pre_open(&origin, wanted);
        }
    }

    /// Opens a bare TCP connection to `plain`'s host and port, ahead of the first
    /// request of an endpoint allowed plain HTTP ([`Pool::pre_connect`]), and returns
    /// its id for [`Http::settle_spare`]; `None` without the pool, for a URL the
    /// egress policy refuses, or when the origin's connection bound leaves no room.
    pub fn pre_connect(&self, plain: &Url) -> Option<u64> {
        match (&self.pool, Origin::of(plain)) {
            (Some(pool), Some(origin)) if check_url(&self.egress, plain).is_ok() => {
                pool.pre_connect(&origin)
            }
            _ => None,
        }
    }

    /// The first request that opened spare `id` over `https` (or its plain fallback)
    /// is over: that spare, when no connection took it, becomes an HTTP/1.1 TLS
    /// connection on the same address, or is closed ([`Pool::settle_spare`]).
    pub fn settle_spare(&self, id: u64, https: &Url) {
        if let (Some(pool), Some(https)) = (&self.pool, Origin::of(https)) {
            pool.settle_spare(id, &https);
        }
    }

    /// Whether `https`'s TLS port has answered a connection of this client with any
    /// byte ([`Pool::tls_heard`]); `true` without the pool (not known: taken as
    /// answering).
    pub fn tls_heard(&self, https: &Url) -> bool {
        match (&self.pool, Origin::of(https)) {
            (Some(pool), Some(origin)) => pool.tls_heard(&origin),
            _ => true,
        }
    }

    /// Keeps `wanted` connections to open to `base`'s origin and to its other scheme's,
    /// for [`Http::open_wanted`] once the endpoint's scheme is known.
    pub fn want_pre_open(&self, base: &Url, wanted: usize) {
        if let Some(pool) = &self.pool {
            for origin in [Origin::of(base), other_scheme(base)].into_iter().flatten() {
                pool.want(&origin, wanted);
            }
        }
    }

    /// `base` is the endpoint's scheme: opens what [`Http::want_pre_open`] kept for it,
    /// less `coming` (requests about to be sent, which open their own), and forgets
    /// what it kept for the other scheme.
    pub fn open_wanted(&self, base: &Url, coming: usize) {
        if let (Some(pool), Some(origin), Some(other)) =
            (&self.pool, Origin::of(base), other_scheme(base))
            && check_url(&self.egress, base).is_ok()
        {
            pool.open_wanted(&origin, &other, coming);
        }
    }

    /// Sends `request` through the pool and follows its redirects as reqwest's client
    /// would with [`redirect_policy`]: at most `max_redirects`, none to a host the
    /// egress policy refuses, none from `https` to `http`; `Authorization`, `Cookie`,
    /// `Proxy-Authorization` and `WWW-Authenticate` dropped when the host, port or
    /// scheme changes; 301/302 turn a `POST` into a `GET`, 303 anything but `HEAD`,
    /// dropping the body and its headers; 307/308 keep method and body (reqwest 0.13.5,
    /// `async_impl/client.rs` `PendingRequest::poll` and `redirect.rs`
    /// `remove_sensitive_headers`). `User-Agent` and `Accept: */*` are added when the
    /// request has none, as reqwest's defaults.
    ///
    /// `reached` is set to each URL as it is asked (a refused redirect's too), so that
    /// a failure names where it happened.
    async fn through_pool(
        &self,
        pool: &Arc<Pool>,
        request: reqwest::Request,
        reached: &mut Url,
    ) -> Result<Response, Failed> {
        let mut method = request.method().clone();
        let mut url = request.url().clone();
        let mut headers = request.headers().clone();
        let mut body = request
            .body()
            .and_then(reqwest::Body::as_bytes)
            .map(Bytes::copy_from_slice)
            .unwrap_or_default();
        if !headers.contains_key(header::USER_AGENT) {
            headers.insert(header::USER_AGENT, self.user_agent.clone());
        }
        if !headers.contains_key(header::ACCEPT) {
            headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        let mut previous: Vec<Url> = Vec::new();
        loop {
            reached.clone_from(&url);
            let Some(origin) = Origin::of(&url) else {
                return Err(Failed::Redirect(Message(format!(
                    "the URL's scheme {} is not http or https",
                    url.scheme()
                ))));
            };
            let head = origin_request(&method, &url, &headers, body.clone());
            let answer = Box::pin(pool.send(&origin, head))
                .await
                .map_err(Failed::Pool)?;
            let status = answer.status().as_u16();
            let location = answer
                .headers()
                .get(header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok());
            let Some(next) = location.filter(|_| matches!(status, 301 | 302 | 303 | 307 | 308))
            else {
                return Ok(Response::from(answer.map(reqwest::Body::wrap)));
            };
            drop(answer);
            if let Err(refusal) = check_url(&self.egress, &next) {
                reached.clone_from(&next);
                return Err(Failed::Pool(crate::pool::PoolError::Refused(refusal)));
            }
            previous.push(url.clone());
            if previous.len() > self.max_redirects {
                return Err(Failed::Redirect(Message(format!(
                    "too many redirects (more than {})",
                    self.max_redirects
                ))));
            }
            if url.scheme() == "https" && next.scheme() == "http" {
                return Err(Failed::Redirect(Message(format!(
                    "a redirect from https to plain http ({}) was refused",
                    next.host_str().unwrap_or("?")
                ))));
            }
            let to_get = match status {
                301 | 302 => method == Method::POST,
                303 => method != Method::HEAD,
                _ => false,
            };
            if to_get {
                method = Method::GET;
                body = Bytes::new();
                for name in [
                    header::CONTENT_TYPE,
                    header::CONTENT_LENGTH,
                    header::CONTENT_ENCODING,
                    header::TRANSFER_ENCODING,
                ] {
                    headers.remove(name);
                }
            }
            let moved = next.host_str() != url.host_str()
                || next.port_or_known_default() != url.port_or_known_default()
                || next.scheme() != url.scheme();
            if moved {
                for name in [
                    header::AUTHORIZATION,
                    header::COOKIE,
                    header::PROXY_AUTHORIZATION,
                    header::WWW_AUTHENTICATE,
                ] {
                    headers.remove(name);
                }
            }
            tracing::debug!(from = %loggable_url(&url), to = %loggable_url(&next), status, "following a redirect");
            url = next;
        }
    }
}

/// The origin of `base` over the other scheme (`http` for `https`, and back), on the
/// same port as given: an endpoint allowed plain HTTP is asked on one host and port.
fn other_scheme(base: &Url) -> Option<Origin> {
    let origin = Origin::of(base)?;
    Some(Origin {
        tls: !origin.tls,
        port: base.port().unwrap_or(if origin.tls { 80 } else { 443 }),
        ..origin
    })
}

/// An HTTP/1.1 request in origin form (`/path?query`) with its `Host` header; the pool
/// makes it absolute for HTTP/2.
fn origin_request(
    method: &Method,
    url: &Url,
    headers: &HeaderMap,
    body: Bytes,
) -> http::Request<crate::pool::ReqBody> {
    let mut path = url.path().to_string();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut request = http::Request::new(http_body_util::Full::new(body));
    *request.method_mut() = method.clone();
    if let Ok(uri) = path.parse() {
        *request.uri_mut() = uri;
    }
    let mut headers = headers.clone();
    let host = match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        (None, _) => String::new(),
    };
    if let Ok(host) = HeaderValue::from_str(&host) {
        headers.insert(header::HOST, host);
    }
    *request.headers_mut() = headers;
    request
}

/// `scheme://host[:port]/path`, without user info, query or fragment, for logs.
pub(crate) fn loggable_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    let had_query = shown.query().is_some();
    shown.set_query(None);
    shown.set_fragment(None);
    let mut s = shown.to_string();
    if had_query {
        s.push_str("?…");
    }
    s
}

/// A bounded body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Body {
    /// At most the limit.
    pub bytes: Vec<u8>,
    /// The body was longer than the limit; the rest was not read.
    pub truncated: bool,
    /// Reading stopped on this error (reset, timeout, …).
    pub error: Option<SendError>,
}

/// Reads at most `limit` bytes of the body. A read error ends the read and is kept
/// beside what was read.
async fn read_limited(mut response: Response, limit: usize, limits: &Limits) -> Body {
    let sent = response
        .extensions()
        .get::<Sent>()
        .copied()
        .unwrap_or(Sent {
            started: Instant::now(),
            budget: limits.total,
            pooled: false,
        });
    let mut out = Body::default();
    let until = tokio::time::Instant::from_std(sent.started + sent.budget);
    loop {
        let chunk = if sent.pooled {
            let next = async {
                match limits.read {
                    Some(read) => tokio::time::timeout(read, response.chunk()).await.ok(),
                    None => Some(response.chunk().await),
                }
            };
            match tokio::time::timeout_at(until, next).await {
                Ok(Some(chunk)) => chunk,
                _ => {
                    let failure = Failure::of(&Failed::Timeout);
                    out.error = Some(SendError {
                        reason: describe(&failure, limits, sent.budget, sent.started.elapsed()),
                        kind: Reason::Timeout,
                        retryable: false,
                        connection_level: false,
                        refusal: None,
                        certificate: None,
                        redirected_to: None,
                    });
                    return out;
                }
            }
        } else {
            response.chunk().await
        };
        match chunk {
            Ok(Some(chunk)) => {
                let room = limit - out.bytes.len();
                if chunk.len() > room {
                    out.bytes.extend_from_slice(&chunk[..room]);
                    out.truncated = true;
                    return out;
                }
                out.bytes.extend_from_slice(&chunk);
            }
            Ok(None) => return out,
            Err(e) => {
                let e = Failure::of_reqwest(&e);
                out.error = Some(SendError {
                    reason: describe(&e, limits, sent.budget, sent.started.elapsed()),
                    kind: kind_of(&e),
                    retryable: is_retryable(&e),
                    connection_level: false,
                    refusal: None,
                    certificate: certificate_of(&e),
                    redirected_to: None,
                });
                return out;
            }
        }
    }
}

/// Whether a failure happened before any HTTP answer: DNS, TCP, TLS, or a timeout while
/// connecting. Such a failure on `https://` allows the plain-HTTP retry.
fn is_connection_level(err: &Failure<'_>) -> bool {
    err.connect || err.timeout || tls_error(err).is_some()
}

/// Whether another attempt may succeed: the connection was refused, reset or aborted,
/// or closed before the answer was complete. Timeouts, TLS and DNS failures, malformed
/// answers and redirect errors are not retried.
fn is_retryable(err: &Failure<'_>) -> bool {
    if err.timeout || err.redirect || tls_error(err).is_some() {
        return false;
    }
    if hyper_error(err).is_some_and(hyper::Error::is_parse) {
        return false;
    }
    if hyper_error(err).is_some_and(|h| h.is_incomplete_message()) {
        return true;
    }
    io_error(err).is_some_and(|io| {
        matches!(
            io.kind(),
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::UnexpectedEof
        )
    })
}

/// What is wrong with the certificate, for a request that failed on it
/// ([`Reason::TlsUntrusted`]).
fn certificate_of(err: &Failure<'_>) -> Option<CertificateProblem> {
    use rustls::CertificateError as C;
    let rustls::Error::InvalidCertificate(cert) = tls_error(err)? else {
        return None;
    };
    Some(match cert {
        C::UnknownIssuer => CertificateProblem::UnknownAuthority,
        C::Expired | C::ExpiredContext { .. } => CertificateProblem::Expired,
        C::NotValidYet | C::NotValidYetContext { .. } => CertificateProblem::NotYetValid,
        C::NotValidForName | C::NotValidForNameContext { .. } => CertificateProblem::OtherHost,
        C::Revoked => CertificateProblem::Revoked,
        C::BadSignature => CertificateProblem::BadSignature,
        _ => CertificateProblem::Invalid,
    })
}

/// What [`describe`] says, as data: the [`Reason`] of a request that got no answer.
fn kind_of(err: &Failure<'_>) -> Reason {
    if let Some(tls) = tls_error(err) {
        return match tls {
            rustls::Error::InvalidCertificate(_) => Reason::TlsUntrusted,
            _ => Reason::TlsFailed,
        };
    }
    if err.timeout {
        return Reason::Timeout;
    }
    if err.redirect {
        return Reason::NotARegistry;
    }
    if err.dns {
        return Reason::NameNotResolved;
    }
    if hyper_error(err).is_some_and(hyper::Error::is_parse) {
        return Reason::NotARegistry;
    }
    match io_error(err).map(io::Error::kind) {
        Some(io::ErrorKind::ConnectionRefused) => Reason::ConnectionRefused,
        Some(io::ErrorKind::TimedOut) => Reason::Timeout,
        _ => Reason::ConnectionFailed,
    }
}

/// A precise reason, without URL or secrets: "connection refused", "timed out after
/// 10000 ms", "TLS: certificate signed by an unknown authority", "the answer is not
/// HTTP (…)", "too many redirects (more than 5)", … `budget` is the total time the
/// request had, `elapsed` how long it ran.
fn describe(err: &Failure<'_>, limits: &Limits, budget: Duration, elapsed: Duration) -> String {
    if let Some(tls) = tls_error(err) {
        return describe_tls(tls);
    }
    if err.timeout {
        return describe_timeout(err.connect, limits, budget, elapsed);
    }
    if err.redirect {
        // The policy's own message is the innermost cause.
        return err
            .innermost
            .clone()
            .unwrap_or_else(|| "redirect failed".to_string());
    }
    if err.dns {
        return "DNS lookup failed".to_string();
    }
    if let Some(h) = hyper_error(err) {
        // hyper names a head over its buffer, or over the field count, this way (its
        // `is_parse_too_large` is only built for servers).
        if h.is_parse() && h.to_string().contains("too large") {
            return format!(
                "the answer's header is larger than this client accepts \
                 (at most {MAX_HEADER_FIELDS} fields, about 400 KiB)"
            );
        }
        if h.is_parse() {
            return format!("the answer is not valid HTTP ({h})");
        }
        if h.is_incomplete_message() {
            return "connection closed before the answer was complete".to_string();
        }
    }
    if let Some(io) = io_error(err) {
        let what = match io.kind() {
            io::ErrorKind::ConnectionRefused => Some("connection refused"),
            io::ErrorKind::ConnectionReset => Some("connection reset by peer"),
            io::ErrorKind::ConnectionAborted => Some("connection aborted"),
            io::ErrorKind::BrokenPipe => Some("connection closed while sending (broken pipe)"),
            io::ErrorKind::TimedOut => Some("connection timed out"),
            io::ErrorKind::HostUnreachable => Some("host unreachable"),
            io::ErrorKind::NetworkUnreachable => Some("network unreachable"),
            io::ErrorKind::AddrNotAvailable => Some("address not available"),
            io::ErrorKind::UnexpectedEof => Some("connection closed before the answer"),
            _ => None,
        };
        if let Some(what) = what {
            return what.to_string();
        }
    }
    // The innermost cause is usually the most precise; reqwest's own message would add
    // the URL, which is left out on purpose.
    let kind = if err.connect {
        "connection failed"
    } else if err.body {
        "reading the answer failed"
    } else {
        "request failed"
    };
    match err.innermost.clone() {
        Some(cause) => format!("{kind}: {cause}"),
        None => kind.to_string(),
    }
}

fn describe_timeout(
    connecting: bool,
    limits: &Limits,
    budget: Duration,
    elapsed: Duration,
) -> String {
    // The timer that fired is the one whose time had come.
    let slack = Duration::from_millis(25);
    if connecting
        && let Some(connect) = limits.connect
        && connect < budget
    {
        return format!("connecting timed out after {} ms", connect.as_millis());
    }
    if let Some(read) = limits.read
        && read < budget
        && elapsed + slack < budget
    {
        return format!(
            "no data for {} ms (the read timeout) after {} ms",
            read.as_millis(),
            elapsed.as_millis()
        );
    }
    if budget < limits.total {
        return format!("timed out after {} ms, at the deadline", budget.as_millis());
    }
    format!("timed out after {} ms", budget.as_millis())
}

/// The innermost error of the `source` chain from `top`, worded.
fn innermost(top: Option<&(dyn std::error::Error + 'static)>) -> Option<String> {
    let mut innermost: Option<String> = None;
    let mut source = top;
    while let Some(e) = source {
        innermost = Some(e.to_string());
        source = e.source();
    }
    innermost
}

/// Every error from `top` down: its `source` chain, and inside each `io::Error` the
/// error it wraps. `io::Error::source` skips the wrapped error, and TLS failures arrive
/// as an `io::Error` inside an `io::Error` inside hyper's error (or, from the pool, as
/// tokio-rustls's `io::Error` wrapping the `rustls::Error`).
fn causes<'a>(
    top: Option<&'a (dyn std::error::Error + 'static)>,
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut out = Vec::new();
    let mut source = top;
    while let Some(e) = source {
        out.push(e);
        let mut inner: &(dyn std::error::Error + 'static) = e;
        while let Some(wrapped) = inner
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
        {
            let wrapped: &(dyn std::error::Error + 'static) = wrapped;
            out.push(wrapped);
            inner = wrapped;
        }
        source = e.source();
    }
    out
}

/// The innermost `io::Error` under `err`, whose kind is the most specific.
fn io_error<'a>(err: &Failure<'a>) -> Option<&'a io::Error> {
    err.causes
        .iter()
        .rev()
        .find_map(|e| e.downcast_ref::<io::Error>())
}

/// The hyper error under a failure.
fn hyper_error<'a>(err: &Failure<'a>) -> Option<&'a hyper::Error> {
    err.causes
        .iter()
        .find_map(|e| e.downcast_ref::<hyper::Error>())
}

/// The rustls error under a failure.
fn tls_error<'a>(err: &Failure<'a>) -> Option<&'a rustls::Error> {
    err.causes
        .iter()
        .find_map(|e| e.downcast_ref::<rustls::Error>())
}

fn describe_tls(err: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    match err {
        rustls::Error::InvalidCertificate(cert) => match cert {
            C::UnknownIssuer => "TLS: certificate signed by an unknown authority".to_string(),
            C::Expired | C::ExpiredContext { .. } => {
                format!("TLS: certificate expired ({cert})")
            }
            C::NotValidYet | C::NotValidYetContext { .. } => {
                format!("TLS: certificate not yet valid ({cert})")
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                format!("TLS: certificate is for another host ({cert})")
            }
            C::Revoked => "TLS: certificate revoked".to_string(),
            C::BadSignature => "TLS: bad certificate signature".to_string(),
            other => format!("TLS: invalid certificate ({other})"),
        },
        rustls::Error::AlertReceived(alert) => {
            use rustls::AlertDescription as A;
            match alert {
                A::CertificateRequired => "TLS: the registry requires a client certificate, \
                     and none is configured for it"
                    .to_string(),
                A::BadCertificate
                | A::UnsupportedCertificate
                | A::CertificateRevoked
                | A::CertificateExpired
                | A::CertificateUnknown
                | A::UnknownCA
                | A::AccessDenied => {
                    format!("TLS: the registry refused the client certificate (alert {alert:?})")
                }
                other => format!("TLS handshake failed: the registry sent alert {other:?}"),
            }
        }
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            format!("TLS handshake failed; the server may not speak TLS on this port ({err})")
        }
        other => format!("TLS handshake failed ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loggable_url_drops_query_and_userinfo() {
        let url = Url::parse("https://user:pw@auth.example/token?service=s&scope=x").unwrap();
        assert_eq!(loggable_url(&url), "https://auth.example/token?…");
        let url = Url::parse("http://127.0.0.1:5000/v2/").unwrap();
        assert_eq!(loggable_url(&url), "http://127.0.0.1:5000/v2/");
    }

    #[test]
    fn tls_descriptions_name_the_cause() {
        let unknown = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        assert_eq!(
            describe_tls(&unknown),
            "TLS: certificate signed by an unknown authority"
        );
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert!(describe_tls(&expired).starts_with("TLS: certificate expired"));
        let host = rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName);
        assert!(describe_tls(&host).starts_with("TLS: certificate is for another host"));
    }
}
