//! Why a manifest query ended as it did, as data: the closed set of reasons that every
//! [`crate::Answer`] and [`crate::AuthorizeError`] carries beside its status and its
//! facts (an answer's [`crate::Finding`]), so that callers test facts
//! (`answer.reason == Reason::Timeout`), never the wording. As go-containerregistry's `transport.Error` codes, but for the whole
//! answer (network and TLS failures included), not only the registry's error envelope.
//!
//! Invariant: pure; the set only grows, and a value's serialised name never changes.

use serde::Serialize;

use crate::Missing;

/// The reason for an answer. Serialised in snake_case (`tag_not_found`); [`Reason::as_str`]
/// gives the same name. Each variant says which [`crate::Status`] it goes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Present: the registry served the manifest (a manifest `Content-Type` or a
    /// `Docker-Content-Digest`; listing the platform asked for).
    Found,
    /// Missing: the repository exists, the tag does not (404, and the tag list lacks it).
    TagNotFound,
    /// Missing: the digest does not exist (404).
    DigestNotFound,
    /// Missing: the manifest (tag or digest) answered 404, and whether the repository
    /// exists is not known: tag hints are off ([`crate::ClientOptions::tag_hints`]), or
    /// the tag list request got no answer. [`crate::Answer::missing`] says which was
    /// asked for.
    ManifestUnknown,
    /// Missing: the repository does not exist (404 `NAME_UNKNOWN`, or its tag list 404s).
    RepositoryNotFound,
    /// Missing: the manifest exists, but not for the platform asked for.
    PlatformNotFound,
    /// Missing (the platform): a single-platform image manifest whose config names
    /// another platform. Unlike [`Reason::PlatformNotFound`] (an index without it), the
    /// runtimes pull it (containerd checks platforms only of an index's entries;
    /// containers/image only logs the mismatch), and the container then fails to start.
    PlatformMismatch,
    /// No access: 401 anonymously (the registry or its token server): missing, or
    /// credentials are needed; the registry does not tell the two apart.
    UnauthorizedAnonymous,
    /// No access: 401 with a credential that the registry accepted for login: missing,
    /// or no access with it.
    Unauthorized,
    /// No access: the registry asks for a user name and password and none is configured
    /// (or the configured credential is a token, which Basic cannot send).
    CredentialsRequired,
    /// No access: the registry's challenge cannot be answered (an unsupported scheme, a
    /// malformed `WWW-Authenticate`, a 401 without a challenge).
    UnsupportedAuth,
    /// Denied: the registry or its token server rejected the credential (401/403 at
    /// login or token time).
    CredentialsRejected,
    /// Denied: 403 on the manifest or the ping.
    AccessDenied,
    /// Unreachable: 429 after the retries, or a `Retry-After` longer than allowed.
    RateLimited,
    /// Unreachable: a 5xx, or an HTTP status this client does not expect.
    ServerError,
    /// Unreachable: the answer is not a registry's (404 on `/v2/`, a 200 without a
    /// manifest, not HTTP, a redirect loop, an unusable challenge, an index that cannot
    /// be read).
    NotARegistry,
    /// Unreachable: the registry's token server answered 2xx without a usable token
    /// (no `token` nor `access_token`, not the token reply's JSON, too large, a token
    /// an HTTP header cannot carry); [`crate::AuthFailure::TokenReply`] says which.
    BadTokenReply,
    /// Unreachable: the registry named another digest than the one asked for.
    DigestMismatch,
    /// The https certificate is not valid for the host (unknown authority, expired, not
    /// yet valid, another name, revoked, bad signature). The query layer reports it
    /// `denied`: the registry as reached is not the one named.
    TlsUntrusted,
    /// Unreachable: another TLS failure (handshake, a client certificate required or
    /// refused, not TLS on this port).
    TlsFailed,
    /// Unreachable: the connection was refused.
    ConnectionRefused,
    /// Unreachable: the connection was reset, closed early, or the host or network is
    /// unreachable.
    ConnectionFailed,
    /// Unreachable: a request timed out (connect, read or total timeout).
    Timeout,
    /// Unreachable: the host name did not resolve (DNS).
    NameNotResolved,
    /// Unreachable: the overall deadline passed before an answer.
    DeadlineExceeded,
    /// Unreachable: the client's own configuration is unusable for this host (a header
    /// that is not valid, a CA file or certificates directory that cannot be read).
    ClientConfig,
    /// Refused: the egress policy refused the host (of the URL, a redirect, or the
    /// addresses its name resolved to); nothing was sent to it.
    EgressDenied,
}

impl Reason {
    /// The snake_case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Found => "found",
            Reason::TagNotFound => "tag_not_found",
            Reason::DigestNotFound => "digest_not_found",
            Reason::ManifestUnknown => "manifest_unknown",
            Reason::RepositoryNotFound => "repository_not_found",
            Reason::PlatformNotFound => "platform_not_found",
            Reason::PlatformMismatch => "platform_mismatch",
            Reason::UnauthorizedAnonymous => "unauthorized_anonymous",
            Reason::Unauthorized => "unauthorized",
            Reason::CredentialsRequired => "credentials_required",
            Reason::UnsupportedAuth => "unsupported_auth",
            Reason::CredentialsRejected => "credentials_rejected",
            Reason::AccessDenied => "access_denied",
            Reason::RateLimited => "rate_limited",
            Reason::ServerError => "server_error",
            Reason::NotARegistry => "not_a_registry",
            Reason::BadTokenReply => "bad_token_reply",
            Reason::DigestMismatch => "digest_mismatch",
            Reason::TlsUntrusted => "tls_untrusted",
            Reason::TlsFailed => "tls_failed",
            Reason::ConnectionRefused => "connection_refused",
            Reason::ConnectionFailed => "connection_failed",
            Reason::Timeout => "timeout",
            Reason::NameNotResolved => "name_not_resolved",
            Reason::DeadlineExceeded => "deadline_exceeded",
            Reason::ClientConfig => "client_config",
            Reason::EgressDenied => "egress_denied",
        }
    }
}

impl From<Missing> for Reason {
    fn from(missing: Missing) -> Reason {
        match missing {
            Missing::Tag => Reason::TagNotFound,
            Missing::Digest => Reason::DigestNotFound,
            Missing::Repository => Reason::RepositoryNotFound,
            Missing::Platform => Reason::PlatformNotFound,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialised_names() {
        for r in [
            Reason::Found,
            Reason::TagNotFound,
            Reason::ManifestUnknown,
            Reason::UnauthorizedAnonymous,
            Reason::TlsUntrusted,
            Reason::BadTokenReply,
            Reason::DeadlineExceeded,
            Reason::ClientConfig,
            Reason::EgressDenied,
        ] {
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::Value::String(r.as_str().into())
            );
        }
    }
}

/// What is wrong with a registry's https certificate, for [`Reason::TlsUntrusted`]: the
/// certificate errors of rustls (`rustls::CertificateError`) that Go's `crypto/x509`
/// also tells apart (`UnknownAuthorityError`, `CertificateInvalidError` with `Expired`,
/// `HostnameError`), so the front ends word it without reading a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CertificateProblem {
    /// Signed by an authority the client does not trust (no CA given for the host).
    UnknownAuthority,
    /// Expired.
    Expired,
    /// Not yet valid.
    NotYetValid,
    /// Issued for another host name or address.
    OtherHost,
    /// Revoked.
    Revoked,
    /// Its signature does not verify.
    BadSignature,
    /// Invalid for another reason.
    Invalid,
}
