//! The HTTP side: building `reqwest` clients (timeouts, redirects, TLS roots and client
//! certificates), sending one request with its trace event and its share of the
//! deadline, reading bounded bodies, and turning a transport failure into a precise,
//! secret-free reason and a retry verdict.
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

use reqwest::{Method, RequestBuilder, Response};
use url::Url;

use crate::observe::{self, Observer, RequestEvent, RequestKind};
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

/// One `reqwest` client with the settings a request needs to be described, and who
/// is told of each request.
#[derive(Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
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
    pub extra_roots: Vec<reqwest::Certificate>,
    /// A client certificate for mutual TLS.
    pub identity: Option<reqwest::Identity>,
    /// Certificates are not verified at all.
    pub skip_verify: bool,
}

/// Builds a client: rustls with the platform verifier (system roots, plus `extra_roots`),
/// HTTP/2 when ALPN offers it, keep-alive pooling, the timeouts of `limits`, the
/// redirect policy described in the module docs, and a resolver that applies `egress`
/// to the addresses of every name.
pub(crate) fn build_client(
    user_agent: &str,
    limits: Limits,
    max_redirects: usize,
    egress: &Arc<EgressPolicy>,
    tls: TlsSetup,
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
        .tls_danger_accept_invalid_certs(tls.skip_verify);
    if let Some(read) = limits.read {
        builder = builder.read_timeout(read);
    }
    if !tls.extra_roots.is_empty() && !tls.skip_verify {
        builder = builder.tls_certs_merge(tls.extra_roots);
    }
    if let Some(identity) = tls.identity {
        builder = builder.identity(identity);
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

/// The [`EgressRefusal`] under a reqwest error: a redirect or a resolved address the
/// policy refused.
fn refusal_of(err: &reqwest::Error) -> Option<EgressRefusal> {
    causes(err)
        .into_iter()
        .find_map(|e| e.downcast_ref::<EgressRefusal>())
        .cloned()
}

/// When a request was sent and the time it had, kept in its response's extensions for
/// the wording of a timeout while its body is read.
#[derive(Debug, Clone, Copy)]
struct Sent {
    started: Instant,
    budget: Duration,
}

/// A request that got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SendError {
    /// The precise reason, without URL or secrets.
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
        }
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
        let result = request.timeout(budget).send().await;
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
                    && result.as_ref().err().is_some_and(is_connection_level),
            });
        }
        match result {
            Ok(mut response) => {
                response.extensions_mut().insert(Sent { started, budget });
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
                let refusal = refusal_of(&e);
                let failure = SendError {
                    reason: match &refusal {
                        Some(r) => r.to_string(),
                        None => describe(&e, &self.limits, budget, elapsed),
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
        });
    let mut out = Body::default();
    loop {
        match response.chunk().await {
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
                out.error = Some(SendError {
                    reason: describe(&e, limits, sent.budget, sent.started.elapsed()),
                    kind: kind_of(&e),
                    retryable: is_retryable(&e),
                    connection_level: false,
                    refusal: None,
                    certificate: certificate_of(&e),
                });
                return out;
            }
        }
    }
}

/// Whether a failure happened before any HTTP answer: DNS, TCP, TLS, or a timeout while
/// connecting. Such a failure on `https://` allows the plain-HTTP retry.
fn is_connection_level(err: &reqwest::Error) -> bool {
    err.is_connect() || err.is_timeout() || tls_error(err).is_some()
}

/// Whether another attempt may succeed: the connection was refused, reset or aborted,
/// or closed before the answer was complete. Timeouts, TLS and DNS failures, malformed
/// answers and redirect errors are not retried.
fn is_retryable(err: &reqwest::Error) -> bool {
    if err.is_timeout() || err.is_redirect() || tls_error(err).is_some() {
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
fn certificate_of(err: &reqwest::Error) -> Option<CertificateProblem> {
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
pub(crate) fn kind_of(err: &reqwest::Error) -> Reason {
    if let Some(tls) = tls_error(err) {
        return match tls {
            rustls::Error::InvalidCertificate(_) => Reason::TlsUntrusted,
            _ => Reason::TlsFailed,
        };
    }
    if err.is_timeout() {
        return Reason::Timeout;
    }
    if err.is_redirect() {
        return Reason::NotARegistry;
    }
    if err.is_dns() {
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
pub(crate) fn describe(
    err: &reqwest::Error,
    limits: &Limits,
    budget: Duration,
    elapsed: Duration,
) -> String {
    if let Some(tls) = tls_error(err) {
        return describe_tls(tls);
    }
    if err.is_timeout() {
        return describe_timeout(err.is_connect(), limits, budget, elapsed);
    }
    if err.is_redirect() {
        // The policy's own message is the innermost cause.
        return innermost(err).unwrap_or_else(|| "redirect failed".to_string());
    }
    if err.is_dns() {
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
    let kind = if err.is_connect() {
        "connection failed"
    } else if err.is_body() || err.is_decode() {
        "reading the answer failed"
    } else {
        "request failed"
    };
    match innermost(err) {
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

fn innermost(err: &reqwest::Error) -> Option<String> {
    let mut innermost: Option<String> = None;
    let mut source = err.source();
    while let Some(e) = source {
        innermost = Some(e.to_string());
        source = e.source();
    }
    innermost
}

/// Every error under `err`: its `source` chain, and inside each `io::Error` the error
/// it wraps. `io::Error::source` skips the wrapped error, and TLS failures arrive as an
/// `io::Error` inside an `io::Error` inside hyper's error.
fn causes(err: &reqwest::Error) -> Vec<&(dyn std::error::Error + 'static)> {
    let mut out = Vec::new();
    let mut source = err.source();
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
fn io_error(err: &reqwest::Error) -> Option<&io::Error> {
    causes(err)
        .into_iter()
        .filter_map(|e| e.downcast_ref::<io::Error>())
        .last()
}

/// The hyper error under a reqwest error.
fn hyper_error(err: &reqwest::Error) -> Option<&hyper::Error> {
    causes(err)
        .into_iter()
        .find_map(|e| e.downcast_ref::<hyper::Error>())
}

/// The rustls error under a reqwest error.
fn tls_error(err: &reqwest::Error) -> Option<&rustls::Error> {
    causes(err)
        .into_iter()
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
