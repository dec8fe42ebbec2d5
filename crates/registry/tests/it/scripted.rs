//! Answers a real distribution never gives, from a scripted HTTP/1.1 server on loopback:
//! HEAD refused (405, 501), rate limits, 5xx, a wrong digest, a challenge that only
//! repositories send, an OAuth2 realm, a server that never answers, and a mirror
//! endpoint with its own API path, query and headers. The hostile cases (resets,
//! garbage, huge headers, loops, hangs) are in `faults.rs`.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pullcheck_registry::{
    Client, ClientOptions, Credential, Endpoint, FailedAttempt, Finding, Method, Missing,
    RetryStop, Status,
};
use support::server::{Server, respond, serve};
use tokio::net::TcpListener;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        allow_http: true,
        skip_verify: false,
        ..Endpoint::new(server.host.clone())
    }
}

fn client() -> Client {
    Client::new(ClientOptions::default()).expect("client")
}

fn repos(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn head_not_allowed_falls_back_to_get() {
    let server = serve(|r| match (r.method.as_str(), r.target.as_str()) {
        ("GET", "/v2/") => respond(200, &[], ""),
        ("HEAD", _) => respond(405, &[], ""),
        ("GET", "/v2/app/manifests/v1") => respond(
            200,
            &[
                ("Docker-Content-Digest", D1),
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            ],
            "{}",
        ),
        ("GET", "/v2/app/manifests/gone") => respond(
            404,
            &[("Content-Type", "application/json")],
            r#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}"#,
        ),
        _ => respond(501, &[], ""),
    })
    .await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");
    let a = session.check("app", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(a.digest.as_deref(), Some(D1));
    assert!(support::served_to(&a, Method::Get), "{:?}", a.finding);
    // The GET's error body decides the repository at once: no tag list.
    let a = session.check("app", "gone").await;
    assert_eq!(
        (a.status, a.missing),
        (Status::Missing, Some(Missing::Repository))
    );
    assert_eq!(
        server.seen(),
        vec![
            "GET /v2/",
            "HEAD /v2/app/manifests/v1",
            "GET /v2/app/manifests/v1",
            "HEAD /v2/app/manifests/gone",
            "GET /v2/app/manifests/gone",
        ]
    );
}

/// A plain web server (`python3 -m http.server` with a file at the manifest's path)
/// answers 200 to anything it has, but no registry's headers: not present.
#[tokio::test]
async fn a_static_file_server_is_not_a_registry() {
    let server = serve(|r| match r.path() {
        "/v2/" => respond(
            200,
            &[("Content-Type", "text/html; charset=utf-8")],
            "<html>",
        ),
        "/v2/a/b/manifests/1" => respond(200, &[("Content-Type", "application/octet-stream")], "x"),
        _ => respond(404, &[("Content-Type", "text/html")], "<html>"),
    })
    .await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["a/b"]))
        .await
        .expect("a /v2/ 200 without Docker-Distribution-API-Version is accepted");
    let a = session.check("a/b", "1").await;
    assert_eq!(a.status, Status::Unreachable, "{a:?}");
    assert_eq!((a.missing, a.digest, a.media_type), (None, None, None));
    assert_eq!(
        a.finding,
        Finding::NotAManifest {
            host: server.host.clone(),
            method: Method::Get,
            status: 200,
            content_type: Some("application/octet-stream".into())
        }
    );
    // The HEAD is asked again with GET, as for a HEAD without the digest.
    assert_eq!(
        server.seen(),
        vec![
            "GET /v2/",
            "HEAD /v2/a/b/manifests/1",
            "GET /v2/a/b/manifests/1"
        ]
    );
}

/// A proxy or captive portal answering `200 text/html` to everything, digests included.
#[tokio::test]
async fn a_captive_portal_is_not_a_registry() {
    let server =
        serve(|_| respond(200, &[("Content-Type", "text/html")], "<html>log in</html>")).await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");
    for reference in ["v1", D1] {
        let a = session.check("app", reference).await;
        assert_eq!(a.status, Status::Unreachable, "{reference}: {a:?}");
        assert!(
            matches!(
                &a.finding,
                Finding::NotAManifest { status: 200, content_type: Some(c), .. } if c == "text/html"
            ),
            "{:?}",
            a.finding
        );
    }
}

/// A registry whose HEAD carries neither header but whose GET does is present.
#[tokio::test]
async fn a_bare_head_is_asked_again_with_get() {
    let server = serve(|r| match (r.method.as_str(), r.path()) {
        ("GET", "/v2/") => respond(200, &[], ""),
        ("HEAD", _) => respond(200, &[], ""),
        ("GET", _) => respond(
            200,
            &[(
                "Content-Type",
                "application/vnd.docker.distribution.manifest.v1+prettyjws",
            )],
            "{}",
        ),
        _ => respond(404, &[], ""),
    })
    .await;
    let session = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");
    let a = session.check("app", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(
        a.media_type.as_deref(),
        Some("application/vnd.docker.distribution.manifest.v1+prettyjws")
    );
    assert!(support::served_to(&a, Method::Get), "{:?}", a.finding);
}

#[tokio::test]
async fn rate_limits_server_errors_and_wrong_digests() {
    let server = serve(|r| match r.target.as_str() {
        "/v2/" => respond(200, &[], ""),
        "/v2/app/manifests/limited" => respond(
            429,
            &[("Retry-After", "7")],
            r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
        ),
        "/v2/app/manifests/broken" => respond(503, &[], ""),
        "/v2/app/manifests/crashed" => respond(500, &[], ""),
        t if t.starts_with("/v2/app/manifests/sha256:") => {
            respond(200, &[("Docker-Content-Digest", D2)], "")
        }
        "/v2/app/manifests/odd" => respond(418, &[], ""),
        _ => respond(404, &[], ""),
    })
    .await;
    // Retry-After beyond 5 s is not waited for; backoffs are short.
    let client = Client::new(ClientOptions {
        retry_after_max: Duration::from_secs(5),
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(20),
        ..ClientOptions::default()
    })
    .expect("client");
    let session = client
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect("authorize");

    let a = session.check("app", "limited").await;
    assert_eq!(a.status, Status::Unreachable);
    assert_eq!((a.http_status, a.attempts), (Some(429), 1));
    assert!(
        matches!(a.finding, Finding::RateLimited { .. }),
        "{:?}",
        a.finding
    );
    assert_eq!(a.retry_after, Some(Duration::from_secs(7)));
    assert_eq!(
        a.history.stopped,
        Some(RetryStop::RetryAfterTooLong {
            asked: Duration::from_secs(7),
            max: Duration::from_secs(5)
        })
    );

    let a = session.check("app", "broken").await;
    assert_eq!((a.status, a.http_status), (Status::Unreachable, Some(503)));
    assert_eq!(a.attempts, 3);
    assert!(
        matches!(
            a.finding,
            Finding::HttpStatus {
                status: 503,
                method: Method::Head,
                ..
            }
        ),
        "{:?}",
        a.finding
    );
    assert_eq!(
        a.history.failed,
        vec![
            FailedAttempt::Status {
                status: 503,
                retry_after: None
            };
            3
        ]
    );

    // A 500 is not transient: no retry.
    let a = session.check("app", "crashed").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert!(
        matches!(
            a.finding,
            Finding::HttpStatus {
                status: 500,
                method: Method::Head,
                ..
            }
        ),
        "{:?}",
        a.finding
    );
    assert!(a.history.failed.is_empty());

    let a = session.check("app", D1).await;
    assert_eq!(a.status, Status::Unreachable);
    assert_eq!(
        a.finding,
        Finding::DigestMismatch {
            host: server.host.clone(),
            wanted: D1.into(),
            got: D2.into()
        }
    );

    let a = session.check("app", "odd").await;
    assert_eq!((a.status, a.http_status), (Status::Unreachable, Some(418)));
    assert_eq!(
        server
            .seen()
            .iter()
            .filter(|s| s.ends_with("/broken"))
            .count(),
        3
    );
}

#[tokio::test]
async fn challenge_met_only_on_a_repository_is_adopted_once() {
    // `/v2/` is open; manifests want a Bearer token from the same server's realm.
    let server_host = Arc::new(Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = format!(r#"Bearer realm="http://{host}/token",service="scripted""#);
        match (r.target.as_str(), r.authorization.as_deref()) {
            ("/v2/", _) => respond(200, &[], ""),
            (t, _) if t.starts_with("/token?") => {
                respond(200, &[], r#"{"token":"tok-1","expires_in":300}"#)
            }
            (_, Some("Bearer tok-1")) => respond(200, &[("Docker-Content-Digest", D1)], ""),
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();

    let session = client()
        .authorize(
            &endpoint(&server),
            &Credential::Anonymous,
            &repos(&["a", "b"]),
        )
        .await
        .expect("authorize");
    let a = session.check("a", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    let a = session.check("b", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(
        server.seen(),
        vec![
            "GET /v2/".to_string(),
            "HEAD /v2/a/manifests/v1".to_string(),
            "GET /token?service=scripted&scope=repository%3Aa%3Apull&scope=repository%3Ab%3Apull"
                .to_string(),
            "HEAD /v2/a/manifests/v1".to_string(),
            "HEAD /v2/b/manifests/v1".to_string(),
        ]
    );
}

#[tokio::test]
async fn identity_token_is_exchanged_through_the_oauth2_form() {
    let server_host = Arc::new(Mutex::new(String::new()));
    let realm_host = server_host.clone();
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge = format!(r#"Bearer realm="http://{host}/oauth",service="svc""#);
        match (
            r.method.as_str(),
            r.target.as_str(),
            r.authorization.as_deref(),
        ) {
            ("GET", "/v2/", None) => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
            ("POST", "/oauth", None) => respond(
                200,
                &[],
                r#"{"access_token":"oauth-access","expires_in":120,"refresh_token":"next"}"#,
            ),
            ("HEAD", _, Some("Bearer oauth-access")) => {
                respond(200, &[("Docker-Content-Digest", D1)], "")
            }
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *server_host.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();
    let session = client()
        .authorize(
            &endpoint(&server),
            &Credential::IdentityToken("refresh-me".into()),
            &repos(&["x/y"]),
        )
        .await
        .expect("authorize");
    assert_eq!(session.check("x/y", "1").await.status, Status::Present);
    let post = server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(post.body.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| {
        form.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(get("grant_type"), "refresh_token");
    assert_eq!(get("refresh_token"), "refresh-me");
    assert_eq!(get("service"), "svc");
    assert_eq!(get("client_id"), "pullcheck");
    assert_eq!(get("scope"), "repository:x/y:pull");
}

#[tokio::test]
async fn unparseable_and_unsupported_challenges_fail_authorize() {
    let server = serve(|_| respond(401, &[("WWW-Authenticate", "Negotiate")], "")).await;
    let err = client()
        .authorize(&endpoint(&server), &Credential::Anonymous, &repos(&["a"]))
        .await
        .expect_err("unsupported");
    assert_eq!(err.status, Status::NoAccess);
    assert_eq!(
        *err.failure,
        pullcheck_registry::AuthFailure::UnsupportedChallenge {
            host: server.host.clone(),
            problem: pullcheck_registry::ChallengeProblem::Unsupported("negotiate".into()),
        }
    );
}

#[tokio::test]
async fn silent_server_times_out_with_the_configured_limit() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    // Accepts and then says nothing, holding each connection open.
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let client = Client::new(ClientOptions {
        request_timeout: Duration::from_millis(300),
        ..ClientOptions::default()
    })
    .expect("client");
    let err = client
        .authorize(
            &Endpoint {
                allow_http: false,
                skip_verify: false,
                ..Endpoint::new(host.clone())
            },
            &Credential::Anonymous,
            &repos(&["a"]),
        )
        .await
        .expect_err("silent");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        *err.failure,
        pullcheck_registry::AuthFailure::Unreachable {
            host,
            tried: pullcheck_registry::Tried::Over {
                scheme: pullcheck_registry::Scheme::Https,
                failure: pullcheck_registry::NoAnswer {
                    kind: pullcheck_registry::Reason::Timeout,
                    why: "timed out after 300 ms".into(),
                },
            },
        }
    );
}

/// A mirror that serves the API under `/custom/prefix/` (containerd `override_path`).
async fn prefixed_mirror() -> Server {
    serve(|r| match (r.method.as_str(), r.path()) {
        ("GET", "/custom/prefix/") => respond(200, &[], ""),
        (_, "/custom/prefix/team/app/manifests/v1") => {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
        ("GET", "/custom/prefix/team/app/tags/list") => respond(
            200,
            &[("Content-Type", "application/json")],
            r#"{"name":"team/app","tags":["v1"]}"#,
        ),
        _ => respond(404, &[], ""),
    })
    .await
}

#[tokio::test]
async fn a_mirror_endpoint_sends_its_path_query_and_headers() {
    let server = prefixed_mirror().await;
    let endpoint = Endpoint {
        allow_http: true,
        base_path: "/custom/prefix/".into(),
        query: vec![("ns".into(), "registry.example.com:5000".into())],
        headers: vec![
            ("X-Mirror".into(), "one".into()),
            ("X-Mirror".into(), "two".into()),
            ("Accept".into(), "text/plain".into()),
        ],
        ..Endpoint::new(server.host.clone())
    };
    let session = client()
        .authorize(&endpoint, &Credential::Anonymous, &repos(&["team/app"]))
        .await
        .expect("authorize");
    assert_eq!(session.base_url(), format!("http://{}", server.host));
    assert_eq!(
        session.api_url(),
        format!("http://{}/custom/prefix/", server.host)
    );
    let a = session.check("team/app", "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(a.digest.as_deref(), Some(D1));
    let a = session.check("team/app", "v9").await;
    assert_eq!((a.status, a.missing), (Status::Missing, Some(Missing::Tag)));
    assert_eq!(a.close_tags, ["v1"]);

    let ns = "ns=registry.example.com%3A5000";
    assert_eq!(
        server.seen(),
        vec![
            format!("GET /custom/prefix/?{ns}"),
            format!("HEAD /custom/prefix/team/app/manifests/v1?{ns}"),
            format!("HEAD /custom/prefix/team/app/manifests/v9?{ns}"),
            format!("GET /custom/prefix/team/app/tags/list?n=1000&{ns}"),
        ]
    );
    let requests = server.requests();
    for r in &requests {
        assert_eq!(r.header("x-mirror"), ["one", "two"], "{r:?}");
    }
    // The manifest requests carry the client's own Accept list, not the configured one.
    assert_eq!(requests[0].header("accept"), ["text/plain"]);
    for r in &requests[1..3] {
        assert_eq!(
            r.header("accept"),
            [pullcheck_registry::MANIFEST_ACCEPT],
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn a_configured_authorization_gives_way_to_the_credential() {
    // The registry challenges on the ping; with a user name and password the client's
    // own Basic header replaces the configured one, as containerd's authorizer does.
    let server = serve(|r| match (r.path(), r.authorization.as_deref()) {
        ("/v2/", Some(a)) if a.starts_with("Basic ") => respond(200, &[], ""),
        ("/v2/", _) => respond(401, &[("WWW-Authenticate", r#"Basic realm="r""#)], ""),
        (_, Some(a)) if a.starts_with("Basic ") => {
            respond(200, &[("Docker-Content-Digest", D1)], "")
        }
        _ => respond(401, &[("WWW-Authenticate", r#"Basic realm="r""#)], ""),
    })
    .await;
    let endpoint = Endpoint {
        allow_http: true,
        headers: vec![("Authorization".into(), "Bearer configured-secret".into())],
        ..Endpoint::new(server.host.clone())
    };
    assert!(
        !format!("{endpoint:?}").contains("configured-secret"),
        "{endpoint:?}"
    );
    let credential = Credential::Basic {
        username: "u".into(),
        password: "p".into(),
    };
    let session = client()
        .authorize(&endpoint, &credential, &repos(&["app"]))
        .await
        .expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    let requests = server.requests();
    // The ping carries the configured header (there is nothing else to send yet).
    assert_eq!(
        requests[0].header("authorization"),
        ["Bearer configured-secret"]
    );
    for r in &requests[1..] {
        assert_eq!(r.header("authorization"), ["Basic dTpw"], "{r:?}");
    }
    assert_eq!(requests.len(), 3, "{:?}", server.seen());
}

#[tokio::test]
async fn an_invalid_configured_header_is_named_without_its_value() {
    let server = prefixed_mirror().await;
    let endpoint = Endpoint {
        allow_http: true,
        headers: vec![("X-Token".into(), "secret\nvalue".into())],
        ..Endpoint::new(server.host.clone())
    };
    let err = client()
        .authorize(&endpoint, &Credential::Anonymous, &repos(&["app"]))
        .await
        .expect_err("invalid header");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        *err.failure,
        pullcheck_registry::AuthFailure::InvalidHeader {
            host: server.host.clone(),
            name: "X-Token".into(),
            part: pullcheck_registry::HeaderPart::Value,
        }
    );
    assert!(!format!("{err:?}").contains("secret"), "{err:?}");
    assert!(server.requests().is_empty());
}
