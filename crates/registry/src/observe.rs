//! What a long-running embedder (a service exporting metrics) can watch: one
//! [`RequestEvent`] per HTTP request sent, and each token served from the cache. Set an
//! [`Observer`] in [`crate::ClientOptions::observer`].
//!
//! Invariant: an event carries a host, a kind, a status, a duration and a rate-limit
//! count; never a URL query, a header value, a credential or a token.

use std::time::Duration;

use reqwest::header::HeaderMap;

/// What an HTTP request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// The ping, `GET /v2/` (or the endpoint's base path), and the Basic credential
    /// check on it.
    Ping,
    /// A request to a token realm (GET, or the OAuth2 POST).
    Token,
    /// A manifest `HEAD`, or the `GET` of a manifest or index.
    Manifest,
    /// `GET /v2/<name>/tags/list` after a 404.
    Tags,
    /// A blob request. This client sends none today; the kind exists so that an
    /// observer's labels stay stable when it does.
    Blob,
}

impl RequestKind {
    /// `"ping"`, `"token"`, `"manifest"`, `"tags"` or `"blob"`: a stable label, e.g. for
    /// a metric.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Ping => "ping",
            RequestKind::Token => "token",
            RequestKind::Manifest => "manifest",
            RequestKind::Tags => "tags",
            RequestKind::Blob => "blob",
        }
    }
}

/// One HTTP request this client sent (each retry attempt is one), after its answer's
/// head came or it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestEvent<'a> {
    /// The endpoint's host as configured ([`crate::Endpoint::host`], `host[:port]`),
    /// or, for [`RequestKind::Token`], the token realm's `host[:port]` (the port only
    /// when the realm URL names one).
    pub host: &'a str,
    /// What the request was for.
    pub kind: RequestKind,
    /// The HTTP status of the answer (after redirects); `None` when no HTTP answer came
    /// (DNS, connection, TLS, timeout, or an answer that is not HTTP).
    pub code: Option<u16>,
    /// From sending the request to its answer's head (or the failure); the body, read
    /// afterwards, is not included.
    pub duration: Duration,
    /// The `RateLimit-Remaining` header's count (IETF `draft-ietf-httpapi-ratelimit-headers`,
    /// as Docker Hub sends it: `97;w=21600` is 97), when the answer had a readable one.
    pub ratelimit_remaining: Option<u64>,
    /// The `https://` first request of an endpoint allowed plain HTTP (the ping, or on
    /// a cold endpoint the first manifest `HEAD` sent in its place) got no HTTP answer
    /// (refused, TLS failed): the expected first half of the plain-HTTP fallback, which
    /// is sent next over `http://` as a request of its own. `false` for every other
    /// request.
    pub falls_back_to_http: bool,
}

/// Watches the requests of a [`crate::Client`] and its sessions, e.g. to export
/// metrics. Called on the task that sent the request, so it must return quickly and
/// never block (count, or hand off to a channel).
pub trait Observer: Send + Sync + 'static {
    /// One HTTP request was sent and answered (or failed). Called exactly once per
    /// request actually sent; a request refused before sending (its deadline had
    /// passed) is not one.
    fn request(&self, event: &RequestEvent<'_>);

    /// A token for a registry at `host` (as in [`crate::Endpoint::host`]) was served
    /// from the client's cache instead of being asked for. The default does nothing.
    fn token_cache_hit(&self, host: &str) {
        let _ = host;
    }
}

/// The count of a `RateLimit-Remaining` header: its first item, before any `;`
/// parameters (`97;w=21600` → 97). `None` when absent or not a number.
pub(crate) fn ratelimit_remaining(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get("ratelimit-remaining")?.to_str().ok()?;
    value.split([';', ',']).next()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratelimit_remaining_counts() {
        let mut headers = HeaderMap::new();
        assert_eq!(ratelimit_remaining(&headers), None);
        for (value, want) in [
            ("97;w=21600", Some(97)),
            (" 0 ", Some(0)),
            ("100", Some(100)),
            ("many", None),
            ("-1;w=1", None),
        ] {
            headers.insert("ratelimit-remaining", value.parse().unwrap());
            assert_eq!(ratelimit_remaining(&headers), want, "{value}");
        }
    }

    #[test]
    fn kinds_have_stable_labels() {
        let all = [
            RequestKind::Ping,
            RequestKind::Token,
            RequestKind::Manifest,
            RequestKind::Tags,
            RequestKind::Blob,
        ];
        let labels: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        assert_eq!(labels, ["ping", "token", "manifest", "tags", "blob"]);
    }
}
