//! `Client::authorize_first` against real distribution registries on loopback: on a
//! cold endpoint the first manifest `HEAD` goes out in place of the ping; its 401 is
//! the ping's answer, an open registry's answer is the image's own; https and plain
//! http are tried together for an endpoint allowed plain HTTP. Every test reads the
//! registry's access log (`METHOD PATH STATUS`) and the client's request counter or a
//! proxy's connection counts.

use std::time::{Duration, Instant};

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Missing, Reason, Status};
use pullcheck_testkit::runtime::make_tls_files;
use pullcheck_testkit::{
    Auth, ImageKind, LatencyProxy, ProxyOptions, Registry, RegistryBuilder, TempDir, TokenAuth,
    TokenPolicy, User,
};

const APP: &str = "team/app";
const WORKER: &str = "team/worker";

fn endpoint(registry: &Registry) -> Endpoint {
    Endpoint {
        allow_http: true,
        ..Endpoint::new(registry.host().to_string())
    }
}

fn client() -> Client {
    Client::new(ClientOptions::default()).expect("client")
}

fn alice() -> Credential {
    Credential::Basic {
        username: "alice".into(),
        password: "s3cret".into(),
    }
}

fn repos() -> Vec<String> {
    vec![APP.to_string(), WORKER.to_string()]
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

/// A registry of `auth` holding `team/app:v1` and `team/worker:v1`, its log cleared.
async fn registry(auth: Auth) -> Registry {
    started(Registry::builder().auth(auth)).await
}

/// The registry of `builder`, holding `team/app:v1` and `team/worker:v1`, its log
/// cleared.
async fn started(builder: RegistryBuilder) -> Registry {
    let registry = builder.start().await.expect("registry");
    registry
        .push(APP, "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    registry
        .push(WORKER, "v1", ImageKind::DockerManifest)
        .await
        .expect("push");
    registry.clear_requests().await.expect("clear");
    registry
}

async fn log(registry: &Registry) -> Vec<String> {
    let served = registry.requests().await.expect("log");
    served.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn an_open_registry_answers_the_first_head_and_is_not_pinged() {
    let registry = registry(Auth::Anonymous).await;
    let client = client();
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &Credential::Anonymous,
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert!(session.base_url().starts_with("http://"), "{session:?}");
    assert_eq!(log(&registry).await, ["HEAD /v2/team/app/manifests/v1 200"]);

    // The first image's check reads that answer; the other sends its own HEAD.
    let app = session.check(APP, "v1").await;
    assert_eq!((app.status, app.reason), (Status::Present, Reason::Found));
    assert_eq!(app.http_status, Some(200));
    assert!(app.digest.is_some(), "{app:?}");
    let worker = session.check(WORKER, "v1").await;
    assert_eq!(worker.status, Status::Present, "{worker:?}");
    assert_eq!(
        log(&registry).await,
        [
            "HEAD /v2/team/app/manifests/v1 200",
            "HEAD /v2/team/worker/manifests/v1 200",
        ]
    );
    // The https attempt a plain-HTTP registry cannot answer, and the two HEADs: one
    // request fewer than `authorize` (https, ping, two HEADs).
    assert_eq!(client.request_count(), 3);

    // Warm: what the HEAD learned is kept like a ping's, so the next authorize sends
    // nothing and the first image's check sends its HEAD.
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &Credential::Anonymous,
            &repos(),
            (WORKER, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert_eq!(client.request_count(), 3);
    assert_eq!(session.check(WORKER, "v1").await.status, Status::Present);
    assert_eq!(client.request_count(), 4);
}

#[tokio::test]
async fn a_missing_first_image_is_followed_by_the_ping_and_keeps_its_answer() {
    let registry = registry(Auth::Anonymous).await;
    let client = client();
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &Credential::Anonymous,
            &repos(),
            (APP, "v2"),
            soon(),
        )
        .await
        .expect("authorize");
    // A 404 does not say the registry API is there: `GET /v2/` decides, on the scheme
    // that answered (no second https attempt).
    assert_eq!(
        log(&registry).await,
        ["HEAD /v2/team/app/manifests/v2 404", "GET /v2/ 200"]
    );
    assert_eq!(client.request_count(), 3);
    let a = session.check(APP, "v2").await;
    assert_eq!((a.status, a.missing), (Status::Missing, Some(Missing::Tag)));
    assert_eq!(
        log(&registry).await,
        [
            "HEAD /v2/team/app/manifests/v2 404",
            "GET /v2/ 200",
            "GET /v2/team/app/tags/list?n=1000 200",
        ]
    );
}

#[tokio::test]
async fn a_credential_on_an_open_registry_is_decided_by_the_ping_as_before() {
    let registry = registry(Auth::Anonymous).await;
    let client = client();
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &alice(),
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    // A 2xx to an anonymous HEAD does not say that `/v2/` is open for a credential:
    // the ping says it, and the HEAD's answer is still the open session's.
    assert_eq!(
        log(&registry).await,
        ["HEAD /v2/team/app/manifests/v1 200", "GET /v2/ 200"]
    );
    assert_eq!(session.check(APP, "v1").await.status, Status::Present);
    assert_eq!(log(&registry).await.len(), 2);
}

#[tokio::test]
async fn a_token_registry_s_401_is_the_ping_s_answer() {
    let policy = TokenPolicy::new(vec![User::new("alice", "s3cret")]);
    let registry = registry(Auth::Token(policy)).await;
    let client = client();
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &alice(),
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert_eq!(log(&registry).await, ["HEAD /v2/team/app/manifests/v1 401"]);
    let tokens = registry.token_server().expect("token server").requests();
    let asked: Vec<(TokenAuth, u16)> = tokens.iter().map(|t| (t.auth.clone(), t.status)).collect();
    assert_eq!(asked, [(TokenAuth::User("alice".into()), 200)]);
    assert_eq!(
        tokens[0].scopes,
        ["repository:team/app:pull", "repository:team/worker:pull"]
    );

    let checks =
        futures::future::join_all([session.check(APP, "v1"), session.check(WORKER, "v1")]).await;
    assert!(
        checks.iter().all(|a| a.status == Status::Present),
        "{checks:?}"
    );
    let mut served = log(&registry).await;
    served.sort();
    assert_eq!(
        served,
        [
            "HEAD /v2/team/app/manifests/v1 200",
            "HEAD /v2/team/app/manifests/v1 401",
            "HEAD /v2/team/worker/manifests/v1 200",
        ]
    );
    // As many requests as a ping first: https attempt, 401, token, two HEADs.
    assert_eq!(client.request_count(), 5);
    assert_eq!(client.token_request_count(), 1);
    let pinging = self::client();
    let session = pinging
        .authorize(&endpoint(&registry), &alice(), &repos())
        .await
        .expect("authorize");
    futures::future::join_all([session.check(APP, "v1"), session.check(WORKER, "v1")]).await;
    assert_eq!(pinging.request_count(), client.request_count());
}

#[tokio::test]
async fn a_basic_challenge_checks_the_credential_on_v2_as_after_a_ping() {
    let registry = registry(Auth::Htpasswd(vec![User::new("alice", "s3cret")])).await;
    let client = client();
    let session = client
        .authorize_first(
            &endpoint(&registry),
            &alice(),
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert_eq!(session.check(APP, "v1").await.status, Status::Present);
    assert_eq!(
        log(&registry).await,
        [
            "HEAD /v2/team/app/manifests/v1 401",
            "GET /v2/ 200",
            "HEAD /v2/team/app/manifests/v1 200",
        ]
    );

    // Anonymous: the session would send the same anonymous HEAD, so the first one's
    // 401 is the image's answer: no credentials, and one request in all.
    registry.clear_requests().await.expect("clear");
    let anonymous = self::client();
    let session = anonymous
        .authorize_first(
            &endpoint(&registry),
            &Credential::Anonymous,
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    let a = session.check(APP, "v1").await;
    assert_eq!(
        (a.status, a.reason, a.http_status),
        (Status::NoAccess, Reason::CredentialsRequired, Some(401)),
        "{a:?}"
    );
    assert_eq!(log(&registry).await, ["HEAD /v2/team/app/manifests/v1 401"]);
    let b = session.check(WORKER, "v1").await;
    assert_eq!(
        (b.status, b.reason),
        (Status::NoAccess, Reason::CredentialsRequired)
    );
    assert_eq!(log(&registry).await.len(), 2);

    // A wrong password is denied for the whole registry, as `authorize` denies it.
    registry.clear_requests().await.expect("clear");
    let wrong = Credential::Basic {
        username: "alice".into(),
        password: "wrong-pw".into(),
    };
    let cold = self::client();
    let err = cold
        .authorize_first(&endpoint(&registry), &wrong, &repos(), (APP, "v1"), soon())
        .await
        .expect_err("wrong password");
    assert_eq!(
        (err.status, err.reason),
        (Status::Denied, Reason::CredentialsRejected),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains("wrong-pw"), "{err:?}");
    assert_eq!(
        log(&registry).await,
        ["HEAD /v2/team/app/manifests/v1 401", "GET /v2/ 401"]
    );
}

/// The canary credential of the scheme tests: it may go only over TLS.
const CANARY: &str = "canary-9f3c2e71";

/// A TLS htpasswd registry (user `alice`, password [`CANARY`]) holding `team/app:v1`
/// and `team/worker:v1`,
/// behind a recording proxy (no delay, no TLS of its own: it sees which connections
/// open with a TLS hello and keeps what the plain ones send). Returns the registry,
/// the proxy, a client trusting the registry's CA, and the TLS files' directory.
async fn tls_registry_behind_a_proxy() -> (Registry, LatencyProxy, Client, TempDir) {
    let dir = TempDir::new("first-request-tls").expect("temp dir");
    let files = make_tls_files(dir.path()).expect("TLS files");
    let registry = started(
        Registry::builder()
            .auth(Auth::Htpasswd(vec![User::new("alice", CANARY)]))
            .tls(files.clone()),
    )
    .await;
    let target = registry.host().parse().expect("address");
    let proxy = LatencyProxy::start(
        target,
        ProxyOptions {
            record_plain: true,
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy");
    let client = Client::new(ClientOptions {
        ca_file: Some(files.ca.clone()),
        ..ClientOptions::default()
    })
    .expect("client");
    (registry, proxy, client, dir)
}

#[tokio::test]
async fn a_tls_registry_answering_within_the_head_start_gets_one_used_connection_and_no_plain_attempt()
 {
    let (registry, proxy, client, _dir) = tls_registry_behind_a_proxy().await;
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(proxy.host())
    };
    let canary = Credential::Basic {
        username: "alice".into(),
        password: CANARY.into(),
    };
    let session = client
        .authorize_first(&endpoint, &canary, &[APP.to_string()], (APP, "v1"), soon())
        .await
        .expect("authorize");
    assert!(session.base_url().starts_with("https://"), "{session:?}");
    let a = session.check(APP, "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    // Everything the registry served came over TLS: the first HEAD's 401, the Basic
    // check, the HEAD with the credential.
    assert_eq!(
        log(&registry).await,
        [
            "HEAD /v2/team/app/manifests/v1 401",
            "GET /v2/ 200",
            "HEAD /v2/team/app/manifests/v1 200",
        ]
    );
    // https answered within its head start: no plain attempt, and the registry
    // (HTTP/2 by ALPN) served the whole check over one connection. The bare TCP
    // connection opened beside the https attempt for a plain one (the spare) was
    // accepted, sent nothing, and was closed once https had answered.
    let seen = |s: pullcheck_testkit::ProxyStats| (s.connections, s.tls, s.plain, s.silent);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen(proxy.stats()) != (2, 1, 0, 1) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stats = proxy.stats();
    assert_eq!(seen(stats), (2, 1, 0, 1), "{stats:?}");
    assert!(proxy.plain_bytes().is_empty());
}

#[tokio::test]
async fn a_slow_tls_answer_lets_the_plain_attempt_start_https_is_kept_and_no_credential_goes_over_plain_http()
 {
    let (registry, _direct, client, _dir) = tls_registry_behind_a_proxy().await;
    // 100 ms each way: TCP, the TLS handshake and the HEAD take 700 ms or more, past
    // the plain attempt's head start (250 ms).
    let proxy = LatencyProxy::start(
        registry.host().parse().expect("address"),
        ProxyOptions {
            delay: Duration::from_millis(100),
            record_plain: true,
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy");
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(proxy.host())
    };
    let canary = Credential::Basic {
        username: "alice".into(),
        password: CANARY.into(),
    };
    let session = client
        .authorize_first(&endpoint, &canary, &[APP.to_string()], (APP, "v1"), soon())
        .await
        .expect("authorize");
    assert!(session.base_url().starts_with("https://"), "{session:?}");
    let a = session.check(APP, "v1").await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert_eq!(
        log(&registry).await,
        [
            "HEAD /v2/team/app/manifests/v1 401",
            "GET /v2/ 200",
            "HEAD /v2/team/app/manifests/v1 200",
        ]
    );
    // The plain attempt started after the head start on the connection opened beside
    // the https one (Go's TLS server answers it 400, or https answered first and it was
    // dropped); https was kept, and all of the check went over the one TLS connection.
    let stats = proxy.stats();
    assert_eq!(
        (stats.connections, stats.tls, stats.plain),
        (2, 1, 1),
        "{stats:?}"
    );
    let plain = proxy.plain_bytes();
    assert_eq!(plain.len(), 1);
    let sent = String::from_utf8_lossy(&plain[0]).to_ascii_lowercase();
    assert!(
        sent.starts_with("head /v2/team/app/manifests/v1 http/1.1\r\n"),
        "{sent}"
    );
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("alice:{CANARY}"));
    assert!(!sent.contains("authorization"), "{sent}");
    assert!(!sent.contains(CANARY), "{sent}");
    assert!(!sent.contains(&basic.to_ascii_lowercase()), "{sent}");
}

#[tokio::test]
async fn a_plain_registry_answers_the_plain_attempt_started_when_https_fails() {
    let registry = registry(Auth::Anonymous).await;
    let proxy = LatencyProxy::start(
        registry.host().parse().expect("address"),
        ProxyOptions::default(),
    )
    .await
    .expect("proxy");
    let client = client();
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(proxy.host())
    };
    let session = client
        .authorize_first(
            &endpoint,
            &Credential::Anonymous,
            &repos(),
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert!(session.base_url().starts_with("http://"), "{session:?}");
    assert_eq!(session.check(APP, "v1").await.status, Status::Present);
    // One https attempt (the hello answered with a plain 400), one plain connection
    // that carried the HEAD.
    let stats = proxy.stats();
    assert_eq!((stats.tls, stats.plain), (1, 1), "{stats:?}");
    assert_eq!(log(&registry).await, ["HEAD /v2/team/app/manifests/v1 200"]);
    assert_eq!(client.request_count(), 2);
}
