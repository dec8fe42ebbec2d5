//! [`Session`]: the authenticated view of one registry, and the query loop
//! (HEAD, the GET fallback, retries, a new token for an insufficient scope, one ping
//! again when a state from the client's ping cache stops working, the tag list, the
//! platform check), which asks [`crate::classify`], [`crate::hints`] and
//! [`crate::platform`] what each answer means.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use reqwest::Method as HttpMethod;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, LINK, WWW_AUTHENTICATE};
use url::Url;

use crate::auth::{self, Auth};
use crate::classify::{self, Decision, Method, Query, Ref, Reply, Who};
use crate::errcode::{self, Envelope};
use crate::finding::{FailedAttempt, RefusedRequest};
use crate::hints;
use crate::ping;
use crate::platform::{self, IndexReply};
use crate::retry::{self, Attempts};
use crate::scope;
use crate::shared::Shared;
use crate::token::{BearerHeader, CacheKey, Secret};
use crate::transport::{self, Body, Http};
use crate::urls::{MANIFEST_ACCEPT, blob_url, manifest_url, tags_url, with_query};
use crate::{Answer, Credential, EgressRefusal, Endpoint, Missing, Platform, RequestKind, Status};

/// The header that carries a manifest's digest.
const DOCKER_CONTENT_DIGEST: &str = "docker-content-digest";

/// What [`Session::new`] is built from.
pub(crate) struct Parts<'a> {
    pub shared: Arc<Shared>,
    pub endpoint: Endpoint,
    pub base: Url,
    pub api: Url,
    pub headers: HeaderMap,
    pub http: Http,
    pub credential: Credential,
    /// What the ping asked for, and acted on by `authorize`.
    pub auth: Auth,
    /// For [`Auth::Bearer`], the client of its realm.
    pub realm: Option<Http>,
    /// `auth` came from what an earlier ping learned (the client's ping cache), not
    /// from a ping of this `authorize`.
    pub warm: bool,
    pub repositories: &'a [String],
    /// The scope batches of `repositories` ([`scope::token_batches`]), one token each.
    pub batches: Vec<Vec<String>>,
    /// The answer to the first manifest `HEAD`, sent by `authorize` in place of the
    /// ping without credentials ([`ping::probe`]): the first check of that URL that
    /// would send it without credentials too (an open registry, or a Basic challenge
    /// and no user name) reads it instead of sending the request again.
    pub first: Option<ping::Probe>,
}

/// The session's [`Auth`] with, for [`Auth::Bearer`], the HTTP client its realm is
/// reached through ([`Shared::realm_http`]).
struct Learned {
    auth: Auth,
    realm: Option<Http>,
    /// Learned from a ping (or a 401) of this session, not from the client's ping
    /// cache. A 401 to a request sent under a state that is not fresh (or a token
    /// request that fails under it) pings again once ([`Session::refresh`]).
    fresh: bool,
}

struct Inner {
    shared: Arc<Shared>,
    endpoint: Endpoint,
    /// `scheme://host[:port]/` that answered the ping.
    base: Url,
    /// The API base on it: `base` with the endpoint's base path, e.g. `…/v2/`.
    api: Url,
    /// The endpoint's configured headers, values sensitive.
    headers: HeaderMap,
    http: Http,
    credential: Credential,
    /// The scopes of the authorized repositories in batches, each asked for together
    /// ([`scope::token_batches`]).
    batches: Vec<Arc<[String]>>,
    /// The batch of each authorized repository (the repositories `authorize` was given):
    /// an index into `batches`.
    batch_of: HashMap<String, usize>,
    /// Repositories whose token is asked for on its own, after the registry answered
    /// `insufficient_scope` to the shared one, with the scopes asked for.
    own_scopes: RwLock<HashMap<String, Arc<[String]>>>,
    /// Set by `authorize`; on an open registry, replaced once by the first challenge
    /// of a 401 ([`Session::adopt`]).
    auth: RwLock<Arc<Learned>>,
    /// The one ping again of a session whose state came from the ping cache, shared by
    /// every task that meets a 401 under it.
    refresh: tokio::sync::OnceCell<()>,
    /// The `tags/list` answer of each repository, fetched once however many of its
    /// images are missing.
    tags: Mutex<HashMap<String, Arc<tokio::sync::OnceCell<TagsFetch>>>>,
    /// [`Parts::first`], taken by the first check of its URL.
    first: Mutex<Option<ping::Probe>>,
}

/// One `tags/list` answer, shared by every missing image of a repository.
enum TagsFetch {
    /// No answer, or an answer that could not be read: the reason.
    Failed(String),
    Answered {
        status: u16,
        body: Vec<u8>,
        errors: Envelope,
        link_next: bool,
    },
}

/// An authenticated view of one registry. Cheap to clone, `Send + Sync`: clones share
/// the connection pool and the client's token cache, whose tokens are refreshed before
/// they expire (once, however many tasks query concurrently). Never shows a secret in
/// `Debug`.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.learned().auth {
            Auth::Open => "none",
            Auth::Basic => "basic",
            Auth::BasicWithoutCredential => "basic (no credential)",
            Auth::Bearer(_) => "bearer",
        };
        f.debug_struct("Session")
            .field("base_url", &self.base_url())
            .field("auth", &auth)
            .field("credential", &self.inner.credential)
            .field(
                "authorized",
                &self.inner.batch_of.keys().collect::<BTreeSet<_>>(),
            )
            .finish()
    }
}

/// The value of an `Authorization` header, kept secret.
enum Authorization {
    Basic(String, Secret),
    Bearer(BearerHeader),
}

impl Session {
    pub(crate) fn new(parts: Parts<'_>) -> Session {
        let batches: Vec<Arc<[String]>> = parts.batches.into_iter().map(Arc::from).collect();
        // By scope string: the batches are in repository order, which is not the order
        // of the scope strings (`img-1` < `img-10`, but `img-1:pull` > `img-10:pull`).
        let batch_of_scope: HashMap<&str, usize> = batches
            .iter()
            .enumerate()
            .flat_map(|(i, b)| b.iter().map(move |s| (s.as_str(), i)))
            .collect();
        let batch_of = parts
            .repositories
            .iter()
            .filter_map(|r| {
                let i = batch_of_scope.get(scope::repository_pull(r).as_str())?;
                Some((r.clone(), *i))
            })
            .collect();
        let auth = RwLock::new(Arc::new(Learned {
            auth: parts.auth,
            realm: parts.realm,
            fresh: !parts.warm,
        }));
        Session {
            inner: Arc::new(Inner {
                shared: parts.shared,
                endpoint: parts.endpoint,
                base: parts.base,
                api: parts.api,
                headers: parts.headers,
                http: parts.http,
                credential: parts.credential,
                batches,
                batch_of,
                own_scopes: RwLock::new(HashMap::new()),
                auth,
                refresh: tokio::sync::OnceCell::new(),
                tags: Mutex::new(HashMap::new()),
                first: Mutex::new(parts.first),
            }),
        }
    }

    /// The auth state now (cheap: shared).
    fn learned(&self) -> Arc<Learned> {
        Arc::clone(
            &self
                .inner
                .auth
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The endpoint this session talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// `scheme://host[:port]` that answered the ping: `http://…` when the session fell
    /// back to plain HTTP.
    pub fn base_url(&self) -> &str {
        self.inner.base.as_str().trim_end_matches('/')
    }

    /// The API base the session asks: [`Session::base_url`] with the endpoint's
    /// [`Endpoint::base_path`], e.g. `https://registry-1.docker.io/v2/`.
    pub fn api_url(&self) -> &str {
        self.inner.api.as_str()
    }

    /// A request to this registry: the endpoint's configured headers, then the
    /// manifest `Accept` list when `accept`, then `authorization`, each replacing a
    /// configured header of the same name.
    fn request(
        &self,
        method: HttpMethod,
        url: Url,
        accept: bool,
        authorization: Option<&Authorization>,
    ) -> reqwest::RequestBuilder {
        let inner = &self.inner;
        let mut headers = inner.headers.clone();
        if accept {
            headers.remove(ACCEPT);
        }
        if authorization.is_some() {
            headers.remove(AUTHORIZATION);
        }
        let mut request = inner.http.client.request(method, url).headers(headers);
        if accept {
            request = request.header(ACCEPT, MANIFEST_ACCEPT);
        }
        with_auth(request, authorization)
    }

    /// The URL of a manifest on this registry, with the endpoint's query.
    fn manifest_url(&self, repository: &str, reference: &str) -> Url {
        with_query(
            manifest_url(&self.inner.api, repository, reference),
            &self.inner.endpoint.query,
        )
    }

    /// `HEAD /v2/<repository>/manifests/<reference>` with all four manifest types in
    /// `Accept`, classified per the OCI distribution spec. (`/v2/` is the endpoint's
    /// [`Endpoint::base_path`]; its [`Endpoint::query`] and [`Endpoint::headers`] go
    /// with every request.)
    ///
    /// `reference` is a tag (`3.19`), a digest (`sha256:…`), or `tag@digest`, of which
    /// only the digest is queried. The answer is never an error: network failures,
    /// timeouts and odd statuses become [`Status::Unreachable`] with the facts in
    /// [`Answer::finding`]; [`Answer::attempts`] says how many tries it took.
    ///
    /// - 200: present, with `Docker-Content-Digest` when sent (its absence is fine);
    ///   for a digest reference a different digest of the same algorithm is
    ///   [`Status::Unreachable`]. With [`crate::ClientOptions::platform`], an index or
    ///   manifest list is fetched and must list the platform, and a single-platform
    ///   image's config blob must name it, else [`Status::Missing`] with
    ///   [`Missing::Platform`].
    /// - 404: missing; with [`crate::ClientOptions::tag_hints`], one
    ///   `GET /v2/<repository>/tags/list?n=1000` tells a missing repository from a
    ///   missing tag and suggests close tags. It is sent once per repository and
    ///   session (clones share it), however many of its images are missing.
    /// - 401: [`Status::NoAccess`] (missing, or no access), never missing. When a
    ///   bearer token was sent and the challenge says `error="insufficient_scope"`, a
    ///   token for that repository alone is fetched once and the request sent again.
    /// - 403: [`Status::Denied`].
    /// - 405 and 501 on HEAD: the same request as GET.
    /// - 408, 429, 502, 503, 504, and refused or reset connections: retried with
    ///   backoff (429: after `Retry-After`), then [`Status::Unreachable`] listing each
    ///   attempt's failure. Other 5xx: [`Status::Unreachable`] at once.
    pub async fn check(&self, repository: &str, reference: &str) -> Answer {
        let platform = self.inner.shared.options.platform.as_ref();
        self.check_with(repository, reference, platform, None).await
    }

    /// [`Session::check`] that sends nothing, and sleeps no backoff, past `deadline`
    /// (nor past [`crate::ClientOptions::deadline`], if earlier). Reaching it is
    /// [`Status::Unreachable`] naming the deadline.
    pub async fn check_before(
        &self,
        repository: &str,
        reference: &str,
        deadline: Instant,
    ) -> Answer {
        let platform = self.inner.shared.options.platform.as_ref();
        self.check_with(repository, reference, platform, Some(deadline))
            .await
    }

    /// [`Session::check`] with this call's own platform and deadline, so that one
    /// shared [`crate::Client`] (and its sessions) can serve checks for different
    /// platforms and deadlines at once; [`Session::check`] and
    /// [`Session::check_before`] call it with [`crate::ClientOptions::platform`].
    ///
    /// - `platform`: `Some` checks that an index or manifest list (by the
    ///   `Content-Type` of the `HEAD`) lists it, with one `GET` of the index; for a
    ///   single-platform image manifest (OCI image manifest, Docker schema 2), one `GET`
    ///   of the manifest and one of its config blob (`/v2/<name>/blobs/<digest>`,
    ///   observed as [`RequestKind::Blob`]), whose `os`, `architecture` and `variant`
    ///   must match as containerd matches platforms. A mismatch is [`Status::Missing`]
    ///   with [`Missing::Platform`], [`Answer::platforms`] naming the image's; a manifest or
    ///   config that cannot be read is [`Status::Unreachable`]. Other media types
    ///   (schema 1, an artifact) are not checked. `None` checks no platform, whatever
    ///   [`crate::ClientOptions::platform`] says.
    /// - `deadline`: nothing is sent, and no backoff slept, past it (nor past
    ///   [`crate::ClientOptions::deadline`], if earlier); `None`: only the client's.
    ///
    /// Never an error: as [`Session::check`], every failure is an [`Answer`].
    pub async fn check_with(
        &self,
        repository: &str,
        reference: &str,
        platform: Option<&Platform>,
        deadline: Option<Instant>,
    ) -> Answer {
        let shared = &self.inner.shared;
        let mut attempts = Attempts::new(
            shared.policy,
            retry::earliest(shared.options.deadline, deadline),
        );
        let mut answer = self
            .run(repository, reference, platform, &mut attempts)
            .await;
        answer.attempts = attempts.made();
        answer.history = attempts.history();
        let bearer = self.sent_token(repository);
        let credential = &self.inner.credential;
        answer.map_texts(&|text| {
            auth::redact(text, credential, bearer.as_ref().map(BearerHeader::token))
        });
        answer
    }

    /// The bearer token this session sends for `repository`, if one is cached.
    fn sent_token(&self, repository: &str) -> Option<BearerHeader> {
        let inner = &self.inner;
        let learned = self.learned();
        let Auth::Bearer(params) = &learned.auth else {
            return None;
        };
        let key = CacheKey::new(
            &inner.endpoint,
            params,
            &inner.credential,
            self.scopes_for(repository),
        );
        inner.shared.tokens.peek(&key)
    }

    async fn run(
        &self,
        repository: &str,
        reference: &str,
        platform: Option<&Platform>,
        attempts: &mut Attempts,
    ) -> Answer {
        let inner = &self.inner;
        let reference = Ref::parse(reference);
        let url = self.manifest_url(repository, reference.as_str());
        let mut method = Method::Head;
        let mut adopted = false;
        let mut rescoped = false;
        let mut refreshed = false;
        loop {
            let learned = self.learned();
            let authorization = match self.authorization(&learned, repository, attempts).await {
                Ok(a) => a,
                Err(answer) => {
                    if !learned.fresh && !refreshed {
                        refreshed = true;
                        if self.refresh(&learned, attempts.deadline()).await {
                            continue;
                        }
                    }
                    return answer;
                }
            };
            let http_method = match method {
                Method::Head => HttpMethod::HEAD,
                Method::Get => HttpMethod::GET,
            };
            let request = self.request(
                http_method.clone(),
                url.clone(),
                true,
                authorization.as_ref(),
            );
            let probed = match (method, &authorization) {
                (Method::Head, None) => self.take_first(&url),
                _ => None,
            };
            let sent = match probed {
                Some(response) => Ok(response),
                None => {
                    inner
                        .http
                        .send(
                            request,
                            &http_method,
                            &url,
                            (RequestKind::Manifest, &inner.endpoint.host),
                            attempts.deadline(),
                        )
                        .await
                }
            };
            let response = match sent {
                Ok(r) => r,
                Err(e) => {
                    let failure = FailedAttempt::NoAnswer {
                        kind: e.kind,
                        why: e.reason.clone(),
                    };
                    if e.retryable && attempts.retry(failure, None).await {
                        continue;
                    }
                    return classify::transport_failure(&inner.endpoint.host, method, &e);
                }
            };
            let status = response.status().as_u16();
            if status == 401 {
                if authorization.is_none() && !adopted && self.adopt(response.headers()) {
                    adopted = true;
                    continue;
                }
                if matches!(authorization, Some(Authorization::Bearer(_)))
                    && !rescoped
                    && self.rescope(repository, response.headers())
                {
                    rescoped = true;
                    continue;
                }
                if authorization.is_some() && !learned.fresh && !refreshed {
                    refreshed = true;
                    if self.refresh(&learned, attempts.deadline()).await {
                        continue;
                    }
                }
            }
            let headers = response.headers().clone();
            let content_type = header(&headers, CONTENT_TYPE.as_str())
                .map(|c| c.split(';').next().unwrap_or(c).trim().to_string());
            // With a platform, an index is checked by its list and a single image by its
            // config blob; both need the manifest's body.
            let is_index = content_type.as_deref().is_some_and(platform::is_index);
            let wants_body = platform.is_some()
                && (is_index || content_type.as_deref().is_some_and(platform::is_image));
            let mut index_body = None;
            let errors = if method == Method::Get && status >= 400 {
                let body = inner
                    .http
                    .read_limited(response, transport::ERROR_BODY_LIMIT)
                    .await;
                errcode::parse(&body.bytes)
            } else if method == Method::Get && (200..300).contains(&status) && wants_body {
                index_body = Some(
                    inner
                        .http
                        .read_limited(response, transport::MANIFEST_BODY_LIMIT)
                        .await,
                );
                Envelope::default()
            } else {
                drop(response);
                Envelope::default()
            };
            let query = self.query(repository, reference);
            let reply = Reply {
                method,
                status,
                digest: header(&headers, DOCKER_CONTENT_DIGEST),
                content_type: header(&headers, CONTENT_TYPE.as_str()),
                retry_after: retry::retry_after(&headers),
                errors: &errors,
            };
            match classify::manifest(&query, &reply) {
                Decision::Done(answer) => {
                    return match platform {
                        Some(want) if answer.status == Status::Present && wants_body => {
                            self.check_platform(
                                &query,
                                answer,
                                want,
                                is_index,
                                index_body,
                                authorization.as_ref(),
                                attempts,
                            )
                            .await
                        }
                        _ => answer,
                    };
                }
                Decision::Get => method = Method::Get,
                Decision::ListTags(missing) => {
                    return self
                        .list_tags(&query, missing, authorization.as_ref(), attempts.deadline())
                        .await;
                }
                Decision::Retryable {
                    answer,
                    retry_after,
                    failure,
                } => {
                    if attempts.retry(failure, retry_after).await {
                        continue;
                    }
                    return answer;
                }
            }
        }
    }

    /// The answer `authorize` got to the `HEAD` of `url` ([`Parts::first`]), once.
    fn take_first(&self, url: &Url) -> Option<reqwest::Response> {
        let mut first = self
            .inner
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if first.as_ref().is_some_and(|p| p.url == *url) {
            return first.take().map(|p| p.response);
        }
        None
    }

    fn query<'a>(&'a self, repository: &'a str, reference: Ref<'a>) -> Query<'a> {
        let credential = &self.inner.credential;
        let who = match (&self.learned().auth, credential) {
            (Auth::BasicWithoutCredential, Credential::Anonymous) => Who::NoCredentials,
            (Auth::BasicWithoutCredential, other) => Who::Unusable(auth::who(other)),
            (_, Credential::Anonymous) => Who::Anonymous,
            (_, other) => Who::Credential(auth::who(other)),
        };
        Query {
            host: &self.inner.endpoint.host,
            repository,
            reference,
            who,
            tag_hints: self.inner.shared.options.tag_hints,
        }
    }

    /// On an open registry, adopts the challenge of the first 401 (a registry may leave
    /// `/v2/` open and protect repositories). Returns whether a retry can now send
    /// something.
    fn adopt(&self, headers: &HeaderMap) -> bool {
        let inner = &self.inner;
        let usable = |auth: &Auth| !matches!(auth, Auth::BasicWithoutCredential);
        let current = self.learned();
        if current.auth != Auth::Open {
            // Another task adopted it meanwhile: retry with it.
            return usable(&current.auth);
        }
        let ping = auth::Ping {
            host: &inner.endpoint.host,
            url: inner.base.as_str(),
            status: 401,
            www_authenticate: headers
                .get_all(WWW_AUTHENTICATE)
                .iter()
                .map(|v| v.as_bytes())
                .collect(),
            allow_http_realm: inner.endpoint.allow_http || inner.endpoint.skip_verify,
        };
        let learned = match auth::plan(&ping, &inner.credential) {
            Ok(Auth::Open) | Err(_) => return false,
            Ok(Auth::Bearer(params)) => {
                match inner.shared.realm_http(&inner.endpoint, &params.realm) {
                    Ok(http) => Learned {
                        auth: Auth::Bearer(params),
                        realm: Some(http),
                        fresh: true,
                    },
                    Err(e) => {
                        tracing::debug!(host = %inner.endpoint.host, error = %e, "cannot reach the realm of a 401");
                        return false;
                    }
                }
            }
            Ok(auth) => Learned {
                auth,
                realm: None,
                fresh: true,
            },
        };
        let mut state = inner
            .auth
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.auth == Auth::Open {
            tracing::debug!(host = %inner.endpoint.host, "adopting the challenge of a 401");
            *state = Arc::new(learned);
        }
        usable(&state.auth)
    }

    /// After a 401 to a request sent with a token or credential under `stale` (a state
    /// from the client's ping cache), or a token request that failed under it: pings
    /// again, once per session however many tasks meet it ([`Session::ping_again`]).
    /// Returns whether the registry now asks for something else than `stale`, so that
    /// sending the request once more may help; a 401 under an unchanged challenge
    /// stands (missing, or no access).
    async fn refresh(&self, stale: &Learned, deadline: Option<Instant>) -> bool {
        let inner = &self.inner;
        tracing::debug!(
            host = %inner.endpoint.host,
            "a request under what an earlier ping learned failed; pinging again"
        );
        inner
            .refresh
            .get_or_init(|| self.ping_again(deadline))
            .await;
        self.learned().auth != stale.auth
    }

    /// Drops the endpoint's cached ping, pings it, and takes what it says as the
    /// session's state (marked fresh, so that no later 401 pings again). The state is
    /// kept, marked fresh, when the ping fails, answers on another scheme, or its
    /// challenge cannot be used.
    async fn ping_again(&self, deadline: Option<Instant>) {
        let inner = &self.inner;
        let endpoint = &inner.endpoint;
        inner.shared.forget_ping(endpoint);
        let mut attempts = Attempts::new(inner.shared.policy, deadline);
        let renewed = match ping::ping(endpoint, &inner.headers, &inner.http, &mut attempts).await {
            Ok(pinged) if pinged.base == inner.base => {
                if pinged.reusable(endpoint) {
                    inner.shared.remember_ping(endpoint, &pinged);
                }
                match pinged.plan(endpoint, &inner.credential) {
                    Ok(Auth::Bearer(params)) => inner
                        .shared
                        .realm_http(endpoint, &params.realm)
                        .ok()
                        .map(|http| Learned {
                            auth: Auth::Bearer(params),
                            realm: Some(http),
                            fresh: true,
                        }),
                    Ok(auth) => Some(Learned {
                        auth,
                        realm: None,
                        fresh: true,
                    }),
                    Err(_) => None,
                }
            }
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(host = %endpoint.host, error = %e, "pinging again failed");
                None
            }
        };
        let current = self.learned();
        let renewed = renewed.unwrap_or_else(|| Learned {
            auth: current.auth.clone(),
            realm: current.realm.clone(),
            fresh: true,
        });
        *inner
            .auth
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(renewed);
    }

    /// After a 401 to a bearer token: when the registry says the token's scope is
    /// insufficient, and a token for other scopes would be asked for, switches
    /// `repository` to its own token. Returns whether the request should be sent again.
    fn rescope(&self, repository: &str, headers: &HeaderMap) -> bool {
        let values: Vec<&[u8]> = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        let Some(wanted) = auth::insufficient_scope(values, repository) else {
            return false;
        };
        if *self.scopes_for(repository) == *wanted {
            return false;
        }
        tracing::debug!(
            host = %self.inner.endpoint.host,
            repository,
            "insufficient_scope: asking a token for this repository alone"
        );
        self.inner
            .own_scopes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(repository.to_string(), Arc::from(wanted));
        true
    }

    /// The scopes of the token used for `repository`.
    /// Cheap: the batches are shared.
    fn scopes_for(&self, repository: &str) -> Arc<[String]> {
        let inner = &self.inner;
        let own = inner
            .own_scopes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(repository)
            .cloned();
        if let Some(scopes) = own {
            return scopes;
        }
        match inner.batch_of.get(repository) {
            Some(&i) => Arc::clone(&inner.batches[i]),
            None => Arc::from([scope::repository_pull(repository)]),
        }
    }

    /// The `Authorization` to send for `repository`, fetching or refreshing a token when
    /// needed. A token failure is the answer.
    async fn authorization(
        &self,
        learned: &Learned,
        repository: &str,
        attempts: &mut Attempts,
    ) -> Result<Option<Authorization>, Answer> {
        let inner = &self.inner;
        match &learned.auth {
            Auth::Open | Auth::BasicWithoutCredential => Ok(None),
            Auth::Basic => match &inner.credential {
                Credential::Basic { username, password } => Ok(Some(Authorization::Basic(
                    username.clone(),
                    password.clone(),
                ))),
                _ => Ok(None),
            },
            Auth::Bearer(params) => {
                let Some(realm) = &learned.realm else {
                    return Ok(None);
                };
                let key = CacheKey::new(
                    &inner.endpoint,
                    params,
                    &inner.credential,
                    self.scopes_for(repository),
                );
                inner
                    .shared
                    .tokens
                    .get(key, realm, params, attempts)
                    .await
                    .map(|t| Some(Authorization::Bearer(t)))
                    .map_err(|failure| {
                        classify::from_authorize_error(&auth::token_failure(
                            &inner.endpoint.host,
                            params,
                            &inner.credential,
                            &failure,
                        ))
                    })
            }
        }
    }

    /// The platform check of a present manifest. For an index: its body from the GET
    /// that answered, or one `GET` of it (by digest when the registry named it), and its
    /// platform list. For a single-platform image: the manifest's body the same way, then
    /// one `GET` of its config blob ([`RequestKind::Blob`]) and the config's platform.
    /// Each `GET` is retried like the HEAD.
    #[allow(clippy::too_many_arguments)]
    async fn check_platform(
        &self,
        query: &Query<'_>,
        present: Answer,
        want: &Platform,
        is_index: bool,
        body: Option<Body>,
        authorization: Option<&Authorization>,
        attempts: &mut Attempts,
    ) -> Answer {
        let what = if is_index { "index" } else { "manifest" };
        let fetched = match body {
            Some(body) => Fetched::Body(body),
            None => {
                let target = present
                    .digest
                    .as_deref()
                    .unwrap_or(query.reference.as_str());
                let url = self.manifest_url(query.repository, target);
                self.fetch(url, RequestKind::Manifest, what, authorization, attempts)
                    .await
            }
        };
        if let Fetched::Refused(request, refusal) = fetched {
            return classify::refused(request, refusal);
        }
        if is_index {
            return platform::check(query, present, want, fetched.reply());
        }
        let config = match platform::body_of(fetched.reply(), what) {
            Ok(bytes) => platform::config_digest(bytes).map_err(|why| (why, None)),
            Err(e) => Err(e),
        };
        let digest = match config {
            Ok(d) => d,
            Err(e) => return platform::check_config(query, present, want, Err(e)),
        };
        let url = with_query(
            blob_url(&self.inner.api, query.repository, &digest),
            &self.inner.endpoint.query,
        );
        let blob = self
            .fetch(
                url,
                RequestKind::Blob,
                "config blob",
                authorization,
                attempts,
            )
            .await;
        if let Fetched::Refused(request, refusal) = blob {
            return classify::refused(request, refusal);
        }
        platform::check_config(
            query,
            present,
            want,
            platform::body_of(blob.reply(), "config blob"),
        )
    }

    /// One `GET` of `url` (a manifest with the manifest `Accept` list, or a blob) whose
    /// body is read up to [`transport::MANIFEST_BODY_LIMIT`], retried like the HEAD;
    /// `what` names it in the retry reasons.
    async fn fetch(
        &self,
        url: Url,
        kind: RequestKind,
        what: &str,
        authorization: Option<&Authorization>,
        attempts: &mut Attempts,
    ) -> Fetched {
        let inner = &self.inner;
        let accept = kind == RequestKind::Manifest;
        loop {
            let request = self.request(HttpMethod::GET, url.clone(), accept, authorization);
            let response = match inner
                .http
                .send(
                    request,
                    &HttpMethod::GET,
                    &url,
                    (kind, &inner.endpoint.host),
                    attempts.deadline(),
                )
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    let failure = FailedAttempt::FetchNoAnswer {
                        object: what.to_string(),
                        why: e.reason.clone(),
                    };
                    if e.retryable && attempts.retry(failure, None).await {
                        continue;
                    }
                    if let Some(refusal) = e.refusal {
                        let request = RefusedRequest::Fetch {
                            object: what.to_string(),
                            redirected_to: e.redirected_to.as_ref().map(|r| r.to.clone()),
                        };
                        return Fetched::Refused(request, refusal);
                    }
                    return Fetched::Failed(e.reason);
                }
            };
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                let body = inner
                    .http
                    .read_limited(response, transport::MANIFEST_BODY_LIMIT)
                    .await;
                if let Some(e) = &body.error
                    && e.retryable
                    && attempts
                        .retry(
                            FailedAttempt::FetchNoAnswer {
                                object: what.to_string(),
                                why: e.reason.clone(),
                            },
                            None,
                        )
                        .await
                {
                    continue;
                }
                return Fetched::Body(body);
            }
            if retry::retryable_status(status) {
                let retry_after = retry::retry_after(response.headers());
                drop(response);
                let failure = FailedAttempt::FetchStatus {
                    object: what.to_string(),
                    status,
                };
                if attempts.retry(failure, retry_after).await {
                    continue;
                }
                return Fetched::Status(status, Envelope::default());
            }
            let body = inner
                .http
                .read_limited(response, transport::ERROR_BODY_LIMIT)
                .await;
            return Fetched::Status(status, errcode::parse(&body.bytes));
        }
    }

    /// What the tag list says about a 404: `GET /v2/<repository>/tags/list?n=1000`,
    /// one attempt within the deadline, sent once per repository and shared by its
    /// missing images.
    async fn list_tags(
        &self,
        query: &Query<'_>,
        missing: Missing,
        authorization: Option<&Authorization>,
        deadline: Option<Instant>,
    ) -> Answer {
        let cell = Arc::clone(
            self.inner
                .tags
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(query.repository.to_string())
                .or_default(),
        );
        let fetched = cell
            .get_or_init(|| self.fetch_tags(query.repository, authorization, deadline))
            .await;
        match fetched {
            TagsFetch::Failed(reason) => hints::tags_list_failed(query, missing, reason),
            TagsFetch::Answered {
                status,
                body,
                errors,
                link_next,
            } => hints::tags_list(query, missing, *status, body, errors, *link_next),
        }
    }

    async fn fetch_tags(
        &self,
        repository: &str,
        authorization: Option<&Authorization>,
        deadline: Option<Instant>,
    ) -> TagsFetch {
        let inner = &self.inner;
        let url = with_query(tags_url(&inner.api, repository), &inner.endpoint.query);
        let request = self.request(HttpMethod::GET, url.clone(), false, authorization);
        let response = match inner
            .http
            .send(
                request,
                &HttpMethod::GET,
                &url,
                (RequestKind::Tags, &inner.endpoint.host),
                deadline,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => return TagsFetch::Failed(e.reason),
        };
        let status = response.status().as_u16();
        let link_next = response
            .headers()
            .get_all(LINK)
            .iter()
            .any(|v| v.to_str().is_ok_and(|s| s.contains("rel=\"next\"")));
        let limit = if response.status().is_success() {
            transport::TAGS_BODY_LIMIT
        } else {
            transport::ERROR_BODY_LIMIT
        };
        let body = inner.http.read_limited(response, limit).await;
        if let Some(e) = body.error {
            return TagsFetch::Failed(format!("reading it: {}", e.reason));
        }
        let errors = if status >= 400 {
            errcode::parse(&body.bytes)
        } else {
            Envelope::default()
        };
        TagsFetch::Answered {
            status,
            body: body.bytes,
            errors,
            link_next,
        }
    }
}

/// What a `GET` for the platform check brought.
enum Fetched {
    /// 2xx and the (bounded) body.
    Body(Body),
    /// A final non-2xx status, with its error envelope.
    Status(u16, Envelope),
    /// No answer: the reason.
    Failed(String),
    /// The egress policy refused the GET or its redirect: the request (the object asked
    /// for, `index`, `manifest`, `config blob`, and the redirect's target), and why.
    Refused(RefusedRequest, EgressRefusal),
}

impl Fetched {
    fn reply(&self) -> IndexReply<'_> {
        match self {
            Fetched::Body(body) => index_reply(body),
            Fetched::Status(status, errors) => IndexReply::Status {
                status: *status,
                errors,
            },
            Fetched::Failed(why) => IndexReply::Failed(why),
            // Answered as refused before it is read (`check_platform`).
            Fetched::Refused(RefusedRequest::Fetch { object, .. }, _) => IndexReply::Failed(object),
            Fetched::Refused(RefusedRequest::Request { host, .. }, _) => IndexReply::Failed(host),
        }
    }
}

/// What an index body holds for the platform check.
fn index_reply(body: &Body) -> IndexReply<'_> {
    match &body.error {
        Some(e) => IndexReply::Failed(&e.reason),
        None => IndexReply::Body {
            bytes: &body.bytes,
            truncated: body.truncated,
        },
    }
}

fn with_auth(
    request: reqwest::RequestBuilder,
    authorization: Option<&Authorization>,
) -> reqwest::RequestBuilder {
    match authorization {
        None => request,
        Some(Authorization::Basic(user, password)) => {
            request.basic_auth(user, Some(password.expose()))
        }
        Some(Authorization::Bearer(header)) => request.header(AUTHORIZATION, header.value()),
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_clone<T: Send + Sync + Clone>() {}

    #[test]
    fn session_is_send_sync_clone() {
        assert_send_sync_clone::<Session>();
    }

    #[test]
    fn accept_lists_all_four_types() {
        for t in [
            "application/vnd.oci.image.index.v1+json",
            "application/vnd.oci.image.manifest.v1+json",
            "application/vnd.docker.distribution.manifest.list.v2+json",
            "application/vnd.docker.distribution.manifest.v2+json",
        ] {
            assert!(MANIFEST_ACCEPT.contains(t), "{t}");
        }
        assert!(reqwest::header::HeaderValue::from_str(MANIFEST_ACCEPT).is_ok());
    }
}
