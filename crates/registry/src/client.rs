//! [`Client`]: the HTTP clients (one shared pair, plus one per host that has its own
//! certificates), the token cache, and the ping that turns an endpoint and a credential
//! into a [`Session`].

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use url::Url;

use crate::auth::{self, Plan};
use crate::retry::{self, Attempts};
use crate::scope;
use crate::session::{Mode, Parts, Session};
use crate::tls;
use crate::token::{self, BearerParams, CacheKey, TokenFailure};
use crate::transport::{self, Counters, Http, Limits, Purpose, TlsSetup};
use crate::{AuthorizeError, ClientOptions, Credential, Endpoint, Status};

/// One client per run, shared by every registry: connections are pooled and kept
/// alive, HTTP/2 is used where TLS offers it (ALPN), certificates are verified against
/// the system's roots plus [`ClientOptions::ca_file`]. A host with a directory in
/// [`ClientOptions::certs_dir`], or an endpoint with its own [`Endpoint::ca_files`] or
/// [`Endpoint::client_cert`], gets its own HTTP client, built on first use and kept.
/// Endpoints marked [`Endpoint::skip_verify`] use clients that do not verify
/// certificates. Tokens are cached per (registry, credential, scope set) until shortly
/// before they expire. Cheap to clone; clones share all of it.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

/// What a client and its sessions share.
pub(crate) struct Shared {
    pub options: ClientOptions,
    pub policy: retry::Policy,
    pub counters: Arc<Counters>,
    pub tokens: token::Cache,
    limits: Limits,
    /// The roots of `ca_file`, for the per-host clients too.
    extra_roots: Vec<reqwest::Certificate>,
    secure: Http,
    insecure: Http,
    /// Per-host clients, by host and TLS settings.
    per_host: Mutex<HashMap<TlsKey, Http>>,
}

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

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_host = self
            .shared
            .per_host
            .lock()
            .map(|m| m.len())
            .unwrap_or_default();
        f.debug_struct("Client")
            .field("options", &self.shared.options)
            .field("requests", &self.request_count())
            .field("per_host_clients", &per_host)
            .field("tokens", &self.shared.tokens)
            .finish()
    }
}

impl Shared {
    fn build(&self, tls: TlsSetup) -> Result<Http, String> {
        transport::build_client(
            &self.options.user_agent,
            self.limits,
            self.options.max_redirects,
            tls,
        )
        .map(|client| Http {
            client,
            limits: self.limits,
            counters: Arc::clone(&self.counters),
        })
        .map_err(|e| transport::describe(&e, &self.limits, self.limits.total, Default::default()))
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
        let http = self
            .build(TlsSetup {
                extra_roots: roots,
                identity,
                skip_verify: key.skip_verify,
            })
            .map_err(|e| format!("TLS settings from {}: {e}", from.join(", ")))?;
        tracing::debug!(host = %key.host, from = %from.join(", "), "built a client with the host's certificates");
        per_host.insert(key, http.clone());
        Ok(http)
    }
}

impl Client {
    /// Builds the client.
    ///
    /// # Errors
    /// [`AuthorizeError`] with [`Status::Unreachable`] when the TLS configuration cannot
    /// be built: no usable system certificate store, or a [`ClientOptions::ca_file`]
    /// that cannot be read or holds no PEM certificate (the message names the file).
    pub fn new(options: ClientOptions) -> Result<Client, AuthorizeError> {
        let fail = |what: String| AuthorizeError {
            status: Status::Unreachable,
            message: format!("cannot build the HTTP client: {what}"),
        };
        let extra_roots = match &options.ca_file {
            Some(path) => tls::read_roots(path).map_err(|e| fail(format!("ca_file: {e}")))?,
            None => Vec::new(),
        };
        let limits = Limits::from_options(&options);
        let counters = Arc::new(Counters::default());
        let build = |skip_verify: bool| {
            transport::build_client(
                &options.user_agent,
                limits,
                options.max_redirects,
                TlsSetup {
                    extra_roots: extra_roots.clone(),
                    identity: None,
                    skip_verify,
                },
            )
            .map(|client| Http {
                client,
                limits,
                counters: Arc::clone(&counters),
            })
            .map_err(|e| {
                fail(transport::describe(
                    &e,
                    &limits,
                    limits.total,
                    Default::default(),
                ))
            })
        };
        let secure = build(false)?;
        let insecure = build(true)?;
        Ok(Client {
            shared: Arc::new(Shared {
                policy: retry::Policy::from_options(&options),
                options,
                counters,
                tokens: token::Cache::default(),
                limits,
                extra_roots,
                secure,
                insecure,
                per_host: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The options the client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.shared.options
    }

    /// HTTP requests sent so far by this client and its sessions, token requests
    /// included, whatever their outcome.
    pub fn request_count(&self) -> u64 {
        self.shared.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests sent so far to token realms (GET or OAuth2 POST).
    pub fn token_request_count(&self) -> u64 {
        self.shared.counters.token_requests.load(Ordering::Relaxed)
    }

    /// Pings `endpoint` (`GET /v2/`, or its [`Endpoint::base_path`], with its
    /// [`Endpoint::query`] and [`Endpoint::headers`]) and, if it challenges,
    /// authenticates once for all `repositories` (paths such as `library/alpine`),
    /// yielding a session that can query them (and others, at the cost of a token
    /// each).
    ///
    /// - `https://` first; when that fails before any HTTP answer (DNS, TCP, TLS,
    ///   timeout) and [`Endpoint::allow_http`] is set, `http://`, which the session
    ///   then keeps.
    /// - Retryable failures of the ping and of the token request (408, 429, 502, 503,
    ///   504, refused or reset connections) are retried as [`ClientOptions`] says; the
    ///   error then lists each attempt's failure.
    /// - `Bearer` challenge: **one** token request carrying one `scope` parameter per
    ///   repository (distribution token-auth spec) for up to 100 repositories and
    ///   6 KiB of `scope` parameters; more repositories are split into batches of that
    ///   size, whose tokens are fetched concurrently, and each `HEAD` carries its
    ///   batch's token. (A token for 1,000 repositories is an 87 KB JWT that
    ///   distribution decodes on every request, and its URL is longer than common
    ///   front ends accept.) Basic-authenticated for
    ///   [`Credential::Basic`]; an OAuth2 refresh-token POST for
    ///   [`Credential::IdentityToken`] (GET when the realm answers 404 or 405);
    ///   [`Credential::RegistryToken`] is used as the bearer as it is. A token cached
    ///   by an earlier `authorize` for the same registry, credential and repositories is
    ///   reused while fresh. A plain-HTTP realm is refused unless the endpoint is
    ///   insecure (`allow_http` or `skip_verify`).
    /// - `Basic` challenge: a user name and password are checked once on `/v2/`, then
    ///   sent with every request; without them the session is still made, and each
    ///   image answers [`Status::NoAccess`].
    ///
    /// # Errors
    /// [`AuthorizeError`], which applies to every image on the registry:
    /// [`Status::Unreachable`] for network, TLS, timeout, 5xx and nonsensical answers,
    /// unusable certificate files, an invalid [`Endpoint::headers`] entry, and a
    /// deadline reached;
    /// [`Status::Denied`] when the registry or its token realm rejects the credential
    /// (the message names the host and the user, never a secret);
    /// [`Status::NoAccess`] when the realm refuses anonymous access or the registry asks
    /// for an authentication scheme this client does not speak, or sends a malformed
    /// challenge.
    pub async fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
    ) -> Result<Session, AuthorizeError> {
        self.authorize_until(endpoint, credential, repositories, None)
            .await
    }

    /// [`Client::authorize`] that sends nothing, and sleeps no backoff, past `deadline`
    /// (nor past [`ClientOptions::deadline`], if earlier).
    ///
    /// # Errors
    /// As [`Client::authorize`]; reaching the deadline is [`Status::Unreachable`].
    pub async fn authorize_before(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        deadline: Instant,
    ) -> Result<Session, AuthorizeError> {
        self.authorize_until(endpoint, credential, repositories, Some(deadline))
            .await
    }

    async fn authorize_until(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        deadline: Option<Instant>,
    ) -> Result<Session, AuthorizeError> {
        let mut attempts = Attempts::new(
            self.shared.policy,
            earliest(self.shared.options.deadline, deadline),
        );
        self.authorize_with(endpoint, credential, repositories, &mut attempts)
            .await
            .map_err(|mut e| {
                attempts.annotate(&mut e.message);
                e.message = auth::redact(&e.message, credential, None);
                e
            })
    }

    async fn authorize_with(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        attempts: &mut Attempts,
    ) -> Result<Session, AuthorizeError> {
        let host = endpoint.host.as_str();
        let headers = header_map(&endpoint.headers).map_err(|e| AuthorizeError {
            status: Status::Unreachable,
            message: format!("registry {host}: {e}"),
        })?;
        let http = self
            .shared
            .http_for_endpoint(endpoint)
            .map_err(|e| unreachable_error(host, &e))?;
        let (base, ping) = self.ping(endpoint, &headers, &http, attempts).await?;
        let api = api_url(&base, endpoint);
        let ping_url = with_query(api.clone(), &endpoint.query);
        let www_authenticate: Vec<&[u8]> = ping
            .headers()
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        let decision = auth::plan(
            &auth::Ping {
                host,
                url: ping_url.as_str(),
                status: ping.status().as_u16(),
                www_authenticate,
                allow_http_realm: endpoint.allow_http || endpoint.skip_verify,
            },
            credential,
        );
        drop(ping);
        let batches = scope::token_batches(repositories.iter().map(String::as_str));
        let mode = match decision {
            Plan::Open => Mode::Open,
            Plan::BasicWithoutCredential => Mode::BasicWithoutCredential,
            Plan::Fail(e) => return Err(e),
            Plan::Basic => {
                self.check_basic(
                    &http,
                    &headers,
                    host,
                    &ping_url,
                    credential,
                    attempts.deadline(),
                )
                .await?;
                Mode::Basic
            }
            Plan::Bearer(params) => {
                let realm_http = realm_http(&self.shared, endpoint, &params.realm)
                    .map_err(|e| unreachable_error(host, &e))?;
                self.prefetch_tokens(
                    endpoint,
                    &params,
                    credential,
                    &realm_http,
                    &batches,
                    attempts,
                )
                .await
                .map_err(|f| auth::token_failure(host, &params, credential, &f))?;
                Mode::Bearer {
                    params,
                    http: realm_http,
                }
            }
        };
        Ok(Session::new(Parts {
            shared: Arc::clone(&self.shared),
            endpoint: endpoint.clone(),
            base,
            api,
            headers,
            http,
            credential: credential.clone(),
            mode,
            repositories,
            batches,
        }))
    }

    /// Fetches the token of every scope batch at once, so that the `HEAD`s find them
    /// cached. The first batch's failure is the error (it applies to every image: the
    /// same realm and credential); another batch's failure is left for the `HEAD`s of
    /// its repositories, which ask again through the cache and report it per image.
    async fn prefetch_tokens(
        &self,
        endpoint: &Endpoint,
        params: &BearerParams,
        credential: &Credential,
        http: &Http,
        batches: &[Vec<String>],
        attempts: &mut Attempts,
    ) -> Result<(), TokenFailure> {
        let tokens = &self.shared.tokens;
        // With no repository, one token with no scope: the realm still checks the
        // credential, as `docker login` does.
        let (first, rest) = batches
            .split_first()
            .map_or((&[][..], &[][..]), |(f, r)| (&f[..], r));
        let key = |scopes: &[String]| cache_key(endpoint, params, credential, Arc::from(scopes));
        let deadline = attempts.deadline();
        let policy = self.shared.policy;
        let others = futures::future::join_all(rest.iter().map(|scopes| async move {
            let mut own = Attempts::new(policy, deadline);
            if let Err(failure) = tokens.get(key(scopes), http, params, &mut own).await {
                tracing::debug!(host = %endpoint.host, ?failure, scopes = scopes.len(), "a token batch failed; left to its HEADs");
            }
        }));
        let (first, _) =
            futures::future::join(tokens.get(key(first), http, params, attempts), others).await;
        first.map(drop)
    }

    /// `GET <base_path>` over https, then http when allowed, retried while the failures
    /// are retryable. Returns the base URL (`scheme://host[:port]/`) that answered and
    /// its response (any status).
    async fn ping(
        &self,
        endpoint: &Endpoint,
        headers: &HeaderMap,
        http: &Http,
        attempts: &mut Attempts,
    ) -> Result<(Url, reqwest::Response), AuthorizeError> {
        loop {
            match self
                .ping_once(endpoint, headers, http, attempts.deadline())
                .await
            {
                Ok((base, response)) => {
                    let status = response.status().as_u16();
                    if retry::retryable_status(status) {
                        let retry_after = response
                            .headers()
                            .get(RETRY_AFTER)
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| retry::parse_retry_after(v, SystemTime::now()));
                        let failure = format!("HTTP {status} on {}", endpoint.api_path());
                        if attempts.retry(failure, retry_after).await {
                            continue;
                        }
                    }
                    return Ok((base, response));
                }
                Err(failure) => {
                    if failure.retryable && attempts.retry(failure.short, None).await {
                        continue;
                    }
                    return Err(AuthorizeError {
                        status: Status::Unreachable,
                        message: failure.message,
                    });
                }
            }
        }
    }

    async fn ping_once(
        &self,
        endpoint: &Endpoint,
        headers: &HeaderMap,
        http: &Http,
        deadline: Option<Instant>,
    ) -> Result<(Url, reqwest::Response), PingFailure> {
        let host = endpoint.host.as_str();
        let base = base_url("https", host).map_err(|e| PingFailure {
            message: e.message,
            short: String::new(),
            retryable: false,
        })?;
        let url = with_query(api_url(&base, endpoint), &endpoint.query);
        let https_error = match http
            .send(
                http.client.get(url.clone()).headers(headers.clone()),
                &Method::GET,
                &url,
                Purpose::Ping,
                deadline,
            )
            .await
        {
            Ok(response) => return Ok((base, response)),
            Err(e) => e,
        };
        if !(endpoint.allow_http && https_error.connection_level) {
            return Err(PingFailure {
                message: format!(
                    "registry {host} unreachable over https: {}",
                    https_error.reason
                ),
                short: format!("https: {}", https_error.reason),
                retryable: https_error.retryable,
            });
        }
        let base = base_url("http", host).map_err(|e| PingFailure {
            message: e.message,
            short: String::new(),
            retryable: false,
        })?;
        let url = with_query(api_url(&base, endpoint), &endpoint.query);
        tracing::debug!(host, reason = %https_error.reason, "https failed; trying plain http");
        match http
            .send(
                http.client.get(url.clone()).headers(headers.clone()),
                &Method::GET,
                &url,
                Purpose::Ping,
                deadline,
            )
            .await
        {
            Ok(response) => Ok((base, response)),
            Err(e) => Err(PingFailure {
                message: format!(
                    "registry {host} unreachable: https: {}; http: {}",
                    https_error.reason, e.reason
                ),
                short: format!("https: {}, then http: {}", https_error.reason, e.reason),
                retryable: e.retryable,
            }),
        }
    }

    async fn check_basic(
        &self,
        http: &Http,
        headers: &HeaderMap,
        host: &str,
        ping_url: &Url,
        credential: &Credential,
        deadline: Option<Instant>,
    ) -> Result<(), AuthorizeError> {
        let Credential::Basic { username, password } = credential else {
            return Ok(());
        };
        let mut headers = headers.clone();
        headers.remove(reqwest::header::AUTHORIZATION);
        let request = http
            .client
            .get(ping_url.clone())
            .headers(headers)
            .basic_auth(username, Some(password));
        let response = http
            .send(request, &Method::GET, ping_url, Purpose::Ping, deadline)
            .await
            .map_err(|e| unreachable_error(host, &e.reason))?;
        match auth::basic_check(host, response.status().as_u16(), credential) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// A ping that got no HTTP answer.
struct PingFailure {
    /// The whole message, naming the host.
    message: String,
    /// The reason alone, for the attempt history.
    short: String,
    retryable: bool,
}

fn unreachable_error(host: &str, reason: &str) -> AuthorizeError {
    AuthorizeError {
        status: Status::Unreachable,
        message: format!("registry {host} unreachable: {reason}"),
    }
}

/// The earlier of two optional deadlines.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The token cache key for `scopes` on `endpoint`.
pub(crate) fn cache_key(
    endpoint: &Endpoint,
    params: &BearerParams,
    credential: &Credential,
    scopes: Arc<[String]>,
) -> CacheKey {
    CacheKey {
        host: endpoint.host.clone(),
        realm: params.realm.clone(),
        service: params.service.clone(),
        credential: credential.clone(),
        scopes,
    }
}

/// The client for a token realm, with the realm host's own certificates when
/// `certs_dir` has them and the endpoint's CA files. On the endpoint's host it is the
/// endpoint's client (skipping verification if the endpoint does, with its client
/// certificate); a realm elsewhere is verified and gets no client certificate.
///
/// # Errors
/// A message naming the file when a certificate file cannot be used.
pub(crate) fn realm_http(
    shared: &Shared,
    endpoint: &Endpoint,
    realm: &Url,
) -> Result<Http, String> {
    let same = same_host(&endpoint.host, realm);
    shared.http_with(TlsKey {
        host: authority(realm),
        skip_verify: endpoint.skip_verify && same,
        ca_files: endpoint.ca_files.clone(),
        client_cert: endpoint.client_cert.clone().filter(|_| same),
    })
}

/// `host[:port]` of a URL, the port only when the URL names one.
pub(crate) fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

fn base_url(scheme: &str, host: &str) -> Result<Url, AuthorizeError> {
    let invalid = || AuthorizeError {
        status: Status::Unreachable,
        message: format!("registry host {host:?} is not a valid host[:port]"),
    };
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(invalid());
    }
    let url = Url::parse(&format!("{scheme}://{host}/")).map_err(|_| invalid())?;
    if url.host_str().is_none() || url.path() != "/" {
        return Err(invalid());
    }
    Ok(url)
}

/// The API base of `endpoint` on `base` (`scheme://host[:port]/`): `base` with
/// [`Endpoint::api_path`], e.g. `https://h/v2/`.
pub(crate) fn api_url(base: &Url, endpoint: &Endpoint) -> Url {
    join(base, endpoint.api_path().trim_start_matches('/'))
}

/// `url` with `query` appended, in order, form-encoded (`:` as `%3A`, as Go's
/// `url.Values.Encode` does).
pub(crate) fn with_query(mut url: Url, query: &[(String, String)]) -> Url {
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in query {
            pairs.append_pair(name, value);
        }
    }
    url
}

/// The configured headers as a header map, values marked sensitive.
///
/// # Errors
/// A message naming the header (never its value) when its name or value is invalid.
pub(crate) fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name:?} is not a valid header value"))?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// `base` (ending in `/`) with `path` appended.
pub(crate) fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(&format!("{}{path}", base.path()));
    url
}

/// Whether the realm is on the endpoint's host (and port, when the endpoint has one).
pub(crate) fn same_host(endpoint_host: &str, realm: &Url) -> bool {
    let Ok(endpoint) = Url::parse(&format!("https://{endpoint_host}/")) else {
        return false;
    };
    endpoint.host_str() == realm.host_str()
        && endpoint.port_or_known_default() == realm.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_for_names_ports_and_ipv6() {
        assert_eq!(
            base_url("https", "registry-1.docker.io").unwrap().as_str(),
            "https://registry-1.docker.io/"
        );
        assert_eq!(
            base_url("http", "127.0.0.1:5000").unwrap().as_str(),
            "http://127.0.0.1:5000/"
        );
        assert_eq!(
            base_url("https", "[::1]:5000").unwrap().as_str(),
            "https://[::1]:5000/"
        );
        for bad in ["", "a/b", "host?x", "user@host", "a b", "[::1"] {
            assert!(base_url("https", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn join_appends_to_the_base() {
        let base = base_url("https", "h:1").unwrap();
        assert_eq!(join(&base, "v2/").as_str(), "https://h:1/v2/");
    }

    #[test]
    fn api_urls_follow_the_base_path_and_carry_the_query() {
        let base = base_url("http", "m:5000").unwrap();
        let api = |path: &str| {
            api_url(
                &base,
                &Endpoint {
                    base_path: path.into(),
                    ..Endpoint::new("m:5000")
                },
            )
            .to_string()
        };
        assert_eq!(api("/v2/"), "http://m:5000/v2/");
        assert_eq!(api(""), "http://m:5000/v2/");
        assert_eq!(api("custom/prefix"), "http://m:5000/custom/prefix/");
        assert_eq!(api("/us/v2/"), "http://m:5000/us/v2/");
        assert_eq!(api("/"), "http://m:5000/");
        assert_eq!(api("/a b/"), "http://m:5000/a%20b/");
        let query = vec![
            ("ns".to_string(), "docker.io".to_string()),
            ("x".to_string(), "127.0.0.1:5000".to_string()),
        ];
        assert_eq!(
            with_query(Url::parse("http://m/v2/").unwrap(), &query).as_str(),
            "http://m/v2/?ns=docker.io&x=127.0.0.1%3A5000"
        );
        assert_eq!(
            with_query(
                Url::parse("http://m/v2/a/tags/list?n=1000").unwrap(),
                &query[..1]
            )
            .as_str(),
            "http://m/v2/a/tags/list?n=1000&ns=docker.io"
        );
        assert_eq!(
            with_query(Url::parse("http://m/v2/").unwrap(), &[]).as_str(),
            "http://m/v2/"
        );
    }

    #[test]
    fn configured_headers_are_checked_and_kept_secret() {
        let map = header_map(&[
            ("X-Mirror".into(), "a".into()),
            ("x-mirror".into(), "b".into()),
            ("Authorization".into(), "Basic c2VjcmV0".into()),
        ])
        .unwrap();
        let values: Vec<&str> = map
            .get_all("x-mirror")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(values, ["a", "b"]);
        assert!(map.values().all(|v| v.is_sensitive()));
        assert!(!format!("{map:?}").contains("c2VjcmV0"));
        let e = header_map(&[("bad name".into(), "v".into())]).unwrap_err();
        assert_eq!(e, "\"bad name\" is not a valid header name");
        let e = header_map(&[("X-Token".into(), "line\nbreak-secret".into())]).unwrap_err();
        assert_eq!(
            e,
            "the value of header \"X-Token\" is not a valid header value"
        );
    }

    #[test]
    fn realm_on_same_host() {
        let realm = Url::parse("https://reg.example/token").unwrap();
        assert!(same_host("reg.example", &realm));
        assert!(same_host("reg.example:443", &realm));
        assert!(!same_host("reg.example:5000", &realm));
        assert!(!same_host("auth.example", &realm));
    }

    #[test]
    fn client_builds_with_system_roots() {
        let client = Client::new(ClientOptions::default()).unwrap();
        assert_eq!(client.request_count(), 0);
        assert_eq!(client.token_request_count(), 0);
    }

    #[test]
    fn unreadable_ca_file_names_the_file() {
        let err = Client::new(ClientOptions {
            ca_file: Some("/nonexistent/pullcheck-ca.pem".into()),
            ..ClientOptions::default()
        })
        .unwrap_err();
        assert_eq!(err.status, Status::Unreachable);
        assert!(
            err.message.starts_with(
                "cannot build the HTTP client: ca_file: cannot read /nonexistent/pullcheck-ca.pem"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn authorities_and_deadlines() {
        let u = Url::parse("https://auth.example:8443/token").unwrap();
        assert_eq!(authority(&u), "auth.example:8443");
        let u = Url::parse("https://auth.example/token").unwrap();
        assert_eq!(authority(&u), "auth.example");
        let u = Url::parse("http://[::1]:5000/token").unwrap();
        assert_eq!(authority(&u), "[::1]:5000");
        let now = Instant::now();
        let later = now + std::time::Duration::from_secs(1);
        assert_eq!(earliest(Some(now), Some(later)), Some(now));
        assert_eq!(earliest(None, Some(later)), Some(later));
        assert_eq!(earliest(Some(now), None), Some(now));
        assert_eq!(earliest(None, None), None);
    }
}
