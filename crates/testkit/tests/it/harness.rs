//! Tests of the harness itself, against real `docker-registry` processes.

use std::time::Instant;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use pullcheck_testkit::{
    Auth, ImageKind, ImageSpec, Registry, Repos, TokenAuth, TokenPolicy, User, accept_all_manifests,
};

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn send(method: Method, url: &str, headers: &[(&str, String)]) -> Answer {
    send_body(method, url, headers, "").await
}

async fn send_body(method: Method, url: &str, headers: &[(&str, String)], body: &str) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = client
        .request(req.body(Full::new(Bytes::from(body.to_string()))).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

/// `HEAD /v2/<repo>/manifests/<reference>` with the full Accept list.
async fn head(registry: &Registry, repo: &str, reference: &str, auth: Option<String>) -> Answer {
    let url = format!("{}/v2/{repo}/manifests/{reference}", registry.url());
    let mut headers = vec![("accept", accept_all_manifests())];
    if let Some(auth) = auth {
        headers.push(("authorization", auth));
    }
    send(Method::HEAD, &url, &headers).await
}

fn basic(user: &str, password: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {b64}")
}

/// Fetches a token from `realm` for these scopes.
async fn token(
    realm: &str,
    service: &str,
    scopes: &[&str],
    credentials: Option<(&str, &str)>,
) -> Answer {
    let mut url = format!("{realm}?service={service}");
    for scope in scopes {
        url.push_str("&scope=");
        url.push_str(scope);
    }
    let headers: Vec<_> = credentials
        .map(|(u, p)| ("authorization", basic(u, p)))
        .into_iter()
        .collect();
    send(Method::GET, &url, &headers).await
}

fn token_string(answer: &Answer) -> String {
    let json: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(json["token"], json["access_token"]);
    assert!(json["expires_in"].as_u64().unwrap() > 0);
    assert!(json["issued_at"].as_str().unwrap().ends_with('Z'));
    json["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn anonymous_registry_serves_every_pushed_kind() {
    let registry = Registry::anonymous().await.unwrap();
    assert!(registry.host().starts_with("127.0.0.1:"));
    for kind in ImageKind::ALL {
        let pushed = registry.push("team/app", kind.name(), kind).await.unwrap();
        assert_eq!(
            pushed.reference(),
            format!("{}/team/app:{kind}", registry.host())
        );
        assert_eq!(pushed.children.len(), if kind.is_index() { 2 } else { 0 });

        registry.clear_requests().await.unwrap();
        let answer = head(&registry, "team/app", kind.name(), None).await;
        assert_eq!(answer.status, 200, "{kind}");
        assert_eq!(
            answer.header("docker-content-digest"),
            Some(pushed.digest.as_str())
        );
        assert_eq!(answer.header("content-type"), Some(kind.media_type()));
        for child in &pushed.children {
            assert_eq!(head(&registry, "team/app", child, None).await.status, 200);
        }
        let by_digest = head(&registry, "team/app", &pushed.digest, None).await;
        assert_eq!(by_digest.status, 200);

        let requests = registry.requests().await.unwrap();
        assert_eq!(requests.len(), 2 + pushed.children.len(), "{requests:?}");
        assert_eq!(requests[0].method, "HEAD");
        assert_eq!(requests[0].path, format!("/v2/team/app/manifests/{kind}"));
        assert_eq!(requests[0].status, 200);
    }
    // Content varies per call: pushing the same tag again moves it.
    let first = registry
        .push("again", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let second = registry
        .push("again", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    assert_ne!(first.digest, second.digest);
    assert_eq!(head(&registry, "missing", "v1", None).await.status, 404);
}

#[tokio::test]
async fn push_all_is_concurrent_and_ordered() {
    let registry = Registry::anonymous().await.unwrap();
    let specs: Vec<ImageSpec> = (0..200)
        .map(|i| ImageSpec::new(format!("bench/img-{i}"), "v1", ImageKind::ALL[i % 4]))
        .collect();
    let started = Instant::now();
    let pushed = registry.push_all(&specs).await.unwrap();
    eprintln!("pushed {} images in {:?}", pushed.len(), started.elapsed());
    for (spec, image) in specs.iter().zip(&pushed) {
        assert_eq!(spec.repository, image.repository);
        assert_eq!(spec.kind, image.kind);
    }
    let last = &pushed[199];
    let answer = head(&registry, &last.repository, "v1", None).await;
    assert_eq!(
        answer.header("docker-content-digest"),
        Some(last.digest.as_str())
    );
}

#[tokio::test]
async fn dropping_a_registry_kills_it() {
    let registry = Registry::anonymous().await.unwrap();
    let pid = registry.pid();
    let dir = registry.dir().to_path_buf();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(registry);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert!(!dir.exists());
}

#[tokio::test]
async fn htpasswd_registry_wants_basic_credentials() {
    let registry = Registry::builder()
        .auth(Auth::Htpasswd(vec![User::new("alice", "wonderland")]))
        .start()
        .await
        .unwrap();
    let pushed = registry
        .push("team/app", "v1", ImageKind::DockerManifestList)
        .await
        .unwrap();

    let anonymous = head(&registry, "team/app", "v1", None).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some("Basic realm=\"pullcheck-testkit\"")
    );
    let good = head(
        &registry,
        "team/app",
        "v1",
        Some(basic("alice", "wonderland")),
    )
    .await;
    assert_eq!(good.status, 200);
    assert_eq!(
        good.header("docker-content-digest"),
        Some(pushed.digest.as_str())
    );
    let bad = head(&registry, "team/app", "v1", Some(basic("alice", "nope"))).await;
    assert_eq!(bad.status, 401);

    // The harness's pushes are not counted: only the three HEADs show.
    let requests = registry.requests().await.unwrap();
    let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [401, 200, 401], "{requests:?}");
}

#[tokio::test]
async fn token_registry_grants_pull_per_user() {
    let policy = TokenPolicy::new(vec![
        User::new("alice", "wonderland"),
        User::new("bob", "builder").pulling(Repos::only(["team/app"])),
    ])
    .anonymous(Repos::only(["public/base"]));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .unwrap();
    let app = registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .unwrap();
    let secret = registry
        .push("team/secret", "v1", ImageKind::DockerManifest)
        .await
        .unwrap();
    let base = registry
        .push("public/base", "latest", ImageKind::OciManifest)
        .await
        .unwrap();
    let server = registry.token_server().unwrap();
    assert!(server.requests().is_empty(), "pushes need no token");

    // Anonymous HEAD: a Bearer challenge naming the realm and service.
    let challenge = head(&registry, "team/app", "v1", None).await;
    assert_eq!(challenge.status, 401);
    let www = challenge.header("www-authenticate").unwrap();
    assert!(www.starts_with("Bearer "), "{www}");
    assert!(
        www.contains(&format!("realm=\"{}\"", server.realm())),
        "{www}"
    );
    assert!(
        www.contains(&format!("service=\"{}\"", server.service())),
        "{www}"
    );
    assert!(www.contains("scope=\"repository:team/app:pull\""), "{www}");

    // One token for two repositories.
    let scopes = ["repository:team/app:pull", "repository:team/secret:pull"];
    let answer = token(
        server.realm(),
        server.service(),
        &scopes,
        Some(("alice", "wonderland")),
    )
    .await;
    assert_eq!(answer.status, 200);
    let alice = format!("Bearer {}", token_string(&answer));
    let got = head(&registry, "team/app", "v1", Some(alice.clone())).await;
    assert_eq!(got.status, 200);
    assert_eq!(
        got.header("docker-content-digest"),
        Some(app.digest.as_str())
    );
    let got = head(&registry, "team/secret", "v1", Some(alice.clone())).await;
    assert_eq!(
        got.header("docker-content-digest"),
        Some(secret.digest.as_str())
    );
    // The token does not cover other repositories.
    assert_eq!(
        head(&registry, "public/base", "latest", Some(alice))
            .await
            .status,
        401
    );

    // Bob may pull team/app only: the grant is the intersection.
    let answer = token(
        server.realm(),
        server.service(),
        &scopes,
        Some(("bob", "builder")),
    )
    .await;
    let bob = format!("Bearer {}", token_string(&answer));
    assert_eq!(
        head(&registry, "team/app", "v1", Some(bob.clone()))
            .await
            .status,
        200
    );
    assert_eq!(
        head(&registry, "team/secret", "v1", Some(bob)).await.status,
        401
    );

    // Anonymous tokens cover what the policy allows anonymous users.
    let answer = token(
        server.realm(),
        server.service(),
        &["repository:public/base:pull"],
        None,
    )
    .await;
    let anon = format!("Bearer {}", token_string(&answer));
    let got = head(&registry, "public/base", "latest", Some(anon)).await;
    assert_eq!(
        got.header("docker-content-digest"),
        Some(base.digest.as_str())
    );

    // A wrong password is refused by the token server.
    let answer = token(
        server.realm(),
        server.service(),
        &scopes,
        Some(("alice", "nope")),
    )
    .await;
    assert_eq!(answer.status, 401);

    let log = server.requests();
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(log[0].auth, TokenAuth::User("alice".into()));
    assert_eq!(log[0].scopes, scopes);
    assert_eq!(log[0].service.as_deref(), Some(server.service()));
    assert_eq!(log[0].granted, scopes);
    assert_eq!(log[1].granted, ["repository:team/app:pull"]);
    assert_eq!(log[2].auth, TokenAuth::Anonymous);
    assert_eq!(
        log[3].auth,
        TokenAuth::Rejected {
            username: "alice".into()
        }
    );
    assert_eq!((log[3].status, log[3].granted.len()), (401, 0));

    // The OAuth2 form is off by default: 404, so clients fall back to GET.
    let form = "grant_type=password&username=alice&password=wonderland&service=x";
    assert_eq!(post_form(server.realm(), form).await.status, 404);
    assert_eq!(server.requests()[4].method, "POST");
    // What a log follower reads: the requests after the first n, none past the end.
    let since = server.requests_since(3);
    assert_eq!(since.len(), 2);
    assert_eq!((since[0].status, since[1].method.as_str()), (401, "POST"));
    assert!(server.requests_since(5).is_empty());
    assert!(server.requests_since(99).is_empty());
    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn mirror_serves_images_pushed_only_upstream() {
    let upstream = Registry::anonymous().await.unwrap();
    let mirror = Registry::builder()
        .mirror_of(&upstream)
        .start()
        .await
        .unwrap();
    assert_eq!(mirror.upstream(), Some(upstream.url().as_str()));
    let pushed = upstream
        .push("library/alpine", "3", ImageKind::DockerManifestList)
        .await
        .unwrap();
    upstream.clear_requests().await.unwrap();

    let answer = head(&mirror, "library/alpine", "3", None).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("docker-content-digest"),
        Some(pushed.digest.as_str())
    );
    assert_eq!(
        head(&mirror, "library/alpine", "missing", None)
            .await
            .status,
        404
    );
    // The mirror asked upstream.
    let upstream_saw = upstream.requests().await.unwrap();
    assert!(
        upstream_saw
            .iter()
            .any(|r| r.path == "/v2/library/alpine/manifests/3"),
        "{upstream_saw:?}"
    );
    assert!(mirror.push("x", "y", ImageKind::OciManifest).await.is_err());
}

async fn post_form(realm: &str, form: &str) -> Answer {
    let headers = [(
        "content-type",
        "application/x-www-form-urlencoded".to_string(),
    )];
    send_body(Method::POST, realm, &headers, form).await
}

#[tokio::test]
async fn oauth_form_grants_password_and_refresh_token() {
    let policy = TokenPolicy::new(vec![
        User::new("carol", "pw").with_refresh_token("carol-refresh"),
    ])
    .oauth_post(true);
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .unwrap();
    let pushed = registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let server = registry.token_server().unwrap();
    let service = server.service();

    let form = format!(
        "grant_type=refresh_token&refresh_token=carol-refresh&service={service}\
         &client_id=pullcheck&scope=repository%3Ateam%2Fapp%3Apull"
    );
    let answer = post_form(server.realm(), &form).await;
    assert_eq!(answer.status, 200);
    let json: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(json["scope"], "repository:team/app:pull");
    assert_eq!(json["refresh_token"], "carol-refresh");
    let bearer = format!("Bearer {}", json["access_token"].as_str().unwrap());
    let got = head(&registry, "team/app", "v1", Some(bearer)).await;
    assert_eq!(
        got.header("docker-content-digest"),
        Some(pushed.digest.as_str())
    );

    let form = format!(
        "grant_type=password&username=carol&password=pw&service={service}&scope=repository:team/app:pull"
    );
    assert_eq!(post_form(server.realm(), &form).await.status, 200);
    let form = "grant_type=refresh_token&refresh_token=stolen&service=x";
    assert_eq!(post_form(server.realm(), form).await.status, 401);
    let form = "grant_type=password&username=carol&password=bad";
    assert_eq!(post_form(server.realm(), form).await.status, 401);
    assert_eq!(
        post_form(server.realm(), "grant_type=magic").await.status,
        400
    );

    let log = server.requests();
    let auths: Vec<_> = log.iter().map(|r| (r.auth.clone(), r.status)).collect();
    assert_eq!(
        auths,
        [
            (TokenAuth::User("carol".into()), 200),
            (TokenAuth::User("carol".into()), 200),
            (TokenAuth::RejectedRefreshToken, 401),
            (
                TokenAuth::Rejected {
                    username: "carol".into()
                },
                401
            ),
            (TokenAuth::Anonymous, 400),
        ]
    );
    assert_eq!(log[0].grant_type.as_deref(), Some("refresh_token"));
    assert_eq!(log[0].client_id.as_deref(), Some("pullcheck"));
    assert_eq!(log[0].scopes, ["repository:team/app:pull"]);
}

#[tokio::test]
async fn standalone_token_server_answers() {
    let server = pullcheck_testkit::TokenServer::start(TokenPolicy::new(vec![])).unwrap();
    let answer = token(
        server.realm(),
        server.service(),
        &["repository:a:pull"],
        None,
    )
    .await;
    assert_eq!(answer.status, 200);
    let jwt = token_string(&answer);
    let parts: Vec<&str> = jwt.split('.').collect();
    assert_eq!(parts.len(), 3);
    let decode = |p: &str| -> serde_json::Value {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(p)
            .unwrap();
        serde_json::from_slice(&raw).unwrap()
    };
    let header = decode(parts[0]);
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["x5c"].as_array().unwrap().len(), 1);
    let claims = decode(parts[1]);
    assert_eq!(claims["aud"], server.service());
    assert_eq!(claims["iss"], server.issuer());
    assert_eq!(claims["access"], serde_json::json!([]));
    for claim in ["sub", "exp", "nbf", "iat", "jti"] {
        assert!(claims.get(claim).is_some(), "{claim}");
    }
    assert_eq!(
        send(
            Method::GET,
            &server.realm().replace("/token", "/other"),
            &[]
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn request_log_file_starts_when_asked() {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    assert_eq!(
        registry.requests().await.unwrap(),
        [],
        "pushes are not counted"
    );
    let path = registry.dir().join("access.log");
    registry.log_requests_to(&path).await.unwrap();
    head(&registry, "app", "v1", None).await;
    head(&registry, "app", "v2", None).await;
    registry.requests().await.unwrap(); // waits for the log to catch up
    let logged = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        logged,
        "HEAD /v2/app/manifests/v1 200\nHEAD /v2/app/manifests/v2 404\n"
    );
}

#[test]
fn handles_can_be_shared_across_tests() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Registry>();
    shareable::<pullcheck_testkit::TokenServer>();
    shareable::<pullcheck_testkit::Error>();
}
