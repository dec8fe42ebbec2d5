//! A client for the OCI distribution API that answers one question per image: does
//! this manifest exist, as seen with these credentials?
//!
//! A [`Client`] pings a registry once per run ([`Client::authorize`]), answers its
//! challenge (`Bearer` tokens, one request for every repository, or `Basic`), and yields
//! a [`Session`] whose [`Session::check`] sends one `HEAD` per image and classifies the
//! answer as [`Status::Present`], [`Status::Missing`], [`Status::NoAccess`] (missing, or
//! no access: registries answer 401 for both), [`Status::Denied`] or
//! [`Status::Unreachable`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), pullcheck_registry::AuthorizeError> {
//! use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Status};
//!
//! let client = Client::new(ClientOptions::default())?;
//! let endpoint = Endpoint {
//!     host: "registry-1.docker.io".into(),
//!     allow_http: false,
//!     skip_verify: false,
//! };
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
//! Code map (containerd's `remotes/docker` split): `challenge` parses
//! `WWW-Authenticate`; `scope` builds token scopes and URLs; `token` plans, fetches and
//! reads tokens; `auth` decides what follows a ping; `errcode` reads the error
//! envelope; `classify` turns an answer into an [`Answer`]; `transport` owns the HTTP
//! clients; `client` and `session` drive them. Everything but `transport`, `token::fetch`,
//! `client` and `session` is pure.
//!
//! Secrets (passwords, tokens, `Authorization` headers) never appear in a message, a
//! `Debug` output or a trace event; trace events show the method, the URL without its
//! query, the status and the time.

#![warn(missing_docs)]

use std::fmt;
use std::time::Duration;

mod auth;
mod challenge;
mod classify;
mod client;
mod errcode;
mod scope;
mod session;
mod token;
mod transport;

pub use client::Client;
pub use session::{MANIFEST_ACCEPT, Session};

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
    /// Timeout of each HTTP request, from connecting to the end of the (bounded) body;
    /// also the connect timeout. Default 10 s.
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
    /// The HTTP status of the manifest request that decided the answer (404 also when
    /// the tag list refined it); `None` when no HTTP answer came (network failure, or a
    /// token that could not be obtained).
    pub http_status: Option<u16>,
    /// The `Content-Type` of a present manifest, without parameters, e.g.
    /// `application/vnd.oci.image.index.v1+json`.
    pub media_type: Option<String>,
}

/// A failure to ping or authenticate against a registry, which applies to every image on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AuthorizeError {
    /// How the images on this registry are classified.
    pub status: Status,
    /// What happened, naming the host. Never a secret.
    pub message: String,
}
