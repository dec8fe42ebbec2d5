//! A client for the OCI distribution API that answers one question per image: does
//! this manifest exist, as seen with these credentials?
//!
//! STUB: being written; the public API below is the contract.

use std::fmt;
use std::time::Duration;

/// How to reach one registry host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `host[:port]` as it goes in the URL, e.g. `registry-1.docker.io`, `127.0.0.1:5000`,
    /// `[::1]:5000`.
    pub host: String,
    /// Plain HTTP may be used (after HTTPS fails), as Docker allows for insecure
    /// registries and for `localhost`/127.0.0.0/8.
    pub allow_http: bool,
    /// TLS certificates are not verified (an insecure registry).
    pub skip_verify: bool,
}

/// A credential to present to a registry. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// No credentials.
    Anonymous,
    /// A user name and password (Basic to the registry or to the token realm).
    Basic {
        /// The user name.
        username: String,
        /// The password; never printed.
        password: String,
    },
    /// An OAuth2 refresh token (`identitytoken`).
    IdentityToken(String),
    /// A ready bearer token (`registrytoken`).
    RegistryToken(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Self::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
            Self::RegistryToken(_) => f.write_str("RegistryToken(<redacted>)"),
        }
    }
}

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Timeout of each HTTP request, connect to end of headers. Default 10 s.
    pub request_timeout: Duration,
    /// After a 404, one `GET /v2/<name>/tags/list` to tell a missing repository from a
    /// missing tag and to suggest close tags. Default true.
    pub tag_hints: bool,
    /// `User-Agent` header.
    pub user_agent: String,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            tag_hints: true,
            user_agent: concat!("pullcheck/", env!("CARGO_PKG_VERSION")).to_string(),
        }
    }
}

/// The status of one manifest query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// 200.
    Present,
    /// 404: the tag, digest or repository does not exist.
    Missing,
    /// 401 after authenticating (or anonymously): missing, or no access with these credentials.
    NoAccess,
    /// 403, or credentials rejected.
    Denied,
    /// Network error, timeout, 5xx, or an answer that makes no sense.
    Unreachable,
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
}

/// The answer for one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The classification.
    pub status: Status,
    /// What is missing, when known.
    pub missing: Option<Missing>,
    /// `Docker-Content-Digest` of a present manifest, when the registry sent it.
    pub digest: Option<String>,
    /// Human detail: HTTP status, error code, suggestion ("did you mean 3.19?"). Never a secret.
    pub detail: String,
}

/// A failure to ping or authenticate against a registry, which applies to every image on it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct AuthorizeError {
    /// How the images on this registry are classified.
    pub status: Status,
    /// What happened, naming the host. Never a secret.
    pub message: String,
}

/// One HTTP client per run, shared by every registry.
#[derive(Debug, Clone)]
pub struct Client {
    _options: ClientOptions,
}

impl Client {
    /// Builds the client.
    ///
    /// # Errors
    /// When the TLS configuration cannot be built.
    pub fn new(options: ClientOptions) -> Result<Client, AuthorizeError> {
        Ok(Client { _options: options })
    }

    /// Pings `endpoint` and, if it challenges, authenticates once for all `repositories`
    /// (paths such as `library/alpine`), yielding a session that can query them.
    ///
    /// # Errors
    /// [`AuthorizeError`] when the registry is unreachable or rejects the credential.
    pub async fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
    ) -> Result<Session, AuthorizeError> {
        let _ = (endpoint, credential, repositories);
        todo!()
    }
}

/// An authenticated view of one registry. Cheap to clone, `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Session {}

impl Session {
    /// `HEAD /v2/<repository>/manifests/<reference>` with all four manifest types in
    /// `Accept`, classified per the OCI distribution spec.
    pub async fn check(&self, repository: &str, reference: &str) -> Answer {
        let _ = (repository, reference);
        todo!()
    }
}
