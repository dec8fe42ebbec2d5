//! The ping, `GET <base_path>`: over https, then plain http when the endpoint allows it,
//! retried while its failures are retryable. What it learns ([`Pinged`]: the scheme
//! that answered, the status and the challenge) is all [`crate::auth::plan`] needs.
//!
//! IO: sends the ping through [`crate::transport`].

use std::time::Instant;

use reqwest::Method;
use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};
use url::Url;

use crate::RequestKind;
use crate::auth::{self, Auth};
use crate::retry::{self, Attempts};
use crate::transport::Http;
use crate::urls::{api_url, base_url, with_query};
use crate::{AuthorizeError, Credential, EgressRefusal, Endpoint, Reason, Status};

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
    loop {
        match ping_once(endpoint, headers, http, attempts.deadline()).await {
            Ok((base, response)) => {
                let status = response.status().as_u16();
                if retry::retryable_status(status) {
                    let retry_after = retry::retry_after(response.headers());
                    let failure = format!("HTTP {status} on {}", endpoint.api_path());
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
                return Ok(Pinged {
                    base,
                    status,
                    www_authenticate,
                });
            }
            Err(failure) => {
                if let Some(refusal) = failure.refusal {
                    let host = &endpoint.host;
                    return Err(AuthorizeError::refused(
                        &format!("registry {host}"),
                        refusal,
                    ));
                }
                if failure.retryable && attempts.retry(failure.short, None).await {
                    continue;
                }
                return Err(AuthorizeError {
                    status: Status::Unreachable,
                    reason: failure.kind,
                    message: failure.message,
                    refusal: None,
                });
            }
        }
    }
}

/// A ping that got no HTTP answer.
struct PingFailure {
    /// The whole message, naming the host.
    message: String,
    /// The reason alone, for the attempt history.
    short: String,
    /// The reason as data.
    kind: Reason,
    retryable: bool,
    /// The egress policy refused the host (or a redirect of the ping).
    refusal: Option<EgressRefusal>,
}

async fn ping_once(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    http: &Http,
    deadline: Option<Instant>,
) -> Result<(Url, reqwest::Response), PingFailure> {
    let host = endpoint.host.as_str();
    let invalid = |message: String| PingFailure {
        message,
        short: String::new(),
        kind: Reason::ClientConfig,
        retryable: false,
        refusal: None,
    };
    // `GET <scheme>://host<base_path>`, with the endpoint's query and headers.
    let get = |scheme: &'static str| async move {
        let base = base_url(scheme, host).map_err(invalid)?;
        let url = with_query(api_url(&base, endpoint), &endpoint.query);
        let sent = http
            .send_or_fall_back(
                http.client.get(url.clone()).headers(headers.clone()),
                &Method::GET,
                &url,
                (RequestKind::Ping, host),
                deadline,
                scheme == "https" && endpoint.allow_http,
            )
            .await;
        Ok::<_, PingFailure>((base, sent))
    };
    let https_error = match get("https").await? {
        (base, Ok(response)) => return Ok((base, response)),
        (_, Err(e)) => e,
    };
    if !(endpoint.allow_http && https_error.connection_level) {
        return Err(PingFailure {
            message: format!(
                "registry {host} unreachable over https: {}",
                https_error.reason
            ),
            short: format!("https: {}", https_error.reason),
            kind: https_error.kind,
            retryable: https_error.retryable,
            refusal: https_error.refusal,
        });
    }
    tracing::debug!(host, reason = %https_error.reason, "https failed; trying plain http");
    match get("http").await? {
        (base, Ok(response)) => Ok((base, response)),
        (_, Err(e)) => Err(PingFailure {
            message: format!(
                "registry {host} unreachable: https: {}; http: {}",
                https_error.reason, e.reason
            ),
            short: format!("https: {}, then http: {}", https_error.reason, e.reason),
            // A certificate not valid for the host says more than the plain-HTTP
            // fallback's failure: the registry as reached over https is another one.
            kind: if https_error.kind == Reason::TlsUntrusted {
                Reason::TlsUntrusted
            } else {
                e.kind
            },
            retryable: e.retryable,
            refusal: e.refusal,
        }),
    }
}
