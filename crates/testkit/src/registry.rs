//! Starting `docker-registry` processes and watching what they serve.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::Method;

use crate::Error;
use crate::http::{HARNESS_USER_AGENT, Http};
use crate::image::{self, ImageKind, ImageSpec, PushedImage};
use crate::process::{Process, run_tool};
use crate::proxy::{self, LatencyProxy, ProxyOptions, ProxyStats};
use crate::tempdir::TempDir;
use crate::token::{TokenPolicy, TokenServer, User};

/// The registry binary, as installed by Debian's `docker-registry` package.
const REGISTRY_BINARY: &str = "/usr/bin/docker-registry";

/// The realm of htpasswd Basic challenges.
const BASIC_REALM: &str = "pullcheck-testkit";

/// Requests to this path prefix synchronise the access log; they are never
/// reported by [`Registry::requests`].
const SYNC_PREFIX: &str = "/__pullcheck_testkit_sync/";

/// How many images [`Registry::push_all`] pushes at once.
const PUSH_CONCURRENCY: usize = 16;

/// How clients authenticate to a [`Registry`].
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// No authentication: everyone may pull and push.
    #[default]
    Anonymous,
    /// `auth: htpasswd`: Basic credentials; any listed user may pull every
    /// repository (the registry has no per-repository rules here, so each
    /// [`User::pull`] is ignored). Without credentials: `401` with
    /// `WWW-Authenticate: Basic realm="pullcheck-testkit"`.
    Htpasswd(Vec<User>),
    /// `auth: token`: Bearer tokens from a [`TokenServer`] started with the
    /// registry, which grants `pull` as the policy says.
    Token(TokenPolicy),
}

/// The certificate files of a registry served over TLS ([`RegistryBuilder::tls`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server certificate (PEM, with its chain), valid for `127.0.0.1`.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The CA that issued it (PEM), which the harness trusts for its own requests.
    pub ca: PathBuf,
}

/// One request the registry served, from its access log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// `GET`, `HEAD`, `PUT`, ...
    pub method: String,
    /// The request target: path and query, e.g. `/v2/app/manifests/v1`.
    pub path: String,
    /// The response status.
    pub status: u16,
}

impl fmt::Display for RequestRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.method, self.path, self.status)
    }
}

/// Options for [`Registry`]; made by [`Registry::builder`].
#[derive(Debug)]
pub struct RegistryBuilder {
    auth: Auth,
    upstream: Option<String>,
    start_timeout: Duration,
    tls: Option<TlsFiles>,
    latency: Option<Duration>,
}

impl RegistryBuilder {
    /// Sets how clients authenticate (default [`Auth::Anonymous`]).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// Makes this registry a pull-through cache (`proxy: remoteurl`) of
    /// `upstream`, which must be anonymous. A mirror cannot be pushed to.
    pub fn mirror_of(self, upstream: &Registry) -> Self {
        self.mirror_of_url(upstream.url())
    }

    /// Like [`mirror_of`](Self::mirror_of), with the upstream's base URL
    /// (`http://HOST:PORT`).
    pub fn mirror_of_url(mut self, url: impl Into<String>) -> Self {
        self.upstream = Some(url.into());
        self
    }

    /// Serves the registry over TLS (`http.tls` of distribution's config; Go's server
    /// then offers HTTP/2 by ALPN) with these files. In [`Auth::Token`] mode the token
    /// server gets a TLS front too (a [`LatencyProxy`] terminating TLS with the same
    /// certificate, HTTP/1.1), so that its realm is `https://`. Pushes go through a
    /// plain-HTTP registry on the same storage.
    pub fn tls(mut self, files: TlsFiles) -> Self {
        self.tls = Some(files);
        self
    }

    /// Puts a [`LatencyProxy`] adding `one_way` in each direction in front of the
    /// registry and (in [`Auth::Token`] mode) of the token server: [`Registry::host`]
    /// and the realm in the registry's challenge are then the proxies' addresses, and
    /// [`Registry::proxy_stats`] counts their connections. Zero still proxies (to
    /// measure the proxy's own cost).
    pub fn latency(mut self, one_way: Duration) -> Self {
        self.latency = Some(one_way);
        self
    }

    /// How long to wait for `GET /v2/` to answer (default 20 s).
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Starts the registry (and, for [`Auth::Token`], its token server) and
    /// waits until it answers.
    pub async fn start(self) -> Result<Registry, Error> {
        let dir = TempDir::new("registry")?;
        let root = dir.path().join("storage");
        std::fs::create_dir(&root).map_err(|e| Error::io("creating the storage root", e))?;
        let secret = format!(
            "pullcheck-testkit-{}-{:?}",
            std::process::id(),
            Instant::now()
        );

        let mut token_realm: Option<String> = None;
        let mut token_proxies = Vec::new();
        let (auth_yaml, users, token) = match &self.auth {
            Auth::Anonymous => (String::new(), Vec::new(), None),
            Auth::Htpasswd(users) => {
                let path = dir.path().join("htpasswd");
                write_htpasswd(&path, users, dir.path())?;
                let yaml = format!(
                    "auth:\n  htpasswd:\n    realm: {}\n    path: {}\n",
                    BASIC_REALM,
                    yaml_str(&path)
                );
                (yaml, users.clone(), None)
            }
            Auth::Token(policy) => {
                let server = TokenServer::start_in(policy.clone(), dir.path())?;
                if self.tls.is_some() || self.latency.is_some() {
                    let (realm, proxies) =
                        token_front(&server, self.tls.as_ref(), self.latency).await?;
                    token_realm = Some(realm);
                    token_proxies = proxies;
                }
                let yaml = format!(
                    "auth:\n  token:\n    realm: {}\n    service: {}\n    issuer: {}\n    rootcertbundle: {}\n",
                    yaml_str(token_realm.as_deref().unwrap_or(server.realm())),
                    yaml_str(server.service()),
                    yaml_str(server.issuer()),
                    yaml_str(server.cert_path()),
                );
                (yaml, policy.users.clone(), Some(server))
            }
        };
        let proxy_yaml = match &self.upstream {
            Some(url) => format!("proxy:\n  remoteurl: {}\n", yaml_str(url)),
            None => String::new(),
        };

        let log = Arc::new(Mutex::new(AccessLog::default()));
        let http = Http::new();
        let (main_http, tls_yaml) = match &self.tls {
            Some(files) => (
                Http::with_ca(&files.ca)?,
                format!(
                    "  tls:\n    certificate: {}\n    key: {}\n",
                    yaml_str(&files.cert),
                    yaml_str(&files.key)
                ),
            ),
            None => (http.clone(), String::new()),
        };
        let main = {
            let log = log.clone();
            launch(
                dir.path(),
                "registry",
                &root,
                &secret,
                (&tls_yaml, &format!("{auth_yaml}{proxy_yaml}")),
                self.start_timeout,
                &main_http,
                move |line| record_line(&log, &line),
            )
            .await?
        };
        // Auth-protected (and TLS) registries are pushed to through an anonymous
        // plain-HTTP registry that shares their storage root; mirrors are not pushed to.
        let plain_open = matches!(self.auth, Auth::Anonymous) && self.tls.is_none();
        let pusher = if plain_open || self.upstream.is_some() {
            None
        } else {
            Some(
                launch(
                    dir.path(),
                    "pusher",
                    &root,
                    &secret,
                    ("", ""),
                    self.start_timeout,
                    &http,
                    |_| {},
                )
                .await?,
            )
        };
        let front = match self.latency {
            Some(delay) => Some(
                LatencyProxy::start(
                    direct_addr(&main.1)?,
                    ProxyOptions {
                        delay,
                        tls: None,
                        record_plain: false,
                    },
                )
                .await?,
            ),
            None => None,
        };
        let registry = Registry {
            main: main.0,
            host: front
                .as_ref()
                .map_or_else(|| main.1.clone(), LatencyProxy::host),
            direct: main.1,
            tls: self.tls,
            front,
            token_proxies,
            token_realm,
            pusher,
            token,
            users,
            upstream: self.upstream,
            log,
            sync_counter: AtomicU64::new(1),
            dir,
        };
        registry.clear_requests().await?;
        Ok(registry)
    }
}

/// A running `docker-registry` on `127.0.0.1`, with its temp dir. Dropping it
/// kills the process (and the token server) and removes the directory.
pub struct Registry {
    main: Process,
    /// [`Registry::host`]: the front proxy's address, or `direct`.
    host: String,
    /// Where the registry process listens.
    direct: String,
    tls: Option<TlsFiles>,
    /// [`RegistryBuilder::latency`]: in front of the registry, and of the token
    /// server (the delaying proxy first, then a TLS front if any).
    front: Option<LatencyProxy>,
    token_proxies: Vec<LatencyProxy>,
    /// The realm of the registry's challenge when it is a proxy's.
    token_realm: Option<String>,
    /// For auth modes: an anonymous registry on the same storage, used only
    /// for pushing, with its host.
    pusher: Option<(Process, String)>,
    token: Option<TokenServer>,
    users: Vec<User>,
    upstream: Option<String>,
    log: Arc<Mutex<AccessLog>>,
    sync_counter: AtomicU64,
    // Last: removed after the processes are gone.
    dir: TempDir,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("host", &self.host)
            .field("pid", &self.main.id())
            .field("token", &self.token.as_ref().map(TokenServer::realm))
            .field("upstream", &self.upstream)
            .field("dir", &self.dir.path())
            .finish()
    }
}

impl Registry {
    /// Options for a new registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder {
            auth: Auth::Anonymous,
            upstream: None,
            start_timeout: Duration::from_secs(20),
            tls: None,
            latency: None,
        }
    }

    /// Starts an anonymous registry.
    pub async fn anonymous() -> Result<Registry, Error> {
        Registry::builder().start().await
    }

    /// `127.0.0.1:PORT`: the registry host as it appears in image references (with
    /// [`RegistryBuilder::latency`], the proxy's).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// `http://127.0.0.1:PORT`, or `https://…` with [`RegistryBuilder::tls`]: the
    /// base URL of [`Registry::host`].
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme(), self.host)
    }

    /// Where the registry process itself listens, `127.0.0.1:PORT`: [`Registry::host`]
    /// unless a latency proxy is in front.
    pub fn direct_host(&self) -> &str {
        &self.direct
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// The connections the latency proxy in front of the registry has seen
    /// ([`RegistryBuilder::latency`]); `None` without one.
    pub fn proxy_stats(&self) -> Option<ProxyStats> {
        self.front.as_ref().map(LatencyProxy::stats)
    }

    /// The connections the latency proxy in front of the token server has seen (the
    /// first of its chain, the one clients reach); `None` without one.
    pub fn token_proxy_stats(&self) -> Option<ProxyStats> {
        self.token_proxies.first().map(LatencyProxy::stats)
    }

    /// The users of [`Auth::Htpasswd`] or [`Auth::Token`] (empty if anonymous).
    pub fn users(&self) -> &[User] {
        &self.users
    }

    /// The token server, in [`Auth::Token`] mode.
    pub fn token_server(&self) -> Option<&TokenServer> {
        self.token.as_ref()
    }

    /// Stops the token server (in [`Auth::Token`] mode; nothing otherwise): its port
    /// then refuses connections while the registry goes on naming it as its realm, as
    /// when a registry's token service is down.
    pub fn stop_token_server(&mut self) {
        drop(self.token.take());
    }

    /// The realm the registry's challenges name, in [`Auth::Token`] mode: the token
    /// server's own, or its front proxy's ([`RegistryBuilder::tls`],
    /// [`RegistryBuilder::latency`]).
    pub fn token_realm(&self) -> Option<&str> {
        self.token_realm
            .as_deref()
            .or_else(|| self.token.as_ref().map(TokenServer::realm))
    }

    /// The upstream URL, for a pull-through mirror.
    pub fn upstream(&self) -> Option<&str> {
        self.upstream.as_deref()
    }

    /// The registry process id.
    pub fn pid(&self) -> u32 {
        self.main.id()
    }

    /// The temporary directory holding config, storage and keys.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines the registry wrote to stderr (its log, level `warn`).
    pub fn stderr(&self) -> String {
        self.main.stderr()
    }

    /// Every request the registry served since start (or the last
    /// [`clear_requests`](Self::clear_requests)), in order. Requests the
    /// harness made itself (readiness probes, [`push`](Self::push)) are left
    /// out: they are recognised by their `User-Agent`. A mirror's requests
    /// to its upstream show in the upstream's list.
    ///
    /// The access log is read asynchronously, so this first sends a marker
    /// request and waits until the log shows it: every request answered
    /// before the call is included.
    pub async fn requests(&self) -> Result<Vec<RequestRecord>, Error> {
        self.sync_log().await?;
        Ok(lock(&self.log).records.clone())
    }

    /// Forgets the requests served so far.
    pub async fn clear_requests(&self) -> Result<(), Error> {
        self.sync_log().await?;
        lock(&self.log).records.clear();
        Ok(())
    }

    /// From now on, also appends every served request to `path` (created
    /// if missing), one `METHOD PATH STATUS` line each, as soon as the
    /// registry logs it. For scripts that count requests while the registry
    /// runs (the `pullcheck-testkit` binary's `--access-log`).
    pub async fn log_requests_to(&self, path: &Path) -> Result<(), Error> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        self.sync_log().await?;
        lock(&self.log).file = Some(file);
        Ok(())
    }

    async fn sync_log(&self) -> Result<(), Error> {
        let n = self.sync_counter.fetch_add(1, Ordering::Relaxed);
        let url = format!("{}://{}{SYNC_PREFIX}{n}", self.scheme(), self.direct);
        let http = match &self.tls {
            Some(files) => Http::with_ca(&files.ca)?,
            None => Http::new(),
        };
        http.send(Method::GET, &url, &[], Bytes::new()).await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock(&self.log).synced < n {
            if Instant::now() > deadline {
                return Err(Error::LogSync(10));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Ok(())
    }

    fn push_url(&self) -> Result<String, Error> {
        if self.upstream.is_some() {
            return Err(Error::Unsupported(format!(
                "{} is a pull-through mirror; push to its upstream instead",
                self.host
            )));
        }
        Ok(match &self.pusher {
            Some((_, host)) => format!("http://{host}"),
            None => format!("http://{}", self.direct),
        })
    }

    /// Builds one test image of `kind` and pushes it as `repository:tag`.
    /// The config blob names the repository, tag and a per-process counter,
    /// so every call yields new digests.
    pub async fn push(
        &self,
        repository: &str,
        tag: &str,
        kind: ImageKind,
    ) -> Result<PushedImage, Error> {
        let spec = ImageSpec::new(repository, tag, kind);
        let seed = image::LayerSeed::default();
        image::push(&Http::new(), &self.push_url()?, &self.host, &spec, &seed).await
    }

    /// Like [`push`](Self::push) for a single-platform `kind` (`OciManifest` or
    /// `DockerManifest`), whose config blob names `platform` (`os/arch[/variant]`,
    /// e.g. `linux/arm/v7`) instead of `linux/amd64`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an index kind or a malformed platform; push failures.
    pub async fn push_platform(
        &self,
        repository: &str,
        tag: &str,
        kind: ImageKind,
        platform: &str,
    ) -> Result<PushedImage, Error> {
        if kind.is_index() {
            return Err(Error::Invalid {
                what: "image kind",
                value: kind.to_string(),
                reason: "push_platform pushes single-platform images only".into(),
            });
        }
        let platform = image::TestPlatform::parse(platform)?;
        let spec = ImageSpec::new(repository, tag, kind);
        let seed = image::LayerSeed::default();
        image::push_as(
            &Http::new(),
            &self.push_url()?,
            &self.host,
            &spec,
            platform,
            &seed,
        )
        .await
    }

    /// Like [`push`](Self::push) for an index `kind` (`OciIndex` or
    /// `DockerManifestList`) whose entries are one image per platform of `platforms`
    /// (`os/arch[/variant]`, e.g. `["linux/arm/v7"]`: a list whose only entry has a
    /// variant), instead of linux/amd64 and linux/arm64/v8.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a single-platform kind, no platform or a malformed one;
    /// push failures.
    pub async fn push_index_platforms(
        &self,
        repository: &str,
        tag: &str,
        kind: ImageKind,
        platforms: &[&str],
    ) -> Result<PushedImage, Error> {
        if !kind.is_index() || platforms.is_empty() {
            return Err(Error::Invalid {
                what: "image kind",
                value: kind.to_string(),
                reason: "push_index_platforms pushes an index of at least one platform".into(),
            });
        }
        let entries = platforms
            .iter()
            .map(|p| image::TestPlatform::parse(p))
            .collect::<Result<Vec<_>, Error>>()?;
        let spec = ImageSpec::new(repository, tag, kind);
        let seed = image::LayerSeed::default();
        image::push_index_as(
            &Http::new(),
            &self.push_url()?,
            &self.host,
            &spec,
            &entries,
            &seed,
        )
        .await
    }

    /// Pushes many images, several at once; the result is in `specs` order.
    pub async fn push_all(&self, specs: &[ImageSpec]) -> Result<Vec<PushedImage>, Error> {
        use futures::stream::{self, StreamExt, TryStreamExt};
        let base = self.push_url()?;
        let http = Http::new();
        let seed = image::LayerSeed::default();
        stream::iter(specs)
            .map(|spec| image::push(&http, &base, &self.host, spec, &seed))
            .buffered(PUSH_CONCURRENCY)
            .try_collect()
            .await
    }
}

#[derive(Default)]
struct AccessLog {
    records: Vec<RequestRecord>,
    synced: u64,
    file: Option<std::fs::File>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn record_line(log: &Mutex<AccessLog>, line: &str) {
    let Some(record) = parse_access_line(line) else {
        return;
    };
    let mut log = lock(log);
    if let Some(n) = record.path.strip_prefix(SYNC_PREFIX) {
        if let Ok(n) = n.parse::<u64>() {
            log.synced = log.synced.max(n);
        }
        return;
    }
    // The harness's own requests (readiness probes, pushes) are not counted.
    if line.ends_with(&format!("\"{HARNESS_USER_AGENT}\"")) {
        return;
    }
    if let Some(file) = &mut log.file {
        let _ = writeln!(file, "{record}");
    }
    log.records.push(record);
}

/// Parses one combined-log-format line:
/// `127.0.0.1 - - [date] "HEAD /v2/a/manifests/b HTTP/1.1" 200 0 "" "ua"`.
fn parse_access_line(line: &str) -> Option<RequestRecord> {
    let start = line.find("] \"")? + 3;
    let rest = &line[start..];
    let end = rest.find('"')?;
    let mut request = rest[..end].split(' ');
    let method = request.next()?.to_string();
    let path = request.next()?.to_string();
    let status = rest[end + 1..].split_whitespace().next()?.parse().ok()?;
    Some(RequestRecord {
        method,
        path,
        status,
    })
}

/// Quotes a string or path as a YAML double-quoted scalar (JSON strings are
/// valid YAML).
fn yaml_str(s: impl AsRef<std::ffi::OsStr>) -> String {
    serde_json::Value::String(s.as_ref().to_string_lossy().into_owned()).to_string()
}

fn write_htpasswd(path: &Path, users: &[User], dir: &Path) -> Result<(), Error> {
    let mut content = String::new();
    for user in users {
        // Cost 4 (the minimum): the registry checks bcrypt on every request,
        // and benchmarks should measure the client, not bcrypt.
        let line = run_tool(
            "htpasswd",
            &["-nbB", "-C", "4", &user.username, &user.password],
            dir,
            &format!("htpasswd -nbB -C 4 {} ******", user.username),
        )?;
        content.push_str(line.trim_end());
        content.push('\n');
    }
    std::fs::write(path, content).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

fn free_port() -> Result<u16, Error> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("finding a free port", e))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::io("finding a free port", e))
}

/// `127.0.0.1:PORT` as an address.
fn direct_addr(host: &str) -> Result<std::net::SocketAddr, Error> {
    host.parse()
        .map_err(|_| Error::Unsupported(format!("{host}: not an IP:PORT")))
}

/// The proxies in front of the token server: one adding `latency` (if any), then one
/// terminating TLS (if `tls`); returns the realm clients are sent to, and the proxies,
/// the one clients reach first.
async fn token_front(
    server: &TokenServer,
    tls: Option<&TlsFiles>,
    latency: Option<Duration>,
) -> Result<(String, Vec<LatencyProxy>), Error> {
    let realm = server.realm();
    let addr = realm
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/token"))
        .ok_or_else(|| Error::Unsupported(format!("unexpected token realm {realm}")))?;
    let mut target = direct_addr(addr)?;
    let mut proxies = Vec::new();
    if let Some(files) = tls {
        let config = proxy::tls_server_config(&files.cert, &files.key)?;
        let front = LatencyProxy::start(
            target,
            ProxyOptions {
                delay: Duration::ZERO,
                tls: Some(config),
                record_plain: false,
            },
        )
        .await?;
        target = front.addr();
        proxies.push(front);
    }
    if let Some(delay) = latency {
        let front = LatencyProxy::start(
            target,
            ProxyOptions {
                delay,
                tls: None,
                record_plain: false,
            },
        )
        .await?;
        target = front.addr();
        proxies.insert(0, front);
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    Ok((format!("{scheme}://{target}/token"), proxies))
}

/// Writes a config and starts one registry process; retries on a port race.
#[allow(clippy::too_many_arguments)]
async fn launch(
    dir: &Path,
    name: &str,
    root: &Path,
    secret: &str,
    (http_yaml, extra_yaml): (&str, &str),
    timeout: Duration,
    http: &Http,
    on_stdout: impl FnMut(String) + Send + Clone + 'static,
) -> Result<(Process, String), Error> {
    static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let config = dir.join(format!("{name}.yml"));
    let mut attempt = 0;
    loop {
        attempt += 1;
        let port = free_port()?;
        let host = format!("127.0.0.1:{port}");
        // The port is free when chosen, not when the registry binds it: another server
        // of this process (a token server, the Kubernetes stand-in, another registry)
        // may take it first. Every answer of this registry carries its own value of
        // `IDENTITY_HEADER`, so readiness is this process answering, not any server.
        let identity = format!(
            "harness-{}-{}",
            std::process::id(),
            LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let yaml = format!(
            "version: 0.1\n\
             log:\n  level: warn\n  formatter: text\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: {host}\n  secret: {}\n{http_yaml}  \
             headers:\n    {IDENTITY_HEADER}: [{identity}]\n\
             {extra_yaml}",
            yaml_str(root),
            yaml_str(secret),
        );
        std::fs::write(&config, yaml)
            .map_err(|e| Error::io(format!("writing {}", config.display()), e))?;
        let mut process = Process::spawn(
            PathBuf::from(REGISTRY_BINARY),
            vec!["serve".into(), config.to_string_lossy().into_owned()],
            dir.to_path_buf(),
            on_stdout.clone(),
        )?;
        let scheme = if http_yaml.is_empty() {
            "http"
        } else {
            "https"
        };
        let ready = wait_ready(
            &mut process,
            (scheme, &host),
            &identity,
            &config,
            timeout,
            http,
        );
        match ready.await {
            Ok(()) => return Ok((process, host)),
            Err(Error::RegistryExited { stderr, .. })
                if attempt < 5 && stderr.contains("address already in use") =>
            {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The response header with which a harness registry names itself (see `launch`).
const IDENTITY_HEADER: &str = "X-Pullcheck-Testkit-Registry";

/// Waits until `host` answers `GET /v2/` as the registry `process` (its
/// [`IDENTITY_HEADER`] is `identity`), or the process exits, or `timeout` passes.
async fn wait_ready(
    process: &mut Process,
    (scheme, host): (&str, &str),
    identity: &str,
    config: &Path,
    timeout: Duration,
    http: &Http,
) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    let url = format!("{scheme}://{host}/v2/");
    loop {
        if let Some(status) = process.exited() {
            // Let the reader thread catch the last stderr lines.
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(Error::RegistryExited {
                config: config.to_path_buf(),
                status,
                stderr: process.stderr(),
            });
        }
        if http
            .send(Method::GET, &url, &[], Bytes::new())
            .await
            .is_ok_and(|r| r.header(IDENTITY_HEADER) == Some(identity))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::RegistryTimeout {
                host: host.to_string(),
                seconds: timeout.as_secs(),
                stderr: process.stderr(),
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_access_log_lines() {
        let line = r#"127.0.0.1 - - [29/Nov/2026:15:15:40 +0000] "HEAD /v2/foo/manifests/x HTTP/1.1" 404 91 "" "curl/7.88.1""#;
        assert_eq!(
            parse_access_line(line),
            Some(RequestRecord {
                method: "HEAD".into(),
                path: "/v2/foo/manifests/x".into(),
                status: 404
            })
        );
        assert_eq!(parse_access_line("time=... level=info msg=x"), None);
    }
}
