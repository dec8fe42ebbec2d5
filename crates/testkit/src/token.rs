//! A token server (distribution token-auth spec) that runs in the harness.
//!
//! It answers `GET /token?service=S&scope=...` with an RS256 JWT whose `x5c`
//! header holds a self-signed certificate made at start-up with the `openssl`
//! CLI; the registry trusts that certificate through `rootcertbundle`. The
//! private key lives only in memory (and briefly in the temp dir).

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;

use crate::Error;
use crate::process::openssl_self_signed;
use crate::tempdir::TempDir;

/// The `service` the token server and its registry agree on (the JWT `aud`).
pub const TOKEN_SERVICE: &str = "pullcheck-testkit-registry";
/// The JWT `iss`.
pub const TOKEN_ISSUER: &str = "pullcheck-testkit-token-server";

/// The repositories a user may pull.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repos {
    /// Every repository (`*`).
    All,
    /// Exactly these repository names (empty: none).
    Only(Vec<String>),
}

impl Repos {
    /// Exactly these repositories.
    pub fn only<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Repos::Only(names.into_iter().map(Into::into).collect())
    }

    /// No repository.
    pub fn none() -> Self {
        Repos::Only(Vec::new())
    }

    /// Whether `repository` is allowed.
    pub fn allows(&self, repository: &str) -> bool {
        match self {
            Repos::All => true,
            Repos::Only(names) => names.iter().any(|n| n == repository),
        }
    }
}

/// A user with a password, and the repositories the token server lets them
/// pull.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct User {
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
    /// What the token server grants `pull` on (default [`Repos::All`]).
    /// Ignored by [`Auth::Htpasswd`](crate::Auth::Htpasswd).
    pub pull: Repos,
    /// A refresh token (what `docker login` stores as `identitytoken`)
    /// accepted by the OAuth2 form, `grant_type=refresh_token`; see
    /// [`TokenPolicy::oauth_post`]. Default none.
    pub refresh_token: Option<String>,
}

impl User {
    /// A user allowed to pull every repository.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        User {
            username: username.into(),
            password: password.into(),
            pull: Repos::All,
            refresh_token: None,
        }
    }

    /// Restricts what the user may pull.
    pub fn pulling(mut self, repos: Repos) -> Self {
        self.pull = repos;
        self
    }

    /// Gives the user a refresh token for the OAuth2 form.
    pub fn with_refresh_token(mut self, token: impl Into<String>) -> Self {
        self.refresh_token = Some(token.into());
        self
    }
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("username", &self.username)
            .field("password", &"******")
            .field("pull", &self.pull)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "******"),
            )
            .finish()
    }
}

/// Who may get tokens for what.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TokenPolicy {
    /// Users accepted with Basic credentials.
    pub users: Vec<User>,
    /// What requests without credentials may pull (default none: their
    /// tokens carry an empty `access`).
    pub anonymous: Repos,
    /// The `expires_in` of tokens, also their `exp - iat` (default 300 s).
    /// Note: distribution accepts a token up to 60 s after its `exp`.
    pub expires_in: Duration,
    /// Whether `POST /token` (the OAuth2 form: `grant_type=password` with
    /// `username`/`password`, or `grant_type=refresh_token` with a user's
    /// [`User::refresh_token`]) is served. Default false: it answers 404,
    /// which tells clients to fall back to GET.
    pub oauth_post: bool,
    /// Repositories whose token requests the server answers wrongly, as a
    /// misbehaving token server does ([`TokenFault`]): a request that
    /// authenticated and asks a scope on one of them gets the fault instead of
    /// a token. Default none.
    pub faults: Vec<(String, TokenFault)>,
}

/// How the token server misbehaves for a repository ([`TokenPolicy::faults`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenFault {
    /// Answers this status with the `errors` JSON body of its other errors (403 as
    /// an ACL that refuses the repository, 500 as a broken token server).
    Status(u16),
    /// Answers 200 with a JSON body that has `expires_in` and `issued_at` but
    /// neither `token` nor `access_token` (distribution token-auth spec, "Token
    /// Response Fields": one of the two is required).
    NoToken,
}

impl TokenFault {
    /// Parses `no-token` or an HTTP status (`403`, `500`).
    pub fn parse(s: &str) -> Option<TokenFault> {
        match s {
            "no-token" => Some(TokenFault::NoToken),
            _ => s
                .parse::<u16>()
                .ok()
                .filter(|c| StatusCode::from_u16(*c).is_ok())
                .map(TokenFault::Status),
        }
    }
}

impl TokenPolicy {
    /// A policy for these users; anonymous requests get no access.
    pub fn new(users: Vec<User>) -> Self {
        TokenPolicy {
            users,
            anonymous: Repos::none(),
            expires_in: Duration::from_secs(300),
            oauth_post: false,
            faults: Vec::new(),
        }
    }

    /// Makes the token server answer `fault` to the token requests that ask for
    /// `repository`.
    pub fn fault(mut self, repository: impl Into<String>, fault: TokenFault) -> Self {
        self.faults.push((repository.into(), fault));
        self
    }

    /// Sets what anonymous requests may pull.
    pub fn anonymous(mut self, repos: Repos) -> Self {
        self.anonymous = repos;
        self
    }

    /// Sets the token lifetime (whole seconds; at least 1).
    pub fn expires_in(mut self, lifetime: Duration) -> Self {
        self.expires_in = lifetime;
        self
    }

    /// Serves (or not) the OAuth2 form, `POST /token`.
    pub fn oauth_post(mut self, enabled: bool) -> Self {
        self.oauth_post = enabled;
        self
    }
}

/// How a token request authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenAuth {
    /// No `Authorization` header.
    Anonymous,
    /// Good Basic credentials for this user.
    User(String),
    /// Basic credentials with an unknown user or a wrong password (answered
    /// 401). The password is never recorded.
    Rejected {
        /// The user name that was sent.
        username: String,
    },
    /// An OAuth2 form whose `refresh_token` belongs to no user (answered
    /// 401).
    RejectedRefreshToken,
    /// An `Authorization` header that is not valid Basic, or an OAuth2 form
    /// missing its credentials (answered 401).
    Malformed,
}

/// One request the token server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequest {
    /// `GET` (the token flow) or `POST` (the OAuth2 form; answered 404
    /// unless [`TokenPolicy::oauth_post`]).
    pub method: String,
    /// The path, without the query, e.g. `/token`.
    pub path: String,
    /// The `service` parameter, if sent.
    pub service: Option<String>,
    /// The `scope` parameters, in order, e.g. `repository:app:pull` (the
    /// OAuth2 form may put several in one, separated by spaces).
    pub scopes: Vec<String>,
    /// The OAuth2 form's `grant_type` (POST only).
    pub grant_type: Option<String>,
    /// The `client_id` parameter, if sent.
    pub client_id: Option<String>,
    /// How the request authenticated.
    pub auth: TokenAuth,
    /// The status answered.
    pub status: u16,
    /// What the token granted, as scopes (`repository:app:pull`); empty when
    /// no token was issued.
    pub granted: Vec<String>,
}

struct State {
    policy: TokenPolicy,
    key: RsaKeyPair,
    cert_b64: String,
    requests: Mutex<Vec<TokenRequest>>,
    jti: AtomicU64,
}

/// A running token server on `127.0.0.1`; stopped on drop.
pub struct TokenServer {
    realm: String,
    cert_path: PathBuf,
    state: Arc<State>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: Option<TempDir>,
}

impl fmt::Debug for TokenServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenServer")
            .field("realm", &self.realm)
            .field("cert_path", &self.cert_path)
            .finish()
    }
}

impl TokenServer {
    /// Starts a token server alone, with its own temp dir for the
    /// certificate. [`Registry`](crate::Registry) starts one itself in token
    /// mode; use this to test a token client without a registry.
    pub fn start(policy: TokenPolicy) -> Result<TokenServer, Error> {
        let dir = TempDir::new("token")?;
        let mut server = TokenServer::start_in(policy, dir.path())?;
        server._dir = Some(dir);
        Ok(server)
    }

    /// Starts a token server that writes `token-cert.pem` into `dir`.
    pub(crate) fn start_in(policy: TokenPolicy, dir: &Path) -> Result<TokenServer, Error> {
        let (key, cert_der, cert_path) = make_key_and_cert(dir)?;
        let state = Arc::new(State {
            policy,
            key,
            cert_b64: STANDARD.encode(cert_der),
            requests: Mutex::new(Vec::new()),
            jti: AtomicU64::new(0),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("binding the token server", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("binding the token server", e))?;
        let addr: SocketAddr = listener
            .local_addr()
            .map_err(|e| Error::io("binding the token server", e))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("building the token server runtime", e))?;
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("pullcheck-testkit-token".into())
            .spawn(move || runtime.block_on(serve(listener, served, stop)))
            .map_err(|e| Error::io("spawning the token server thread", e))?;
        Ok(TokenServer {
            realm: format!("http://{addr}/token"),
            cert_path,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
            _dir: None,
        })
    }

    /// The realm, `http://127.0.0.1:PORT/token`.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// The service name ([`TOKEN_SERVICE`]).
    pub fn service(&self) -> &str {
        TOKEN_SERVICE
    }

    /// The issuer ([`TOKEN_ISSUER`]).
    pub fn issuer(&self) -> &str {
        TOKEN_ISSUER
    }

    /// The PEM certificate the registry trusts (`rootcertbundle`).
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// Every request received so far (or since
    /// [`clear_requests`](Self::clear_requests)), in order. A request is
    /// recorded before it is answered.
    pub fn requests(&self) -> Vec<TokenRequest> {
        lock(&self.state.requests).clone()
    }

    /// The requests received after the first `n` (in arrival order), or none when
    /// there are not more than `n`: what a log follower needs, without copying the
    /// whole history on every poll. Cleared requests are not counted.
    pub fn requests_since(&self, n: usize) -> Vec<TokenRequest> {
        lock(&self.state.requests)
            .get(n..)
            .map(<[TokenRequest]>::to_vec)
            .unwrap_or_default()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.state.requests).clear();
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn make_key_and_cert(dir: &Path) -> Result<(RsaKeyPair, Vec<u8>, PathBuf), Error> {
    let key_path = dir.join("token-key.pem");
    let cert_path = dir.join("token-cert.pem");
    openssl_self_signed(
        dir,
        "/CN=pullcheck-testkit-token",
        "token-key.pem",
        "token-cert.pem",
    )?;
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| Error::io(format!("reading {}", p.display()), e))
    };
    let key_pem = read(&key_path)?;
    let _ = std::fs::remove_file(&key_path);
    let cert_pem = read(&cert_path)?;
    let bad = |what: &str, reason: String| Error::Invalid {
        what: "generated key material",
        value: what.to_string(),
        reason,
    };
    let key_der = pem_body(&key_pem, "PRIVATE KEY")
        .ok_or_else(|| bad("token-key.pem", "no PKCS#8 PRIVATE KEY block".into()))?;
    let key = RsaKeyPair::from_pkcs8(&key_der).map_err(|e| bad("token-key.pem", e.to_string()))?;
    let cert_der = pem_body(&cert_pem, "CERTIFICATE")
        .ok_or_else(|| bad("token-cert.pem", "no CERTIFICATE block".into()))?;
    Ok((key, cert_der, cert_path))
}

/// The DER inside the first `-----BEGIN {label}-----` block.
fn pem_body(pem: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let b64: String = pem[start..stop].split_whitespace().collect();
    STANDARD.decode(b64).ok()
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<State>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    crate::http::serve_until(listener, stop, move |req| {
        let state = state.clone();
        async move { handle(&state, req).await }
    })
    .await;
}

fn reply(status: StatusCode, body: serde_json::Value) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    resp
}

/// Largest request body read (OAuth2 forms are tiny).
const MAX_BODY: usize = 64 * 1024;

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let mut params = parse_query(parts.uri.query().unwrap_or(""));
    let mut form_error = None;
    if parts.method == Method::POST {
        match http_body_util::Limited::new(body, MAX_BODY).collect().await {
            Ok(body) => params.extend(parse_query(&String::from_utf8_lossy(&body.to_bytes()))),
            Err(e) => form_error = Some(e.to_string()),
        }
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let oauth = parts.method == Method::POST && state.policy.oauth_post;
    let auth = if oauth {
        authenticate_form(&state.policy, param("grant_type").as_deref(), &param)
    } else {
        authenticate(
            &state.policy,
            parts.headers.get(hyper::header::AUTHORIZATION),
        )
    };
    let mut record = TokenRequest {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        service: param("service"),
        scopes: params
            .iter()
            .filter(|(k, _)| k == "scope")
            .map(|(_, v)| v.clone())
            .collect(),
        auth,
        grant_type: if parts.method == Method::POST {
            param("grant_type")
        } else {
            None
        },
        client_id: param("client_id"),
        status: 0,
        granted: Vec::new(),
    };
    let resp = if let Some(e) = form_error {
        error(StatusCode::BAD_REQUEST, "invalid_request", &e)
    } else if record.path != "/token" {
        error(StatusCode::NOT_FOUND, "NOT_FOUND", "only /token is served")
    } else if parts.method == Method::GET {
        respond(state, &mut record, false)
    } else if oauth {
        match record.grant_type.as_deref() {
            Some("password" | "refresh_token") => respond(state, &mut record, true),
            _ => error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type must be password or refresh_token",
            ),
        }
    } else {
        // Clients fall back to GET when the OAuth2 form answers 404.
        error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "the OAuth2 form is disabled (TokenPolicy::oauth_post)",
        )
    };
    record.status = resp.status().as_u16();
    lock(&state.requests).push(record);
    resp
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    reply(
        status,
        json!({"errors": [{"code": code, "message": message}], "error": code}),
    )
}

/// Issues a token for `record` (401 if it did not authenticate). `oauth`
/// shapes the answer as the OAuth2 form's.
fn respond(state: &State, record: &mut TokenRequest, oauth: bool) -> Response<Full<Bytes>> {
    let (subject, allowed, user) = match &record.auth {
        TokenAuth::Anonymous => (String::new(), state.policy.anonymous.clone(), None),
        TokenAuth::User(name) => {
            let user = state.policy.users.iter().find(|u| &u.username == name);
            let pull = user.map(|u| u.pull.clone()).unwrap_or_else(Repos::none);
            (name.clone(), pull, user)
        }
        TokenAuth::Rejected { .. } | TokenAuth::RejectedRefreshToken | TokenAuth::Malformed => {
            let mut resp = error(
                StatusCode::UNAUTHORIZED,
                "UNAUTHORIZED",
                "authentication required",
            );
            resp.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Basic realm=\"pullcheck-testkit-token\""),
            );
            return resp;
        }
    };
    if let Some(fault) = fault_for(&state.policy, &record.scopes) {
        return match fault {
            TokenFault::Status(code) => error(
                StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                "DENIED",
                "the testkit token server was told to refuse this repository",
            ),
            TokenFault::NoToken => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                reply(
                    StatusCode::OK,
                    json!({"expires_in": state.policy.expires_in.as_secs().max(1),
                           "issued_at": rfc3339(now)}),
                )
            }
        };
    }
    let granted = grant(&allowed, &record.scopes);
    record.granted = granted
        .iter()
        .map(|name| format!("repository:{name}:pull"))
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let lifetime = state.policy.expires_in.as_secs().max(1);
    let Some(token) = sign(state, &subject, &granted, now, lifetime) else {
        record.granted.clear();
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "UNKNOWN",
            "signing failed",
        );
    };
    let mut body = json!({
        "access_token": token,
        "expires_in": lifetime,
        "issued_at": rfc3339(now),
    });
    if oauth {
        body["scope"] = json!(record.granted.join(" "));
        if let Some(refresh) = user.and_then(|u| u.refresh_token.as_deref()) {
            body["refresh_token"] = json!(refresh);
        }
    } else {
        body["token"] = json!(token);
    }
    reply(StatusCode::OK, body)
}

/// The fault of the first repository in `scopes` (`repository:<name>:<actions>`, one
/// or several per parameter) that has one.
fn fault_for<'p>(policy: &'p TokenPolicy, scopes: &[String]) -> Option<&'p TokenFault> {
    scopes
        .iter()
        .flat_map(|s| s.split(' '))
        .filter_map(|s| s.strip_prefix("repository:"))
        .filter_map(|rest| rest.rsplit_once(':').map(|(name, _)| name))
        .find_map(|name| {
            policy
                .faults
                .iter()
                .find(|(repository, _)| repository == name)
                .map(|(_, fault)| fault)
        })
}

/// An RS256 JWT for `subject` granting `pull` on `repositories`.
fn sign(
    state: &State,
    subject: &str,
    repositories: &[String],
    now: u64,
    lifetime: u64,
) -> Option<String> {
    let header = json!({"alg": "RS256", "typ": "JWT", "x5c": [state.cert_b64]});
    let access: Vec<_> = repositories
        .iter()
        .map(|name| json!({"type": "repository", "name": name, "actions": ["pull"]}))
        .collect();
    let jti = state.jti.fetch_add(1, Ordering::Relaxed);
    let claims = json!({
        "iss": TOKEN_ISSUER,
        "sub": subject,
        "aud": TOKEN_SERVICE,
        "exp": now + lifetime,
        "nbf": now.saturating_sub(1),
        "iat": now,
        "jti": format!("pullcheck-testkit-{}-{jti}", std::process::id()),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut signature = vec![0; state.key.public_modulus_len()];
    state
        .key
        .sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            signing_input.as_bytes(),
            &mut signature,
        )
        .ok()?;
    Some(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

/// Basic credentials from the `Authorization` header (GET flow).
fn authenticate(policy: &TokenPolicy, header: Option<&hyper::header::HeaderValue>) -> TokenAuth {
    let Some(header) = header else {
        return TokenAuth::Anonymous;
    };
    let decoded = header
        .to_str()
        .ok()
        .and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("basic").then_some(rest.trim())
        })
        .and_then(|b64| STANDARD.decode(b64).ok())
        .and_then(|raw| String::from_utf8(raw).ok());
    match decoded.as_deref().and_then(|s| s.split_once(':')) {
        Some((username, password)) => check_password(policy, username, password),
        None => TokenAuth::Malformed,
    }
}

/// Credentials from an OAuth2 form (POST flow).
fn authenticate_form(
    policy: &TokenPolicy,
    grant_type: Option<&str>,
    param: &dyn Fn(&str) -> Option<String>,
) -> TokenAuth {
    match grant_type {
        Some("password") => match (param("username"), param("password")) {
            (Some(username), Some(password)) => check_password(policy, &username, &password),
            _ => TokenAuth::Malformed,
        },
        Some("refresh_token") => {
            let Some(token) = param("refresh_token") else {
                return TokenAuth::Malformed;
            };
            policy
                .users
                .iter()
                .find(|u| u.refresh_token.as_deref() == Some(token.as_str()))
                .map_or(TokenAuth::RejectedRefreshToken, |u| {
                    TokenAuth::User(u.username.clone())
                })
        }
        _ => TokenAuth::Anonymous,
    }
}

fn check_password(policy: &TokenPolicy, username: &str, password: &str) -> TokenAuth {
    match policy.users.iter().find(|u| u.username == username) {
        Some(user) if user.password == password => TokenAuth::User(username.to_string()),
        _ => TokenAuth::Rejected {
            username: username.to_string(),
        },
    }
}

/// The repositories to grant `pull` on: those asked for with `pull` in a
/// `repository:NAME:ACTIONS` scope and allowed, each once, in order.
fn grant(allowed: &Repos, scopes: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for scope in scopes {
        for part in scope.split(' ') {
            let Some(rest) = part.strip_prefix("repository:") else {
                continue;
            };
            let Some((name, actions)) = rest.rsplit_once(':') else {
                continue;
            };
            if actions.split(',').any(|a| a == "pull" || a == "*")
                && allowed.allows(name)
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the epoch.
fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_798_761_599), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn decodes_query() {
        assert_eq!(
            parse_query("service=a%20b&scope=repository%3Ax%3Apull&scope=y+z&bad=%zz&end=%4"),
            vec![
                ("service".into(), "a b".into()),
                ("scope".into(), "repository:x:pull".into()),
                ("scope".into(), "y z".into()),
                ("bad".into(), "%zz".into()),
                ("end".into(), "%4".into()),
            ]
        );
    }

    #[test]
    fn grants_the_intersection_once_each() {
        let scopes = vec![
            "repository:a:pull".to_string(),
            "repository:b:push".to_string(),
            "repository:c:pull,push repository:a:pull".to_string(),
            "repository:127.0.0.1:5000/x:pull".to_string(),
            "registry:catalog:*".to_string(),
        ];
        assert_eq!(grant(&Repos::All, &scopes), ["a", "c", "127.0.0.1:5000/x"]);
        assert_eq!(grant(&Repos::only(["c", "z"]), &scopes), ["c"]);
        assert!(grant(&Repos::none(), &scopes).is_empty());
    }
}
