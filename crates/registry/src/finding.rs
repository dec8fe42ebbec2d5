//! What a manifest query found, as data: the facts behind an [`crate::Answer`]'s
//! [`crate::Reason`], in the OCI distribution spec's terms (the request's method and
//! status, the error envelope's entries, the tag list's size, the platforms asked for
//! and found, each failed attempt). This crate writes no sentence about an answer; the
//! engine (`pullcheck`'s `detail` module) words these facts once.
//!
//! Invariant: pure value types; never a secret (an error message a registry echoes is
//! redacted before it is kept, as `auth::redact` does).

use std::time::Duration;

use crate::Platform;

/// The HTTP method of a manifest request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `HEAD`: the first request for every manifest.
    Head,
    /// `GET`: after a `HEAD` the registry does not do (405, 501) or that carried neither
    /// a manifest `Content-Type` nor a `Docker-Content-Digest`.
    Get,
}

impl Method {
    /// `HEAD` or `GET`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Head => "HEAD",
            Method::Get => "GET",
        }
    }
}

/// One entry of the registry's error envelope (`{"errors":[{"code","message"}]}`, OCI
/// distribution spec, "Error Codes"): the code as sent (at most 64 characters; an
/// unknown one such as `FLUX_CAPACITOR_DRAINED` is kept verbatim, `UNKNOWN` when none)
/// and its message (at most 200 characters, `…` after it when cut; any credential it
/// echoes redacted; empty when none). In both, a run of control characters is one
/// space and the bidirectional and zero-width characters are dropped, so a message
/// reads on a terminal as it is. Serialised as `{"code", "message"}` (the report's
/// `registry_errors`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ErrorEntry {
    /// The error code as sent, e.g. `NAME_UNKNOWN`, `DENIED`, `TOOMANYREQUESTS`.
    pub code: String,
    /// The registry's message, e.g. `repository name not known to registry`.
    pub message: String,
}

/// A manifest reference as asked: a tag or a digest (`algorithm:hex`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ManifestRef {
    /// A tag, e.g. `3.19`.
    Tag(String),
    /// A digest, e.g. `sha256:…`.
    Digest(String),
}

/// The size of a repository's tag list (`GET /v2/<name>/tags/list?n=1000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TagCount {
    /// Tags in the answer.
    pub count: usize,
    /// The answer had a `Link: <…>; rel="next"` header: there are more tags than
    /// `count` (the list was cut).
    pub truncated: bool,
}

/// What the tag list said after a manifest 404, when it could not tell whether the
/// repository exists.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TagList {
    /// Not asked: tag hints are off ([`crate::ClientOptions::tag_hints`]); the manifest
    /// request's method.
    NotAsked(Method),
    /// The request got no HTTP answer (the transport's reason, or what was refused).
    Failed(String),
    /// A 2xx whose body is not a tag list.
    Unreadable,
    /// Another status than 2xx or 404 (its envelope in [`crate::Answer::errors`]).
    Status(u16),
}

/// Who a 401 answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Requester {
    /// The registry asks for Basic credentials and none are configured.
    NoCredentials,
    /// An anonymous token, or no authentication at all.
    Anonymous,
    /// A credential the registry accepted for login, named (`user "alice"`, `the
    /// configured identity token`, never a secret).
    Credential(String),
    /// The registry asks for Basic credentials and the configured credential (named) is
    /// a token, which cannot be sent as a user name and password.
    Unusable(String),
}

/// Where a platform was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlatformSource {
    /// An image index or manifest list's `manifests[].platform`.
    Index,
    /// A single-platform image's config blob (`os`, `architecture`, `variant`).
    Config,
}

/// What a manifest query found: the facts of the answer, by situation. Hosts are as in
/// the URL (`host[:port]`), repositories as in the request path, a `manifest` is
/// `repository:tag` or `repository@digest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Present: the registry served the manifest ([`crate::Answer::media_type`],
    /// [`crate::Answer::digest`]).
    Served {
        /// The request that got it.
        method: Method,
        /// Its 2xx status.
        status: u16,
        /// For a digest reference, the `Docker-Content-Digest` when it is of another
        /// algorithm than the one asked for (not compared).
        other_algorithm: Option<String>,
        /// With a platform asked for: the platform asked for and the entry that
        /// matched it, and where it was read.
        platform: Option<(Platform, Platform, PlatformSource)>,
    },
    /// A 2xx to a `GET` with neither a manifest `Content-Type` nor a
    /// `Docker-Content-Digest`: a web server, proxy or captive portal.
    NotAManifest {
        /// The host asked.
        host: String,
        /// The request.
        method: Method,
        /// Its 2xx status.
        status: u16,
        /// The `Content-Type` without parameters, when sent.
        content_type: Option<String>,
    },
    /// The registry named another digest (same algorithm) than the one asked for.
    DigestMismatch {
        /// The host asked.
        host: String,
        /// The digest asked for.
        wanted: String,
        /// The `Docker-Content-Digest` it answered.
        got: String,
    },
    /// 404 `NAME_UNKNOWN`, or a 404 tag list: the repository does not exist.
    RepositoryUnknown {
        /// The host asked.
        host: String,
        /// The repository.
        repository: String,
    },
    /// A manifest 404 and whether the repository exists is not known.
    ManifestUnknown {
        /// The host asked.
        host: String,
        /// The repository.
        repository: String,
        /// What was asked for.
        reference: ManifestRef,
        /// Why the repository's existence is not known.
        tag_list: TagList,
    },
    /// A manifest 404 and the tag list (which lacks it) says the repository exists:
    /// the tag, or the digest, does not. Close tags in [`crate::Answer::close_tags`].
    ReferenceUnknown {
        /// The host asked.
        host: String,
        /// The repository.
        repository: String,
        /// What was asked for.
        reference: ManifestRef,
        /// The tag list's size.
        tags: TagCount,
    },
    /// 401 on the manifest.
    Unauthorized {
        /// The host asked.
        host: String,
        /// Who asked.
        requester: Requester,
    },
    /// 403 on the manifest.
    Forbidden {
        /// The host asked.
        host: String,
        /// The repository.
        repository: String,
    },
    /// 429 ([`crate::Answer::retry_after`]).
    RateLimited {
        /// The host asked.
        host: String,
    },
    /// Another status: 408, 5xx, or one this client does not expect (`expected` false).
    HttpStatus {
        /// The host asked.
        host: String,
        /// The request.
        method: Method,
        /// The status.
        status: u16,
        /// Whether the status is one a registry may give (408, 5xx).
        expected: bool,
    },
    /// The index does not list the platform asked for ([`crate::Answer::platforms`]
    /// lists what it does).
    PlatformNotListed {
        /// The host asked.
        host: String,
        /// `repository:tag` or `repository@digest`.
        manifest: String,
        /// The platform asked for.
        wanted: Platform,
    },
    /// A single-platform image built for another platform (the one in
    /// [`crate::Answer::platforms`]).
    PlatformMismatch {
        /// The host asked.
        host: String,
        /// `repository:tag` or `repository@digest`.
        manifest: String,
        /// The platform asked for.
        wanted: Platform,
    },
    /// The manifest exists, but its index, manifest or config blob could not be read
    /// to check the platform.
    PlatformUnchecked {
        /// The host asked.
        host: String,
        /// `repository:tag` or `repository@digest`.
        manifest: String,
        /// The platform asked for.
        wanted: Platform,
        /// An index, or a single-platform image.
        source: PlatformSource,
        /// Why it could not be read (a status, the transport's reason, a parse error).
        why: String,
    },
    /// The request got no HTTP answer.
    RequestFailed {
        /// The host the request failed at: the host asked, or the host a redirect took
        /// it to (`redirected_from` then names the host asked).
        host: String,
        /// The request.
        method: Method,
        /// The transport's reason (`connection refused`, `timed out after 10000 ms`, …).
        why: String,
        /// When a redirect (a registry sending a manifest to its storage) took the
        /// request to another host or port, which then failed: the host asked first.
        redirected_from: Option<String>,
    },
    /// The egress policy refused the request ([`crate::Answer::refusal`] names the rule
    /// and what it matched).
    Refused {
        /// What was refused.
        what: RefusedRequest,
    },
    /// A ping, login or token failure during the query (a token asked for another
    /// scope, or again after the first expired), as data.
    Authorization(crate::AuthFailure),
}

/// What the egress policy refused during a query ([`Finding::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RefusedRequest {
    /// A request to the registry (the manifest request, or its redirect).
    Request {
        /// The request's method.
        method: Method,
        /// The host asked (after a redirect, the redirect's target).
        host: String,
        /// After a redirect: the host that redirected there.
        redirected_from: Option<String>,
    },
    /// The `GET` of an object for the platform check, or its redirect.
    Fetch {
        /// The object asked for: `index`, `manifest` or `config blob`.
        object: String,
        /// After a redirect: the host it was redirected to.
        redirected_to: Option<String>,
    },
}

/// A failed attempt before the last one (or the last, when retrying stopped).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailedAttempt {
    /// The manifest request answered a retryable status (408, 429, 502, 503, 504).
    Status {
        /// The status.
        status: u16,
        /// A 429's `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// The manifest request got no answer (a refused or reset connection, …).
    NoAnswer {
        /// Which failure, as a reason (`connection_refused`, `connection_failed`, …).
        kind: crate::Reason,
        /// The transport's words for it (`connection reset by peer`).
        why: String,
    },
    /// The token server answered a retryable status.
    TokenStatus {
        /// The status.
        status: u16,
    },
    /// The token request got no answer.
    TokenNoAnswer {
        /// The transport's words for it.
        why: String,
    },
    /// The `GET` of an object for the platform check (`object`: `index`, `manifest` or
    /// `config blob`) answered a retryable status.
    FetchStatus {
        /// The object asked for.
        object: String,
        /// The status.
        status: u16,
    },
    /// The `GET` of an object for the platform check got no (complete) answer.
    FetchNoAnswer {
        /// The object asked for.
        object: String,
        /// The transport's words for it.
        why: String,
    },
    /// The first request (the ping, or the manifest `HEAD` in its place) answered a
    /// retryable status.
    FirstStatus {
        /// The status.
        status: u16,
        /// The request's path (`/v2/`, `/v2/<name>/manifests/<reference>`).
        path: String,
    },
    /// The first request got no answer over the schemes tried.
    FirstNoAnswer(crate::Tried),
}

/// Why retrying stopped before [`crate::ClientOptions::max_attempts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryStop {
    /// The registry's `Retry-After` is longer than
    /// [`crate::ClientOptions::retry_after_max`].
    RetryAfterTooLong {
        /// What it asked for.
        asked: Duration,
        /// The longest this client waits.
        max: Duration,
    },
    /// Waiting for the next attempt would pass the deadline.
    WouldPassDeadline {
        /// The wait the next attempt needed.
        wait: Duration,
    },
}

/// The tries of one check: each failed attempt, whether the last failure is the
/// answer, and why retrying stopped early.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AttemptHistory {
    /// Every failed attempt, in order.
    pub failed: Vec<FailedAttempt>,
    /// The answer is the last failure (no attempt succeeded after them).
    pub gave_up: bool,
    /// Why retrying stopped before the last attempt allowed, if it did.
    pub stopped: Option<RetryStop>,
}

impl crate::Answer {
    /// Applies `f` to every text of the answer that came from elsewhere (the registry's
    /// error messages and codes, the transport's and parsers' reasons, an authorize
    /// failure), e.g. to redact a credential a registry echoed.
    pub(crate) fn map_texts(&mut self, f: &dyn Fn(&str) -> String) {
        for e in &mut self.errors {
            e.code = f(&e.code);
            e.message = f(&e.message);
        }
        for failure in &mut self.history.failed {
            match failure {
                FailedAttempt::FirstNoAnswer(tried) => tried.map_texts(f),
                FailedAttempt::NoAnswer { why, .. }
                | FailedAttempt::TokenNoAnswer { why }
                | FailedAttempt::FetchNoAnswer { why, .. } => *why = f(why),
                FailedAttempt::Status { .. }
                | FailedAttempt::FirstStatus { .. }
                | FailedAttempt::TokenStatus { .. }
                | FailedAttempt::FetchStatus { .. } => {}
            }
        }
        match &mut self.finding {
            Finding::ManifestUnknown {
                tag_list: TagList::Failed(why),
                ..
            }
            | Finding::PlatformUnchecked { why, .. }
            | Finding::RequestFailed { why, .. } => *why = f(why),
            Finding::Authorization(failure) => failure.map_texts(f),
            _ => {}
        }
    }
}
