//! The HTTP side: building the two `reqwest` clients, sending one request with its
//! trace event, reading bounded bodies, and turning a transport failure into a precise,
//! secret-free reason.
//!
//! Invariant: nothing here knows the registry protocol; every byte that leaves or enters
//! the process through this crate goes through [`Http::send`].

use std::error::Error as _;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, RequestBuilder, Response};
use url::Url;

/// At most this much of an error body is read.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// At most this much of a token reply is read (JWTs of several KiB are common).
pub(crate) const TOKEN_BODY_LIMIT: usize = 1024 * 1024;
/// At most this much of a tag list is read (1000 tags fit many times over).
pub(crate) const TAGS_BODY_LIMIT: usize = 4 * 1024 * 1024;

/// Request counters shared by a [`crate::Client`] and its sessions.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub token_requests: AtomicU64,
}

/// One `reqwest` client with the settings a request needs to be described.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
    pub timeout: Duration,
    pub counters: Arc<Counters>,
}

/// What a request was for, in trace events and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    Ping,
    Token,
    Manifest,
    Tags,
}

/// Builds a client: rustls with the platform verifier (system roots), HTTP/2 when ALPN
/// offers it, keep-alive pooling, `timeout` for each request from connect to the end of
/// the body.
pub(crate) fn build_client(
    user_agent: &str,
    timeout: Duration,
    skip_verify: bool,
) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .user_agent(user_agent)
        .timeout(timeout)
        .connect_timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .tls_danger_accept_invalid_certs(skip_verify)
        .build()
}

impl Http {
    /// Sends `request` (built from `self.client`), counting it and emitting a debug event
    /// with the method, the URL without its query, the status and the time taken.
    pub async fn send(
        &self,
        request: RequestBuilder,
        method: &Method,
        url: &Url,
        purpose: Purpose,
    ) -> Result<Response, reqwest::Error> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        if purpose == Purpose::Token {
            self.counters.token_requests.fetch_add(1, Ordering::Relaxed);
        }
        let shown = loggable_url(url);
        let started = Instant::now();
        let result = request.send().await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(response) => tracing::debug!(
                method = %method,
                url = %shown,
                status = response.status().as_u16(),
                elapsed_ms,
                ?purpose,
                "registry request"
            ),
            Err(e) => tracing::debug!(
                method = %method,
                url = %shown,
                error = %describe(e, self.timeout),
                elapsed_ms,
                ?purpose,
                "registry request failed"
            ),
        }
        result
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

/// Reads at most `limit` bytes of the body; a body error ends the read quietly (the
/// status has already been seen, the body only adds detail).
pub(crate) async fn read_limited(mut response: Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit - out.len();
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    out
}

/// Whether a failure happened before any HTTP answer: DNS, TCP, TLS, or a timeout while
/// connecting. Such a failure on `https://` allows the plain-HTTP retry.
pub(crate) fn is_connection_level(err: &reqwest::Error) -> bool {
    err.is_connect() || err.is_timeout() || tls_error(err).is_some()
}

/// A precise reason, without URL or secrets: "connection refused", "timed out after
/// 10000 ms", "TLS: certificate signed by an unknown authority", "DNS lookup failed", …
pub(crate) fn describe(err: &reqwest::Error, timeout: Duration) -> String {
    if let Some(tls) = tls_error(err) {
        return describe_tls(tls);
    }
    if err.is_timeout() {
        return format!("timed out after {} ms", timeout.as_millis());
    }
    if err.is_dns() {
        return "DNS lookup failed".to_string();
    }
    if let Some(io) = io_error(err) {
        let what = match io.kind() {
            io::ErrorKind::ConnectionRefused => Some("connection refused"),
            io::ErrorKind::ConnectionReset => Some("connection reset by peer"),
            io::ErrorKind::ConnectionAborted => Some("connection aborted"),
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
    let mut innermost: Option<String> = None;
    let mut source = err.source();
    while let Some(e) = source {
        innermost = Some(e.to_string());
        source = e.source();
    }
    let kind = if err.is_connect() {
        "connection failed"
    } else if err.is_body() || err.is_decode() {
        "reading the answer failed"
    } else if err.is_redirect() {
        "too many redirects"
    } else {
        "request failed"
    };
    match innermost {
        Some(cause) => format!("{kind}: {cause}"),
        None => kind.to_string(),
    }
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
