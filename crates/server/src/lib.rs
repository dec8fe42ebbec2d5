//! `pullcheck serve`: the check as a long-running HTTP service that CI workers call at
//! build start, answered from warm connections and cached tokens.
//!
//! The API (v1):
//! - `POST /v1/checks`: a JSON [`api::CheckRequest`] with exactly one of `pipeline`,
//!   `build`, `images` and `manifests`; answers 200 with the same JSON report that
//!   `pullcheck check --format json` prints, plus `"exit_code"`. Errors are
//!   `{"error": {"message", "line"?, "column"?}}`: 400 bad input, 401 no matching bearer
//!   token, 403 a namespace the caller may not name, 413 a body over `max_body`, 415 not
//!   JSON, 503 (with `Retry-After`) over `max_checks` in flight, 502/504 when the
//!   Kubernetes lookups fail or time out.
//! - `POST /v1/admission` (and `/v1/admission/warn`, `/v1/admission/deny`), with
//!   [`ServeOptions::admission`]: the validating admission webhook ([`admission`]); an
//!   `admission.k8s.io/v1` `AdmissionReview` in and out, no bearer token, TLS only.
//! - `GET /healthz` (alive), `GET /readyz` (configuration loaded and, with a cluster, its
//!   API server answered once), `GET /metrics` ([`metrics::Metrics`]).
//!
//! Built as tower layers around small handlers (request id, trace, body limit, auth,
//! HTTP metrics); the handlers parse the request into the library's inputs
//! ([`pullcheck_sources`]), call the shared [`pullcheck::Checker`], and serialise the
//! report. One [`AppState`] holds everything shared. Nothing a check does is spawned: a
//! client that disconnects drops its handler's future, and the check with it.

#![warn(missing_docs)]

pub mod admission;
pub mod api;
pub mod auth;
mod check;
pub mod metrics;
mod render;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

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
use pullcheck_kube::{Cluster, ClusterOptions, KubeError};
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use auth::{Caller, NamespaceGlob, TokenFile};
use metrics::Metrics;

/// Default `max_body`: 8 MiB.
pub const DEFAULT_MAX_BODY: usize = 8 << 20;
/// Default `max_checks`.
pub const DEFAULT_MAX_CHECKS: usize = 64;
/// How often the TLS certificate and key files are looked at for a change.
const TLS_POLL: Duration = Duration::from_secs(5);
/// How often readiness asks the API server until it answers.
const READY_POLL: Duration = Duration::from_secs(2);

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
    /// The longest deadline of a check; a request's `deadline_seconds` may only shorten it.
    pub deadline: Duration,
    /// How long checks in flight may still run after the shutdown signal.
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
            deadline: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(20),
            cache_present: None,
            tls: None,
            insecure_listen: false,
            admission: None,
        }
    }
}

/// Why the service cannot start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A setting or a configuration file is wrong; the message names it.
    #[error("{0}")]
    Config(String),
    /// The address cannot be bound, or the server failed.
    #[error("{0}")]
    Io(String),
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
    deadline: Duration,
    ready: AtomicBool,
    admission: Option<admission::Admission>,
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
    tls: Option<(
        TlsFiles,
        axum_server::tls_rustls::RustlsConfig,
        Option<Verifier>,
    )>,
    grace: Duration,
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
            return Err(ServeError::Config(
                "--admission needs --tls-cert and --tls-key: the Kubernetes API server calls \
                 admission webhooks over HTTPS only"
                    .to_owned(),
            ));
        }
        let admission = match &options.admission {
            Some(a) => Some(admission::Admission::new(a).map_err(ServeError::Config)?),
            None => None,
        };
        if !options.listen.ip().is_loopback() && !options.insecure_listen {
            let mut missing = Vec::new();
            if options.api_token_file.is_none() {
                missing.push("--api-token-file");
            }
            if options.tls.is_none() {
                missing.push("--tls-cert/--tls-key");
            }
            if !missing.is_empty() {
                return Err(ServeError::Config(format!(
                    "refusing to listen on {} (not loopback) without {}: anyone who reaches \
                     it could use this service's registry credentials; give them, or \
                     --insecure-listen",
                    options.listen,
                    missing.join(" and ")
                )));
            }
        }
        let tokens = match options.api_token_file {
            Some(path) => Some(TokenFile::load(path).map_err(ServeError::Config)?),
            None => None,
        };
        let allow_namespaces = options
            .allow_namespaces
            .iter()
            .map(|p| NamespaceGlob::new(p))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ServeError::Config)?;
        let verifier = match options
            .admission
            .as_ref()
            .and_then(|a| a.client_ca.as_ref())
        {
            Some(path) => Some(client_verifier(path).map_err(ServeError::Config)?),
            None => None,
        };
        let tls = match options.tls {
            Some(files) => {
                let config = load_tls(&files, verifier.as_ref()).await.map_err(|e| {
                    ServeError::Config(format!(
                        "TLS: {} and {}: {e}",
                        files.cert.display(),
                        files.key.display()
                    ))
                })?;
                Some((files, config, verifier))
            }
            None => None,
        };
        let cluster = match &options.cluster {
            Some(o) => match Cluster::connect(o).await {
                Ok(c) => Ok(c),
                Err(e) if options.cluster_required => {
                    return Err(ServeError::Config(e.to_string()));
                }
                Err(e) => {
                    tracing::info!("no Kubernetes API: {e}; requests naming a namespace get 400");
                    Err(e.to_string())
                }
            },
            None => Err("no kubeconfig is configured".to_owned()),
        };
        let metrics = Arc::new(Metrics::new());
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
        .map_err(|e| ServeError::Config(e.to_string()))?;
        let listener = std::net::TcpListener::bind(options.listen)
            .map_err(|e| ServeError::Io(format!("cannot listen on {}: {e}", options.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ServeError::Io(e.to_string()))?;
        let ready = cluster.is_err();
        let state = Arc::new(AppState {
            checker,
            cluster,
            tokens,
            allow_namespaces,
            metrics,
            checks: Arc::new(tokio::sync::Semaphore::new(options.max_checks)),
            max_checks: options.max_checks,
            max_body: options.max_body,
            deadline: options.deadline,
            ready: AtomicBool::new(ready),
            admission,
        });
        Ok(Server {
            listener,
            addr,
            state,
            tls,
            grace: options.shutdown_grace,
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

    /// Serves until `shutdown` completes, then stops accepting and lets requests in
    /// flight finish for up to the shutdown grace; returns when they have (or the grace
    /// ran out).
    ///
    /// # Errors
    /// [`ServeError::Io`] when the server fails.
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
        } = self;
        let app = router(state.clone());
        let handle = axum_server::Handle::new();
        let mut background = Vec::new();
        {
            let handle = handle.clone();
            background.push(tokio::spawn(async move {
                shutdown.await;
                tracing::info!(
                    grace_seconds = grace.as_secs_f64(),
                    "shutting down: no new connections; checks in flight may finish"
                );
                handle.graceful_shutdown(Some(grace));
            }));
        }
        if let Ok(cluster) = &state.cluster {
            background.push(tokio::spawn(probe_api_server(
                cluster.clone(),
                state.clone(),
            )));
        }
        tracing::info!(address = %addr, tls = tls.is_some(), "pullcheck serve listening");
        let served = match tls {
            Some((files, config, verifier)) => {
                background.push(tokio::spawn(reload_tls(files, config.clone(), verifier)));
                axum_server::from_tcp_rustls(listener, config)
                    .map_err(|e| ServeError::Io(e.to_string()))?
                    .handle(handle)
                    .serve(app.into_make_service())
                    .await
            }
            None => {
                axum_server::from_tcp(listener)
                    .map_err(|e| ServeError::Io(e.to_string()))?
                    .handle(handle)
                    .serve(app.into_make_service())
                    .await
            }
        };
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

/// Asks the API server until it answers at all (any HTTP answer, even 403), then marks
/// the service ready.
async fn probe_api_server(cluster: Cluster, state: Arc<AppState>) {
    loop {
        match cluster
            .service_account(cluster.namespace(), pullcheck_kube::DEFAULT_SERVICE_ACCOUNT)
            .await
        {
            Err(KubeError::Unreachable { .. }) | Err(KubeError::Config(_)) => {}
            Err(e) => {
                tracing::info!("Kubernetes API server answered: {e}");
                break;
            }
            Ok(_) => break,
        }
        tokio::time::sleep(READY_POLL).await;
    }
    tracing::info!("ready: the Kubernetes API server answered");
    state.ready.store(true, Ordering::SeqCst);
}

fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// A client-certificate verifier (`--admission-client-ca`).
type Verifier = Arc<dyn rustls::server::danger::ClientCertVerifier>;

/// The client-certificate verifier of `--admission-client-ca`: certificates signed by the
/// CA in `path` are accepted, and clients without one are let on (the admission routes
/// refuse them; probes and `/v1/checks` need none).
fn client_verifier(path: &std::path::Path) -> Result<Verifier, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let label = format!("--admission-client-ca {}", path.display());
    let pem = pullcheck_files::read(path).map_err(|e| format!("{label}: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| format!("{label}: {e}"))?;
        roots.add(cert).map_err(|e| format!("{label}: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("{label}: no certificate in the file"));
    }
    rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .allow_unauthenticated()
        .build()
        .map_err(|e| format!("{label}: {e}"))
}

/// The certificate and key of `files`, with `verifier` asking clients for certificates.
async fn load_tls(
    files: &TlsFiles,
    verifier: Option<&Verifier>,
) -> std::io::Result<axum_server::tls_rustls::RustlsConfig> {
    let config =
        axum_server::tls_rustls::RustlsConfig::from_pem_file(&files.cert, &files.key).await?;
    let Some(verifier) = verifier else {
        return Ok(config);
    };
    let inner = config.get_inner();
    let mut with_clients = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier.clone())
        .with_cert_resolver(inner.cert_resolver.clone());
    with_clients.alpn_protocols = inner.alpn_protocols.clone();
    Ok(axum_server::tls_rustls::RustlsConfig::from_config(
        Arc::new(with_clients),
    ))
}

/// Re-reads the certificate and key when either file changes; a bad pair is logged and
/// the old one kept.
async fn reload_tls(
    files: TlsFiles,
    config: axum_server::tls_rustls::RustlsConfig,
    verifier: Option<Verifier>,
) {
    let mut last = (stamp(&files.cert), stamp(&files.key));
    loop {
        tokio::time::sleep(TLS_POLL).await;
        let now = (stamp(&files.cert), stamp(&files.key));
        if now == last {
            continue;
        }
        last = now;
        match load_tls(&files, verifier.as_ref()).await {
            Ok(fresh) => {
                config.reload_from_config(fresh.get_inner());
                tracing::info!(cert = %files.cert.display(), "TLS certificate reloaded");
            }
            Err(e) => tracing::warn!(
                cert = %files.cert.display(),
                "TLS certificate not reloaded, the old one stays: {e}"
            ),
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
                    authenticate,
                ))
                .layer(DefaultBodyLimit::disable())
                .layer(RequestBodyLimitLayer::new(state.max_body)),
        );
    // The API server sends no bearer token: the admission routes sit outside `authenticate`.
    let admission = Router::new()
        .route("/v1/admission", post(admission::post_admission))
        .route("/v1/admission/{mode}", post(admission::post_admission_mode))
        .layer(
            ServiceBuilder::new()
                .layer(DefaultBodyLimit::disable())
                .layer(RequestBodyLimitLayer::new(state.max_body)),
        );
    Router::new()
        .merge(v1)
        .merge(admission)
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
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
                        .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
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
        StatusCode::PAYLOAD_TOO_LARGE => "the body is over --max-body".to_owned(),
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

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the Kubernetes API server has not answered yet\n",
        )
            .into_response()
    }
}

async fn metrics_text(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}

/// How logs are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (with the request's span: its id, method and path).
    Json,
    /// Human-readable lines.
    Text,
}

/// Sets the process's logger: `PULLCHECK_LOG` (a tracing filter) or `default_filter`, on
/// stderr, in `format`. Does nothing if a logger is already set.
pub fn init_logging(format: LogFormat, default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PULLCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
}
