//! The authorization decision, sans IO: given the answer to `GET /v2/` and the
//! credential, what happens next. Also the facts of authorization failures
//! ([`AuthFailure`]): each names the host that failed and, where there is one, the
//! credential by name, and nothing secret.

use crate::challenge::{self, Challenge};
use crate::scope;
use crate::token::{BearerError, BearerParams, TokenFailure};
use crate::{
    AuthFailure, AuthorizeError, ChallengeProblem, Credential, NoAnswer, Presented, Reason, Status,
    TokenReplyProblem,
};

/// How requests to one registry authenticate, as its ping (or, on an open registry,
/// the first 401 to a manifest) asked: the one auth state of this crate. [`plan`]
/// decides it, `Client::authorize` acts on it (checks a Basic credential, fetches the
/// tokens), and a `Session` keeps it for every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `/v2/` answered 2xx: no authentication (until a 401 brings a challenge).
    Open,
    /// A `Basic` challenge and a user name and password: check them once on `/v2/`,
    /// then send them with every request.
    Basic,
    /// A `Basic` challenge but no user name and password: query without; each image
    /// then answers 401, reported as "authentication required and no credentials".
    BasicWithoutCredential,
    /// A `Bearer` challenge: get tokens from this realm.
    Bearer(BearerParams),
}

/// How the ping went, as far as the plan needs it.
#[derive(Debug, Clone)]
pub(crate) struct Ping<'a> {
    /// The host as configured, for messages.
    pub host: &'a str,
    /// The URL that was pinged, for messages.
    pub url: &'a str,
    pub status: u16,
    /// The raw `WWW-Authenticate` values.
    pub www_authenticate: Vec<&'a [u8]>,
    /// Whether a plain-HTTP token realm may be used (the endpoint is insecure).
    pub allow_http_realm: bool,
}

fn fail(status: Status, reason: Reason, failure: AuthFailure) -> Result<Auth, AuthorizeError> {
    Err(AuthorizeError::new(status, reason, failure))
}

/// Decides from the ping answer (pure).
///
/// # Errors
/// The registry cannot be used: every image on it gets this [`AuthorizeError`].
pub(crate) fn plan(ping: &Ping<'_>, credential: &Credential) -> Result<Auth, AuthorizeError> {
    let status_failure = || AuthFailure::PingStatus {
        host: ping.host.to_string(),
        url: ping.url.to_string(),
        status: ping.status,
    };
    match ping.status {
        200..=299 => Ok(Auth::Open),
        401 => {
            let (challenges, parse_error) = challenge::parse_fields(ping.www_authenticate.clone());
            plan_for_challenges(ping, &challenges, parse_error.as_ref(), credential)
        }
        403 => fail(Status::Denied, Reason::AccessDenied, status_failure()),
        404 => fail(Status::Unreachable, Reason::NotARegistry, status_failure()),
        429 => fail(Status::Unreachable, Reason::RateLimited, status_failure()),
        _ => fail(Status::Unreachable, Reason::ServerError, status_failure()),
    }
}

fn plan_for_challenges(
    ping: &Ping<'_>,
    challenges: &[Challenge],
    parse_error: Option<&challenge::ParseError>,
    credential: &Credential,
) -> Result<Auth, AuthorizeError> {
    let host = ping.host.to_string();
    if let Some(bearer) = challenges.iter().find(|c| c.is("bearer")) {
        return match BearerParams::from_challenge(bearer, ping.allow_http_realm) {
            Ok(params) => Ok(Auth::Bearer(params)),
            Err(BearerError::InsecureRealm(realm)) => fail(
                Status::Unreachable,
                Reason::NotARegistry,
                AuthFailure::InsecureRealm {
                    host,
                    realm: format!("{}://{}", realm.scheme(), realm.host_str().unwrap_or("?")),
                },
            ),
            Err(BearerError::BadRealm(problem)) => fail(
                Status::Unreachable,
                Reason::NotARegistry,
                AuthFailure::BadRealm { host, problem },
            ),
        };
    }
    if challenges.iter().any(|c| c.is("basic")) {
        return match credential {
            Credential::Basic { .. } => Ok(Auth::Basic),
            _ => Ok(Auth::BasicWithoutCredential),
        };
    }
    let problem = match (challenges.first(), parse_error) {
        (Some(c), _) => ChallengeProblem::Unsupported(c.scheme.to_string()),
        (None, Some(e)) => ChallengeProblem::Malformed {
            reason: e.reason.to_string(),
            position: e.position,
        },
        (None, None) => ChallengeProblem::Missing,
    };
    fail(
        Status::NoAccess,
        Reason::UnsupportedAuth,
        AuthFailure::UnsupportedChallenge { host, problem },
    )
}

/// After a 401 to a request that carried a bearer token: when the registry's challenge
/// says `error="insufficient_scope"` (distribution token-auth spec), the scopes to ask
/// a new token for. Only pull is ever asked for: each `repository:<name>:…` scope of
/// the challenge becomes `repository:<name>:pull`, and without one, `repository` is
/// used. `None` when the 401 is not about scope (pure).
pub(crate) fn insufficient_scope(
    www_authenticate: Vec<&[u8]>,
    repository: &str,
) -> Option<Vec<String>> {
    let (challenges, _) = challenge::parse_fields(www_authenticate);
    let bearer = challenges.iter().find(|c| {
        c.is("bearer")
            && c.param("error")
                .is_some_and(|e| e.eq_ignore_ascii_case("insufficient_scope"))
    })?;
    let named: Vec<&str> = bearer
        .param("scope")
        .unwrap_or_default()
        .split(' ')
        .filter_map(|s| s.strip_prefix("repository:"))
        .filter_map(|rest| rest.rsplit_once(':').map(|(name, _actions)| name))
        .filter(|name| !name.is_empty())
        .collect();
    let scopes = if named.is_empty() {
        scope::pull_scopes([repository])
    } else {
        scope::pull_scopes(named)
    };
    Some(scopes)
}

/// What a redacted secret is shown as.
const REDACTED: &str = "<redacted>";

/// `text` without the secrets of `credential` (a password, also as the base64 of
/// `user:password` in a Basic header, or a token) and without `bearer`, the token sent:
/// a registry or realm that echoes the request in its error message must not make
/// pullcheck print a secret. Secrets shorter than 4 bytes are left, as they would match
/// ordinary text.
pub(crate) fn redact(text: &str, credential: &Credential, bearer: Option<&str>) -> String {
    use base64::Engine as _;
    let mut secrets: Vec<String> = match credential {
        Credential::Anonymous => Vec::new(),
        Credential::Basic { username, password } => vec![
            base64::engine::general_purpose::STANDARD
                .encode(format!("{username}:{}", password.expose())),
            password.expose().to_owned(),
        ],
        Credential::IdentityToken(t) | Credential::RegistryToken(t) => {
            vec![t.expose().to_owned()]
        }
    };
    secrets.extend(bearer.map(str::to_string));
    // Longest first, so that a secret inside another is not left half shown.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut text = text.to_string();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

/// Who is asking, for [`crate::Requester`]: `user "alice"`, `the configured identity
/// token`, … (still words; see the report's notes).
pub(crate) fn who(credential: &Credential) -> String {
    match credential {
        Credential::Anonymous => "anonymous access".to_string(),
        Credential::Basic { username, .. } => format!("user {username:?}"),
        Credential::IdentityToken(_) => "the configured identity token".to_string(),
        Credential::RegistryToken(_) => "the configured registry token".to_string(),
    }
}

/// A token failure as the classification of every image it blocks.
pub(crate) fn token_failure(
    host: &str,
    params: &BearerParams,
    credential: &Credential,
    failure: &TokenFailure,
) -> AuthorizeError {
    let realm_host = params.realm.host_str().unwrap_or("?");
    let realm = match params.realm.port() {
        Some(port) => format!("{realm_host}:{port}"),
        None => realm_host.to_string(),
    };
    let registry = host.to_string();
    match failure {
        TokenFailure::Rejected { status } => match Presented::of(credential) {
            None => AuthorizeError::new(
                Status::NoAccess,
                Reason::UnauthorizedAnonymous,
                AuthFailure::TokenAnonymousRefused {
                    registry,
                    realm,
                    status: *status,
                },
            ),
            Some(credential) => AuthorizeError::new(
                Status::Denied,
                Reason::CredentialsRejected,
                AuthFailure::TokenRejected {
                    registry,
                    realm,
                    credential,
                    status: *status,
                },
            ),
        },
        TokenFailure::Status { status, .. } => AuthorizeError::new(
            Status::Unreachable,
            if *status == 429 {
                Reason::RateLimited
            } else {
                Reason::ServerError
            },
            AuthFailure::TokenStatus {
                registry,
                realm,
                status: *status,
            },
        ),
        TokenFailure::Transport { reason, kind, .. } => AuthorizeError::new(
            Status::Unreachable,
            *kind,
            AuthFailure::TokenUnreachable {
                registry,
                realm,
                failure: NoAnswer {
                    kind: *kind,
                    why: reason.clone(),
                },
            },
        ),
        TokenFailure::BadReply { problem, status } => AuthorizeError::new(
            Status::Unreachable,
            // A configured registry token that cannot be sent was never the token
            // server's answer.
            if *problem == TokenReplyProblem::ConfiguredUnsendable {
                Reason::NotARegistry
            } else {
                Reason::BadTokenReply
            },
            AuthFailure::TokenReply {
                registry,
                realm,
                problem: problem.clone(),
                status: *status,
            },
        ),
        TokenFailure::Refused(refusal) => {
            AuthorizeError::refused(AuthFailure::TokenServerRefused {
                registry,
                realm,
                refusal: refusal.clone(),
            })
        }
    }
}

/// The answer to the Basic check on `/v2/` with a user name and password.
pub(crate) fn basic_check(
    host: &str,
    status: u16,
    credential: &Credential,
) -> Option<AuthorizeError> {
    let host = host.to_string();
    match (status, Presented::of(credential)) {
        (200..=299, _) => None,
        (401 | 403, Some(credential)) => Some(AuthorizeError::new(
            Status::Denied,
            Reason::CredentialsRejected,
            AuthFailure::CredentialsRejected {
                host,
                credential,
                status,
            },
        )),
        (status, _) => Some(AuthorizeError::new(
            Status::Unreachable,
            Reason::ServerError,
            AuthFailure::CredentialCheckStatus { host, status },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FailedHost, HostRole};

    #[test]
    fn echoed_secrets_are_redacted() {
        let basic = Credential::Basic {
            username: "alice".into(),
            password: "hunter22".into(),
        };
        // base64("alice:hunter22"), as a Basic header carries it.
        let header = "YWxpY2U6aHVudGVyMjI=";
        let echoed =
            format!("denied: password hunter22, header Basic {header}, token eyJtoken.x.y");
        let shown = redact(&echoed, &basic, Some("eyJtoken.x.y"));
        assert_eq!(
            shown,
            "denied: password <redacted>, header Basic <redacted>, token <redacted>"
        );
        let shown = redact(
            "unknown for Bearer rt-secret-1",
            &Credential::RegistryToken("rt-secret-1".into()),
            None,
        );
        assert_eq!(shown, "unknown for Bearer <redacted>");
        // Too short to tell from ordinary text; the anonymous credential has none.
        let short = Credential::Basic {
            username: "u".into(),
            password: "on".into(),
        };
        assert_eq!(redact("not found", &short, None), "not found");
        assert_eq!(
            redact("not found", &Credential::Anonymous, None),
            "not found"
        );
    }

    fn ping<'a>(status: u16, headers: &[&'a str]) -> Ping<'a> {
        Ping {
            host: "reg.example",
            url: "https://reg.example/v2/",
            status,
            www_authenticate: headers.iter().map(|h| h.as_bytes()).collect(),
            allow_http_realm: false,
        }
    }

    fn basic() -> Credential {
        Credential::Basic {
            username: "alice".into(),
            password: "hunter2".into(),
        }
    }

    #[test]
    fn open_registry() {
        assert_eq!(
            plan(&ping(200, &[]), &Credential::Anonymous),
            Ok(Auth::Open)
        );
    }

    #[test]
    fn bearer_is_preferred_over_basic() {
        let p = ping(
            401,
            &[r#"Basic realm="r", Bearer realm="https://auth.example/token",service="reg""#],
        );
        match plan(&p, &basic()) {
            Ok(Auth::Bearer(params)) => {
                assert_eq!(params.realm.as_str(), "https://auth.example/token");
                assert_eq!(params.service.as_deref(), Some("reg"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn challenges_in_separate_fields() {
        let p = ping(
            401,
            &[r#"Basic realm="r""#, r#"Bearer realm="https://a/t""#],
        );
        assert!(matches!(
            plan(&p, &Credential::Anonymous),
            Ok(Auth::Bearer(_))
        ));
    }

    #[test]
    fn basic_with_and_without_credentials() {
        let p = ping(401, &[r#"Basic realm="Registry Realm""#]);
        assert_eq!(plan(&p, &basic()), Ok(Auth::Basic));
        assert_eq!(
            plan(&p, &Credential::Anonymous),
            Ok(Auth::BasicWithoutCredential)
        );
        assert_eq!(
            plan(&p, &Credential::RegistryToken("t".into())),
            Ok(Auth::BasicWithoutCredential)
        );
    }

    #[test]
    fn plain_http_realm_refused_for_a_secure_endpoint() {
        let p = ping(401, &[r#"Bearer realm="http://auth.example/token""#]);
        match plan(&p, &basic()) {
            Err(e) => {
                assert_eq!(
                    (e.status, e.reason, *e.failure),
                    (
                        Status::Unreachable,
                        Reason::NotARegistry,
                        AuthFailure::InsecureRealm {
                            host: "reg.example".into(),
                            realm: "http://auth.example".into(),
                        }
                    )
                );
            }
            other => panic!("{other:?}"),
        }
        let insecure = Ping {
            allow_http_realm: true,
            ..p
        };
        assert!(matches!(plan(&insecure, &basic()), Ok(Auth::Bearer(_))));
    }

    #[test]
    fn unusable_401s() {
        let (_, unterminated) = challenge::parse_fields(vec![br#"Bearer realm="x"#.as_slice()]);
        let unterminated = unterminated.expect("a parse error");
        for (headers, problem) in [
            (vec![], ChallengeProblem::Missing),
            (
                vec!["Negotiate abc=="],
                ChallengeProblem::Unsupported("negotiate".into()),
            ),
            (
                vec![r#"Bearer realm="x"#],
                ChallengeProblem::Malformed {
                    reason: unterminated.reason.to_string(),
                    position: unterminated.position,
                },
            ),
        ] {
            match plan(&ping(401, &headers), &Credential::Anonymous) {
                Err(e) => {
                    assert_eq!(
                        (e.status, e.reason, *e.failure),
                        (
                            Status::NoAccess,
                            Reason::UnsupportedAuth,
                            AuthFailure::UnsupportedChallenge {
                                host: "reg.example".into(),
                                problem,
                            }
                        ),
                        "{headers:?}"
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn other_ping_statuses() {
        let cases = [
            (403, Status::Denied, Reason::AccessDenied),
            (404, Status::Unreachable, Reason::NotARegistry),
            (429, Status::Unreachable, Reason::RateLimited),
            (500, Status::Unreachable, Reason::ServerError),
            (503, Status::Unreachable, Reason::ServerError),
        ];
        for (status, want, reason) in cases {
            match plan(&ping(status, &[]), &Credential::Anonymous) {
                Err(e) => {
                    assert_eq!(
                        (e.status, e.reason, *e.failure),
                        (
                            want,
                            reason,
                            AuthFailure::PingStatus {
                                host: "reg.example".into(),
                                url: "https://reg.example/v2/".into(),
                                status,
                            }
                        ),
                        "{status}"
                    );
                }
                other => panic!("{status}: {other:?}"),
            }
        }
    }

    #[test]
    fn token_rejection_names_host_and_user_never_password() {
        let params = BearerParams {
            realm: url::Url::parse("https://auth.example:8443/token").unwrap(),
            service: None,
        };
        let (registry, realm) = ("reg.example".to_string(), "auth.example:8443".to_string());
        let token_server = FailedHost {
            host: realm.clone(),
            role: HostRole::TokenServer,
            http_status: None,
        };
        let e = token_failure(
            "reg.example",
            &params,
            &basic(),
            &TokenFailure::Rejected { status: 401 },
        );
        assert_eq!(
            (e.status, e.reason, &*e.failure),
            (
                Status::Denied,
                Reason::CredentialsRejected,
                &AuthFailure::TokenRejected {
                    registry: registry.clone(),
                    realm: realm.clone(),
                    credential: Presented::User("alice".into()),
                    status: 401,
                }
            )
        );
        assert_eq!(
            e.failure.failed_host(),
            FailedHost {
                http_status: Some(401),
                ..token_server.clone()
            }
        );
        assert!(!format!("{e:?}").contains("hunter2"));
        let e = token_failure(
            "reg.example",
            &params,
            &Credential::Anonymous,
            &TokenFailure::Rejected { status: 401 },
        );
        assert_eq!(
            (e.status, e.reason, *e.failure),
            (
                Status::NoAccess,
                Reason::UnauthorizedAnonymous,
                AuthFailure::TokenAnonymousRefused {
                    registry: registry.clone(),
                    realm: realm.clone(),
                    status: 401,
                }
            )
        );
        let e = token_failure(
            "reg.example",
            &params,
            &Credential::IdentityToken("secret-refresh".into()),
            &TokenFailure::Rejected { status: 400 },
        );
        assert_eq!(
            (e.status, &*e.failure),
            (
                Status::Denied,
                &AuthFailure::TokenRejected {
                    registry: registry.clone(),
                    realm: realm.clone(),
                    credential: Presented::IdentityToken,
                    status: 400,
                }
            )
        );
        assert!(!format!("{e:?}").contains("secret-refresh"));
        let e = token_failure(
            "reg.example",
            &params,
            &basic(),
            &TokenFailure::Transport {
                reason: "connection refused".into(),
                kind: Reason::ConnectionRefused,
                retryable: true,
            },
        );
        assert_eq!(
            (e.status, e.reason, &*e.failure),
            (
                Status::Unreachable,
                Reason::ConnectionRefused,
                &AuthFailure::TokenUnreachable {
                    registry,
                    realm,
                    failure: NoAnswer {
                        kind: Reason::ConnectionRefused,
                        why: "connection refused".into(),
                    },
                }
            )
        );
        assert_eq!(e.failure.failed_host(), token_server);
    }

    #[test]
    fn insufficient_scope_asks_for_pull_on_the_named_repositories() {
        let h = |s: &'static str| vec![s.as_bytes()];
        assert_eq!(
            insufficient_scope(
                h(
                    r#"Bearer realm="https://a/t",service="s",scope="repository:team/app:pull",error="insufficient_scope""#
                ),
                "team/app"
            ),
            Some(vec!["repository:team/app:pull".to_string()])
        );
        // Push is never asked for; the name the registry uses wins.
        assert_eq!(
            insufficient_scope(
                h(
                    r#"Bearer realm="https://a/t",scope="repository:library/x:pull,push",error="insufficient_scope""#
                ),
                "x"
            ),
            Some(vec!["repository:library/x:pull".to_string()])
        );
        // Without a usable scope, the repository queried.
        assert_eq!(
            insufficient_scope(
                h(r#"Bearer realm="https://a/t",error="insufficient_scope""#),
                "team/app"
            ),
            Some(vec!["repository:team/app:pull".to_string()])
        );
        assert_eq!(
            insufficient_scope(
                h(r#"Bearer realm="https://a/t",error="invalid_token""#),
                "a"
            ),
            None
        );
        assert_eq!(insufficient_scope(h(r#"Basic realm="r""#), "a"), None);
        assert_eq!(insufficient_scope(vec![], "a"), None);
        assert_eq!(insufficient_scope(h(r#"Bearer realm="x"#), "a"), None);
    }

    #[test]
    fn basic_check_outcomes() {
        assert_eq!(basic_check("h", 200, &basic()), None);
        let e = basic_check("h", 401, &basic()).unwrap();
        assert_eq!(
            (e.status, e.reason, &*e.failure),
            (
                Status::Denied,
                Reason::CredentialsRejected,
                &AuthFailure::CredentialsRejected {
                    host: "h".into(),
                    credential: Presented::User("alice".into()),
                    status: 401,
                }
            )
        );
        assert!(!format!("{e:?}").contains("hunter2"));
        assert_eq!(
            e.failure.failed_host(),
            FailedHost {
                host: "h".into(),
                role: HostRole::Registry,
                http_status: Some(401),
            }
        );
        let e = basic_check("h", 502, &basic()).unwrap();
        assert_eq!(
            (e.status, e.reason, *e.failure),
            (
                Status::Unreachable,
                Reason::ServerError,
                AuthFailure::CredentialCheckStatus {
                    host: "h".into(),
                    status: 502
                }
            )
        );
    }
}
