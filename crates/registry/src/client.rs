//! [`Client`]: the two HTTP clients and the ping that turns an endpoint and a credential
//! into a [`Session`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use reqwest::Method;
use reqwest::header::WWW_AUTHENTICATE;
use url::Url;

use crate::auth::{self, Plan};
use crate::scope;
use crate::session::{Mode, Parts, Session};
use crate::token;
use crate::transport::{self, Counters, Http, Purpose};
use crate::{AuthorizeError, ClientOptions, Credential, Endpoint, Status};

/// One HTTP client per run, shared by every registry: connections are pooled and
/// kept alive, HTTP/2 is used where TLS offers it, certificates are verified against the
/// system's roots. A second client without certificate verification serves only
/// endpoints marked [`Endpoint::skip_verify`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Client {
    options: ClientOptions,
    secure: Http,
    insecure: Http,
    counters: Arc<Counters>,
}

impl Client {
    /// Builds the client.
    ///
    /// # Errors
    /// [`AuthorizeError`] with [`Status::Unreachable`] when the TLS configuration cannot
    /// be built (for example, no usable system certificate store).
    pub fn new(options: ClientOptions) -> Result<Client, AuthorizeError> {
        let counters = Arc::new(Counters::default());
        let build = |skip_verify: bool| {
            transport::build_client(&options.user_agent, options.request_timeout, skip_verify)
                .map(|client| Http {
                    client,
                    timeout: options.request_timeout,
                    counters: Arc::clone(&counters),
                })
                .map_err(|e| AuthorizeError {
                    status: Status::Unreachable,
                    message: format!(
                        "cannot build the HTTP client: {}",
                        transport::describe(&e, options.request_timeout)
                    ),
                })
        };
        let secure = build(false)?;
        let insecure = build(true)?;
        Ok(Client {
            options,
            secure,
            insecure,
            counters,
        })
    }

    /// The options the client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// HTTP requests sent so far by this client and its sessions, token requests
    /// included, whatever their outcome.
    pub fn request_count(&self) -> u64 {
        self.counters.requests.load(Ordering::Relaxed)
    }

    /// Requests sent so far to token realms (GET or OAuth2 POST).
    pub fn token_request_count(&self) -> u64 {
        self.counters.token_requests.load(Ordering::Relaxed)
    }

    /// Pings `endpoint` (`GET /v2/`) and, if it challenges, authenticates once for all
    /// `repositories` (paths such as `library/alpine`), yielding a session that can
    /// query them (and others, at the cost of a token each).
    ///
    /// - `https://` first; when that fails before any HTTP answer (DNS, TCP, TLS,
    ///   timeout) and [`Endpoint::allow_http`] is set, `http://`, which the session
    ///   then keeps.
    /// - `Bearer` challenge: **one** token request carrying one `scope` parameter per
    ///   repository (distribution token-auth spec), Basic-authenticated for
    ///   [`Credential::Basic`]; an OAuth2 refresh-token POST for
    ///   [`Credential::IdentityToken`] (GET when the realm answers 404 or 405);
    ///   [`Credential::RegistryToken`] is used as the bearer as it is. A plain-HTTP
    ///   realm is refused unless the endpoint is insecure (`allow_http` or
    ///   `skip_verify`).
    /// - `Basic` challenge: a user name and password are checked once on `/v2/`, then
    ///   sent with every request; without them the session is still made, and each
    ///   image answers [`Status::NoAccess`].
    ///
    /// # Errors
    /// [`AuthorizeError`], which applies to every image on the registry:
    /// [`Status::Unreachable`] for network, TLS, timeout, 5xx and nonsensical answers;
    /// [`Status::Denied`] when the registry or its token realm rejects the credential
    /// (the message names the host and the user, never a secret);
    /// [`Status::NoAccess`] when the realm refuses anonymous access or the registry asks
    /// for an authentication scheme this client does not speak.
    pub async fn authorize(
        &self,
        endpoint: &Endpoint,
        credential: &Credential,
        repositories: &[String],
    ) -> Result<Session, AuthorizeError> {
        let host = endpoint.host.as_str();
        let http = if endpoint.skip_verify {
            &self.insecure
        } else {
            &self.secure
        };
        let (base, ping) = self.ping(endpoint, http).await?;
        let ping_url = join(&base, "v2/");
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
        let mode = match decision {
            Plan::Open => Mode::Open,
            Plan::BasicWithoutCredential => Mode::BasicWithoutCredential,
            Plan::Fail(e) => return Err(e),
            Plan::Basic => {
                self.check_basic(http, host, &ping_url, credential).await?;
                Mode::Basic
            }
            Plan::Bearer(params) => {
                let realm_http = self.realm_http(endpoint, &params.realm);
                let scopes = scope::pull_scopes(repositories.iter().map(String::as_str));
                let token = token::fetch(realm_http, &params, credential, &scopes)
                    .await
                    .map_err(|f| auth::token_failure(host, &params, credential, &f))?;
                Mode::Bearer {
                    params,
                    first: token,
                }
            }
        };
        Ok(Session::new(Parts {
            endpoint: endpoint.clone(),
            base,
            http: http.clone(),
            secure: self.secure.clone(),
            insecure: self.insecure.clone(),
            credential: credential.clone(),
            mode,
            repositories,
            tag_hints: self.options.tag_hints,
        }))
    }

    /// `GET /v2/` over https, then http when allowed. Returns the base URL that answered
    /// and its response.
    async fn ping(
        &self,
        endpoint: &Endpoint,
        http: &Http,
    ) -> Result<(Url, reqwest::Response), AuthorizeError> {
        let host = endpoint.host.as_str();
        let base = base_url("https", host)?;
        let url = join(&base, "v2/");
        let first = http
            .send(
                http.client.get(url.clone()),
                &Method::GET,
                &url,
                Purpose::Ping,
            )
            .await;
        let https_error = match first {
            Ok(response) => return Ok((base, response)),
            Err(e) => e,
        };
        let https_reason = transport::describe(&https_error, http.timeout);
        if !(endpoint.allow_http && transport::is_connection_level(&https_error)) {
            return Err(AuthorizeError {
                status: Status::Unreachable,
                message: format!("registry {host} unreachable over https: {https_reason}"),
            });
        }
        let base = base_url("http", host)?;
        let url = join(&base, "v2/");
        tracing::debug!(host, reason = %https_reason, "https failed; trying plain http");
        match http
            .send(
                http.client.get(url.clone()),
                &Method::GET,
                &url,
                Purpose::Ping,
            )
            .await
        {
            Ok(response) => Ok((base, response)),
            Err(e) => Err(AuthorizeError {
                status: Status::Unreachable,
                message: format!(
                    "registry {host} unreachable: https: {https_reason}; http: {}",
                    transport::describe(&e, http.timeout)
                ),
            }),
        }
    }

    async fn check_basic(
        &self,
        http: &Http,
        host: &str,
        ping_url: &Url,
        credential: &Credential,
    ) -> Result<(), AuthorizeError> {
        let Credential::Basic { username, password } = credential else {
            return Ok(());
        };
        let request = http
            .client
            .get(ping_url.clone())
            .basic_auth(username, Some(password));
        let response = http
            .send(request, &Method::GET, ping_url, Purpose::Ping)
            .await
            .map_err(|e| AuthorizeError {
                status: Status::Unreachable,
                message: format!(
                    "registry {host} unreachable: {}",
                    transport::describe(&e, http.timeout)
                ),
            })?;
        match auth::basic_check(host, response.status().as_u16(), credential) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    fn realm_http(&self, endpoint: &Endpoint, realm: &Url) -> &Http {
        realm_http(endpoint, realm, &self.secure, &self.insecure)
    }
}

/// The client for a token realm: the insecure one only when the endpoint skips
/// verification and the realm is on the same host; a realm elsewhere is verified.
pub(crate) fn realm_http<'a>(
    endpoint: &Endpoint,
    realm: &Url,
    secure: &'a Http,
    insecure: &'a Http,
) -> &'a Http {
    if endpoint.skip_verify && same_host(&endpoint.host, realm) {
        insecure
    } else {
        secure
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
}
