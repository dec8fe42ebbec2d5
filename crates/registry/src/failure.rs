//! Why a ping, login or token request failed, as data: [`AuthFailure`], the facts of
//! an [`crate::AuthorizeError`] (and of an [`crate::Answer`] whose token could not be
//! obtained during the query, [`crate::Finding::Authorization`]). Each variant names
//! the host that failed and its role ([`AuthFailure::failed_host`]: the registry or its
//! token server), never a secret; the engine (`pullcheck`'s `detail` module) words it.
//!
//! Invariant: pure value types; the set is closed (a new situation is a new variant,
//! worded by the engine), and texts kept here are other parties' words (the transport's
//! reason, a parser's error), each redacted of the credential it might echo.

use serde::Serialize;

use crate::{EgressRefusal, Reason};

/// The role of a host in authorizing the images of a registry. Serialised in
/// snake_case (`registry`, `token_server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostRole {
    /// The registry itself (its `/v2/` ping, the first manifest `HEAD`, the Basic
    /// credential check, or its `WWW-Authenticate` challenge).
    Registry,
    /// The token server of its `Bearer` challenge (the `realm`; distribution token-auth
    /// spec).
    TokenServer,
}

impl HostRole {
    /// The snake_case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            HostRole::Registry => "registry",
            HostRole::TokenServer => "token_server",
        }
    }
}

/// The host that failed ([`AuthFailure::failed_host`]): `host[:port]` as in the URL,
/// its role, and the HTTP status it answered when its answer was the failure.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct FailedHost {
    /// `host[:port]`, e.g. `registry.example.com`, `127.0.0.1:5000`, `auth.docker.io`.
    pub host: String,
    /// The registry, or its token server.
    pub role: HostRole,
    /// The status that host answered: the ping's or the Basic credential check's
    /// (role registry), the token request's (role token_server: `401`, `403`, `500`,
    /// the `200` of a reply without a token, …). `None` when it gave no HTTP answer,
    /// was refused by the egress policy, or its answer was not the failure (a
    /// challenge that cannot be used). Serialised only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

/// A request that got no HTTP answer: the transport's reason, as data and in its
/// own words.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NoAnswer {
    /// Which failure ([`Reason::ConnectionRefused`], [`Reason::Timeout`],
    /// [`Reason::TlsUntrusted`], …).
    pub kind: Reason,
    /// The transport's words for it (`connection refused`, `timed out after 10000 ms`),
    /// without URL or secret.
    pub why: String,
}

/// A URL scheme the registry was asked over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `https://`.
    Https,
    /// Plain `http://`.
    Http,
}

impl Scheme {
    /// `https` or `http`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }
}

/// How a registry that gave no answer was tried.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tried {
    /// One request on the scheme its ping answered over (the Basic credential check).
    Request(NoAnswer),
    /// Over one scheme only: `https` for an endpoint not allowed plain HTTP, or when
    /// the https failure was an answer (an untrusted certificate); `http` for an
    /// `http://` endpoint.
    Over {
        /// The scheme.
        scheme: Scheme,
        /// Its failure.
        failure: NoAnswer,
    },
    /// Over https, then plain http (an endpoint allowed plain HTTP).
    Both {
        /// The https failure.
        https: NoAnswer,
        /// The plain http failure.
        http: NoAnswer,
    },
}

impl Tried {
    /// Applies `f` to each failure's words.
    pub(crate) fn map_texts(&mut self, f: &dyn Fn(&str) -> String) {
        match self {
            Tried::Request(n) | Tried::Over { failure: n, .. } => n.why = f(&n.why),
            Tried::Both { https, http } => {
                https.why = f(&https.why);
                http.why = f(&http.why);
            }
        }
    }
}

/// The credential a registry or token server rejected, named, never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Presented {
    /// A user name and password: the user name.
    User(String),
    /// An identity (refresh) token (`identitytoken` in a Docker config).
    IdentityToken,
    /// A registry (bearer) token (`registrytoken` in a Docker config).
    RegistryToken,
}

impl Presented {
    /// The credential as named; `None` for [`crate::Credential::Anonymous`].
    pub fn of(credential: &crate::Credential) -> Option<Presented> {
        match credential {
            crate::Credential::Anonymous => None,
            crate::Credential::Basic { username, .. } => Some(Presented::User(username.clone())),
            crate::Credential::IdentityToken(_) => Some(Presented::IdentityToken),
            crate::Credential::RegistryToken(_) => Some(Presented::RegistryToken),
        }
    }
}

/// Which part of a configured header ([`crate::Endpoint::headers`]) is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderPart {
    /// The name is not an HTTP header name (RFC 9110 `token`).
    Name,
    /// The value holds bytes a header value cannot (a line break, …).
    Value,
}

/// What is wrong with a `Bearer` challenge's `realm` (distribution token-auth spec: an
/// absolute `https` URL; plain `http` only for an insecure registry).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RealmProblem {
    /// The challenge has no `realm`, or an empty one.
    Missing,
    /// The realm is not a URL: the realm as sent and the URL parser's words.
    NotAUrl {
        /// The realm as sent.
        realm: String,
        /// The `url` crate's words (`relative URL without a base`).
        error: String,
    },
    /// The realm's scheme is neither `https` nor `http` (the scheme).
    Scheme(String),
    /// The realm URL has no host.
    NoHost,
}

/// Why a 401's challenge cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChallengeProblem {
    /// An authentication scheme this client does not speak (the first challenge's
    /// scheme, lower case, e.g. `negotiate`).
    Unsupported(String),
    /// `WWW-Authenticate` does not follow RFC 7235's grammar.
    Malformed {
        /// What was expected.
        reason: String,
        /// The byte offset into the header value where it broke.
        position: usize,
    },
    /// A 401 without any `WWW-Authenticate` challenge.
    Missing,
}

/// Why a token server's 2xx gave no usable token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TokenReplyProblem {
    /// The body is not the token reply's JSON: the JSON parser's words.
    NotJson(String),
    /// Neither `token` nor `access_token` holds a non-empty string.
    NoToken,
    /// The body is larger than the limit (KiB).
    TooLarge {
        /// The limit, in KiB.
        limit_kib: usize,
    },
    /// The token holds bytes an HTTP header cannot carry.
    Unsendable,
    /// The configured registry token ([`Presented::RegistryToken`]) holds bytes an HTTP
    /// header cannot carry.
    ConfiguredUnsendable,
}

/// Why the images of a registry could not be asked about: the ping, the challenge, the
/// credential check or the token request failed. Hosts are `host[:port]` as in the URL;
/// `registry` is the registry's, `realm` its token server's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuthFailure {
    /// The registry host is not a valid `host[:port]` (reason
    /// [`Reason::ClientConfig`]).
    InvalidHost {
        /// The host as configured.
        host: String,
    },
    /// A configured header ([`crate::Endpoint::headers`]) is not valid: its name (never
    /// its value) and which part (reason [`Reason::ClientConfig`]).
    InvalidHeader {
        /// The registry.
        host: String,
        /// The header's name as configured.
        name: String,
        /// Whether the name or the value is invalid.
        part: HeaderPart,
    },
    /// The HTTP client for the registry (or its token server) cannot be built: a CA
    /// file or certificates directory that cannot be used (reason
    /// [`Reason::ClientConfig`]).
    ClientConfig {
        /// The registry.
        host: String,
        /// The certificate module's words (`cannot read /etc/docker/certs.d/…: …`).
        why: String,
    },
    /// The registry gave no HTTP answer (reason: the transport's, [`NoAnswer::kind`]).
    Unreachable {
        /// The registry.
        host: String,
        /// Over which schemes, and each one's failure.
        tried: Tried,
    },
    /// The egress policy refuses the registry (or a redirect of its ping); nothing was
    /// sent to it (reason [`Reason::EgressDenied`]).
    Refused {
        /// The registry.
        host: String,
        /// The rule and what it matched.
        refusal: EgressRefusal,
    },
    /// The ping (`GET /v2/`) answered a status that is neither 2xx nor 401: 403
    /// ([`Reason::AccessDenied`]), 404 (not a registry), 429 (rate limited) or another
    /// (a server error).
    PingStatus {
        /// The registry.
        host: String,
        /// The URL pinged, with the endpoint's query.
        url: String,
        /// The status.
        status: u16,
    },
    /// The registry's `Bearer` realm is plain HTTP and the registry is not configured
    /// as insecure: refused, so that no credential goes over plain HTTP (reason
    /// [`Reason::NotARegistry`]).
    InsecureRealm {
        /// The registry.
        host: String,
        /// The realm's `scheme://host` (without port or path), e.g. `http://auth.example`.
        realm: String,
    },
    /// The registry's `Bearer` challenge cannot be used (reason
    /// [`Reason::NotARegistry`]).
    BadRealm {
        /// The registry.
        host: String,
        /// What is wrong with its realm.
        problem: RealmProblem,
    },
    /// The registry's 401 cannot be answered (reason [`Reason::UnsupportedAuth`]).
    UnsupportedChallenge {
        /// The registry.
        host: String,
        /// Why.
        problem: ChallengeProblem,
    },
    /// The registry rejected a user name and password on its Basic credential check
    /// (`GET /v2/` answered 401 or 403; reason [`Reason::CredentialsRejected`]).
    CredentialsRejected {
        /// The registry.
        host: String,
        /// The credential, named.
        credential: Presented,
        /// The status.
        status: u16,
    },
    /// The Basic credential check answered another status than 2xx, 401 or 403 (reason
    /// [`Reason::ServerError`]).
    CredentialCheckStatus {
        /// The registry.
        host: String,
        /// The status.
        status: u16,
    },
    /// The token server refused an anonymous token (401 or 403; reason
    /// [`Reason::UnauthorizedAnonymous`]): credentials are needed.
    TokenAnonymousRefused {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// The status.
        status: u16,
    },
    /// The token server rejected the credential (401, 403, or OAuth2 `invalid_grant`;
    /// reason [`Reason::CredentialsRejected`]).
    TokenRejected {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// The credential, named.
        credential: Presented,
        /// The status.
        status: u16,
    },
    /// The token server answered another error status (reason [`Reason::RateLimited`]
    /// for 429, else [`Reason::ServerError`]).
    TokenStatus {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// The status.
        status: u16,
    },
    /// The token server gave no HTTP answer (reason: the transport's).
    TokenUnreachable {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// The transport's failure.
        failure: NoAnswer,
    },
    /// The token server answered 2xx without a usable token (reason
    /// [`Reason::BadTokenReply`]), or the configured registry token cannot be sent
    /// ([`TokenReplyProblem::ConfiguredUnsendable`], reason [`Reason::NotARegistry`]).
    TokenReply {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// What is wrong with the reply.
        problem: TokenReplyProblem,
        /// The reply's 2xx status; `None` for a configured registry token (nothing
        /// was asked).
        status: Option<u16>,
    },
    /// The egress policy refuses the token server (or a redirect of the token
    /// request); nothing was sent to it (reason [`Reason::EgressDenied`]).
    TokenServerRefused {
        /// The registry.
        registry: String,
        /// The token server, `host[:port]`.
        realm: String,
        /// The rule and what it matched.
        refusal: EgressRefusal,
    },
}

impl AuthFailure {
    /// The host that failed, its role (the token server for the `Token*` variants,
    /// the registry for the others) and the status it answered
    /// ([`AuthFailure::http_status`]).
    pub fn failed_host(&self) -> FailedHost {
        let (host, role) = match self {
            AuthFailure::InvalidHost { host }
            | AuthFailure::InvalidHeader { host, .. }
            | AuthFailure::ClientConfig { host, .. }
            | AuthFailure::Unreachable { host, .. }
            | AuthFailure::Refused { host, .. }
            | AuthFailure::PingStatus { host, .. }
            | AuthFailure::InsecureRealm { host, .. }
            | AuthFailure::BadRealm { host, .. }
            | AuthFailure::UnsupportedChallenge { host, .. }
            | AuthFailure::CredentialsRejected { host, .. }
            | AuthFailure::CredentialCheckStatus { host, .. } => (host, HostRole::Registry),
            AuthFailure::TokenAnonymousRefused { realm, .. }
            | AuthFailure::TokenRejected { realm, .. }
            | AuthFailure::TokenStatus { realm, .. }
            | AuthFailure::TokenUnreachable { realm, .. }
            | AuthFailure::TokenReply { realm, .. }
            | AuthFailure::TokenServerRefused { realm, .. } => (realm, HostRole::TokenServer),
        };
        FailedHost {
            host: host.clone(),
            role,
            http_status: self.http_status(),
        }
    }

    /// The HTTP status of the answer that failed, when the failure was an answer of
    /// the failed host: the ping's, the Basic credential check's, the token
    /// request's.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            AuthFailure::PingStatus { status, .. }
            | AuthFailure::CredentialsRejected { status, .. }
            | AuthFailure::CredentialCheckStatus { status, .. }
            | AuthFailure::TokenAnonymousRefused { status, .. }
            | AuthFailure::TokenRejected { status, .. }
            | AuthFailure::TokenStatus { status, .. } => Some(*status),
            AuthFailure::TokenReply { status, .. } => *status,
            AuthFailure::InvalidHost { .. }
            | AuthFailure::InvalidHeader { .. }
            | AuthFailure::ClientConfig { .. }
            | AuthFailure::Unreachable { .. }
            | AuthFailure::Refused { .. }
            | AuthFailure::InsecureRealm { .. }
            | AuthFailure::BadRealm { .. }
            | AuthFailure::UnsupportedChallenge { .. }
            | AuthFailure::TokenUnreachable { .. }
            | AuthFailure::TokenServerRefused { .. } => None,
        }
    }

    /// The egress refusal, for [`AuthFailure::Refused`] and
    /// [`AuthFailure::TokenServerRefused`].
    pub fn refusal(&self) -> Option<&EgressRefusal> {
        match self {
            AuthFailure::Refused { refusal, .. }
            | AuthFailure::TokenServerRefused { refusal, .. } => Some(refusal),
            _ => None,
        }
    }

    /// Applies `f` to every text that came from elsewhere (the transport's reasons,
    /// parsers' errors), e.g. to redact a credential one of them echoed.
    pub(crate) fn map_texts(&mut self, f: &dyn Fn(&str) -> String) {
        match self {
            AuthFailure::ClientConfig { why, .. } => *why = f(why),
            AuthFailure::Unreachable { tried, .. } => tried.map_texts(f),
            AuthFailure::BadRealm {
                problem: RealmProblem::NotAUrl { realm, error },
                ..
            } => {
                *realm = f(realm);
                *error = f(error);
            }
            AuthFailure::TokenUnreachable { failure, .. } => failure.why = f(&failure.why),
            AuthFailure::TokenReply {
                problem: TokenReplyProblem::NotJson(why),
                ..
            } => *why = f(why),
            _ => {}
        }
    }
}
