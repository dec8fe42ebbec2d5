//! The first request to an endpoint: the ping, `GET <base_path>`, or on a cold endpoint
//! the first manifest `HEAD` in its place ([`probe`], as containerd's resolver learns
//! the challenge from a manifest request's 401). Over https, then plain http when the
//! endpoint allows it, retried while its failures are retryable. What it learns
//! ([`Pinged`]: the scheme that answered, the status and the challenge) is all
//! [`crate::auth::plan`] needs.
//!
//! IO: sends the request through [`crate::transport`].

use std::time::{Duration, Instant};

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use url::Url;

use crate::RequestKind;
use crate::auth::{self, Auth};
use crate::classify::Ref;
use crate::retry::{self, Attempts};
use crate::transport::Http;
use crate::urls::{MANIFEST_ACCEPT, api_url, base_url, manifest_url, with_query};
use crate::{
    AuthFailure, AuthorizeError, CertificateProblem, Credential, EgressRefusal, Endpoint,
    FailedAttempt, NoAnswer, Reason, Scheme, Status, Tried,
};

/// What a ping learned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pinged {
    /// `scheme://host[:port]/` that answered: `http://…` after the plain-HTTP fallback.
    pub base: Url,
    /// The HTTP status of the answer (any).
    pub status: u16,
    /// The raw `WWW-Authenticate` values, in order.
    pub www_authenticate: Vec<Vec<u8>>,
}

impl Pinged {
    /// Whether `other` asks for the same as this answer, for `credential`: the same
    /// scheme, and the same [`Pinged::plan`] (a manifest's 401 carries a `scope` and
    /// an `error` that the ping's does not, and plans the same).
    pub fn same_answer(
        &self,
        other: &Pinged,
        endpoint: &Endpoint,
        credential: &Credential,
    ) -> bool {
        self.base == other.base
            && match (
                self.plan(endpoint, credential),
                other.plan(endpoint, credential),
            ) {
                (Ok(a), Ok(b)) => a == b,
                (Err(a), Err(b)) => a.status == b.status && a.reason == b.reason,
                _ => false,
            }
    }

    /// The API base the ping answered on: [`Pinged::base`] with the endpoint's base path.
    pub fn api(&self, endpoint: &Endpoint) -> Url {
        api_url(&self.base, endpoint)
    }

    /// Whether what this ping learned may be used again instead of pinging
    /// ([`crate::shared::PING_TTL`]): a 2xx, or a 401 whose challenge this client can
    /// answer. Other answers fail `authorize` and are asked again each time.
    pub fn reusable(&self, endpoint: &Endpoint) -> bool {
        match self.status {
            200..=299 => true,
            401 => self.plan(endpoint, &Credential::Anonymous).is_ok(),
            _ => false,
        }
    }

    /// What follows this ping for `credential` ([`auth::plan`]).
    ///
    /// # Errors
    /// As [`auth::plan`]: the registry cannot be used.
    pub fn plan(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
    ) -> Result<Auth, AuthorizeError> {
        let ping_url = with_query(self.api(endpoint), &endpoint.query);
        auth::plan(
            &auth::Ping {
                host: &endpoint.host,
                url: ping_url.as_str(),
                status: self.status,
                www_authenticate: self.www_authenticate.iter().map(Vec::as_slice).collect(),
                allow_http_realm: endpoint.allow_http || endpoint.skip_verify,
            },
            credential,
        )
    }
}

/// What a first request asks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// The ping, `GET <base_path>`.
    Base,
    /// `HEAD <base_path><repository>/manifests/<reference>` with the manifest `Accept`
    /// list, without credentials: what the session would send first on an open
    /// registry.
    Manifest {
        repository: &'a str,
        /// As [`crate::Session::check`] takes it (`tag@digest` asks the digest).
        reference: &'a str,
    },
}

/// The answer to a [`probe`]: the request's URL and its response, unread (a `HEAD`).
#[derive(Debug)]
pub(crate) struct Probe {
    pub url: Url,
    pub response: reqwest::Response,
}

/// `GET <base_path>` over https, then http when allowed, retried while the failures
/// are retryable (statuses 408, 429, 502, 503, 504 after their `Retry-After`, and
/// refused or reset connections).
///
/// # Errors
/// [`Status::Unreachable`] naming the host when no HTTP answer came, or the host is
/// not a valid `host[:port]`.
pub(crate) async fn ping(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    attempts: &mut Attempts,
) -> Result<Pinged, AuthorizeError> {
    ping_over(endpoint, headers, http, attempts, None).await
}

/// [`ping`] on the scheme of `base` only (`scheme://host[:port]/`, as a [`probe`]
/// learned it): no second https attempt for a registry already known to speak plain
/// HTTP.
///
/// # Errors
/// As [`ping`].
pub(crate) async fn ping_on(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    attempts: &mut Attempts,
    base: &Url,
) -> Result<Pinged, AuthorizeError> {
    let scheme = if base.scheme() == "http" {
        "http"
    } else {
        "https"
    };
    ping_over(endpoint, headers, http, attempts, Some(scheme)).await
}

/// [`ping`] over `only` (a scheme), or over both when `None`.
async fn ping_over(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    attempts: &mut Attempts,
    only: Option<&'static str>,
) -> Result<Pinged, AuthorizeError> {
    first_request(endpoint, headers, http, attempts, Target::Base, only)
        .await
        .map(|(pinged, _)| pinged)
}

/// The first manifest `HEAD` of a cold endpoint in place of the ping
/// ([`Target::Manifest`]), over the schemes and with the retries of [`ping`]: its
/// status and challenge are what a ping would have learned when it is a 401; any other
/// answer is the manifest's own, which the caller hands to the session or, when it
/// cannot tell how the endpoint authenticates from it, follows with a ping.
///
/// # Errors
/// As [`ping`].
pub(crate) async fn probe(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    attempts: &mut Attempts,
    repository: &str,
    reference: &str,
) -> Result<(Pinged, Probe), AuthorizeError> {
    let target = Target::Manifest {
        repository,
        reference,
    };
    let (pinged, answered) = first_request(endpoint, headers, http, attempts, target, None).await?;
    let (url, response) = answered;
    Ok((pinged, Probe { url, response }))
}

/// The request of `target` on its URL over `scheme://host`, with the endpoint's query.
fn target_url(base: &Url, endpoint: &Endpoint, target: Target<'_>) -> Url {
    let api = api_url(base, endpoint);
    let url = match target {
        Target::Base => api,
        Target::Manifest {
            repository,
            reference,
        } => manifest_url(&api, repository, Ref::parse(reference).as_str()),
    };
    with_query(url, &endpoint.query)
}

/// [`ping`] or [`probe`]: the retry loop around [`first_once`]; `only` limits it to one
/// scheme.
async fn first_request(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    attempts: &mut Attempts,
    target: Target<'_>,
    only: Option<&'static str>,
) -> Result<(Pinged, (Url, reqwest::Response)), AuthorizeError> {
    let only = only.or(endpoint.http_only.then_some("http"));
    loop {
        match first_once(endpoint, headers, http, attempts.deadline(), target, only).await {
            Ok((base, url, response)) => {
                let status = response.status().as_u16();
                if retry::retryable_status(status) {
                    let retry_after = retry::retry_after(response.headers());
                    let path = match target {
                        Target::Base => endpoint.api_path(),
                        Target::Manifest { .. } => url.path().to_string(),
                    };
                    let failure = FailedAttempt::FirstStatus { status, path };
                    if attempts.retry(failure, retry_after).await {
                        continue;
                    }
                }
                let www_authenticate = response
                    .headers()
                    .get_all(WWW_AUTHENTICATE)
                    .iter()
                    .map(|v| v.as_bytes().to_vec())
                    .collect();
                let pinged = Pinged {
                    base,
                    status,
                    www_authenticate,
                };
                return Ok((pinged, (url, response)));
            }
            Err(failure) => {
                let host = endpoint.host.clone();
                if let Some(refusal) = failure.refusal {
                    return Err(AuthorizeError::refused(AuthFailure::Refused {
                        host,
                        refusal,
                    }));
                }
                let Some(tried) = failure.tried else {
                    return Err(AuthorizeError::new(
                        Status::Unreachable,
                        failure.kind,
                        AuthFailure::InvalidHost { host },
                    ));
                };
                if failure.retryable
                    && attempts
                        .retry(FailedAttempt::FirstNoAnswer(tried.clone()), None)
                        .await
                {
                    continue;
                }
                return Err(AuthorizeError {
                    certificate: failure.certificate,
                    ..AuthorizeError::new(
                        Status::Unreachable,
                        failure.kind,
                        AuthFailure::Unreachable { host, tried },
                    )
                });
            }
        }
    }
}

/// A ping that got no HTTP answer.
struct PingFailure {
    /// Over which schemes, and each one's failure; `None` when the host is not a valid
    /// `host[:port]` (nothing was sent).
    tried: Option<Tried>,
    /// The reason as data.
    kind: Reason,
    retryable: bool,
    /// The egress policy refused the host (or a redirect of the ping).
    refusal: Option<EgressRefusal>,
    /// For [`Reason::TlsUntrusted`]: what is wrong with the https certificate.
    certificate: Option<CertificateProblem>,
}

/// How long the `https://` attempt of an endpoint allowed plain HTTP runs alone before
/// the `http://` one starts beside it: 250 ms, the "Connection Attempt Delay" of
/// happy eyeballs (RFC 8305, section 5). A registry that answers over TLS within it
/// (on loopback, or up to about 60 ms of round trip: TCP, the TLS 1.3 handshake and
/// the request are 3 round trips) gets no plain request (its spare TCP connection is
/// closed unused, or becomes one of its HTTP/1.1 connections), so an HTTP/2 registry
/// stays one used connection; a plain registry answers the TLS hello at once with a
/// plain 400, which fails the https attempt, and the plain one starts then, 2 round
/// trips after the start, on the TCP connection opened beside the https one (the
/// spare, [`crate::pool::Pool::pre_connect`]): its request is answered 1 round trip
/// later, not 2 as on a connection of its own (Docker and containerd connect after
/// the failure). A TLS port that accepts and never answers (or never accepts) costs
/// the head start and about 2 round trips ([`plain_verdict`]), not the request
/// timeout: without a byte from it, the plain answer is used.
pub(crate) const PLAIN_HEAD_START: Duration = Duration::from_millis(250);

/// When a plain answer that came while https had not answered is judged: after as
/// long again as the plain request took (`plain_took`, from the end of the head
/// start), from `answered`. The https attempt started a head start earlier on the same
/// path; a TLS port that answers sends its first byte 2 round trips after the start
/// (TCP, then the hello), and the plain answer comes no sooner than that (2 round trips
/// after the start when the spare connects after the head start, the head start and 1
/// round trip otherwise), so by then a TLS port that answers has been heard for at
/// least a round trip (and at least the head start below about 125 ms of round trip).
/// A port still silent then is taken as not answering TLS (Docker and containerd wait
/// for their TLS handshake timeout instead, 10 s in Go's `http.Transport`).
fn plain_verdict(answered: Instant, plain_took: Duration) -> Instant {
    answered + plain_took
}

/// Settles the spare TCP connection of a first request when it ends, however it ends
/// ([`Http::settle_spare`]).
struct SettleSpare<'a> {
    http: &'a Http,
    https: Url,
    id: u64,
}

impl Drop for SettleSpare<'_> {
    fn drop(&mut self) {
        self.http.settle_spare(self.id, &self.https);
    }
}

/// One try of the first request: over https and, when the endpoint allows plain HTTP,
/// over http too, started when https fails before any HTTP answer or has not answered
/// within [`PLAIN_HEAD_START`] (only after https fails when the endpoint has configured
/// headers). The plain answer is taken when https failed before any HTTP answer, or
/// when https's TLS port has still sent nothing at all at the [`plain_verdict`] (no
/// TLS answer: no registry on TLS there); https is kept whenever its port has said
/// anything, as the sequential order would choose. The plain attempt goes on the spare
/// TCP connection opened when https starts (no byte is sent on it before), closed or
/// turned into an HTTP/1.1 TLS connection when https wins. With `only`, over that
/// scheme alone. Returns the base that answered, the request's URL and the response.
async fn first_once(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    deadline: Option<Instant>,
    target: Target<'_>,
    only: Option<&'static str>,
) -> Result<(Url, Url, reqwest::Response), PingFailure> {
    let host = endpoint.host.as_str();
    let invalid = |_: String| PingFailure {
        tried: None,
        kind: Reason::ClientConfig,
        retryable: false,
        refusal: None,
        certificate: None,
    };
    // The target's request over `<scheme>://host`, with the endpoint's query and headers.
    let get = |scheme: &'static str| async move {
        let base = base_url(scheme, host).map_err(invalid)?;
        let url = target_url(&base, endpoint, target);
        let (method, kind, request) = match target {
            Target::Base => (
                Method::GET,
                RequestKind::Ping,
                http.client.get(url.clone()).headers(headers.clone()),
            ),
            Target::Manifest { .. } => {
                let mut headers = headers.clone();
                headers.insert(ACCEPT, HeaderValue::from_static(MANIFEST_ACCEPT));
                (
                    Method::HEAD,
                    RequestKind::Manifest,
                    http.client.head(url.clone()).headers(headers),
                )
            }
        };
        let sent = http
            .send_or_fall_back(
                request,
                &method,
                &url,
                (kind, host),
                deadline,
                scheme == "https" && endpoint.allow_http && only.is_none(),
            )
            .await;
        Ok::<_, PingFailure>((base, url, sent))
    };
    if let Some(scheme) = only {
        return match get(scheme).await? {
            (base, url, Ok(response)) => Ok((base, url, response)),
            (_, _, Err(e)) => Err(PingFailure {
                tried: Some(Tried::Over {
                    scheme: if scheme == "http" {
                        Scheme::Http
                    } else {
                        Scheme::Https
                    },
                    failure: NoAnswer {
                        kind: e.kind,
                        why: e.reason,
                    },
                }),
                kind: e.kind,
                retryable: e.retryable,
                refusal: e.refusal,
                certificate: e.certificate,
            }),
        };
    }
    // Both schemes, the plain one after https's head start, when plain HTTP is allowed
    // and nothing configured goes with the request (a configured header may carry a
    // secret): https is kept whenever it answers, or while its port has said anything,
    // as the sequential order would choose, and the plain answer is used only when
    // https got none, or its port stayed silent until the plain answer's verdict. The
    // first request carries no credential, so none goes over plain HTTP to a registry
    // that answers over TLS.
    let together = endpoint.allow_http && endpoint.headers.is_empty();
    let transport = http;
    let https_base = base_url("https", host).ok();
    // Allowed plain HTTP: a bare TCP connection to the plain address opens beside the
    // https attempt (one of the plain origin's connections, under its bound) and
    // carries nothing until the plain attempt starts on it (https failed, or its head
    // start passed), a round trip earlier than a connection of its own; when https
    // wins, the guard closes it, or turns it into an HTTP/1.1 TLS connection on the
    // same port ([`crate::pool::Pool::settle_spare`]).
    let _spare = match (&https_base, base_url("http", host)) {
        (Some(https), Ok(plain)) if endpoint.allow_http => {
            transport.pre_connect(&plain).map(|id| SettleSpare {
                http: transport,
                https: https.clone(),
                id,
            })
        }
        _ => None,
    };
    let https = get("https");
    // Lazy: the plain attempt opens nothing until it is first polled.
    let http = get("http");
    let head_start = tokio::time::sleep(PLAIN_HEAD_START);
    let verdict = tokio::time::sleep(Duration::ZERO);
    futures::pin_mut!(https, http, head_start, verdict);
    let mut early = None;
    let https_out = if together {
        let mut plain_started = None;
        let mut judging = false;
        loop {
            tokio::select! {
                biased;
                out = &mut https => break out,
                () = &mut head_start, if plain_started.is_none() => {
                    tracing::debug!(host, "https has not answered within its head start; plain http too");
                    plain_started = Some(Instant::now());
                }
                out = &mut http, if plain_started.is_some() && early.is_none() => {
                    if matches!(out, Ok((_, _, Ok(_)))) {
                        let took = plain_started.map(|t| t.elapsed()).unwrap_or_default();
                        let at = plain_verdict(Instant::now(), took);
                        verdict.as_mut().reset(tokio::time::Instant::from_std(at));
                        judging = true;
                    }
                    early = Some(out);
                }
                () = &mut verdict, if judging => {
                    judging = false;
                    let silent = https_base.as_ref().is_some_and(|b| !transport.tls_heard(b));
                    if silent && let Some(Ok((base, url, Ok(response)))) = early.take() {
                        tracing::debug!(host, "https's TLS port has sent nothing; the plain answer is used");
                        transport.open_wanted(&base, 0);
                        return Ok((base, url, response));
                    }
                    tracing::debug!(host, "https's TLS port answers; waiting for https");
                }
            }
        }
    } else {
        (&mut https).await
    };
    let https_error = match https_out? {
        (base, url, Ok(response)) => {
            if together {
                tracing::debug!(host, "https answered; the plain-http attempt is not used");
            }
            return Ok((base, url, response));
        }
        (_, _, Err(e)) => e,
    };
    // A certificate that is not trusted is an answer: the registry speaks TLS, and its
    // plain-HTTP port (the same one) would only answer 400 to plain HTTP. The fallback is
    // for an https that gets no answer; the certificate is the finding.
    if !(endpoint.allow_http && https_error.connection_level && https_error.certificate.is_none()) {
        return Err(PingFailure {
            tried: Some(Tried::Over {
                scheme: Scheme::Https,
                failure: NoAnswer {
                    kind: https_error.kind,
                    why: https_error.reason,
                },
            }),
            kind: https_error.kind,
            retryable: https_error.retryable,
            refusal: https_error.refusal,
            certificate: https_error.certificate,
        });
    }
    tracing::debug!(host, reason = %https_error.reason, "https failed; plain http");
    // Plain HTTP is the only scheme left: a group's connections open beside its first
    // request ([`crate::Client::pre_open`]).
    let http_out = match early {
        Some(out) => {
            if let Ok(plain) = base_url("http", host) {
                transport.open_wanted(&plain, 0);
            }
            out
        }
        None => {
            // Polled once first, so that its connection takes the spare before the
            // group's connections opened ahead would; it holds its pool permit then,
            // and the pool counts it among the group's (none `coming`).
            let polled = futures::poll!(&mut http);
            if let Ok(plain) = base_url("http", host) {
                transport.open_wanted(&plain, 0);
            }
            match polled {
                std::task::Poll::Ready(out) => out,
                std::task::Poll::Pending => (&mut http).await,
            }
        }
    };
    match http_out? {
        (base, url, Ok(response)) => Ok((base, url, response)),
        (_, _, Err(e)) => Err(PingFailure {
            tried: Some(Tried::Both {
                https: NoAnswer {
                    kind: https_error.kind,
                    why: https_error.reason.clone(),
                },
                http: NoAnswer {
                    kind: e.kind,
                    why: e.reason,
                },
            }),
            // A certificate not valid for the host says more than the plain-HTTP
            // fallback's failure: the registry as reached over https is another one.
            kind: if https_error.kind == Reason::TlsUntrusted {
                Reason::TlsUntrusted
            } else {
                e.kind
            },
            retryable: e.retryable,
            refusal: e.refusal,
            certificate: https_error.certificate,
        }),
    }
}
