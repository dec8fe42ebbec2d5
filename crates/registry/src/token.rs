//! Bearer tokens: which request to send to the realm for a credential (pure), how to
//! read the reply (pure), the fetch itself, GET or the OAuth2 POST with its GET
//! fallback (distribution token-auth spec and `oauth.md`), retried like every request,
//! and the client's cache of tokens per (registry, credential, scope set).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use reqwest::header::HeaderValue;
use serde::Deserialize;
use url::Url;

use crate::RequestKind;
use crate::challenge::Challenge;
use crate::finding::FailedAttempt;
use crate::retry::{self, Attempts};
use crate::scope;
use crate::transport::{self, Http};
use crate::urls;
use crate::{Credential, Endpoint, RealmProblem, TokenReplyProblem};

/// The OAuth2 `client_id` this crate presents.
pub(crate) const CLIENT_ID: &str = "pullcheck";
/// The lifetime assumed when a reply has no `expires_in` (token-auth spec).
pub(crate) const DEFAULT_LIFETIME: Duration = Duration::from_secs(60);

pub(crate) use pullcheck_credentials::Secret;

/// Where and for which service to ask for tokens: the `realm` and `service` of a
/// `Bearer` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BearerParams {
    pub realm: Url,
    pub service: Option<String>,
}

/// Why a `Bearer` challenge cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BearerError {
    /// No `realm`, or one that is not an absolute http(s) URL.
    BadRealm(RealmProblem),
    /// A plain-HTTP realm for an endpoint that is not insecure.
    InsecureRealm(Url),
}

impl BearerParams {
    /// Reads `realm` and `service` from a `Bearer` challenge. A plain-HTTP realm is
    /// refused unless `allow_http_realm`.
    pub fn from_challenge(
        challenge: &Challenge,
        allow_http_realm: bool,
    ) -> Result<BearerParams, BearerError> {
        let Some(realm) = challenge.param("realm").filter(|r| !r.is_empty()) else {
            return Err(BearerError::BadRealm(RealmProblem::Missing));
        };
        let realm = Url::parse(realm).map_err(|e| {
            BearerError::BadRealm(RealmProblem::NotAUrl {
                realm: realm.to_string(),
                error: e.to_string(),
            })
        })?;
        match realm.scheme() {
            "https" => {}
            "http" if allow_http_realm => {}
            "http" => return Err(BearerError::InsecureRealm(realm)),
            other => {
                return Err(BearerError::BadRealm(RealmProblem::Scheme(
                    other.to_string(),
                )));
            }
        }
        if realm.host_str().is_none() {
            return Err(BearerError::BadRealm(RealmProblem::NoHost));
        }
        let service = challenge
            .param("service")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        Ok(BearerParams { realm, service })
    }
}

/// The `Authorization: Bearer <token>` value of a token, built once when the token
/// arrives and shared by every request that sends it (a clone shares the bytes; a
/// token for many repositories can be tens of KB). Marked sensitive, so `Debug` and
/// HTTP/2 header compression never show or index it.
#[derive(Clone)]
pub(crate) struct BearerHeader(HeaderValue);

impl BearerHeader {
    /// `Bearer <token>`.
    ///
    /// # Errors
    /// [`TokenReplyProblem::Unsendable`] (never the token) when the token holds bytes a
    /// header value cannot.
    pub fn new(token: &str) -> Result<BearerHeader, TokenReplyProblem> {
        let mut value = HeaderValue::try_from(format!("Bearer {token}"))
            .map_err(|_| TokenReplyProblem::Unsendable)?;
        value.set_sensitive(true);
        Ok(BearerHeader(value))
    }

    /// The header value, for the `Authorization` header only.
    pub fn value(&self) -> HeaderValue {
        self.0.clone()
    }

    /// The token alone (after `Bearer `): to redact it from messages, and for tests.
    pub fn token(&self) -> &str {
        self.0
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default()
    }
}

impl fmt::Debug for BearerHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer <redacted>")
    }
}

/// A token and when it stops being usable.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub value: BearerHeader,
    pub obtained: Instant,
    pub lifetime: Duration,
}

impl Token {
    /// Usable at `now` with a safety margin: a tenth of its lifetime, at most 5 s.
    pub fn is_fresh(&self, now: Instant) -> bool {
        let margin = (self.lifetime / 10).min(Duration::from_secs(5));
        now.saturating_duration_since(self.obtained) + margin < self.lifetime
    }
}

/// One request to a token realm.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum TokenRequest {
    /// `GET <realm>?service=…&scope=…`, with Basic auth when a user is known.
    Get {
        url: Url,
        basic: Option<(String, Secret)>,
    },
    /// `POST <realm>`, form `grant_type=refresh_token&refresh_token=…&service=…&client_id=…&scope=…`.
    OAuthRefresh {
        url: Url,
        refresh_token: Secret,
        service: Option<String>,
        scope: String,
    },
}

impl fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenRequest::Get { url, basic } => f
                .debug_struct("Get")
                .field("url", &transport::loggable_url(url))
                .field("user", &basic.as_ref().map(|(u, _)| u))
                .finish(),
            TokenRequest::OAuthRefresh { url, .. } => f
                .debug_struct("OAuthRefresh")
                .field("url", &transport::loggable_url(url))
                .finish_non_exhaustive(),
        }
    }
}

/// How to obtain a bearer token for a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenPlan {
    /// A `registrytoken`: used as it is, nothing is requested.
    Ready(Secret),
    /// Send this request.
    Request(TokenRequest),
}

/// The first request for `scopes` with `credential` (pure).
pub(crate) fn plan(params: &BearerParams, credential: &Credential, scopes: &[String]) -> TokenPlan {
    match credential {
        Credential::RegistryToken(t) => TokenPlan::Ready(t.clone()),
        Credential::IdentityToken(t) => TokenPlan::Request(TokenRequest::OAuthRefresh {
            url: params.realm.clone(),
            refresh_token: t.clone(),
            service: params.service.clone(),
            scope: scope::oauth_scope(scopes),
        }),
        Credential::Basic { username, password } => TokenPlan::Request(TokenRequest::Get {
            url: scope::token_url(&params.realm, params.service.as_deref(), scopes),
            basic: Some((username.clone(), password.clone())),
        }),
        Credential::Anonymous => TokenPlan::Request(TokenRequest::Get {
            url: scope::token_url(&params.realm, params.service.as_deref(), scopes),
            basic: None,
        }),
    }
}

/// The GET that replaces an OAuth2 POST the realm does not support (404 or 405): the
/// refresh token goes as the Basic password with an empty user name, as containerd
/// does (pure).
pub(crate) fn oauth_fallback(
    params: &BearerParams,
    refresh_token: &Secret,
    scopes: &[String],
) -> TokenRequest {
    TokenRequest::Get {
        url: scope::token_url(&params.realm, params.service.as_deref(), scopes),
        basic: Some((String::new(), refresh_token.clone())),
    }
}

/// Why no token was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenFailure {
    /// The realm refused the credential: 401 or 403, or OAuth2 `invalid_grant`.
    Rejected { status: u16 },
    /// Any other non-success status, with the `Retry-After` it came with.
    Status {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// No answer: the described network, TLS or timeout error.
    Transport {
        reason: String,
        kind: crate::Reason,
        retryable: bool,
    },
    /// A success status with a body that holds no usable token (the status; `None`
    /// for a configured registry token, which is not asked for).
    BadReply {
        problem: TokenReplyProblem,
        status: Option<u16>,
    },
    /// The egress policy refused the realm's host (or a redirect of it); nothing was
    /// sent there.
    Refused(crate::EgressRefusal),
}

impl TokenFailure {
    /// Whether another attempt may succeed, and how long the realm asked to wait.
    fn retry(&self) -> Option<(FailedAttempt, Option<Duration>)> {
        match self {
            TokenFailure::Status {
                status,
                retry_after,
            } if retry::retryable_status(*status) => {
                Some((FailedAttempt::TokenStatus { status: *status }, *retry_after))
            }
            TokenFailure::Transport {
                reason,
                retryable: true,
                ..
            } => Some((
                FailedAttempt::TokenNoAnswer {
                    why: reason.clone(),
                },
                None,
            )),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

/// Reads a token reply: `token`, else `access_token`; `expires_in` in seconds (absent,
/// zero, negative or not a number → 60 s) (pure).
///
/// # Errors
/// [`TokenReplyProblem::NotJson`] (serde_json's words), [`TokenReplyProblem::NoToken`]
/// or [`TokenReplyProblem::Unsendable`].
pub(crate) fn parse_reply(body: &[u8], obtained: Instant) -> Result<Token, TokenReplyProblem> {
    let reply: Reply =
        serde_json::from_slice(body).map_err(|e| TokenReplyProblem::NotJson(e.to_string()))?;
    let value = reply
        .token
        .filter(|t| !t.is_empty())
        .or(reply.access_token.filter(|t| !t.is_empty()))
        .ok_or(TokenReplyProblem::NoToken)?;
    let seconds = reply
        .expires_in
        .as_ref()
        .and_then(serde_json::Value::as_f64)
        .filter(|s| s.is_finite() && *s > 0.0);
    let lifetime = match seconds {
        Some(s) => Duration::from_secs_f64(s.min(366.0 * 86400.0)),
        None => DEFAULT_LIFETIME,
    };
    Ok(Token {
        value: BearerHeader::new(&value)?,
        obtained,
        lifetime,
    })
}

/// Whether an OAuth2 error reply means the grant itself was refused (RFC 6749 §5.2).
fn is_invalid_grant(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct OAuthError {
        #[serde(default)]
        error: String,
    }
    serde_json::from_slice::<OAuthError>(body)
        .map(|e| e.error == "invalid_grant" || e.error == "unauthorized_client")
        .unwrap_or(false)
}

/// Sends one token request and reads the token.
async fn send(
    http: &Http,
    request: &TokenRequest,
    deadline: Option<Instant>,
) -> Result<Token, TokenFailure> {
    let (method, url, builder) = match request {
        TokenRequest::Get { url, basic } => {
            let mut b = http.client.get(url.clone());
            if let Some((user, password)) = basic {
                b = b.basic_auth(user, Some(password.expose()));
            }
            (Method::GET, url, b)
        }
        TokenRequest::OAuthRefresh {
            url,
            refresh_token,
            service,
            scope,
        } => {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "refresh_token");
            form.append_pair("refresh_token", refresh_token.expose());
            if let Some(service) = service {
                form.append_pair("service", service);
            }
            form.append_pair("client_id", CLIENT_ID);
            if !scope.is_empty() {
                form.append_pair("scope", scope);
            }
            let b = http
                .client
                .post(url.clone())
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(form.finish());
            (Method::POST, url, b)
        }
    };
    let obtained = Instant::now();
    let realm_host = urls::authority(url);
    let response = http
        .send(
            builder,
            &method,
            url,
            (RequestKind::Token, &realm_host),
            deadline,
        )
        .await
        .map_err(|e| match e.refusal {
            Some(refusal) => TokenFailure::Refused(refusal),
            None => TokenFailure::Transport {
                reason: e.reason,
                kind: e.kind,
                retryable: e.retryable,
            },
        })?;
    let status = response.status().as_u16();
    if response.status().is_success() {
        let body = http
            .read_limited(response, transport::TOKEN_BODY_LIMIT)
            .await;
        if let Some(e) = body.error {
            return Err(TokenFailure::Transport {
                reason: format!("reading the token reply: {}", e.reason),
                kind: e.kind,
                retryable: e.retryable,
            });
        }
        if body.truncated {
            return Err(TokenFailure::BadReply {
                problem: TokenReplyProblem::TooLarge {
                    limit_kib: transport::TOKEN_BODY_LIMIT / 1024,
                },
                status: Some(status),
            });
        }
        return parse_reply(&body.bytes, obtained).map_err(|problem| TokenFailure::BadReply {
            problem,
            status: Some(status),
        });
    }
    let retry_after = retry::retry_after(response.headers());
    let oauth = matches!(request, TokenRequest::OAuthRefresh { .. });
    match status {
        401 | 403 => Err(TokenFailure::Rejected { status }),
        400 if oauth => {
            let body = http
                .read_limited(response, transport::ERROR_BODY_LIMIT)
                .await;
            if is_invalid_grant(&body.bytes) {
                Err(TokenFailure::Rejected { status })
            } else {
                Err(TokenFailure::Status {
                    status,
                    retry_after,
                })
            }
        }
        _ => Err(TokenFailure::Status {
            status,
            retry_after,
        }),
    }
}

/// Obtains a token for `scopes`: the plan's request, and for an identity token whose
/// POST the realm answers 404 or 405, the GET fallback. Retryable failures (408, 429,
/// 502, 503, 504, refused or reset connections) are retried within `attempts`.
pub(crate) async fn fetch(
    http: &Http,
    params: &BearerParams,
    credential: &Credential,
    scopes: &[String],
    attempts: &mut Attempts,
) -> Result<Token, TokenFailure> {
    let mut request = match plan(params, credential, scopes) {
        TokenPlan::Ready(value) => {
            return Ok(Token {
                value: BearerHeader::new(value.expose()).map_err(|_| TokenFailure::BadReply {
                    problem: TokenReplyProblem::ConfiguredUnsendable,
                    status: None,
                })?,
                obtained: Instant::now(),
                // A ready token has no known lifetime; it is never refreshed.
                lifetime: Duration::MAX,
            });
        }
        TokenPlan::Request(request) => request,
    };
    loop {
        match send(http, &request, attempts.deadline()).await {
            Err(TokenFailure::Status {
                status: 404 | 405, ..
            }) if matches!(request, TokenRequest::OAuthRefresh { .. }) => {
                let TokenRequest::OAuthRefresh { refresh_token, .. } = &request else {
                    unreachable!("matched above")
                };
                tracing::debug!("token realm has no OAuth2 endpoint; falling back to GET");
                request = oauth_fallback(params, refresh_token, scopes);
            }
            Err(failure) => {
                let again = match failure.retry() {
                    Some((reason, retry_after)) => attempts.retry(reason, retry_after).await,
                    None => false,
                };
                if !again {
                    return Err(failure);
                }
            }
            Ok(token) => return Ok(token),
        }
    }
}

/// What a cached token is for: the registry host, the realm and service that issue it,
/// the credential it was obtained with, and the (sorted) scopes it was asked for.
/// `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub host: String,
    pub realm: Url,
    pub service: Option<String>,
    pub credential: Credential,
    pub scopes: Arc<[String]>,
}

impl CacheKey {
    /// The key of the token for `scopes` on `endpoint`, from the realm of `params`,
    /// obtained with `credential`.
    pub fn new(
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
}

type Slot = Arc<tokio::sync::Mutex<Option<Token>>>;

/// At most this many tokens are kept by one client (about 3 KiB each: a JWT and its
/// key): a service asked about many distinct repositories holds at most ~30 MiB.
pub(crate) const MAX_TOKENS: usize = 10_000;

/// Every this many new keys, the tokens no longer fresh are dropped.
const SWEEP_EVERY: u32 = 1024;

/// The tokens of one client, per [`CacheKey`], kept until shortly before they expire.
/// A fetch holds its key's slot, so concurrent users of one key fetch it once.
///
/// Bounded: every [`SWEEP_EVERY`] new keys, and whenever a new key would make more than
/// the capacity ([`MAX_TOKENS`]), the slots not in use whose token is no longer fresh
/// (or that hold none: a failed fetch) are dropped; if that is not enough, those that
/// expire soonest. A slot being fetched is never dropped.
pub(crate) struct Cache {
    slots: Mutex<Slots>,
    capacity: usize,
}

#[derive(Default)]
struct Slots {
    map: HashMap<CacheKey, Slot>,
    /// New keys since the last sweep.
    added: u32,
}

impl Default for Cache {
    fn default() -> Self {
        Cache::with_capacity(MAX_TOKENS)
    }
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCache")
            .field("keys", &self.len())
            .finish()
    }
}

impl Cache {
    /// A cache of at most `capacity` tokens (at least 1).
    pub fn with_capacity(capacity: usize) -> Cache {
        Cache {
            slots: Mutex::default(),
            capacity: capacity.max(1),
        }
    }

    /// How many keys the cache holds.
    pub fn len(&self) -> usize {
        self.slots.lock().map(|s| s.map.len()).unwrap_or_default()
    }

    /// The token stored for `key`, fresh or not, without waiting or fetching; `None`
    /// while it is being fetched or when there is none.
    pub fn peek(&self, key: &CacheKey) -> Option<BearerHeader> {
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .map
            .get(key)
            .cloned()?;
        let held = slot.try_lock().ok()?;
        held.as_ref().map(|t| t.value.clone())
    }

    /// The slot of `key`, made (after pruning, when due) if there is none.
    fn slot(&self, key: &CacheKey) -> Slot {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(slot) = slots.map.get(key) {
            return Arc::clone(slot);
        }
        slots.added += 1;
        if slots.added >= SWEEP_EVERY || slots.map.len() >= self.capacity {
            slots.added = 0;
            prune(&mut slots.map, self.capacity - 1, Instant::now());
        }
        Arc::clone(slots.map.entry(key.clone()).or_default())
    }

    /// A fresh token for `key`: the cached one (told to the observer as a cache hit),
    /// or a new one from `http`.
    pub async fn get(
        &self,
        key: CacheKey,
        http: &Http,
        params: &BearerParams,
        attempts: &mut Attempts,
    ) -> Result<BearerHeader, TokenFailure> {
        let slot = self.slot(&key);
        let mut held = slot.lock().await;
        if let Some(token) = held.as_ref().filter(|t| t.is_fresh(Instant::now())) {
            if let Some(observer) = &http.observer {
                observer.token_cache_hit(&key.host);
            }
            return Ok(token.value.clone());
        }
        let token = fetch(http, params, &key.credential, &key.scopes, attempts).await?;
        let value = token.value.clone();
        *held = Some(token);
        Ok(value)
    }
}

/// Drops from `map` the slots not in use whose token is not fresh at `now` (or that
/// hold none), then, while more than `keep` remain, the unused ones that expire soonest.
fn prune(map: &mut HashMap<CacheKey, Slot>, keep: usize, now: Instant) {
    map.retain(|_, slot| match slot.try_lock() {
        Ok(held) => held.as_ref().is_some_and(|t| t.is_fresh(now)),
        Err(_) => true,
    });
    if map.len() <= keep {
        return;
    }
    let mut by_expiry: Vec<(Option<Instant>, CacheKey)> = map
        .iter()
        .filter_map(|(key, slot)| {
            let held = slot.try_lock().ok()?;
            let token = held.as_ref()?;
            Some((token.obtained.checked_add(token.lifetime), key.clone()))
        })
        .collect();
    // `None` (never expires) sorts first as `Option`; it should go last.
    by_expiry.sort_by_key(|(expires, _)| (expires.is_none(), *expires));
    let excess = map.len() - keep;
    for (_, key) in by_expiry.into_iter().take(excess) {
        map.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::challenge;

    fn bearer(header: &str) -> Challenge {
        challenge::parse(header.as_bytes()).unwrap().remove(0)
    }

    fn params() -> BearerParams {
        BearerParams {
            realm: Url::parse("https://auth.example/token").unwrap(),
            service: Some("reg.example".into()),
        }
    }

    #[test]
    fn params_from_docker_hub_style_challenge() {
        let c =
            bearer(r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io""#);
        let p = BearerParams::from_challenge(&c, false).unwrap();
        assert_eq!(p.realm.as_str(), "https://auth.docker.io/token");
        assert_eq!(p.service.as_deref(), Some("registry.docker.io"));
    }

    #[test]
    fn params_refuse_plain_http_realm_unless_allowed() {
        let c = bearer(r#"Bearer realm="http://127.0.0.1:9/token",service="s""#);
        assert!(matches!(
            BearerParams::from_challenge(&c, false),
            Err(BearerError::InsecureRealm(_))
        ));
        assert!(BearerParams::from_challenge(&c, true).is_ok());
    }

    #[test]
    fn params_reject_missing_or_odd_realms() {
        for (h, problem) in [
            (r#"Bearer service="s""#, RealmProblem::Missing),
            (r#"Bearer realm="""#, RealmProblem::Missing),
            (
                r#"Bearer realm="/token""#,
                RealmProblem::NotAUrl {
                    realm: "/token".into(),
                    // The url crate's `ParseError::RelativeUrlWithoutBase`.
                    error: "relative URL without a base".into(),
                },
            ),
            (
                r#"Bearer realm="ftp://x/token""#,
                RealmProblem::Scheme("ftp".into()),
            ),
        ] {
            assert_eq!(
                BearerParams::from_challenge(&bearer(h), true),
                Err(BearerError::BadRealm(problem)),
                "{h}"
            );
        }
        let no_service =
            BearerParams::from_challenge(&bearer(r#"Bearer realm="https://a/t""#), false).unwrap();
        assert_eq!(no_service.service, None);
    }

    #[test]
    fn plan_per_credential() {
        let scopes = scope::pull_scopes(["a", "b"]);
        match plan(&params(), &Credential::Anonymous, &scopes) {
            TokenPlan::Request(TokenRequest::Get { url, basic: None }) => assert_eq!(
                url.as_str(),
                "https://auth.example/token?service=reg.example&scope=repository%3Aa%3Apull&scope=repository%3Ab%3Apull"
            ),
            other => panic!("{other:?}"),
        }
        let basic = Credential::Basic {
            username: "u".into(),
            password: "p".into(),
        };
        match plan(&params(), &basic, &scopes) {
            TokenPlan::Request(TokenRequest::Get {
                basic: Some((u, p)),
                ..
            }) => {
                assert_eq!(u, "u");
                assert_eq!(p.expose(), "p");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            plan(&params(), &Credential::RegistryToken("rt".into()), &scopes),
            TokenPlan::Ready(Secret::new("rt"))
        );
        match plan(&params(), &Credential::IdentityToken("it".into()), &scopes) {
            TokenPlan::Request(TokenRequest::OAuthRefresh {
                url,
                refresh_token,
                service,
                scope,
            }) => {
                assert_eq!(url.as_str(), "https://auth.example/token");
                assert_eq!(refresh_token.expose(), "it");
                assert_eq!(service.as_deref(), Some("reg.example"));
                assert_eq!(scope, "repository:a:pull repository:b:pull");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn oauth_fallback_is_a_get_with_the_refresh_token_as_password() {
        let req = oauth_fallback(&params(), &Secret::new("it"), &scope::pull_scopes(["a"]));
        match req {
            TokenRequest::Get {
                url,
                basic: Some((u, p)),
            } => {
                assert!(url.as_str().contains("scope=repository%3Aa%3Apull"));
                assert_eq!(u, "");
                assert_eq!(p.expose(), "it");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn debug_never_shows_secrets() {
        let basic = Credential::Basic {
            username: "alice".into(),
            password: "hunter2".into(),
        };
        let shown = format!("{:?}", plan(&params(), &basic, &[]));
        assert!(
            shown.contains("alice") && !shown.contains("hunter2"),
            "{shown}"
        );
        let shown = format!(
            "{:?}",
            plan(
                &params(),
                &Credential::IdentityToken("refresh-secret".into()),
                &[]
            )
        );
        assert!(!shown.contains("refresh-secret"), "{shown}");
        let shown = format!(
            "{:?}",
            plan(
                &params(),
                &Credential::RegistryToken("bearer-secret".into()),
                &[]
            )
        );
        assert!(!shown.contains("bearer-secret"), "{shown}");
    }

    #[test]
    fn reply_token_access_token_and_lifetime() {
        let now = Instant::now();
        // Example reply from the token-auth spec (token, expires_in, issued_at).
        let t = parse_reply(
            br#"{"token":"abc","expires_in":3600,"issued_at":"2009-11-10T23:00:00Z"}"#,
            now,
        )
        .unwrap();
        assert_eq!(t.value.token(), "abc");
        assert_eq!(t.lifetime, Duration::from_secs(3600));
        let t = parse_reply(br#"{"access_token":"xyz"}"#, now).unwrap();
        assert_eq!(t.value.token(), "xyz");
        assert_eq!(t.lifetime, DEFAULT_LIFETIME);
        let t = parse_reply(br#"{"token":"","access_token":"xyz","expires_in":0}"#, now).unwrap();
        assert_eq!(t.value.token(), "xyz");
        assert_eq!(t.lifetime, DEFAULT_LIFETIME);
        let t = parse_reply(br#"{"token":"a","expires_in":"soon"}"#, now).unwrap();
        assert_eq!(t.lifetime, DEFAULT_LIFETIME);
        assert_eq!(
            parse_reply(br#"{"expires_in":60}"#, now).err(),
            Some(TokenReplyProblem::NoToken)
        );
        assert!(matches!(
            parse_reply(b"<html>", now),
            Err(TokenReplyProblem::NotJson(_))
        ));
    }

    #[test]
    fn freshness_keeps_a_margin() {
        let now = Instant::now();
        let t = Token {
            value: BearerHeader::new("x").unwrap(),
            obtained: now,
            lifetime: Duration::from_secs(60),
        };
        assert!(t.is_fresh(now));
        assert!(t.is_fresh(now + Duration::from_secs(54)));
        assert!(!t.is_fresh(now + Duration::from_secs(55)));
        let forever = Token {
            lifetime: Duration::MAX,
            ..t
        };
        assert!(forever.is_fresh(now + Duration::from_secs(1 << 40)));
    }

    fn cache_key(i: usize) -> CacheKey {
        CacheKey {
            host: "registry.example.com".into(),
            realm: Url::parse("https://auth.example/token").unwrap(),
            service: None,
            credential: Credential::Anonymous,
            scopes: Arc::from(vec![format!("repository:r{i}:pull")]),
        }
    }

    /// Stores a token for `key` as a fetch would.
    fn store(cache: &Cache, key: &CacheKey, obtained: Instant, lifetime: Duration) {
        let slot = cache.slot(key);
        *slot.try_lock().unwrap() = Some(Token {
            value: BearerHeader::new("t").unwrap(),
            obtained,
            lifetime,
        });
    }

    #[test]
    fn cache_is_capped_evicting_the_soonest_to_expire() {
        let cache = Cache::with_capacity(3);
        let now = Instant::now();
        let minutes = |m: u64| Duration::from_secs(60 * m);
        for (i, lifetime) in [10, 2, 30, 5, 20].into_iter().enumerate() {
            store(&cache, &cache_key(i), now, minutes(lifetime));
            assert!(cache.len() <= 3, "after {i}: {}", cache.len());
        }
        // The fourth evicted the 2-minute token, the fifth the 5-minute one: what is
        // left expires last (10, 30 and 20 minutes).
        let kept: Vec<usize> = (0..5)
            .filter(|i| cache.peek(&cache_key(*i)).is_some())
            .collect();
        assert_eq!(kept, [0, 2, 4]);
    }

    #[test]
    fn cache_drops_tokens_no_longer_fresh() {
        let cache = Cache::with_capacity(3);
        let now = Instant::now();
        let Some(long_ago) = now.checked_sub(Duration::from_secs(600)) else {
            return; // the clock started less than 10 minutes ago
        };
        store(&cache, &cache_key(0), long_ago, Duration::from_secs(60));
        store(&cache, &cache_key(1), long_ago, Duration::from_secs(60));
        store(&cache, &cache_key(2), now, Duration::MAX);
        store(&cache, &cache_key(3), now, Duration::from_secs(60));
        // Both expired ones went, not the fresh ones, though one fits under the cap.
        assert_eq!(cache.len(), 2);
        assert!(cache.peek(&cache_key(0)).is_none() && cache.peek(&cache_key(1)).is_none());
        assert!(cache.peek(&cache_key(2)).is_some() && cache.peek(&cache_key(3)).is_some());
        // A key being fetched (its slot held) is never dropped, and a never-expiring
        // token goes last.
        let held = cache.slot(&cache_key(4));
        let _fetching = held.try_lock().unwrap();
        store(&cache, &cache_key(5), now, Duration::from_secs(120));
        store(&cache, &cache_key(6), now, Duration::from_secs(180));
        assert_eq!(cache.len(), 3);
        assert!(cache.peek(&cache_key(2)).is_some(), "never expires");
        assert!(cache.slots.lock().unwrap().map.contains_key(&cache_key(4)));
    }

    #[test]
    fn cache_sweeps_expired_tokens_under_the_cap() {
        let cache = Cache::with_capacity(MAX_TOKENS);
        let now = Instant::now();
        let Some(long_ago) = now.checked_sub(Duration::from_secs(600)) else {
            return;
        };
        for i in 0..(SWEEP_EVERY as usize) {
            store(&cache, &cache_key(i), long_ago, Duration::from_secs(60));
        }
        // The sweep ran as the last of these was added: only it is left.
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn invalid_grant_is_recognised() {
        assert!(is_invalid_grant(br#"{"error":"invalid_grant"}"#));
        assert!(!is_invalid_grant(br#"{"error":"invalid_request"}"#));
        assert!(!is_invalid_grant(b"nope"));
    }
}
