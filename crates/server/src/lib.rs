//! `pullcheck serve`: the check as a long-running HTTP service that CI workers call at
//! build start, answered from warm connections and cached tokens.
//!
//! The API (v1):
//! - `POST /v1/checks`: a JSON [`api::CheckRequest`] with one of `pipeline`, `build`
//!   and `manifests`, and `images` beside it or alone; answers 200 with the same JSON report that
//!   `pullcheck check --format json` prints, plus `"exit_code"`. Errors are
//!   `{"error": {"message", "line"?, "column"?}}`: 400 bad input, 401 no matching bearer
//!   token, 403 a namespace the caller may not name, 413 a body over `max_body`, 415 not
//!   JSON, 503 (with `Retry-After`) over `max_checks` in flight, 502/504 when the
//!   Kubernetes lookups fail or time out.
//! - `POST /v1/admission` (and `/v1/admission/warn`, `/v1/admission/deny`), with
//!   [`ServeOptions::admission`]: the validating admission webhook ([`admission`]); an
//!   `admission.k8s.io/v1` `AdmissionReview` in and out, no bearer token, TLS only.
//! - `GET /healthz` (alive), `GET /readyz` (JSON: ready, or what is not and why, [`ready`];
//!   with a cluster, ready once its API server answered), `GET /metrics`
//!   ([`metrics::Metrics`]).
//!
//! Connections are served by our own accept loop ([`conn`]: header, body and idle time
//! limits, HTTP/2 keep-alive pings, a connection cap, TLS with reload, a drain at
//! shutdown). Built as tower layers around small handlers (request id, trace, shutdown
//! gate, auth, body limit and body reader, HTTP metrics); the handlers parse the request into the library's inputs
//! ([`pullcheck_sources`]), call the shared [`pullcheck::Checker`], and serialise the
//! report. One [`AppState`] holds everything shared. Nothing a check does is spawned: a
//! client that disconnects drops its handler's future, and the check with it.

#![warn(missing_docs)]

pub mod admission;
pub mod api;
pub mod auth;
mod body;
mod check;
pub mod conn;
mod decode;
pub mod logging;
pub mod metrics;
pub mod ready;
mod reload;
mod render;
pub mod setting;

pub use logging::{LogFormat, init_logging};
pub use render::version_warning;
pub use setting::{ConfigError, ServeSetting, plain_setting_name};

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pullcheck::credentials::NodeCredentials;
use pullcheck::registry::ClientOptions;
use pullcheck::resolve::Resolver;
use pullcheck::{Checker, CheckerOptions};
use pullcheck_kube::{Cluster, ClusterOptions};
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use auth::{Caller, NamespaceGlob, TokenFile};
use metrics::Metrics;

/// Default `max_body`: 8 MiB.
pub const DEFAULT_MAX_BODY: usize = 8 << 20;
/// Default `max_checks`.
pub const DEFAULT_MAX_CHECKS: usize = 64;
/// Default `header_read_timeout`: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `body_read_timeout`: 30 s.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `idle_timeout`: 60 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default `http2_keep_alive_interval`: 30 s.
pub const DEFAULT_HTTP2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// Default `max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default `max_parses`: 2, so that parsing never takes every runtime thread of a
/// 2-core Pod.
pub const DEFAULT_MAX_PARSES: usize = 2;
/// Default `max_body_reads`.
pub const DEFAULT_MAX_BODY_READS: usize = 16;
/// Default `max_images`: image uses of one check.
pub const DEFAULT_MAX_IMAGES: usize = 1_000;
/// How often the TLS certificate and key files are looked at for a change.
const TLS_POLL: Duration = Duration::from_secs(5);

/// A certificate chain and its key, PEM files; re-read when either changes.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain (PEM).
    pub cert: PathBuf,
    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Everything `pullcheck serve` is started with.
#[derive(Debug)]
pub struct ServeOptions {
    /// Where to listen. Port 0 picks a free port ([`Server::local_addr`]).
    pub listen: SocketAddr,
    /// Mirrors and insecure registries.
    pub resolver: Resolver,
    /// The node's credentials (Docker config, auth file, helpers).
    pub node: NodeCredentials,
    /// The registry client's options (timeouts, retries, TLS files, tag hints).
    pub client: ClientOptions,
    /// Registry requests in flight at once, over all checks together (one limit for
    /// the whole service, [`CheckerOptions::concurrency`]). Default 32.
    pub concurrency: usize,
    /// How to reach the cluster for requests that name a `namespace`: kubeconfig and
    /// context (its `namespace` is ignored). `None`: such requests get 400.
    pub cluster: Option<ClusterOptions>,
    /// Whether a failure to load `cluster`'s configuration stops the start (an explicit
    /// `--kubeconfig`); otherwise it is logged and requests naming a namespace get 400.
    pub cluster_required: bool,
    /// The bearer tokens file (`TOKEN` or `TOKEN ns1,ns2` per line). `None`: no auth,
    /// allowed on loopback only unless `insecure_listen`.
    pub api_token_file: Option<PathBuf>,
    /// Namespace globs a request may name (empty: any, subject to the token's own list).
    pub allow_namespaces: Vec<String>,
    /// The largest body accepted, in bytes; more gets 413.
    pub max_body: usize,
    /// Checks in flight at most; more get 503 with `Retry-After`.
    pub max_checks: usize,
    /// Request bodies being received at once, at most (each up to `max_body`, read
    /// before a check slot is taken); more get 503 with `Retry-After`. Memory for bodies
    /// stays below `(max_body_reads + max_checks) * max_body`.
    pub max_body_reads: usize,
    /// Request texts being parsed at once, at most, on `/v1/checks` and again on the
    /// admission routes (the YAML and JSON trees of pipelines, manifests and admission
    /// reviews, on the blocking pool); more wait their turn while holding their check or
    /// review slot. What bounds the memory of parsing, which is
    /// the largest cost of a request (about 100 bytes of RSS per byte of YAML at worst:
    /// docs/benchmarks.md, "Worst requests").
    pub max_parses: usize,
    /// How long a request head (HTTP/1.1, from its first byte) and the TLS handshake may
    /// take; a slower client's connection is closed (Go's `ReadHeaderTimeout`).
    pub header_read_timeout: Duration,
    /// How long a request body may take to arrive whole; a slower one gets 408 and never
    /// holds a check slot (nginx's `client_body_timeout`, as one deadline).
    pub body_read_timeout: Duration,
    /// How long a connection without a request in flight stays open (HTTP/1.1
    /// keep-alive, or HTTP/2 without streams; Go's `IdleTimeout`).
    pub idle_timeout: Duration,
    /// How often an HTTP/2 connection is pinged; one whose ping is unanswered for
    /// [`conn::KEEP_ALIVE_TIMEOUT`] is closed.
    pub http2_keep_alive_interval: Duration,
    /// Open connections at most; a new one over the cap closes the one idle longest, or
    /// is closed when every one has a request in flight.
    pub max_connections: usize,
    /// Image uses of one check at most, counted as the inputs are read (each container,
    /// each `images` entry; a step reached through a YAML alias where it is used); more
    /// get 413 before anything is planned or asked. Default [`DEFAULT_MAX_IMAGES`].
    pub max_images: usize,
    /// The longest deadline of a check; a request's `deadline_seconds` may only shorten it.
    pub deadline: Duration,
    /// The Vela runtime of the builds checked (`--runtime`), for requests without
    /// `runtime`; `None`: Kubernetes when the request names a namespace or pods
    /// template, else Docker ([`pullcheck_sources::CheckRequest::build_runtime`]).
    pub runtime: Option<pullcheck_sources::Runtime>,
    /// The Kubernetes runtime's placeholder image (`--placeholder-image`), for requests
    /// without `placeholder_image`; `None`:
    /// [`pullcheck_sources::DEFAULT_PLACEHOLDER_IMAGE`]. Checked, as every image, through
    /// the node's mirrors (`resolver`), as the node pulls it.
    pub placeholder_image: Option<String>,
    /// How long requests in flight may still run after the shutdown signal; new requests
    /// meanwhile get 503 with `Retry-After` (and `Connection: close`), and those still
    /// running at its end are answered 503 the same way.
    pub shutdown_grace: Duration,
    /// TLS; `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Allow a non-loopback address without a token file and TLS.
    pub insecure_listen: bool,
    /// Keep positive answers this long (tags; digests ten times as long) and answer
    /// later checks from them ([`pullcheck::CheckerOptions::cache_present`]); `None`
    /// (the default): every check asks the registries.
    pub cache_present: Option<Duration>,
    /// The validating admission webhook (`POST /v1/admission`); `None`: not served.
    /// Needs `tls`: the API server calls webhooks over HTTPS only.
    pub admission: Option<admission::AdmissionOptions>,
    /// How the front end that starts the service names a [`ServeSetting`] in the
    /// answers, warnings and logs that name one (a limit a request went over, in an
    /// error's message and `flag`); default [`plain_setting_name`]. The CLI gives its
    /// flags (`--max-images`); this crate names none.
    pub setting_name: fn(ServeSetting) -> &'static str,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            resolver: Resolver::default(),
            node: NodeCredentials::empty(),
            client: ClientOptions::default(),
            concurrency: 32,
            cluster: None,
            cluster_required: false,
            api_token_file: None,
            allow_namespaces: Vec::new(),
            max_body: DEFAULT_MAX_BODY,
            max_checks: DEFAULT_MAX_CHECKS,
            max_body_reads: DEFAULT_MAX_BODY_READS,
            max_parses: DEFAULT_MAX_PARSES,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            http2_keep_alive_interval: DEFAULT_HTTP2_KEEP_ALIVE_INTERVAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_images: DEFAULT_MAX_IMAGES,
            deadline: Duration::from_secs(60),
            runtime: None,
            placeholder_image: None,
            shutdown_grace: Duration::from_secs(20),
            cache_present: None,
            tls: None,
            insecure_listen: false,
            admission: None,
            setting_name: plain_setting_name,
        }
    }
}

/// Why the service cannot start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A setting or a configuration file is wrong: which, and what is wrong, as data
    /// ([`ConfigError`]); the front end names the setting ([`ConfigError::words`]).
    #[error("{0}")]
    Config(ConfigError),
    /// The address cannot be bound, or the server failed.
    #[error("{0}")]
    Io(String),
    /// The cluster named by the kubeconfig or context options cannot be used (only when
    /// they were given: [`ServeOptions::cluster_required`]); as data, so that the front end
    /// names its own option for the kubeconfig file as `check` does.
    #[error("{0}")]
    Cluster(pullcheck_kube::KubeError),
    /// The checker cannot be built (a CA file that cannot be used, the TLS setup); as
    /// data, so that the front end names its option for the file
    /// ([`pullcheck::registry::ClientError::fault`]).
    #[error("{0}")]
    Checker(pullcheck::Error),
}

/// What every request shares: built once at start, passed with axum's `State`.
pub struct AppState {
    checker: Checker,
    cluster: Result<Cluster, String>,
    tokens: Option<TokenFile>,
    allow_namespaces: Vec<NamespaceGlob>,
    metrics: Arc<Metrics>,
    checks: Arc<tokio::sync::Semaphore>,
    max_checks: usize,
    max_body: usize,
    body_reads: Arc<tokio::sync::Semaphore>,
    parses: Arc<tokio::sync::Semaphore>,
    review_parses: Arc<tokio::sync::Semaphore>,
    max_body_reads: usize,
    body_read_timeout: Duration,
    max_images: usize,
    deadline: Duration,
    runtime: Option<pullcheck_sources::Runtime>,
    placeholder_image: Option<String>,
    readiness: ready::Readiness,
    lifecycle: Arc<conn::Lifecycle>,
    admission: Option<admission::Admission>,
    /// The front end's names of the service's settings ([`ServeOptions::setting_name`]).
    setting_name: fn(ServeSetting) -> &'static str,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("max_checks", &self.max_checks)
            .field("max_body", &self.max_body)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The front end's name of `setting` ([`ServeOptions::setting_name`]).
    pub(crate) fn name(&self, setting: ServeSetting) -> &'static str {
        (self.setting_name)(setting)
    }

    /// Runs `parse` (CPU-bound: a request's texts turned into trees) on the blocking pool
    /// under one of `--max-parses` permits, waiting for one: at most that many trees are
    /// being built at once, and the runtime's threads stay free for `/healthz` and the
    /// registry requests. `review`: the admission routes' own permits, so that reviews
    /// (which need no token) never hold up `/v1/checks`.
    ///
    /// # Errors
    /// The parse panicked (a bug): the caller answers 500.
    pub(crate) async fn parse<T: Send + 'static>(
        &self,
        review: bool,
        parse: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        let permits = if review {
            &self.review_parses
        } else {
            &self.parses
        };
        let _permit = permits.acquire().await;
        tokio::task::spawn_blocking(parse).await
    }

    /// The service's metrics; the registry client's request observer reports into them.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}

/// A bound, configured service; [`Server::run`] serves it.
pub struct Server {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    state: Arc<AppState>,
    tls: Option<(TlsFiles, conn::TlsConfig, Option<Verifier>)>,
    grace: Duration,
    limits: conn::ConnLimits,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Installs aws-lc-rs as rustls' process-wide provider (the workspace's provider), once;
/// another already installed is kept.
fn install_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

impl Server {
    /// Loads the configuration (token file, namespace globs, TLS files, the cluster's
    /// configuration), builds the checker, and binds the address.
    ///
    /// # Errors
    /// [`ServeError::Config`] for a bad setting or file, or a non-loopback address
    /// without a token file and TLS (unless `insecure_listen`); [`ServeError::Io`] when
    /// the address cannot be bound. Must be called inside a Tokio runtime.
    pub async fn bind(options: ServeOptions) -> Result<Server, ServeError> {
        install_crypto_provider();
        if options.admission.is_some() && options.tls.is_none() {
            return Err(ServeError::Config(ConfigError::AdmissionNeedsTls));
        }
        let admission = match &options.admission {
            Some(a) => Some(admission::Admission::new(a).map_err(ServeError::Config)?),
            None => None,
        };
        if options
            .placeholder_image
            .as_ref()
            .is_some_and(|p| p.trim().is_empty())
        {
            return Err(ServeError::Config(ConfigError::Empty(
                ServeSetting::PlaceholderImage,
            )));
        }
        if !options.listen.ip().is_loopback() && !options.insecure_listen {
            let mut missing = Vec::new();
            if options.api_token_file.is_none() {
                missing.push(ServeSetting::ApiTokenFile);
            }
            if options.tls.is_none() {
                missing.push(ServeSetting::Tls);
            }
            if !missing.is_empty() {
                return Err(ServeError::Config(ConfigError::Exposed {
                    listen: options.listen,
                    missing,
                }));
            }
        }
        let metrics = Arc::new(Metrics::new());
        let tokens = match options.api_token_file {
            Some(path) => Some(TokenFile::load(path.clone(), metrics.clone()).map_err(
                |message| {
                    ServeError::Config(ConfigError::File {
                        setting: ServeSetting::ApiTokenFile,
                        paths: vec![path],
                        message,
                    })
                },
            )?),
            None => None,
        };
        let allow_namespaces = options
            .allow_namespaces
            .iter()
            .map(|p| {
                NamespaceGlob::new(p).map_err(|message| {
                    ServeError::Config(ConfigError::Pattern {
                        setting: ServeSetting::AllowNamespace,
                        pattern: Some(p.clone()),
                        message,
                    })
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let verifier = match options
            .admission
            .as_ref()
            .and_then(|a| a.client_ca.as_ref())
        {
            Some(path) => Some(client_verifier(path).map_err(|message| {
                ServeError::Config(ConfigError::File {
                    setting: ServeSetting::AdmissionClientCa,
                    paths: vec![path.clone()],
                    message,
                })
            })?),
            None => None,
        };
        let tls = match options.tls {
            Some(files) => {
                let config = load_tls(&files, verifier.as_ref()).map_err(|e| {
                    ServeError::Config(ConfigError::File {
                        setting: ServeSetting::Tls,
                        // The file at fault when one is; else the pair.
                        paths: e.path.map_or_else(
                            || vec![files.cert.clone(), files.key.clone()],
                            |p| vec![p],
                        ),
                        message: e.message,
                    })
                })?;
                Some((
                    files,
                    Arc::new(std::sync::RwLock::new(Arc::new(config))),
                    verifier,
                ))
            }
            None => None,
        };
        let cluster = match &options.cluster {
            Some(o) => match Cluster::connect(o).await {
                Ok(c) => Ok(c),
                Err(e) if options.cluster_required => {
                    return Err(ServeError::Cluster(e));
                }
                Err(e) => {
                    tracing::info!("no Kubernetes API: {e}; requests naming a namespace get 400");
                    Err(e.to_string())
                }
            },
            None => Err("no kubeconfig is configured".to_owned()),
        };
        let checker = Checker::new(
            CheckerOptions {
                concurrency: options.concurrency,
                registry: ClientOptions {
                    observer: Some(Arc::new(metrics::RegistryObserver(Arc::clone(&metrics)))),
                    ..options.client
                },
                cache_present: options.cache_present,
            },
            options.resolver,
            options.node,
        )
        .map_err(ServeError::Checker)?;
        let listener = std::net::TcpListener::bind(options.listen)
            .map_err(|e| ServeError::Io(format!("cannot listen on {}: {e}", options.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::Io(e.to_string()))?;
        for (value, setting) in [
            (options.max_body_reads, ServeSetting::MaxBodyReads),
            (options.max_parses, ServeSetting::MaxParses),
            (options.max_connections, ServeSetting::MaxConnections),
        ] {
            if value == 0 {
                return Err(ServeError::Config(ConfigError::Zero(setting)));
            }
        }
        for (value, setting) in [
            (options.header_read_timeout, ServeSetting::HeaderReadTimeout),
            (options.body_read_timeout, ServeSetting::BodyReadTimeout),
            (options.idle_timeout, ServeSetting::IdleTimeout),
            (
                options.http2_keep_alive_interval,
                ServeSetting::Http2KeepAliveInterval,
            ),
        ] {
            if value.is_zero() {
                return Err(ServeError::Config(ConfigError::ZeroDuration(setting)));
            }
        }
        let readiness = ready::Readiness::new(cluster.is_ok(), options.setting_name);
        let state = Arc::new(AppState {
            checker,
            cluster,
            tokens,
            allow_namespaces,
            metrics,
            checks: Arc::new(tokio::sync::Semaphore::new(options.max_checks)),
            max_checks: options.max_checks,
            max_body: options.max_body,
            body_reads: Arc::new(tokio::sync::Semaphore::new(options.max_body_reads)),
            parses: Arc::new(tokio::sync::Semaphore::new(options.max_parses)),
            review_parses: Arc::new(tokio::sync::Semaphore::new(options.max_parses)),
            max_body_reads: options.max_body_reads,
            body_read_timeout: options.body_read_timeout,
            max_images: options.max_images,
            runtime: options.runtime,
            placeholder_image: options.placeholder_image.clone(),
            deadline: options.deadline,
            readiness,
            lifecycle: Arc::new(conn::Lifecycle::new()),
            admission,
            setting_name: options.setting_name,
        });
        Ok(Server {
            listener,
            addr,
            state,
            tls,
            grace: options.shutdown_grace,
            limits: conn::ConnLimits {
                header_read_timeout: options.header_read_timeout,
                idle_timeout: options.idle_timeout,
                keep_alive_interval: options.http2_keep_alive_interval,
                max_connections: options.max_connections,
            },
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The shared state (for the registry observer the lead wires at merge).
    pub fn state(&self) -> &Arc<AppState> {
        &self.state
    }

    /// Serves until `shutdown` completes; then new requests to the API routes get 503
    /// with `Retry-After` (and `Connection: close` on HTTP/1), idle connections and
    /// those with half-sent heads are closed, and requests in flight may finish for up
    /// to the shutdown grace; those still running at its end are answered 503. Returns
    /// as soon as no request is in flight (or the grace ran out).
    ///
    /// # Errors
    /// [`ServeError::Io`] when the listener cannot be served.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let Server {
            listener,
            addr,
            state,
            tls,
            grace,
            limits,
        } = self;
        let app = router(state.clone());
        let mut background = Vec::new();
        if let Ok(cluster) = &state.cluster {
            background.push(tokio::spawn(ready::probe_api_server(
                cluster.clone(),
                state.clone(),
            )));
        }
        tracing::info!(
            address = %addr,
            tls = tls.is_some(),
            max_connections = limits.max_connections,
            header_read_timeout_ms = limits.header_read_timeout.as_millis() as u64,
            idle_timeout_ms = limits.idle_timeout.as_millis() as u64,
            "pullcheck serve listening"
        );
        let config = match tls {
            Some((files, config, verifier)) => {
                background.push(tokio::spawn(reload_tls(
                    files,
                    config.clone(),
                    verifier,
                    state.metrics.clone(),
                )));
                Some(config)
            }
            None => None,
        };
        let served = conn::Listener {
            listener,
            tls: config,
            limits,
            lifecycle: state.lifecycle.clone(),
            router: app,
        }
        .serve(shutdown, grace)
        .await;
        for task in background {
            task.abort();
        }
        served.map_err(|e| ServeError::Io(format!("the server failed: {e}")))?;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// The content fingerprint of a file, for the TLS reload ([`reload::file_fingerprint`]).
fn stamp(path: &std::path::Path) -> Option<u64> {
    reload::file_fingerprint(path)
}

/// A client-certificate verifier (`--admission-client-ca`).
type Verifier = Arc<dyn rustls::server::danger::ClientCertVerifier>;

/// The client-certificate verifier of `--admission-client-ca`: certificates signed by the
/// CA in `path` are accepted, and clients without one are let on (the admission routes
/// refuse them; probes and `/v1/checks` need none).
fn client_verifier(path: &std::path::Path) -> Result<Verifier, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let pem = pullcheck_files::read(path).map_err(|e| e.to_string())?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    if roots.is_empty() {
        return Err("no certificate in the file".to_owned());
    }
    rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .allow_unauthenticated()
        .build()
        .map_err(|e| e.to_string())
}

/// The certificate chain and key of `files` (PEM, read with the 64 MiB file limit), with
/// `verifier` asking clients for certificates, offering HTTP/2 and HTTP/1.1 by ALPN.
///
/// # Errors
/// A file that cannot be read, holds no certificate or no key, or a key that does not
/// fit the certificate: [`TlsError`], naming the file when it is one of them.
fn load_tls(
    files: &TlsFiles,
    verifier: Option<&Verifier>,
) -> Result<rustls::ServerConfig, TlsError> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let of = |path: &std::path::Path, message: String| TlsError {
        path: Some(path.to_owned()),
        message,
    };
    let cert_pem =
        pullcheck_files::read(&files.cert).map_err(|e| of(&files.cert, e.to_string()))?;
    let key_pem = pullcheck_files::read(&files.key).map_err(|e| of(&files.key, e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| of(&files.cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(of(&files.cert, "no certificate in the file".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| of(&files.key, format!("no private key: {e}")))?;
    let builder = rustls::ServerConfig::builder();
    let builder = match verifier {
        Some(v) => builder.with_client_cert_verifier(v.clone()),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| TlsError {
        path: None,
        message: e.to_string(),
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Why [`load_tls`] failed: the file at fault (`None`: the pair, a key that does not
/// fit the certificate) and what is wrong, without the path.
#[derive(Debug)]
struct TlsError {
    path: Option<std::path::PathBuf>,
    message: String,
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}: {}", path.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Re-reads the certificate and key when the content of either file changes; a bad pair
/// is logged, counted (`pullcheck_config_reload_errors_total{file="tls_cert"}`) and the
/// old one kept. New connections take the new one.
async fn reload_tls(
    files: TlsFiles,
    config: conn::TlsConfig,
    verifier: Option<Verifier>,
    metrics: Arc<Metrics>,
) {
    let mut last = (stamp(&files.cert), stamp(&files.key));
    loop {
        tokio::time::sleep(TLS_POLL).await;
        let now = (stamp(&files.cert), stamp(&files.key));
        if now == last {
            continue;
        }
        last = now;
        match load_tls(&files, verifier.as_ref()) {
            Ok(fresh) => {
                *config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh);
                tracing::info!(cert = %files.cert.display(), "TLS certificate reloaded");
            }
            Err(e) => {
                metrics.reload_error(metrics::ReloadFile::TlsCert);
                tracing::warn!(
                    cert = %files.cert.display(),
                    "TLS certificate not reloaded, the old one stays: {e}"
                );
            }
        }
    }
}

/// The routes and layers, on `state`.
pub fn router(state: Arc<AppState>) -> Router {
    let v1 = Router::new()
        .route("/v1/checks", post(api::post_check))
        .layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    body::shutdown_gate,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    authenticate,
                ))
                .layer(DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn_with_state(
                    (state.clone(), true),
                    body::read_body,
                )),
        );
    // The API server sends no bearer token: the admission routes sit outside `authenticate`.
    // Their body limit is --admission-max-body (body::read_body); the review slot is
    // taken once the body has arrived (admission::review_route).
    let admission = Router::new()
        .route("/v1/admission", post(admission::post_admission))
        .route("/v1/admission/{mode}", post(admission::post_admission_mode))
        .layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    body::shutdown_gate,
                ))
                .layer(DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn_with_state(
                    (state.clone(), false),
                    body::read_body,
                )),
        );
    Router::new()
        .merge(v1)
        .merge(admission)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready::readyz))
        .route("/metrics", get(metrics_text))
        .fallback(|| async {
            api::ApiError::new(StatusCode::NOT_FOUND, "no such route").into_response()
        })
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(|request: &Request| {
                            let id = request
                                .headers()
                                .get("x-request-id")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("");
                            tracing::info_span!(
                                "request",
                                id = %id,
                                method = %request.method(),
                                path = %request.uri().path(),
                            )
                        })
                        .on_response(log_response)
                        // Every answer is logged once, by `log_response`; a 5xx is no
                        // ERROR of this service (overload, a shutdown, a cluster's failure).
                        .on_failure(()),
                )
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    count_http,
                ))
                .layer(axum::middleware::map_response(json_error_body)),
        )
        .with_state(state)
}

/// Every error answer has the API's `{"error": {"message": ...}}` body, also those that
/// layers and the router make themselves (413 from the body limit when the client sent
/// `Content-Length`, 405 for a wrong method); their headers (`Allow`) are kept.
async fn json_error_body(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let message = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "the body is over the service's body limit".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => "this route does not take this method".to_owned(),
        other => other
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase(),
    };
    let (mut parts, _) = response.into_parts();
    let mut answer = api::ApiError::new(status, message).into_response();
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in &parts.headers {
        answer.headers_mut().insert(name.clone(), value.clone());
    }
    answer
}

/// `pullcheck_http_requests_total{route, code}`: the matched route, never the raw path.
async fn count_http(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let route = match request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
    {
        Some("/v1/checks") => "/v1/checks",
        Some("/v1/admission") => "/v1/admission",
        Some("/v1/admission/{mode}") => "/v1/admission/{mode}",
        Some("/healthz") => "/healthz",
        Some("/readyz") => "/readyz",
        Some("/metrics") => "/metrics",
        _ => "other",
    };
    let response = next.run(request).await;
    state
        .metrics
        .http_request(route, response.status().as_u16());
    response
}

/// 401 unless the bearer token matches a line of the token file (when there is one).
async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(tokens) = &state.tokens else {
        request.extensions_mut().insert(Caller::default());
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|t| !t.is_empty());
    match presented.and_then(|t| tokens.authorize(t.as_bytes())) {
        Some(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None => {
            let mut response = api::ApiError::new(
                StatusCode::UNAUTHORIZED,
                "a valid bearer token is required: Authorization: Bearer <token>",
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

/// One line per answer, in the request's span: INFO, or WARN for a 5xx, of which a 503
/// (overload, shutdown, not ready) is logged at most once per interval with how many
/// were left out.
fn log_response(response: &Response, latency: Duration, _span: &tracing::Span) {
    let status = response.status().as_u16();
    let latency_ms = latency.as_millis() as u64;
    if status == 503 {
        static LIMIT: logging::RateLimited = logging::RateLimited::new(Duration::from_secs(10));
        if let Some(left_out) = LIMIT.allow() {
            tracing::warn!(
                status,
                latency_ms,
                similar_since_last = left_out,
                "answered 503 (service unavailable; at most one such line per 10s)"
            );
        }
    } else if status >= 500 {
        tracing::warn!(status, latency_ms, "finished processing request");
    } else {
        tracing::info!(status, latency_ms, "finished processing request");
    }
}

/// Logs that a limit turned a request away, at most once per interval (the answer is
/// 503 either way).
pub(crate) fn log_overload(what: &str, limit: usize) {
    static LIMIT: logging::RateLimited = logging::RateLimited::new(Duration::from_secs(10));
    if let Some(left_out) = LIMIT.allow() {
        tracing::warn!(
            limit,
            similar_since_last = left_out,
            "overloaded: all {limit} {what} are taken; answering 503 with Retry-After"
        );
    }
}

async fn metrics_text(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}
