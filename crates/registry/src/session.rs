//! [`Session`]: the authenticated view of one registry, and the query loop
//! (HEAD, the GET fallback, the tag list), which asks [`crate::classify`] what each
//! answer means.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;

use reqwest::Method as HttpMethod;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, LINK, RETRY_AFTER, WWW_AUTHENTICATE};
use url::Url;

use crate::auth::{self, Plan};
use crate::classify::{self, Decision, Method, Query, Ref, Reply, Who};
use crate::client::{join, realm_http};
use crate::errcode;
use crate::scope;
use crate::token::{self, BearerParams, Secret, Token};
use crate::transport::{self, Http, Purpose};
use crate::{Answer, Credential, Endpoint, Missing};

/// The `Accept` list of every manifest request: OCI index and manifest, Docker manifest
/// list and schema 2 manifest. A shorter list makes some registries (distribution
/// among them) answer 404 for manifests that exist.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
     application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// The header that carries a manifest's digest.
const DOCKER_CONTENT_DIGEST: &str = "docker-content-digest";

/// How `authorize` left the session.
pub(crate) enum Mode {
    /// `/v2/` answered 2xx; a challenge met later on a manifest is adopted once.
    Open,
    /// Send the Basic credential with every request.
    Basic,
    /// The registry wants Basic and there is no user name and password.
    BasicWithoutCredential,
    /// Bearer tokens from this realm; `first` covers the authorized repositories.
    Bearer { params: BearerParams, first: Token },
}

/// What [`Session::new`] is built from.
pub(crate) struct Parts<'a> {
    pub endpoint: Endpoint,
    pub base: Url,
    pub http: Http,
    pub secure: Http,
    pub insecure: Http,
    pub credential: Credential,
    pub mode: Mode,
    pub repositories: &'a [String],
    pub tag_hints: bool,
}

enum Auth {
    Basic,
    BasicWithoutCredential,
    Bearer(Box<Bearer>),
}

struct Bearer {
    params: BearerParams,
    http: Http,
    tokens: RwLock<Tokens>,
    /// Held while a token is fetched, so concurrent checks fetch it once.
    refresh: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Tokens {
    /// The token for all authorized repositories.
    main: Option<Token>,
    /// Tokens for repositories queried without having been authorized.
    extra: HashMap<String, Token>,
}

struct Inner {
    endpoint: Endpoint,
    base: Url,
    http: Http,
    secure: Http,
    insecure: Http,
    credential: Credential,
    tag_hints: bool,
    authorized: BTreeSet<String>,
    scopes: Vec<String>,
    /// Set by `authorize`, or once from the first challenge on an open registry.
    auth: OnceLock<Auth>,
}

/// An authenticated view of one registry. Cheap to clone, `Send + Sync`: clones share
/// the connection pool and the token, which is refreshed before it expires (once, however
/// many tasks query concurrently). Never shows a secret in `Debug`.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match self.inner.auth.get() {
            None => "none",
            Some(Auth::Basic) => "basic",
            Some(Auth::BasicWithoutCredential) => "basic (no credential)",
            Some(Auth::Bearer(_)) => "bearer",
        };
        f.debug_struct("Session")
            .field("base_url", &self.base_url())
            .field("auth", &auth)
            .field("credential", &self.inner.credential)
            .field("authorized", &self.inner.authorized)
            .finish()
    }
}

/// The value of an `Authorization` header, kept secret.
enum Authorization {
    Basic(String, Secret),
    Bearer(Secret),
}

impl Session {
    pub(crate) fn new(parts: Parts<'_>) -> Session {
        let authorized: BTreeSet<String> = parts
            .repositories
            .iter()
            .filter(|r| !r.is_empty())
            .cloned()
            .collect();
        let scopes = scope::pull_scopes(authorized.iter().map(String::as_str));
        let auth = OnceLock::new();
        let set = match parts.mode {
            Mode::Open => None,
            Mode::Basic => Some(Auth::Basic),
            Mode::BasicWithoutCredential => Some(Auth::BasicWithoutCredential),
            Mode::Bearer { params, first } => {
                let http = realm_http(
                    &parts.endpoint,
                    &params.realm,
                    &parts.secure,
                    &parts.insecure,
                )
                .clone();
                Some(Auth::Bearer(Box::new(Bearer {
                    params,
                    http,
                    tokens: RwLock::new(Tokens {
                        main: Some(first),
                        extra: HashMap::new(),
                    }),
                    refresh: tokio::sync::Mutex::new(()),
                })))
            }
        };
        if let Some(a) = set {
            let _ = auth.set(a);
        }
        Session {
            inner: Arc::new(Inner {
                endpoint: parts.endpoint,
                base: parts.base,
                http: parts.http,
                secure: parts.secure,
                insecure: parts.insecure,
                credential: parts.credential,
                tag_hints: parts.tag_hints,
                authorized,
                scopes,
                auth,
            }),
        }
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

    /// `HEAD /v2/<repository>/manifests/<reference>` with all four manifest types in
    /// `Accept`, classified per the OCI distribution spec.
    ///
    /// `reference` is a tag (`3.19`), a digest (`sha256:…`), or `tag@digest`, of which
    /// only the digest is queried. The answer is never an error: network failures,
    /// timeouts and odd statuses become [`crate::Status::Unreachable`] with the reason in
    /// [`Answer::detail`].
    ///
    /// - 200: present, with `Docker-Content-Digest` when sent; for a digest reference a
    ///   different digest of the same algorithm is [`crate::Status::Unreachable`].
    /// - 404: missing; with [`crate::ClientOptions::tag_hints`], one
    ///   `GET /v2/<repository>/tags/list?n=1000` tells a missing repository from a
    ///   missing tag and suggests close tags.
    /// - 401: [`crate::Status::NoAccess`] (missing, or no access), never missing.
    /// - 403: [`crate::Status::Denied`].
    /// - 405 and 501 on HEAD: the same request as GET.
    /// - 429 and 5xx: [`crate::Status::Unreachable`] with the status (not retried yet).
    pub async fn check(&self, repository: &str, reference: &str) -> Answer {
        let inner = &self.inner;
        let reference = Ref::parse(reference);
        let url = manifest_url(&inner.base, repository, reference.as_str());
        let mut method = Method::Head;
        let mut adopted = false;
        loop {
            let authorization = match self.authorization(repository).await {
                Ok(a) => a,
                Err(answer) => return answer,
            };
            let sent_nothing = authorization.is_none();
            let http_method = match method {
                Method::Head => HttpMethod::HEAD,
                Method::Get => HttpMethod::GET,
            };
            let request = with_auth(
                inner
                    .http
                    .client
                    .request(http_method.clone(), url.clone())
                    .header(ACCEPT, MANIFEST_ACCEPT),
                authorization.as_ref(),
            );
            let response = match inner
                .http
                .send(request, &http_method, &url, Purpose::Manifest)
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    return classify::transport_failure(
                        &inner.endpoint.host,
                        method,
                        &transport::describe(&e, inner.http.timeout),
                    );
                }
            };
            let status = response.status().as_u16();
            if status == 401 && sent_nothing && !adopted && self.adopt(response.headers()) {
                adopted = true;
                continue;
            }
            let headers = response.headers().clone();
            let errors = if method == Method::Get && status >= 400 {
                errcode::parse(
                    &transport::read_limited(response, transport::ERROR_BODY_LIMIT).await,
                )
            } else {
                drop(response);
                Vec::new()
            };
            let query = self.query(repository, reference);
            let reply = Reply {
                method,
                status,
                digest: header(&headers, DOCKER_CONTENT_DIGEST),
                content_type: header(&headers, CONTENT_TYPE.as_str()),
                retry_after: header(&headers, RETRY_AFTER.as_str()),
                errors: &errors,
            };
            match classify::manifest(&query, &reply) {
                Decision::Done(answer) => return answer,
                Decision::Get => method = Method::Get,
                Decision::ListTags(missing) => {
                    return self
                        .list_tags(&query, missing, authorization.as_ref())
                        .await;
                }
                // The seam for retries: a retry loop would wait `retry_after` here.
                Decision::Retryable { answer, .. } => return answer,
            }
        }
    }

    fn query<'a>(&'a self, repository: &'a str, reference: Ref<'a>) -> Query<'a> {
        let credential = &self.inner.credential;
        let who = match (self.inner.auth.get(), credential) {
            (Some(Auth::BasicWithoutCredential), Credential::Anonymous) => Who::NoCredentials,
            (Some(Auth::BasicWithoutCredential), other) => Who::Unusable(auth::who(other)),
            (_, Credential::Anonymous) => Who::Anonymous,
            (_, other) => Who::Credential(auth::who(other)),
        };
        Query {
            host: &self.inner.endpoint.host,
            repository,
            reference,
            who,
            tag_hints: self.inner.tag_hints,
        }
    }

    /// On an open registry, adopts the challenge of the first 401 (a registry may leave
    /// `/v2/` open and protect repositories). Returns whether a retry can now send
    /// something.
    fn adopt(&self, headers: &HeaderMap) -> bool {
        let inner = &self.inner;
        if inner.auth.get().is_some() {
            // Another task adopted it meanwhile: retry with it.
            return !matches!(inner.auth.get(), Some(Auth::BasicWithoutCredential));
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
            Plan::Basic => Auth::Basic,
            Plan::BasicWithoutCredential => Auth::BasicWithoutCredential,
            Plan::Bearer(params) => {
                let http = realm_http(
                    &inner.endpoint,
                    &params.realm,
                    &inner.secure,
                    &inner.insecure,
                )
                .clone();
                Auth::Bearer(Box::new(Bearer {
                    params,
                    http,
                    tokens: RwLock::new(Tokens::default()),
                    refresh: tokio::sync::Mutex::new(()),
                }))
            }
            Plan::Open | Plan::Fail(_) => return false,
        };
        tracing::debug!(host = %inner.endpoint.host, "adopting the challenge of a 401");
        let _ = inner.auth.set(learned);
        !matches!(inner.auth.get(), Some(Auth::BasicWithoutCredential))
    }

    /// The `Authorization` to send for `repository`, fetching or refreshing a token when
    /// needed. A token failure is the answer.
    async fn authorization(&self, repository: &str) -> Result<Option<Authorization>, Answer> {
        let inner = &self.inner;
        match inner.auth.get() {
            None | Some(Auth::BasicWithoutCredential) => Ok(None),
            Some(Auth::Basic) => match &inner.credential {
                Credential::Basic { username, password } => Ok(Some(Authorization::Basic(
                    username.clone(),
                    Secret::new(password.clone()),
                ))),
                _ => Ok(None),
            },
            Some(Auth::Bearer(bearer)) => self
                .token(bearer, repository)
                .await
                .map(|t| Some(Authorization::Bearer(t))),
        }
    }

    async fn token(&self, bearer: &Bearer, repository: &str) -> Result<Secret, Answer> {
        let inner = &self.inner;
        let covered = inner.authorized.contains(repository);
        let cached = |tokens: &Tokens| -> Option<Secret> {
            let token = if covered {
                tokens.main.as_ref()
            } else {
                tokens.extra.get(repository)
            };
            token
                .filter(|t| t.is_fresh(Instant::now()))
                .map(|t| t.value.clone())
        };
        if let Some(t) = cached(&read(&bearer.tokens)) {
            return Ok(t);
        }
        let _guard = bearer.refresh.lock().await;
        if let Some(t) = cached(&read(&bearer.tokens)) {
            return Ok(t);
        }
        let scopes = if covered {
            inner.scopes.clone()
        } else {
            vec![scope::repository_pull(repository)]
        };
        match token::fetch(&bearer.http, &bearer.params, &inner.credential, &scopes).await {
            Ok(token) => {
                let value = token.value.clone();
                let mut tokens = bearer
                    .tokens
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if covered {
                    tokens.main = Some(token);
                } else {
                    tokens.extra.insert(repository.to_string(), token);
                }
                Ok(value)
            }
            Err(failure) => Err(classify::from_authorize_error(&auth::token_failure(
                &inner.endpoint.host,
                &bearer.params,
                &inner.credential,
                &failure,
            ))),
        }
    }

    /// `GET /v2/<repository>/tags/list?n=1000` after a 404.
    async fn list_tags(
        &self,
        query: &Query<'_>,
        missing: Missing,
        authorization: Option<&Authorization>,
    ) -> Answer {
        let inner = &self.inner;
        let mut url = join(&inner.base, "v2/");
        {
            let mut segments = url.path_segments_mut().expect("an http(s) URL has a path");
            segments.pop_if_empty();
            segments.extend(query.repository.split('/'));
            segments.extend(["tags", "list"]);
        }
        url.set_query(Some("n=1000"));
        let request = with_auth(inner.http.client.get(url.clone()), authorization);
        let response = match inner
            .http
            .send(request, &HttpMethod::GET, &url, Purpose::Tags)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                return classify::tags_list_failed(
                    query,
                    missing,
                    &transport::describe(&e, inner.http.timeout),
                );
            }
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
        let body = transport::read_limited(response, limit).await;
        let errors = if status >= 400 {
            errcode::parse(&body)
        } else {
            Vec::new()
        };
        classify::tags_list(query, missing, status, &body, &errors, link_next)
    }
}

fn read(tokens: &RwLock<Tokens>) -> std::sync::RwLockReadGuard<'_, Tokens> {
    tokens
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        Some(Authorization::Bearer(token)) => request.bearer_auth(token.expose()),
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `<base>v2/<repository>/manifests/<reference>`, each path component percent-encoded
/// as a path segment.
pub(crate) fn manifest_url(base: &Url, repository: &str, reference: &str) -> Url {
    let mut url = base.clone();
    {
        let mut segments = url.path_segments_mut().expect("an http(s) URL has a path");
        segments.pop_if_empty();
        segments.push("v2");
        segments.extend(repository.split('/'));
        segments.extend(["manifests", reference]);
    }
    url
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
    fn manifest_urls() {
        let base = Url::parse("https://reg.example:5000/").unwrap();
        assert_eq!(
            manifest_url(&base, "library/alpine", "3.19").as_str(),
            "https://reg.example:5000/v2/library/alpine/manifests/3.19"
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            manifest_url(&base, "a/b/c", &digest).as_str(),
            format!("https://reg.example:5000/v2/a/b/c/manifests/{digest}")
        );
        // Characters that would change the URL's meaning are escaped.
        assert_eq!(
            manifest_url(&base, "x", "a?b#c").as_str(),
            "https://reg.example:5000/v2/x/manifests/a%3Fb%23c"
        );
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
