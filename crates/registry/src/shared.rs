//! [`Shared`]: what a [`crate::Client`] and every [`crate::Session`] it made share: the
//! options, the retry policy, the request counters, the token cache and the HTTP
//! clients (one verified and one unverified shared pair, plus one per host that has its
//! own certificates, built on first use and kept).
//!
//! It also keeps what each endpoint's ping learned ([`Pinged`]) for [`PING_TTL`], so
//! that a long-running caller's `authorize` calls skip the ping.
//!
//! Reads certificate files (through [`crate::tls`]) when a per-host client is built;
//! sends nothing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use url::Url;

use crate::ping::Pinged;
use crate::pool::{self, Pool};
use crate::retry;
use crate::tls;
use crate::token;
use crate::transport::{self, Counters, Http, Limits, TlsSetup};
use crate::urls::{authority, same_host};
use crate::{ClientOptions, Endpoint};

/// What a client and its sessions share.
pub(crate) struct Shared {
    pub options: ClientOptions,
    pub policy: retry::Policy,
    pub counters: Arc<Counters>,
    pub tokens: token::Cache,
    limits: Limits,
    /// The roots of `ca_file`, for the per-host clients too.
    extra_roots: Vec<tls::Root>,
    secure: Http,
    insecure: Http,
    /// Per-host clients, by host and TLS settings.
    per_host: Mutex<HashMap<TlsKey, Http>>,
    /// What each endpoint's last usable ping learned, and when.
    pings: Mutex<HashMap<Endpoint, (Instant, Pinged)>>,
}

/// How long what a ping learned (the scheme that answered, the challenge) is used
/// instead of pinging again: 5 minutes. Dropped sooner when a token request fails or
/// a request with its token or credential answers 401.
pub(crate) const PING_TTL: Duration = Duration::from_secs(5 * 60);

/// What a per-host HTTP client is built from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct TlsKey {
    /// `host[:port]` as in the URL.
    host: String,
    skip_verify: bool,
    /// The endpoint's own CA files.
    ca_files: Vec<PathBuf>,
    /// The endpoint's own client certificate and key.
    client_cert: Option<(PathBuf, Option<PathBuf>)>,
}

/// Why a [`crate::Client`] cannot be built, as data: a front end names the option or
/// field that gave the file ([`ClientError::fault`]); `Display` is the whole message
/// for everyone else (`cannot build the HTTP client: ca_file PATH: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// [`ClientOptions::ca_file`] cannot be used.
    #[error("cannot build the HTTP client: ca_file {}: {problem}", path.display())]
    CaFile {
        /// The file as given in [`ClientOptions::ca_file`].
        path: PathBuf,
        /// What is wrong with it.
        problem: CaFileProblem,
    },
    /// The TLS configuration cannot be built (no usable system certificate store): the
    /// TLS library's message.
    #[error("cannot build the HTTP client: {0}")]
    Tls(String),
}

/// What is wrong with a CA file ([`ClientError::CaFile`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaFileProblem {
    /// It cannot be read (missing, a directory, over the size limit, no permission):
    /// the operating system's message.
    #[error("{0}")]
    Unreadable(String),
    /// It is not a PEM bundle.
    #[error("not a PEM certificate bundle")]
    NotPem,
    /// It is PEM but holds no certificate.
    #[error("holds no PEM certificate")]
    NoCertificate,
}

impl ClientError {
    /// The file problem as [`pullcheck_files::FileFault`], for a front end to name the
    /// option that gave the file (`--ca-file PATH: ...`); `None` when no file is at
    /// fault. An unreadable file is [`pullcheck_files::FaultKind::Unreadable`]; a file
    /// that is not a PEM bundle, or holds no certificate, is
    /// [`pullcheck_files::FaultKind::Syntax`] without a position.
    pub fn fault(&self) -> Option<pullcheck_files::FileFault<'_>> {
        use pullcheck_files::{FaultKind, FileFault};
        use std::borrow::Cow;
        let ClientError::CaFile { path, problem } = self else {
            return None;
        };
        let (kind, message) = match problem {
            CaFileProblem::Unreadable(message) => {
                (FaultKind::Unreadable, Cow::Borrowed(message.as_str()))
            }
            CaFileProblem::NotPem => (FaultKind::Syntax, Cow::Borrowed("it does not parse")),
            CaFileProblem::NoCertificate => {
                (FaultKind::Syntax, Cow::Borrowed("it holds no certificate"))
            }
        };
        Some(FileFault {
            path: path.to_string_lossy(),
            kind,
            line: None,
            column: None,
            message,
        })
    }
}

/// Reads [`ClientOptions::ca_file`]: a PEM bundle of one or more certificates.
fn read_ca_file(path: &std::path::Path) -> Result<Vec<tls::Root>, ClientError> {
    tls::read_pem_bundle(path).map_err(|problem| ClientError::CaFile {
        path: path.to_owned(),
        problem,
    })
}

impl Shared {
    /// Builds the shared state and the two shared HTTP clients.
    ///
    /// # Errors
    /// [`ClientError::CaFile`] when [`ClientOptions::ca_file`] cannot be read, is not
    /// PEM or holds no certificate; [`ClientError::Tls`] when the TLS configuration
    /// cannot be built (no usable system certificate store).
    pub fn new(options: ClientOptions) -> Result<Shared, ClientError> {
        let extra_roots = match &options.ca_file {
            Some(path) => read_ca_file(path)?,
            None => Vec::new(),
        };
        let limits = Limits::from_options(&options);
        let counters = Arc::new(Counters::default());
        let build = |skip_verify: bool| {
            build_http(
                &options,
                limits,
                &counters,
                TlsSetup {
                    extra_roots: extra_roots.clone(),
                    identity: None,
                    skip_verify,
                },
            )
            .map_err(ClientError::Tls)
        };
        let secure = build(false)?;
        let insecure = build(true)?;
        Ok(Shared {
            policy: retry::Policy::from_options(&options),
            options,
            counters,
            tokens: token::Cache::default(),
            limits,
            extra_roots,
            secure,
            insecure,
            per_host: Mutex::new(HashMap::new()),
            pings: Mutex::new(HashMap::new()),
        })
    }

    /// What the last ping of `endpoint` learned, if it is younger than [`PING_TTL`].
    pub fn cached_ping(&self, endpoint: &Endpoint) -> Option<Pinged> {
        let pings = self
            .pings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (at, pinged) = pings.get(endpoint)?;
        (at.elapsed() < PING_TTL).then(|| pinged.clone())
    }

    /// Keeps what a ping of `endpoint` learned, and drops the expired entries of
    /// other endpoints.
    pub fn remember_ping(&self, endpoint: &Endpoint, pinged: &Pinged) {
        let mut pings = self
            .pings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pings.retain(|_, (at, _)| at.elapsed() < PING_TTL);
        pings.insert(endpoint.clone(), (Instant::now(), pinged.clone()));
    }

    /// Drops what the last ping of `endpoint` learned: the next `authorize` pings.
    pub fn forget_ping(&self, endpoint: &Endpoint) {
        self.pings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(endpoint);
    }

    /// How many per-host clients have been built, for `Debug`.
    pub fn per_host_clients(&self) -> usize {
        self.per_host.lock().map(|m| m.len()).unwrap_or_default()
    }

    /// The HTTP client for `endpoint`: the shared one, or the host's own when
    /// [`ClientOptions::certs_dir`] has a directory for it or the endpoint has its own
    /// CA files or client certificate.
    ///
    /// # Errors
    /// A message naming the file when a certificate file cannot be used.
    pub fn http_for_endpoint(&self, endpoint: &Endpoint) -> Result<Http, String> {
        self.http_with(TlsKey {
            host: endpoint.host.clone(),
            skip_verify: endpoint.skip_verify,
            ca_files: endpoint.ca_files.clone(),
            client_cert: endpoint.client_cert.clone(),
        })
    }

    /// The client for a token realm, with the realm host's own certificates when
    /// `certs_dir` has them and the endpoint's CA files. On the endpoint's host it is the
    /// endpoint's client (skipping verification if the endpoint does, with its client
    /// certificate); a realm elsewhere is verified and gets no client certificate.
    ///
    /// # Errors
    /// A message naming the file when a certificate file cannot be used.
    pub fn realm_http(&self, endpoint: &Endpoint, realm: &Url) -> Result<Http, String> {
        let same = same_host(&endpoint.host, realm);
        self.http_with(TlsKey {
            host: authority(realm),
            skip_verify: endpoint.skip_verify && same,
            ca_files: endpoint.ca_files.clone(),
            client_cert: endpoint.client_cert.clone().filter(|_| same),
        })
    }

    /// The shared client when nothing is specific to the host; otherwise the host's own,
    /// built once: the shared roots, the host's `certs_dir` directory, then the key's CA
    /// files and client certificate (which replaces the directory's).
    fn http_with(&self, key: TlsKey) -> Result<Http, String> {
        let dir = self
            .options
            .certs_dir
            .as_deref()
            .and_then(|certs_dir| tls::host_dir(certs_dir, &key.host));
        if dir.is_none() && key.ca_files.is_empty() && key.client_cert.is_none() {
            return Ok(if key.skip_verify {
                self.insecure.clone()
            } else {
                self.secure.clone()
            });
        }
        let mut per_host = self
            .per_host
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(http) = per_host.get(&key) {
            return Ok(http.clone());
        }
        let mut roots = self.extra_roots.clone();
        let mut identity = None;
        let mut from = Vec::new();
        if let Some(dir) = &dir {
            let host_tls = tls::read_host_dir(dir)?;
            roots.extend(host_tls.roots);
            identity = host_tls.identity;
            from.push(host_tls.dir.display().to_string());
        }
        for file in &key.ca_files {
            roots.extend(tls::read_roots(file)?);
            from.push(file.display().to_string());
        }
        if let Some((cert, cert_key)) = &key.client_cert {
            identity = Some(tls::read_identity(cert, cert_key.as_deref())?);
            from.push(cert.display().to_string());
        }
        let http = build_http(
            &self.options,
            self.limits,
            &self.counters,
            TlsSetup {
                extra_roots: roots,
                identity,
                skip_verify: key.skip_verify,
            },
        )
        .map_err(|e| format!("TLS settings from {}: {e}", from.join(", ")))?;
        tracing::debug!(host = %key.host, from = %from.join(", "), "built a client with the host's certificates");
        per_host.insert(key, http.clone());
        Ok(http)
    }
}

/// One HTTP client with the options' user agent, limits and redirect policy.
///
/// # Errors
/// The reason the TLS configuration cannot be built.
fn build_http(
    options: &ClientOptions,
    limits: Limits,
    counters: &Arc<Counters>,
    tls: TlsSetup,
) -> Result<Http, String> {
    let egress = Arc::new(options.egress.clone());
    let config = pool::tls_config(&tls.extra_roots, tls.identity.as_ref(), tls.skip_verify)?;
    let user_agent = reqwest::header::HeaderValue::from_str(&options.user_agent)
        .map_err(|_| "the user agent is not a valid header value".to_string())?;
    let pool = (!transport::proxy_configured()).then(|| {
        Arc::new(Pool::new(
            config.clone(),
            Arc::clone(&egress),
            options.max_connections_per_host,
            // As reqwest was set: the connect timeout, or else the request timeout.
            Some(limits.connect.unwrap_or(limits.total).min(limits.total)),
        ))
    });
    transport::build_client(
        &options.user_agent,
        limits,
        options.max_redirects,
        &egress,
        config,
    )
    .map(|client| Http {
        client,
        pool,
        user_agent,
        max_redirects: options.max_redirects,
        limits,
        counters: Arc::clone(counters),
        observer: options.observer.clone(),
        egress,
    })
    .map_err(|e| format!("the HTTP client cannot be built ({e})"))
}
