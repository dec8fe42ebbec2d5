//! [`Client`]: the entry point. `authorize` pings an endpoint ([`crate::ping`]),
//! decides what follows ([`crate::auth::plan`]), checks a Basic credential or fetches
//! the tokens of every scope batch, and hands a [`Session`] the state it shares with
//! the client ([`Shared`]).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::RequestKind;
use crate::auth::{self, Auth};
use crate::ping;
use crate::retry::{self, Attempts};
use crate::scope;
use crate::session::{Parts, Session};
use crate::shared::{ClientError, Shared};
use crate::token::{BearerParams, CacheKey, TokenFailure};
use crate::transport::Http;
use crate::urls::{base_url, with_query};
use crate::{
    AuthFailure, AuthorizeError, ClientOptions, Credential, Endpoint, HeaderPart, NoAnswer, Reason,
    Status, Tried,
};

/// One client per run, shared by every registry: connections are pooled and kept
/// alive, HTTP/2 is used where TLS offers it (ALPN), certificates are verified against
/// the system's roots plus [`ClientOptions::ca_file`]. A host with a directory in
/// [`ClientOptions::certs_dir`], or an endpoint with its own [`Endpoint::ca_files`] or
/// [`Endpoint::client_cert`], gets its own HTTP client, built on first use and kept.
/// Endpoints marked [`Endpoint::skip_verify`] use clients that do not verify
/// certificates. Tokens are cached per (registry, credential, scope set) until shortly
/// before they expire, and what each endpoint's ping learned for 5 minutes (see
/// [`Client::authorize`]), so that a long-running service calling `authorize` for
/// every check sends only the `HEAD`s while both are fresh. Cheap to clone; clones
/// share all of it.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per_host = self.shared.per_host_clients();
        f.debug_struct("Client")
            .field("options", &self.shared.options)
            .field("requests", &self.request_count())
            .field("per_host_clients", &per_host)
            .field("tokens", &self.shared.tokens)
            .finish()
    }
}

impl Client {
    /// Builds the client.
    ///
    /// # Errors
    /// [`ClientError::CaFile`] when [`ClientOptions::ca_file`] cannot be read, is not
    /// PEM or holds no certificate; [`ClientError::Tls`] when no usable system
    /// certificate store is found.
    pub fn new(options: ClientOptions) -> Result<Client, ClientError> {
        Ok(Client {
            shared: Arc::new(Shared::new(options)?),
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

    /// Opens up to `wanted` connections (at most
    /// [`ClientOptions::max_connections_per_host`], counting those already open and the
    /// one the first request opens) to
    /// `endpoint` in the background, so that a group of `wanted` images does not wait
    /// for handshakes after its first request: call it just before
    /// [`Client::authorize_first`], whose first request is then in flight while they
    /// open. Sends no request; returns at once.
    ///
    /// - The scheme is the one the ping cache knows, `http` for
    ///   [`Endpoint::http_only`], `https` for an endpoint not allowed plain HTTP; for a
    ///   cold endpoint allowed plain HTTP, the connections are opened once the first
    ///   answer says which scheme it speaks (before any token request).
    /// - Over TLS, the first handshake decides: when ALPN picks HTTP/2 no other
    ///   connection is opened (one connection carries every request).
    /// - Nothing for a host the egress policy refuses, nor when an HTTP proxy is
    ///   configured in the environment (reqwest's pool is used then). Failures are only
    ///   logged: the requests meet them again and say so.
    pub fn pre_open(&self, endpoint: &Endpoint, wanted: usize) {
        let Ok(http) = self.shared.http_for_endpoint(endpoint) else {
            return;
        };
        let known = match self.shared.cached_ping(endpoint) {
            Some(pinged) => Some(pinged.base),
            None if endpoint.http_only => base_url("http", &endpoint.host).ok(),
            None if !endpoint.allow_http => base_url("https", &endpoint.host).ok(),
            None => None,
        };
        match (known, base_url("https", &endpoint.host)) {
            // The first request opens its own.
            (Some(base), _) => http.pre_open(&base, wanted.saturating_sub(1)),
            (None, Ok(https)) => http.want_pre_open(&https, wanted),
            (None, Err(_)) => {}
        }
    }

    /// Pings `endpoint` (`GET /v2/`, or its [`Endpoint::base_path`], with its
    /// [`Endpoint::query`] and [`Endpoint::headers`]) and, if it challenges,
    /// authenticates once for all `repositories` (paths such as `library/alpine`),
    /// yielding a session that can query them (and others, at the cost of a token
    /// each).
    ///
    /// - `https://`; when [`Endpoint::allow_http`] is set, `http://` too, started when
    ///   `https://` fails before any HTTP answer or has not answered within a head
    ///   start of 250 ms (happy eyeballs, RFC 8305; only after a failure when the
    ///   endpoint has [`Endpoint::headers`], which may carry a secret), and its answer
    ///   is taken only when `https://` failed before any HTTP answer (DNS, TCP, TLS,
    ///   timeout), as the sequential order would choose, or when the TLS port has sent
    ///   no byte at all by as long again after the plain answer as the plain request
    ///   took (a port that accepts and never answers: the head start and about 2
    ///   round trips, not the request timeout); `https://` is kept whenever its port
    ///   has said anything. The session keeps that scheme. The ping carries no
    ///   credential, so none goes over plain HTTP to a registry that answers over TLS.
    ///   A bare TCP connection to the plain port (the spare, one of the
    ///   [`ClientOptions::max_connections_per_host`] connections: none at a bound of
    ///   1, nor when an idle plain connection is there) opens with the `https://`
    ///   attempt, sending nothing until the plain attempt starts on it (a round trip
    ///   sooner than its own connect); when `https://` wins it is closed, or turned
    ///   into an HTTP/1.1 TLS connection when both schemes share the port and more are
    ///   to be opened: a TLS registry allowed plain HTTP sees one more accepted
    ///   connection that sends nothing. With [`Endpoint::http_only`], `http://` alone.
    /// - **Warm state.** What a ping learned (the scheme that answered, the status and
    ///   the challenge) is kept per endpoint (all of [`Endpoint`]'s fields) for
    ///   5 minutes when it was a 2xx or a usable 401, and used instead of pinging.
    ///   It is dropped, and the endpoint pinged again, when what it led to fails: a
    ///   token request or the Basic credential check here (then, if the registry's
    ///   answer changed, that step is done once more with it), or a later request
    ///   with the session's token or credential answering 401, or a token request of
    ///   the session failing (then, if the challenge changed, the request is sent once
    ///   more; one ping again per session, shared by its concurrent checks).
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

    /// [`Client::authorize_before`] that, on a cold endpoint (nothing in the ping
    /// cache), sends no ping of its own: the first request is the manifest `HEAD` of
    /// `first` (`(repository, reference)`, one of `repositories`, the reference as
    /// [`Session::check`] takes it), without credentials, as containerd's resolver
    /// sends its first request and learns the challenge from the 401.
    ///
    /// - A **401** is the ping's answer: its challenge starts the token flow (or the
    ///   Basic check) exactly as a ping's would, and is kept in the ping cache; the
    ///   session then sends `first`'s `HEAD` again with the token or credential (a
    ///   Basic challenge without a user name and password: the 401 is `first`'s
    ///   answer, as the session would send the same request).
    /// - A **2xx** for [`Credential::Anonymous`] is `first`'s answer: the session is
    ///   open (as after a ping answering 2xx), [`Session::check`] of `first` reads that
    ///   answer instead of sending the `HEAD` again, and the other repositories go out
    ///   at once.
    /// - **Anything else** (404, 403, 5xx after the retries, or a 2xx when a credential
    ///   is to be used, where `/v2/` may still challenge) says nothing certain about
    ///   how the registry authenticates: `GET /v2/` follows on the scheme that
    ///   answered, and decides as [`Client::authorize`]; where the session then sends
    ///   no credential (open, or Basic without a user name), the `HEAD`'s answer is
    ///   still `first`'s (it is the request the session would send), otherwise it is
    ///   dropped.
    ///
    /// So the requests per endpoint are those of [`Client::authorize`] with the ping's
    /// place taken by a `HEAD` (a 401 costs the same two requests, a ping and a `HEAD`
    /// either way), one fewer on an open registry checked anonymously, and the round
    /// trip of the ping is saved whenever the `HEAD` answers. With a warm ping cache,
    /// exactly [`Client::authorize_before`].
    ///
    /// # Errors
    /// As [`Client::authorize`].
    pub async fn authorize_first(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        first: (&str, &str),
        deadline: Instant,
    ) -> Result<Session, AuthorizeError> {
        let mut attempts = Attempts::new(
            self.shared.policy,
            retry::earliest(self.shared.options.deadline, Some(deadline)),
        );
        self.authorize_with(
            endpoint,
            credential,
            repositories,
            Some(first),
            &mut attempts,
        )
        .await
        .map_err(|mut e| {
            e.history = Box::new(attempts.history());
            e.failure
                .map_texts(&|text| auth::redact(text, credential, None));
            e
        })
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
            retry::earliest(self.shared.options.deadline, deadline),
        );
        self.authorize_with(endpoint, credential, repositories, None, &mut attempts)
            .await
            .map_err(|mut e| {
                e.history = Box::new(attempts.history());
                e.failure
                    .map_texts(&|text| auth::redact(text, credential, None));
                e
            })
    }

    async fn authorize_with(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
        first: Option<(&str, &str)>,
        attempts: &mut Attempts,
    ) -> Result<Session, AuthorizeError> {
        let host = endpoint.host.as_str();
        let headers = header_map(&endpoint.headers).map_err(|(name, part)| {
            AuthorizeError::new(
                Status::Unreachable,
                Reason::ClientConfig,
                AuthFailure::InvalidHeader {
                    host: host.to_string(),
                    name,
                    part,
                },
            )
        })?;
        let http = self
            .shared
            .http_for_endpoint(endpoint)
            .map_err(|why| client_config(host, why))?;
        let batches = scope::token_batches(repositories.iter().map(String::as_str));
        let cached = self.shared.cached_ping(endpoint);
        let warm = cached.is_some();
        let (pinged, answered) = match (cached, first) {
            (Some(pinged), _) => {
                tracing::debug!(host, "using what the last ping learned");
                (pinged, None)
            }
            (None, Some((repository, reference))) => {
                self.probe(
                    endpoint, credential, &headers, &http, attempts, repository, reference,
                )
                .await?
            }
            (None, None) => (
                self.fresh_ping(endpoint, &headers, &http, attempts).await?,
                None,
            ),
        };
        // `pre_open` on a cold endpoint allowed plain HTTP: the scheme is known now.
        http.open_wanted(&pinged.base, 0);
        let acted = self
            .act(
                endpoint, credential, &headers, &http, &pinged, &batches, attempts,
            )
            .await;
        let (pinged, (auth, realm), warm) = match acted {
            Ok(done) => (pinged, done, warm),
            Err(e) if warm => {
                // The registry may have changed its challenge (another realm, another
                // scheme): ask it again, and try once more if it did.
                tracing::debug!(
                    host,
                    "what the last ping learned did not work; pinging again"
                );
                self.shared.forget_ping(endpoint);
                let fresh = self.fresh_ping(endpoint, &headers, &http, attempts).await?;
                if fresh.same_answer(&pinged, endpoint, credential) {
                    return Err(e);
                }
                let done = self
                    .act(
                        endpoint, credential, &headers, &http, &fresh, &batches, attempts,
                    )
                    .await?;
                (fresh, done, false)
            }
            Err(e) => return Err(e),
        };
        let api = pinged.api(endpoint);
        // The session reads it only where its own first request would be the same,
        // without credentials (open, or a Basic challenge and no user name).
        let first = answered;
        Ok(Session::new(Parts {
            shared: Arc::clone(&self.shared),
            endpoint: endpoint.clone(),
            base: pinged.base,
            api,
            headers,
            http,
            credential: credential.clone(),
            auth,
            realm,
            warm,
            repositories,
            batches,
            first,
        }))
    }

    /// The first manifest `HEAD` in place of the ping ([`Client::authorize_first`]):
    /// what it learned, and the answer that is `first`'s own, if any.
    #[allow(clippy::too_many_arguments)]
    async fn probe(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        headers: &HeaderMap,
        http: &Http,
        attempts: &mut Attempts,
        repository: &str,
        reference: &str,
    ) -> Result<(ping::Pinged, Option<ping::Probe>), AuthorizeError> {
        let host = endpoint.host.as_str();
        let (probed, answer) =
            ping::probe(endpoint, headers, http, attempts, repository, reference).await?;
        match probed.status {
            401 if probed.reusable(endpoint) => {
                tracing::debug!(host, "the first HEAD was challenged: the ping's answer");
                self.shared.remember_ping(endpoint, &probed);
                // Still the first image's answer where the session sends it again
                // without credentials (a Basic challenge and no user name).
                Ok((probed, Some(answer)))
            }
            200..=299 if matches!(credential, Credential::Anonymous) => {
                tracing::debug!(host, "the first HEAD answered anonymously: open");
                self.shared.remember_ping(endpoint, &probed);
                Ok((probed, Some(answer)))
            }
            status => {
                tracing::debug!(
                    host,
                    status,
                    "the first HEAD does not say how the registry authenticates; pinging"
                );
                let pinged = ping::ping_on(endpoint, headers, http, attempts, &probed.base).await?;
                if pinged.reusable(endpoint) {
                    self.shared.remember_ping(endpoint, &pinged);
                }
                let same_scheme = pinged.base == probed.base;
                Ok((pinged, same_scheme.then_some(answer)))
            }
        }
    }

    /// Pings `endpoint` and keeps what it learned when that can be used again
    /// ([`ping::Pinged::reusable`]).
    async fn fresh_ping(
        &self,
        endpoint: &Endpoint,
        headers: &HeaderMap,
        http: &Http,
        attempts: &mut Attempts,
    ) -> Result<ping::Pinged, AuthorizeError> {
        let pinged = ping::ping(endpoint, headers, http, attempts).await?;
        if pinged.reusable(endpoint) {
            self.shared.remember_ping(endpoint, &pinged);
        }
        Ok(pinged)
    }

    /// Decides what follows `pinged` for `credential` and does it: checks a Basic
    /// credential on `/v2/`, or fetches the tokens of every scope batch. Returns the
    /// auth state and, for bearer tokens, the realm's HTTP client.
    #[allow(clippy::too_many_arguments)]
    async fn act(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        headers: &HeaderMap,
        http: &Http,
        pinged: &ping::Pinged,
        batches: &[Vec<String>],
        attempts: &mut Attempts,
    ) -> Result<(Auth, Option<Http>), AuthorizeError> {
        let host = endpoint.host.as_str();
        let decision = pinged.plan(endpoint, credential)?;
        let realm = match &decision {
            Auth::Open | Auth::BasicWithoutCredential => None,
            Auth::Basic => {
                let ping_url = with_query(pinged.api(endpoint), &endpoint.query);
                self.check_basic(
                    http,
                    headers,
                    host,
                    &ping_url,
                    credential,
                    attempts.deadline(),
                )
                .await?;
                None
            }
            Auth::Bearer(params) => {
                let realm_http = self
                    .shared
                    .realm_http(endpoint, &params.realm)
                    .map_err(|why| client_config(host, why))?;
                self.prefetch_tokens(endpoint, params, credential, &realm_http, batches, attempts)
                    .await
                    .map_err(|f| auth::token_failure(host, params, credential, &f))?;
                Some(realm_http)
            }
        };
        Ok((decision, realm))
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
        let key =
            |scopes: &[String]| CacheKey::new(endpoint, params, credential, Arc::from(scopes));
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
            .basic_auth(username, Some(password.expose()));
        let response = http
            .send(
                request,
                &Method::GET,
                ping_url,
                (RequestKind::Ping, host),
                deadline,
            )
            .await
            .map_err(|e| match e.refusal {
                Some(refusal) => AuthorizeError::refused(AuthFailure::Refused {
                    host: host.to_string(),
                    refusal,
                }),
                None => AuthorizeError {
                    certificate: e.certificate,
                    ..AuthorizeError::new(
                        Status::Unreachable,
                        e.kind,
                        AuthFailure::Unreachable {
                            host: host.to_string(),
                            tried: Tried::Request(NoAnswer {
                                kind: e.kind,
                                why: e.reason,
                            }),
                        },
                    )
                },
            })?;
        match auth::basic_check(host, response.status().as_u16(), credential) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// [`AuthFailure::ClientConfig`]: the HTTP client for `host` cannot be built, for `why`.
fn client_config(host: &str, why: String) -> AuthorizeError {
    AuthorizeError::new(
        Status::Unreachable,
        Reason::ClientConfig,
        AuthFailure::ClientConfig {
            host: host.to_string(),
            why,
        },
    )
}

/// The configured headers as a header map, values marked sensitive.
///
/// # Errors
/// The header's name (never its value) and which part is invalid.
pub(crate) fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, (String, HeaderPart)> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| (name.clone(), HeaderPart::Name))?;
        let mut value =
            HeaderValue::from_str(value).map_err(|_| (name.clone(), HeaderPart::Value))?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CaFileProblem;

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
        assert_eq!(e, ("bad name".to_string(), HeaderPart::Name));
        let e = header_map(&[("X-Token".into(), "line\nbreak-secret".into())]).unwrap_err();
        assert_eq!(e, ("X-Token".to_string(), HeaderPart::Value));
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
        let ClientError::CaFile {
            path,
            problem: CaFileProblem::Unreadable(_),
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(path, std::path::Path::new("/nonexistent/pullcheck-ca.pem"));
        let fault = err.fault().expect("a file fault");
        assert_eq!(
            (fault.path.as_ref(), fault.kind),
            (
                "/nonexistent/pullcheck-ca.pem",
                pullcheck_files::FaultKind::Unreadable
            )
        );
    }
}
