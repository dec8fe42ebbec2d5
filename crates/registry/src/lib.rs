//! A client for the OCI distribution API that answers one question per image: does
//! this manifest exist, as seen with these credentials?
//!
//! A [`Client`] pings a registry ([`Client::authorize`]; at most every 5 minutes per
//! endpoint while what it learned keeps working), answers its
//! challenge (`Bearer` tokens, one request for every repository, or `Basic`), and yields
//! a [`Session`] whose [`Session::check`] sends one `HEAD` per image and classifies the
//! answer as [`Status::Present`], [`Status::Missing`], [`Status::NoAccess`] (missing, or
//! no access: registries answer 401 for both), [`Status::Denied`] or
//! [`Status::Unreachable`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Status};
//!
//! let client = Client::new(ClientOptions::default())?;
//! let endpoint = Endpoint::new("registry-1.docker.io");
//! let repositories = vec!["library/alpine".to_string()];
//! let session = client
//!     .authorize(&endpoint, &Credential::Anonymous, &repositories)
//!     .await?;
//! let answer = session.check("library/alpine", "3.19").await;
//! assert_eq!(answer.status, Status::Present);
//! # Ok(())
//! # }
//! ```
//!
//! What a build can rely on:
//! - **Bounded in time.** Every request has a total timeout (and optional connect and
//!   read timeouts); retries and their backoff sleeps stop at an optional deadline
//!   ([`ClientOptions::deadline`], [`Client::authorize_before`],
//!   [`Session::check_before`]). A registry that hangs, trickles or loops ends as
//!   [`Status::Unreachable`] with the reason.
//! - **Retried only when it may help.** 408, 429 (after `Retry-After`, seconds or an
//!   HTTP date, up to a cap), 502, 503, 504 and refused or reset connections, at most
//!   [`ClientOptions::max_attempts`] times with jittered exponential backoff; never
//!   400, 401, 403 or 404. [`Answer::attempts`] and [`Answer::history`] tell each
//!   attempt's failure.
//! - **Never "missing" by mistake.** A 401 is [`Status::NoAccess`]; a hiccup is
//!   [`Status::Unreachable`]; only a 404 (or an index without the platform asked for) is
//!   [`Status::Missing`].
//! - **Credentials stay where they belong.** `Authorization` is dropped when a redirect
//!   changes host; no redirect from https to http; no plain-HTTP token realm for a
//!   verified registry; client certificates go only to their host.
//! - **Connects only where allowed.** [`ClientOptions::egress`] ([`EgressPolicy`]) is
//!   applied to every URL before it is sent, to every redirect and to the addresses a
//!   name resolves to (the connection uses exactly those); link-local and cloud
//!   metadata addresses ([`DEFAULT_DENY`]) are always refused. A refusal is
//!   [`Status::Refused`] with an [`EgressRefusal`] naming the rule; nothing is sent
//!   to that host.
//! - **Hostile answers are answers.** Garbage, oversized headers, truncated or
//!   malformed bodies and unknown error codes are classified, never a panic.
//! - **Built for a service too.** One [`Client`] serves many `authorize` calls: tokens
//!   and what each ping learned stay warm (only the `HEAD`s are sent while both are
//!   fresh); [`Session::check_with`] takes a platform and a deadline per call; an
//!   [`Observer`] ([`ClientOptions::observer`]) sees every request's host, kind,
//!   status, duration and `RateLimit-Remaining`, and every token cache hit.
//!
//! Code map (containerd's `remotes/docker` split), in import order: each module uses
//! only those above it (and the value types of this file), so imports run one way.
//! - Pure: `egress` parses and matches the egress rules; `challenge` parses
//!   `WWW-Authenticate`; `scope` builds token scopes and
//!   batches; `errcode` reads the error envelope; `finding` holds what an answer found,
//!   as data ([`Finding`], [`ErrorEntry`], [`AttemptHistory`]: this crate writes no
//!   sentence about an answer; the `pullcheck` engine words it); `urls` builds request URLs; `retry`
//!   decides whether and when to try again (its `Attempts::retry` only sleeps) and reads
//!   `Retry-After`.
//! - `observe` defines the [`Observer`] a service sets to watch requests (no IO).
//! - `tls` reads certificate files (the only module besides the drivers below that
//!   touches the file system); `transport` owns the HTTP clients, their limits and the
//!   one `send` every request goes through; `pool` holds the connections it sends on
//!   (at most [`ClientOptions::max_connections_per_host`] per origin, one over HTTP/2,
//!   opened ahead by [`Client::pre_open`]).
//! - `token` plans and reads token requests (pure), fetches them and caches them;
//!   `auth` decides what follows a ping (`auth::Auth`, the one auth state) and what
//!   an `insufficient_scope` asks for (pure); `classify` turns a manifest answer into an
//!   [`Answer`], `hints` reads the tag list after a 404, `platform` reads index
//!   platforms (all pure).
//! - Drivers, which do IO: `ping` (the `GET /v2/`), `shared` (the state a client and
//!   its sessions share: HTTP clients, built per host reading certificates through
//!   `tls`, the token cache, and what each endpoint's ping learned, kept 5 minutes),
//!   `session` (the query loop), `client` (`authorize`).
//!
//! So IO is in `tls` (files), `transport`, `pool`, `token::fetch`, `ping`, `shared` (files,
//! through `tls`), `session` and `client`; the rest is pure.
//!
//! Secrets (passwords, tokens, `Authorization` headers) never appear in a message, a
//! `Debug` output or a trace event; trace events show the method, the URL without its
//! query, the status and the time.

#![warn(missing_docs)]

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod auth;
mod challenge;
mod classify;
mod client;
mod egress;
mod errcode;
mod failure;
mod finding;
mod hints;
mod observe;
mod ping;
mod platform;
mod pool;
mod reason;
mod retry;
mod scope;
mod session;
mod shared;
mod tls;
mod token;
mod transport;
mod urls;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

pub use client::Client;
pub use egress::{
    DEFAULT_DENY, EgressMatch, EgressPatternError, EgressPolicy, EgressRefusal, EgressRule,
    RefusalRule,
};
pub use failure::{
    AuthFailure, ChallengeProblem, FailedHost, HeaderPart, HostRole, NoAnswer, Presented,
    RealmProblem, Scheme, TokenReplyProblem, Tried,
};
pub use finding::{
    AttemptHistory, ErrorEntry, FailedAttempt, Finding, ManifestRef, Method, PlatformSource,
    RefusedRequest, Requester, RetryStop, TagCount, TagList,
};
pub use observe::{Observer, RequestEvent, RequestKind};
/// A credential to present to a registry; defined in `pullcheck-credentials` (a crate
/// without HTTP), re-exported here so that `pullcheck_registry::Credential` names it.
pub use pullcheck_credentials::Credential;
pub use reason::{CertificateProblem, Reason};
pub use session::Session;
pub use shared::{CaFileProblem, ClientError};
pub use urls::MANIFEST_ACCEPT;

/// How to reach one registry host: where its API is, and what every request to it
/// carries. Build it with [`Endpoint::new`] and struct update syntax, so that new fields
/// keep their defaults:
///
/// ```
/// use pullcheck_registry::Endpoint;
///
/// // containerd: a mirror with `override_path`, asked on behalf of docker.io.
/// let mirror = Endpoint {
///     allow_http: true,
///     base_path: "/custom/prefix/".into(),
///     query: vec![("ns".into(), "docker.io".into())],
///     ..Endpoint::new("mirror.example.com:5000")
/// };
/// assert_eq!(Endpoint::new("registry-1.docker.io").base_path, "/v2/");
/// # let _ = mirror;
/// ```
///
/// `Debug` shows the names of [`Endpoint::headers`], never their values.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `host[:port]` as it goes in the URL, e.g. `registry-1.docker.io`, `127.0.0.1:5000`,
    /// `[::1]:5000`.
    pub host: String,
    /// Plain HTTP may be used (when HTTPS fails before any HTTP answer), as Docker
    /// allows for insecure registries and for `localhost`/127.0.0.0/8. The first
    /// request (ping, or manifest `HEAD` in its place) then goes over plain HTTP too,
    /// without credentials, when HTTPS fails before any answer or has not answered
    /// within 250 ms (unless [`Endpoint::headers`] is set: then only after a failure),
    /// and its answer is used when HTTPS failed, or HTTPS's TLS port has sent no byte
    /// by the plain answer's verdict (`Client::authorize_first`).
    pub allow_http: bool,
    /// Only plain HTTP is used, never HTTPS: an `http://` endpoint as containerd asks it
    /// (a hosts.toml `http://` host without a TLS setting, a CRI `mirrors` endpoint or
    /// default host with the `http` scheme; containerd 1.6.20
    /// `remotes/docker/config/hosts.go` `ConfigureHosts` and `pkg/cri/server/image_pull.go`
    /// `registryHosts` lines 354-411 and `defaultScheme` lines 415-420, which set the
    /// host's scheme and no fallback). Implies [`Endpoint::allow_http`].
    pub http_only: bool,
    /// TLS certificates are not verified (an insecure registry).
    pub skip_verify: bool,
    /// The path of the API base on the host, starting and ending with `/`: `/v2/` for
    /// the distribution API ([`Endpoint::API_PATH`], the default). The ping is
    /// `GET <base_path>`, a manifest `<base_path><name>/manifests/<reference>`, a tag
    /// list `<base_path><name>/tags/list`. A mirror may serve the API elsewhere
    /// (containerd's `override_path`: the configured path as it is, e.g.
    /// `/custom/prefix/`). A missing leading or trailing `/` is added; an empty path is
    /// [`Endpoint::API_PATH`].
    pub base_path: String,
    /// Query parameters added to every request to this host (ping, manifests, tag
    /// lists), in order; containerd asks a mirror with `ns=<the image's registry>`.
    pub query: Vec<(String, String)>,
    /// Headers added to every request to this host (containerd's `[header]`), in order;
    /// never to a token realm. A header this client sets itself (`Accept` on manifest
    /// requests, and `Authorization` when it has a credential to send) replaces the
    /// configured one. A name or value that is not a valid header fails
    /// [`Client::authorize`]. Values are treated as secrets: never logged or shown.
    pub headers: Vec<(String, String)>,
    /// PEM files of extra root certificates trusted for this host (containerd's `ca`),
    /// in addition to the system's roots, [`ClientOptions::ca_file`] and the host's
    /// [`ClientOptions::certs_dir`] directory. Also trusted for a token realm on another
    /// host.
    pub ca_files: Vec<PathBuf>,
    /// A TLS client certificate presented to this host (and to a token realm on the
    /// same host): the certificate file and the key file, or `None` when the key is in
    /// the certificate file (containerd's `client`). It replaces a client certificate
    /// from [`ClientOptions::certs_dir`].
    pub client_cert: Option<(PathBuf, Option<PathBuf>)>,
}

impl Endpoint {
    /// The distribution API's base path.
    pub const API_PATH: &'static str = "/v2/";

    /// `host` over HTTPS with verified TLS, at [`Endpoint::API_PATH`], with no extra
    /// query, headers or certificates.
    pub fn new(host: impl Into<String>) -> Endpoint {
        Endpoint {
            host: host.into(),
            allow_http: false,
            http_only: false,
            skip_verify: false,
            base_path: Endpoint::API_PATH.to_string(),
            query: Vec::new(),
            headers: Vec::new(),
            ca_files: Vec::new(),
            client_cert: None,
        }
    }

    /// [`Endpoint::base_path`] as used: starting and ending with `/`, `/v2/` when empty.
    pub fn api_path(&self) -> String {
        let trimmed = self.base_path.trim_matches('/');
        if self.base_path.is_empty() {
            Endpoint::API_PATH.to_string()
        } else if trimmed.is_empty() {
            "/".to_string()
        } else {
            format!("/{trimmed}/")
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("allow_http", &self.allow_http)
            .field("http_only", &self.http_only)
            .field("skip_verify", &self.skip_verify)
            .field("base_path", &self.base_path)
            .field("query", &self.query)
            .field("headers", &header_names)
            .field("ca_files", &self.ca_files)
            .field("client_cert", &self.client_cert)
            .finish()
    }
}

/// Client settings. Build with `..ClientOptions::default()` so that new fields keep
/// their defaults.
///
/// Every wait is bounded: each request by [`ClientOptions::request_timeout`] (and the
/// optional connect and read timeouts), retries by [`ClientOptions::max_attempts`], and
/// everything, backoff sleeps included, by the optional [`ClientOptions::deadline`] or
/// the deadline passed to [`Client::authorize_before`] and [`Session::check_before`].
///
/// `Debug` shows every field but the observer, of which only whether one is set.
#[derive(Clone)]
pub struct ClientOptions {
    /// Total timeout of each HTTP request, from connecting to the end of the (bounded)
    /// body. Default 10 s (10 000 ms). Shortened for a request when less time is left
    /// before the deadline.
    pub request_timeout: Duration,
    /// Timeout of the TCP connect and TLS handshake. `None` (the default): bounded by
    /// `request_timeout` only.
    pub connect_timeout: Option<Duration>,
    /// Longest wait for the answer's head, and then between two reads of its body.
    /// `None` (the default): bounded by `request_timeout` only.
    pub read_timeout: Option<Duration>,
    /// Nothing is sent, and no backoff sleeps, past this instant; a check that reaches it
    /// answers [`Status::Unreachable`] naming the deadline. Default `None`. A deadline
    /// passed per call applies as well; the earlier one wins.
    pub deadline: Option<Instant>,
    /// Tries of one check (or one `authorize`), the first included, when answers are
    /// retryable: 408, 429, 502, 503, 504, and connections refused, reset or closed
    /// before the answer. 400, 401, 403, 404, timeouts, TLS failures and malformed
    /// answers are never retried. Default 3; 0 counts as 1.
    pub max_attempts: u32,
    /// The first backoff; each further one doubles, up to `backoff_max`, and is jittered
    /// to between half and all of that. Default 200 ms.
    pub backoff_base: Duration,
    /// The longest backoff between two attempts. Default 2 s.
    pub backoff_max: Duration,
    /// A `Retry-After` (delta-seconds or HTTP date) up to this long is waited out
    /// before the next attempt; a longer one ends the retries, and the answer says so.
    /// Default 10 s.
    pub retry_after_max: Duration,
    /// Redirects followed per request; more is an error ("too many redirects"). A
    /// redirect to another host, port or scheme drops `Authorization` (as reqwest's
    /// redirect handling does; the pool's requests follow the same rules, in
    /// `transport.rs`); one from `https` to `http` is refused. Default 5.
    pub max_redirects: usize,
    /// After a 404, one `GET /v2/<name>/tags/list?n=1000` to tell a missing repository from a
    /// missing tag and to suggest close tags; never sent after any other answer.
    /// Default true.
    pub tag_hints: bool,
    /// `User-Agent` header.
    pub user_agent: String,
    /// A PEM file of extra root certificates, trusted for every registry and token
    /// realm in addition to the system's roots. Default `None`.
    pub ca_file: Option<PathBuf>,
    /// A Docker-style certificates directory (like `/etc/docker/certs.d`): for a host
    /// `H` (`host` or `host:port`, as in the URL), every `<dir>/H/*.crt` is an extra
    /// root for `H`, and `<dir>/H/client.cert` with `<dir>/H/client.key` (any
    /// `NAME.cert` with its `NAME.key`, the first by name) is the client certificate
    /// presented to `H` (mutual TLS). Hosts without a directory use the shared client.
    /// Default `None`.
    pub certs_dir: Option<PathBuf>,
    /// When set, a manifest that is an index or a manifest list (by the `Content-Type`
    /// of the `HEAD`) is fetched with one `GET`, and the image counts as present only
    /// if the index lists this platform; otherwise [`Status::Missing`] with
    /// [`Missing::Platform`], [`Answer::platforms`] listing those present. A single-platform
    /// image manifest is fetched with one `GET`, then its config blob with another
    /// ([`RequestKind::Blob`]), and counts as present only if the config's `os`,
    /// `architecture` and `variant` match; otherwise [`Missing::Platform`] naming both
    /// platforms. Default `None`: a `GET` counts against Docker Hub's pull limits, a
    /// `HEAD` does not.
    /// [`Session::check_with`] takes a platform per call instead.
    pub platform: Option<Platform>,
    /// Told of every HTTP request sent and every token served from the cache
    /// ([`Observer`]), e.g. for a service's metrics. Default `None`.
    pub observer: Option<Arc<dyn Observer>>,
    /// Where the client may connect: checked for every URL before it is sent
    /// (registry, token realm, blob), for every redirect before it is followed, and
    /// for the addresses a host name resolves to, which are the only ones the
    /// connection then uses (no second lookup). A refused host gets nothing: the
    /// answer is [`Status::Refused`] with [`AuthorizeError::refusal`] or
    /// [`Answer::refusal`] naming the rule. Default [`EgressPolicy::default`]: the
    /// [`DEFAULT_DENY`] list (link-local and cloud metadata addresses) only.
    pub egress: EgressPolicy,
    /// At most this many connections open at once to one origin (scheme, host, port),
    /// counting those opened ahead by [`Client::pre_open`]; a request waits for one of
    /// them when all are busy. Over HTTP/2 every request shares one connection. The
    /// checker sets it to its concurrency (`--concurrency`). Default 32; 0 counts as 1.
    /// Not applied when the environment names an HTTP proxy (`HTTPS_PROXY`, …): then
    /// every request goes through reqwest's own pool.
    pub max_connections_per_host: usize,
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("read_timeout", &self.read_timeout)
            .field("deadline", &self.deadline)
            .field("max_attempts", &self.max_attempts)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("retry_after_max", &self.retry_after_max)
            .field("max_redirects", &self.max_redirects)
            .field("tag_hints", &self.tag_hints)
            .field("user_agent", &self.user_agent)
            .field("ca_file", &self.ca_file)
            .field("certs_dir", &self.certs_dir)
            .field("platform", &self.platform)
            .field("observer", &self.observer.as_ref().map(|_| "set"))
            .field("egress", &self.egress)
            .field("max_connections_per_host", &self.max_connections_per_host)
            .finish()
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            connect_timeout: None,
            read_timeout: None,
            deadline: None,
            max_attempts: 3,
            backoff_base: Duration::from_millis(200),
            backoff_max: Duration::from_secs(2),
            retry_after_max: Duration::from_secs(10),
            max_redirects: 5,
            tag_hints: true,
            user_agent: concat!("pullcheck/", env!("CARGO_PKG_VERSION")).to_string(),
            ca_file: None,
            certs_dir: None,
            platform: None,
            observer: None,
            egress: EgressPolicy::default(),
            max_connections_per_host: 32,
        }
    }
}

/// A platform, as in the `platform` object of an OCI index or Docker manifest list
/// entry (OCI image spec, "Image Index"): `os`, `architecture` and `variant`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Platform {
    /// The operating system, e.g. `linux`, `windows`.
    pub os: String,
    /// The CPU architecture in Go's terms (`GOARCH`), e.g. `amd64`, `arm64`, `arm`.
    pub arch: String,
    /// The CPU variant, e.g. `v8` for `arm64`, `v7` for `arm`; `None` matches any.
    pub variant: Option<String>,
}

impl Platform {
    /// Reads `os/arch[/variant]`, e.g. `linux/amd64` or `linux/arm/v7`, as
    /// `docker --platform` takes it.
    ///
    /// # Errors
    /// A message when there are not two or three non-empty parts separated by `/`.
    pub fn parse(s: &str) -> Result<Platform, String> {
        let parts: Vec<&str> = s.split('/').collect();
        let ok = (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.trim().is_empty());
        if !ok {
            return Err(format!(
                "platform {s:?} is not os/arch[/variant], e.g. linux/amd64 or linux/arm/v7"
            ));
        }
        Ok(Platform {
            os: parts[0].trim().to_string(),
            arch: parts[1].trim().to_string(),
            variant: parts.get(2).map(|v| v.trim().to_string()),
        })
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.arch)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

/// The status of one manifest query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// 200 that looks like a registry's manifest answer (a manifest `Content-Type` or a
    /// `Docker-Content-Digest`; and, when a platform is asked for, listed by the index).
    Present,
    /// 404: the tag, digest or repository does not exist; or the index does not list
    /// the platform asked for.
    Missing,
    /// 401 after authenticating (or anonymously): missing, or no access with these credentials.
    NoAccess,
    /// 403, or credentials rejected.
    Denied,
    /// Network error, timeout, 5xx or 429 after the retries, a deadline reached, or an
    /// answer that makes no sense (not HTTP, a header too large, a redirect loop, a
    /// wrong digest, an index that cannot be read, a 200 with neither a manifest
    /// `Content-Type` nor a `Docker-Content-Digest`: a web server, proxy or captive
    /// portal, not a registry).
    Unreachable,
    /// The egress policy ([`ClientOptions::egress`]) refuses the registry, its token
    /// realm or a redirect target; nothing was sent to that host. The refusal
    /// ([`Answer::refusal`], [`AuthorizeError::refusal`]) names the rule.
    Refused,
}

/// What is missing, for [`Status::Missing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Missing {
    /// The repository exists but not the tag.
    Tag,
    /// The digest does not exist.
    Digest,
    /// The repository does not exist.
    Repository,
    /// The manifest exists, but its index does not list the platform asked for
    /// ([`ClientOptions::platform`]); [`Answer::platforms`] lists those present.
    Platform,
}

/// The answer for one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The classification.
    pub status: Status,
    /// What is missing, when known.
    pub missing: Option<Missing>,
    /// Why, as data ([`Reason`]); [`Answer::finding`] has its facts.
    pub reason: Reason,
    /// For [`Reason::TagNotFound`]: the repository's tags close to the one asked for
    /// (edit distance), best first, (a "did you mean"); else empty.
    pub close_tags: Vec<String>,
    /// `Docker-Content-Digest` of a present manifest, when the registry sent it.
    pub digest: Option<String>,
    /// What was found, as data ([`Finding`]); the engine words it. Never a secret.
    pub finding: Finding,
    /// The error envelope's entries of the answer that decided it (OCI distribution
    /// spec, "Error Codes"), in order; empty when there was none (a `HEAD` has no body).
    /// At most the first 10 are kept (a registry may send thousands);
    /// [`Answer::errors_omitted`] counts the rest.
    pub errors: Vec<ErrorEntry>,
    /// How many entries of the envelope were past the 10 kept in [`Answer::errors`].
    pub errors_omitted: usize,
    /// Each failed attempt before this answer, and why retrying stopped early.
    pub history: AttemptHistory,
    /// The HTTP status of the manifest request that decided the answer (404 also when
    /// the tag list refined it); `None` when no HTTP answer came (network failure, or a
    /// token that could not be obtained).
    pub http_status: Option<u16>,
    /// The `Content-Type` of a present manifest, without parameters, e.g.
    /// `application/vnd.oci.image.index.v1+json`.
    pub media_type: Option<String>,
    /// How many attempts the check took: 1, plus one for each retry after a retryable
    /// failure of any of its requests (manifest, token, index), at most
    /// [`ClientOptions::max_attempts`]. When an attempt failed, [`Answer::history`] lists
    /// why each failed attempt failed, and why retrying stopped early if it did.
    pub attempts: u32,
    /// For [`Status::Refused`]: the egress rule and what it matched.
    pub refusal: Option<EgressRefusal>,
    /// For [`Reason::PlatformNotFound`]: the platforms the image index lists, in its
    /// order (OCI image index `manifests[].platform`); for [`Reason::PlatformMismatch`]:
    /// the one platform the single-platform image's config names; else empty.
    pub platforms: Vec<Platform>,
    /// For [`Reason::RateLimited`]: the wait the registry asked for in its last 429's
    /// `Retry-After` header (seconds or an HTTP date, RFC 9110 §10.2.3), when it sent
    /// one; else `None`.
    pub retry_after: Option<std::time::Duration>,
}

impl Answer {
    /// An answer of `status` for `reason` with `finding`, after one attempt, with no
    /// HTTP status, digest, media type, missing kind or other facts.
    pub fn new(status: Status, reason: Reason, finding: Finding) -> Answer {
        Answer {
            status,
            missing: None,
            reason,
            close_tags: Vec::new(),
            digest: None,
            finding,
            errors: Vec::new(),
            errors_omitted: 0,
            history: AttemptHistory::default(),
            http_status: None,
            media_type: None,
            attempts: 1,
            refusal: None,
            platforms: Vec::new(),
            retry_after: None,
        }
    }
}

/// A failure to ping or authenticate against a registry, which applies to every image on
/// it: its status and reason, and the facts as data ([`AuthorizeError::failure`], which
/// names the host that failed and its role, [`AuthFailure::failed_host`]); the engine
/// words it. After retries, [`AuthorizeError::history`] lists each attempt's failure.
/// `Display` is terse data (`connection_refused at token server auth.example:5001`),
/// not a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at {} {}", .failure.failed_host().role.as_str(), .failure.failed_host().host)]
pub struct AuthorizeError {
    /// How the images on this registry are classified.
    pub status: Status,
    /// Why, as data ([`Reason`]).
    pub reason: Reason,
    /// What failed, as data (boxed: the error stays small). Never a secret.
    pub failure: Box<AuthFailure>,
    /// For [`Status::Refused`]: the egress rule and what it matched (the same as
    /// [`AuthFailure::refusal`]).
    pub refusal: Option<EgressRefusal>,
    /// For [`Reason::TlsUntrusted`] from the registry's own https endpoint: what is wrong
    /// with its certificate; `None` otherwise.
    pub certificate: Option<CertificateProblem>,
    /// Each failed attempt before this failure, and why retrying stopped early (boxed:
    /// the error stays small).
    pub history: Box<AttemptHistory>,
}

impl AuthorizeError {
    /// An error of `status`, for `reason`, with `failure`, its refusal (if any) and no
    /// certificate problem or history.
    pub fn new(status: Status, reason: Reason, failure: AuthFailure) -> AuthorizeError {
        AuthorizeError {
            status,
            reason,
            refusal: failure.refusal().cloned(),
            failure: Box::new(failure),
            certificate: None,
            history: Box::default(),
        }
    }

    /// [`Status::Refused`] ([`Reason::EgressDenied`]) for `failure`, an
    /// [`AuthFailure::Refused`] or [`AuthFailure::TokenServerRefused`].
    pub(crate) fn refused(failure: AuthFailure) -> AuthorizeError {
        AuthorizeError::new(Status::Refused, Reason::EgressDenied, failure)
    }
}
