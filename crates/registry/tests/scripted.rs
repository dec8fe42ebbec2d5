//! Answers a real distribution never gives, from a scripted HTTP/1.1 server on loopback:
//! HEAD refused (405, 501), rate limits, 5xx, a wrong digest, a challenge that only
//! repositories send, an OAuth2 realm, and a server that never answers. The hostile
//! cases (resets, garbage, huge headers, loops, hangs) are in `faults.rs`.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Missing, Status};
use support::server::{Server, respond, serve};
use tokio::net::TcpListener;

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        host: server.host.clone(),
        allow_http: true,
        skip_verify: false,
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
    assert!(a.detail.starts_with("GET 200"), "{}", a.detail);
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
        a.detail.contains("rate limited") && a.detail.contains("retry after 7 s"),
        "{}",
        a.detail
    );
    assert!(
        a.detail.ends_with(
            "not retried: the registry asked to retry after 7 s, beyond the 5000 ms this client waits"
        ),
        "{}",
        a.detail
    );

    let a = session.check("app", "broken").await;
    assert_eq!((a.status, a.http_status), (Status::Unreachable, Some(503)));
    assert_eq!(a.attempts, 3);
    assert!(
        a.detail.ends_with(
            "answered HTTP 503 to HEAD; 3 attempts failed: 1) HTTP 503; 2) HTTP 503; 3) HTTP 503"
        ),
        "{}",
        a.detail
    );

    // A 500 is not transient: no retry.
    let a = session.check("app", "crashed").await;
    assert_eq!((a.status, a.attempts), (Status::Unreachable, 1));
    assert!(
        a.detail.ends_with("answered HTTP 500 to HEAD"),
        "{}",
        a.detail
    );

    let a = session.check("app", D1).await;
    assert_eq!(a.status, Status::Unreachable);
    assert!(
        a.detail.contains(&format!(
            "registry {} returned digest {D2} for {D1}",
            server.host
        )),
        "{}",
        a.detail
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
            ("HEAD", _, Some("Bearer oauth-access")) => respond(200, &[], ""),
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
    assert!(
        err.message
            .contains("unsupported authentication (negotiate)"),
        "{}",
        err.message
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
                host: host.clone(),
                allow_http: false,
                skip_verify: false,
            },
            &Credential::Anonymous,
            &repos(&["a"]),
        )
        .await
        .expect_err("silent");
    assert_eq!(err.status, Status::Unreachable);
    assert_eq!(
        err.message,
        format!("registry {host} unreachable over https: timed out after 300 ms")
    );
}
