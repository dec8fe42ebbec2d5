//! Golden renderings of a row's `detail`, full text, through the engine (issue 23): each
//! registry situation, from real distribution registries on loopback and, for the
//! answers a real distribution never gives, a scripted HTTP/1.1 server. The wording of
//! the registry's findings lives in `src/detail.rs`; a change of it shows here, in one
//! place. The facts (status, reason, fields) are asserted elsewhere.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pullcheck::credentials::{NodeCredentials, NodeEnv, NodeOptions};
use pullcheck::input::parse_image_arg;
use pullcheck::registry::{ClientOptions, Platform};
use pullcheck::report::{ImageReport, Report};
use pullcheck::resolve::Resolver;
use pullcheck::{CheckOptions, Checker, CheckerOptions};
use pullcheck_testkit::{Auth, ClosedPort, ImageKind, Registry, TokenPolicy, User};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::util::temp_dir;

/// One scripted answer: status, headers, body (`Content-Length` is added).
type Answer = (u16, Vec<(&'static str, String)>, String);

/// A loopback HTTP/1.1 server answering each request (method, path) with `script`, one
/// request per connection. A TLS client hello is closed at once, as a plain server
/// does, so the client falls back to plain HTTP (Docker's loopback rule).
async fn scripted(
    script: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let script = Arc::new(script);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (script, log) = (script.clone(), log.clone());
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = socket.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 || chunk[0] == 0x16 && buffer.is_empty() {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    if buffer.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let head = String::from_utf8_lossy(&buffer).into_owned();
                let mut words = head.split_whitespace();
                let method = words.next().unwrap_or_default().to_string();
                let target = words.next().unwrap_or_default();
                let path = target.split('?').next().unwrap_or_default().to_string();
                log.lock().unwrap().push(format!("{method} {path}"));
                let (status, headers, body) = script(&method, &path);
                let mut out = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
                for (name, value) in headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                if method != "HEAD" {
                    out.push_str(&body);
                }
                let _ = socket.write_all(out.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    (host, seen)
}

fn answer(status: u16, headers: &[(&'static str, &str)], body: &str) -> Answer {
    (
        status,
        headers
            .iter()
            .map(|(n, v)| (*n, (*v).to_string()))
            .collect(),
        body.to_string(),
    )
}

/// A script that answers the ping (`GET /v2/`) 200 and every other request with
/// `status`, `headers` and `body`.
fn after_ping(
    status: u16,
    headers: &'static [(&'static str, &'static str)],
    body: &'static str,
) -> impl Fn(&str, &str) -> Answer + Send + Sync + 'static {
    move |_, path| {
        if path == "/v2/" {
            return answer(200, &[], "{}");
        }
        answer(status, headers, body)
    }
}

/// An OCI image manifest answer to a `HEAD` or `GET`.
fn manifest_answer() -> Answer {
    answer(
        200,
        &[
            ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
            (
                "Docker-Content-Digest",
                "sha256:1111111111111111111111111111111111111111111111111111111111111111",
            ),
        ],
        "{}",
    )
}

/// A checker with short backoffs and `node`'s credentials, checking `images`.
async fn check_with(images: &[String], node: NodeCredentials, platform: Option<&str>) -> Report {
    let checker = Checker::new(
        CheckerOptions {
            registry: ClientOptions {
                request_timeout: Duration::from_secs(5),
                backoff_base: Duration::from_millis(1),
                backoff_max: Duration::from_millis(5),
                ..ClientOptions::default()
            },
            ..CheckerOptions::default()
        },
        Resolver::default(),
        node,
    )
    .unwrap();
    let uses = images.iter().map(|i| parse_image_arg(i).unwrap()).collect();
    let options = CheckOptions {
        platform: platform.map(|p| Platform::parse(p).unwrap()),
        deadline: Duration::from_secs(30),
        ..CheckOptions::default()
    };
    tokio::time::timeout(Duration::from_secs(60), checker.check(uses, &options))
        .await
        .expect("bounded")
}

async fn check(images: &[String]) -> Report {
    check_with(images, NodeCredentials::empty(), None).await
}

fn row<'a>(report: &'a Report, reference: &str) -> &'a ImageReport {
    crate::util::image(report, reference)
}

/// The detail of the one row of a check of `reference` against a scripted server.
async fn scripted_detail(
    script: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
    path: &str,
) -> (String, String) {
    let (host, _seen) = scripted(script).await;
    let reference = format!("{host}/{path}");
    let report = check(std::slice::from_ref(&reference)).await;
    (host, row(&report, &reference).detail.clone())
}

#[tokio::test]
async fn missing_tag_repository_and_platform() {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    registry
        .push("team/multi", "v1", ImageKind::OciIndex)
        .await
        .unwrap();
    let host = registry.host();
    let (close, far, repository) = (
        format!("{host}/team/app:v2"),
        format!("{host}/team/app:zzzzzzzz"),
        format!("{host}/team/nope:v1"),
    );
    let report = check(&[close.clone(), far.clone(), repository.clone()]).await;
    assert_eq!(
        row(&report, &close).detail,
        format!("tag v2 not found in team/app on {host}; did you mean v1?")
    );
    assert_eq!(
        row(&report, &far).detail,
        format!("tag zzzzzzzz not found in team/app on {host} (1 tag, none close)")
    );
    assert_eq!(
        row(&report, &repository).detail,
        format!(
            "repository team/nope not found on {host} \
             (NAME_UNKNOWN: repository name not known to registry)"
        )
    );

    // An index without the platform; a single-platform image for another one.
    let (index, single) = (
        format!("{host}/team/multi:v1"),
        format!("{host}/team/app:v1"),
    );
    let report = check_with(
        &[index.clone(), single.clone()],
        NodeCredentials::empty(),
        Some("linux/s390x"),
    )
    .await;
    assert_eq!(
        row(&report, &index).detail,
        format!(
            "platform linux/s390x not in the index of team/multi:v1 on {host}; \
             it lists linux/amd64, linux/arm64/v8"
        )
    );
    assert_eq!(
        row(&report, &single).detail,
        format!(
            "team/app:v1 on {host} is a single-platform image for linux/amd64: \
             a node on linux/s390x pulls it, and it will not run there"
        )
    );
}

#[tokio::test]
async fn unauthorized_anonymously_and_with_a_rejected_credential() {
    let token = Registry::builder()
        .auth(Auth::Token(TokenPolicy::new(vec![User::new(
            "alice", "token-pw",
        )])))
        .start()
        .await
        .unwrap();
    let reference = format!("{}/team/app:v1", token.host());
    let report = check(std::slice::from_ref(&reference)).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!(
            "missing, or no access anonymously ({} answered 401; it does not tell the two apart)",
            token.host()
        )
    );

    let locked = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("alice", "right-pw")]))
        .start()
        .await
        .unwrap();
    let host = locked.host();
    let dir = temp_dir("golden-rejected");
    let config = dir.path().join("config.json");
    {
        use base64::Engine as _;
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:wrong-pw");
        std::fs::write(
            &config,
            format!(r#"{{"auths":{{"{host}":{{"auth":"{auth}"}}}}}}"#),
        )
        .unwrap();
    }
    let node = NodeCredentials::load(&NodeOptions {
        docker_config: Some(config),
        env: NodeEnv::default(),
        ..NodeOptions::default()
    })
    .unwrap();
    let reference = format!("{host}/team/app:v1");
    let report = check_with(std::slice::from_ref(&reference), node, None).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!("registry {host} rejected the credentials of user \"alice\" (HTTP 401)")
    );
}

#[tokio::test]
async fn forbidden_rate_limited_and_unknown_codes() {
    let (host, detail) = scripted_detail(
        after_ping(
            403,
            &[("Content-Type", "application/json")],
            r#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}"#,
        ),
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        // A HEAD's answer has no body, so no error envelope.
        format!("access to team/app denied by {host} (HTTP 403)")
    );

    // A wait longer than `retry_after_max` (10 s) ends the retries at once; the wait is
    // said once, where retrying stopped (it was said twice before issue 23's rework).
    let (host, detail) = scripted_detail(
        after_ping(
            429,
            &[("Retry-After", "30"), ("Content-Type", "application/json")],
            r#"{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}"#,
        ),
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "rate limited by {host} (HTTP 429); not retried: \
             the registry asked to retry after 30 s, beyond the 10000 ms this client waits"
        )
    );

    // An error code the OCI distribution spec does not define is kept verbatim (a HEAD
    // has no body: this registry does not do HEAD, so the GET's envelope is read).
    let (host, detail) = scripted_detail(
        |method, path| {
            if path == "/v2/" {
                return answer(200, &[], "{}");
            }
            if method == "HEAD" {
                return answer(405, &[], "");
            }
            answer(
                400,
                &[("Content-Type", "application/json")],
                r#"{"errors":[{"code":"FLUX_CAPACITOR_DRAINED","message":"try 1985"}]}"#,
            )
        },
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "registry {host} answered HTTP 400 to GET, which this client does not expect \
             (FLUX_CAPACITOR_DRAINED: try 1985)"
        )
    );
}

/// An error envelope of hundreds of entries (a registry may send as many as fit in the
/// 64 KiB of an error body read) is worded by its first three and a count of the rest
/// (rev23r finding 2: the detail and the admission message grew without bound); the
/// row keeps the first ten as data. This registry does not do `HEAD` (405), so the
/// `GET`'s envelope is read.
#[tokio::test]
async fn a_long_error_envelope_is_cut_to_three_and_counted() {
    let entry = r#"{"code":"DENIED","message":"requested access to the resource is denied"}"#;
    let body = format!(r#"{{"errors":[{}]}}"#, vec![entry; 600].join(","));
    assert!(body.len() < 64 * 1024);
    let (host, seen) = scripted(move |method, path| {
        if path == "/v2/" {
            return answer(200, &[], "{}");
        }
        if method == "HEAD" {
            return answer(405, &[], "");
        }
        answer(403, &[("Content-Type", "application/json")], &body)
    })
    .await;
    let reference = format!("{host}/team/app:v1");
    let report = check(std::slice::from_ref(&reference)).await;
    let denied = "DENIED: requested access to the resource is denied";
    let row = row(&report, &reference);
    assert_eq!(
        row.detail,
        format!(
            "access to team/app denied by {host} (HTTP 403) ({denied}; {denied}; {denied}; +597 more)"
        )
    );
    assert_eq!(row.http_status, Some(403));
    assert_eq!(row.registry_errors.len(), 10);
    assert_eq!(row.registry_errors[9].code, "DENIED");
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|r| r == "GET /v2/team/app/manifests/v1")
    );
}

/// The first image's `HEAD` is the first request (in place of the ping); the second's
/// answers 503 once, then the manifest.
#[tokio::test]
async fn a_503_then_the_manifest_lists_the_failed_attempt() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let (host, _seen) = scripted(move |_, path| {
        if path.ends_with("/manifests/v2") && counter.fetch_add(1, Ordering::SeqCst) == 0 {
            answer(503, &[], "")
        } else if path.contains("/manifests/") {
            manifest_answer()
        } else {
            answer(200, &[], "{}")
        }
    })
    .await;
    let (first, second) = (format!("{host}/team/app:v1"), format!("{host}/team/app:v2"));
    let report = check(&[first.clone(), second.clone()]).await;
    assert_eq!(
        row(&report, &first).detail,
        "HEAD 200, application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        row(&report, &second).detail,
        "HEAD 200, application/vnd.oci.image.manifest.v1+json; after 1 failed attempt: 1) HTTP 503"
    );
}

#[tokio::test]
async fn answers_that_are_no_manifest() {
    let (host, detail) = scripted_detail(
        |method, path| match (method, path.contains("/manifests/")) {
            (_, true) => answer(204, &[], ""),
            _ => answer(200, &[], "{}"),
        },
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "GET to {host} answered 204 with no Content-Type and no Docker-Content-Digest: \
             not a registry's manifest answer (a proxy or captive portal?)"
        )
    );
    let (host, detail) = scripted_detail(
        |_, path| {
            if path.contains("/manifests/") {
                answer(
                    200,
                    &[("Content-Type", "text/html; charset=utf-8")],
                    "<html>",
                )
            } else {
                answer(200, &[], "{}")
            }
        },
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "GET to {host} answered 200 with Content-Type text/html and no \
             Docker-Content-Digest: not a registry's manifest answer (a proxy or captive portal?)"
        )
    );
}

#[tokio::test]
async fn connection_refused_and_an_untrusted_certificate() {
    let closed = ClosedPort::new();
    let reference = format!("127.0.0.1:{}/team/app:v1", closed.port());
    let report = check(std::slice::from_ref(&reference)).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!(
            "registry 127.0.0.1:{} unreachable: https: connection refused; \
             http: connection refused; 3 attempts, each the same",
            closed.port()
        )
    );

    let dir = temp_dir("golden-untrusted");
    let files = pullcheck_testkit::runtime::make_tls_files(dir.path()).unwrap();
    let registry = Registry::builder().tls(files).start().await.unwrap();
    let host = registry.host();
    let reference = format!("{host}/team/app:v1");
    let report = check(std::slice::from_ref(&reference)).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!(
            "https certificate of registry {host} not trusted: signed by an unknown \
             authority; the registry as reached cannot be shown to be the one named"
        )
    );
}

/// A registry that redirects its manifests to a storage host that refuses the
/// connection: the detail names the storage host as the one that failed (rev23r
/// finding 4: it named only the registry), for the first image (whose `HEAD` is the
/// first request, in place of the ping) and the others of its endpoint.
#[tokio::test]
async fn a_redirect_to_a_refusing_host_names_that_host() {
    let storage = ClosedPort::new();
    let at = format!("127.0.0.1:{}", storage.port());
    let to = format!("http://{at}/storage/object");
    let (host, _seen) = scripted(move |_, path| {
        if path == "/v2/" {
            return answer(200, &[], "{}");
        }
        answer(307, &[("Location", to.as_str())], "")
    })
    .await;
    let (first, second) = (format!("{host}/team/app:v1"), format!("{host}/team/app:v2"));
    let report = check(&[first.clone(), second.clone()]).await;
    // The scripted server closes a TLS hello, so the plain-HTTP fallback is asked.
    let words = format!(
        "registry {host} unreachable: https: connection closed before the answer; \
         http: connection refused (redirected to {at}); 3 attempts, each the same"
    );
    assert_eq!(row(&report, &first).detail, words);
    assert_eq!(row(&report, &second).detail, words);
}

/// A scripted registry whose `/v2/` asks for a Bearer token from `realm`
/// (distribution token-auth spec: `WWW-Authenticate: Bearer realm=…,service=…`) on
/// every request: the token requests here all fail.
async fn bearer_registry(realm: String) -> String {
    let (host, _seen) = scripted(move |_, _| {
        let challenge = format!("Bearer realm=\"{realm}\",service=\"golden\"");
        (401, vec![("WWW-Authenticate", challenge)], String::new())
    })
    .await;
    host
}

/// A token server answering with `script`, a scripted registry whose challenge names
/// it, and the detail of a check of an image there: (token server, registry, detail).
async fn token_detail(
    script: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
) -> (String, String, String) {
    let (realm, _seen) = scripted(script).await;
    let host = bearer_registry(format!("http://{realm}/token")).await;
    let reference = format!("{host}/team/app:v1");
    let report = check(std::slice::from_ref(&reference)).await;
    let detail = row(&report, &reference).detail.clone();
    (realm, host, detail)
}

/// A check of `reference` with `registry`'s options (and short backoffs).
async fn check_options(reference: &str, registry: ClientOptions) -> Report {
    let checker = Checker::new(
        CheckerOptions {
            registry: ClientOptions {
                request_timeout: Duration::from_secs(5),
                backoff_base: Duration::from_millis(1),
                backoff_max: Duration::from_millis(5),
                ..registry
            },
            ..CheckerOptions::default()
        },
        Resolver::default(),
        NodeCredentials::empty(),
    )
    .unwrap();
    let options = CheckOptions {
        deadline: Duration::from_secs(30),
        ..CheckOptions::default()
    };
    let uses = vec![parse_image_arg(reference).unwrap()];
    tokio::time::timeout(Duration::from_secs(60), checker.check(uses, &options))
        .await
        .expect("bounded")
}

#[tokio::test]
async fn token_server_refused_unreachable_failing_and_tokenless() {
    // Refused by the egress policy: a deny rule on the token server's host and port.
    let (realm, _seen) = scripted(|_, _| answer(200, &[], r#"{"token":"t"}"#)).await;
    let host = bearer_registry(format!("http://{realm}/token")).await;
    let reference = format!("{host}/team/app:v1");
    let deny = pullcheck::registry::EgressRule::parse(&realm).unwrap();
    let registry = ClientOptions {
        egress: pullcheck::registry::EgressPolicy::new(Vec::new(), vec![deny]),
        ..ClientOptions::default()
    };
    let report = check_options(&reference, registry).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!(
            "token server {realm} for {host}: refused by the egress policy: {realm} \
             matches deny rule {realm}; nothing was sent to it"
        )
    );

    // Unreachable: nothing listens on the realm's port.
    let closed = ClosedPort::new();
    let realm = format!("127.0.0.1:{}", closed.port());
    let host = bearer_registry(format!("http://{realm}/token")).await;
    let reference = format!("{host}/team/app:v1");
    let report = check(std::slice::from_ref(&reference)).await;
    assert_eq!(
        row(&report, &reference).detail,
        format!(
            "token server {realm} for {host} unreachable: connection refused; 3 attempts, each the same"
        )
    );

    // A 500 from the token server.
    let (realm, host, detail) = token_detail(|_, _| answer(500, &[], "")).await;
    assert_eq!(
        detail,
        format!("token server {realm} for {host} answered HTTP 500")
    );

    // A 200 whose body holds no token.
    let (realm, host, detail) = token_detail(|_, _| answer(200, &[], r#"{"expires_in":60}"#)).await;
    assert_eq!(
        detail,
        format!("token server {realm} for {host}: the token reply holds no token")
    );
}

/// What the registry's first answers can stop a check at (issue 23's typed
/// authorization failures, worded by `detail.rs` as before): a `/v2/` that is not the
/// registry API (404) or forbidden (403), a challenge of a scheme this client does not
/// speak, a `Bearer` realm that is no URL.
#[tokio::test]
async fn pings_and_challenges_that_stop_the_check() {
    let (host, detail) = scripted_detail(|_, _| answer(404, &[], ""), "team/app:v1").await;
    assert_eq!(
        detail,
        format!(
            "http://{host}/v2/ answered HTTP 404: {host} does not serve the registry API (/v2/)"
        )
    );
    let (host, detail) = scripted_detail(|_, _| answer(403, &[], ""), "team/app:v1").await;
    assert_eq!(
        detail,
        format!("registry {host} refused access to http://{host}/v2/ (HTTP 403)")
    );
    let (host, detail) = scripted_detail(
        |_, _| answer(401, &[("WWW-Authenticate", "Negotiate")], ""),
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "registry {host} asks for unsupported authentication (negotiate); its images \
             cannot be checked"
        )
    );
    let (host, detail) = scripted_detail(
        |_, _| answer(401, &[("WWW-Authenticate", r#"Bearer realm="/token""#)], ""),
        "team/app:v1",
    )
    .await;
    assert_eq!(
        detail,
        format!(
            "registry {host} sent an unusable Bearer challenge: the Bearer realm \"/token\" \
             is not a URL (relative URL without a base)"
        )
    );
}

/// A token server that refuses an anonymous token (401), and one whose 2xx is not the
/// token reply's JSON (distribution token-auth spec: `{"token": …}`).
#[tokio::test]
async fn token_server_refusing_anonymous_or_answering_no_json() {
    let (realm, host, detail) = token_detail(|_, _| answer(401, &[], "")).await;
    assert_eq!(
        detail,
        format!(
            "token server {realm} refused anonymous access to {host} (HTTP 401); credentials \
             are needed"
        )
    );

    let (realm, host, detail) = token_detail(|_, _| answer(200, &[], "<html>")).await;
    assert_eq!(
        detail,
        // serde_json's words for a body that does not start a JSON value.
        format!(
            "token server {realm} for {host}: the token reply is not the expected JSON \
             (expected value at line 1 column 1)"
        )
    );
}
