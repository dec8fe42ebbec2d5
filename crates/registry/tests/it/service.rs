//! What a long-running service needs from one shared `Client`: a request observer, warm
//! state across `authorize` calls (no ping, no token request while both are fresh, and
//! recovery when they are not), and a platform per check. Against the testkit's token
//! registry, and a scripted registry whose challenge changes under the client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::server::{Request, respond, serve};
use pullcheck_registry::{
    Client, ClientOptions, Credential, Endpoint, Missing, Observer, Platform, RequestEvent,
    RequestKind, Status,
};
use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenPolicy, User};

const APP: &str = "team/app";
const PASSWORD: &str = "s3cret-observed";
const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/// One event as recorded: host, kind, code, `RateLimit-Remaining`.
type Seen = (String, RequestKind, Option<u16>, Option<u64>);

/// Every event, and the hosts of token cache hits.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Seen>>,
    cache_hits: Mutex<Vec<String>>,
}

impl Observer for Recorder {
    fn request(&self, event: &RequestEvent<'_>) {
        self.events.lock().unwrap().push((
            event.host.to_string(),
            event.kind,
            event.code,
            event.ratelimit_remaining,
        ));
    }

    fn token_cache_hit(&self, host: &str) {
        self.cache_hits.lock().unwrap().push(host.to_string());
    }
}

impl Recorder {
    /// (kind, code) of the events so far, and forgets them.
    fn take(&self) -> Vec<(RequestKind, Option<u16>)> {
        let events = std::mem::take(&mut *self.events.lock().unwrap());
        events.into_iter().map(|(_, k, c, _)| (k, c)).collect()
    }
}

fn observed() -> (Client, Arc<Recorder>) {
    let recorder = Arc::new(Recorder::default());
    let client = Client::new(ClientOptions {
        observer: Some(recorder.clone()),
        ..ClientOptions::default()
    })
    .expect("client");
    (client, recorder)
}

fn endpoint(host: &str) -> Endpoint {
    Endpoint {
        allow_http: true,
        ..Endpoint::new(host)
    }
}

fn alice() -> Credential {
    Credential::Basic {
        username: "alice".into(),
        password: PASSWORD.into(),
    }
}

async fn token_registry(lifetime: Duration) -> Registry {
    let policy = TokenPolicy::new(vec![User::new("alice", PASSWORD).pulling(Repos::All)])
        .expires_in(lifetime);
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("registry");
    registry
        .push(APP, "3.19", ImageKind::OciIndex)
        .await
        .expect("push");
    registry
}

/// With a platform, a single-platform image costs a HEAD, a GET of its manifest and a
/// GET of its config blob, which the observer sees as a blob request.
#[tokio::test]
async fn the_observer_sees_the_config_blob_of_a_platform_check() {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push(APP, "amd64", ImageKind::OciManifest)
        .await
        .expect("push");
    let recorder = Arc::new(Recorder::default());
    let client = Client::new(ClientOptions {
        observer: Some(recorder.clone()),
        platform: Some(Platform::parse("linux/arm64").expect("platform")),
        ..ClientOptions::default()
    })
    .expect("client");
    let session = client
        .authorize(
            &endpoint(registry.host()),
            &Credential::Anonymous,
            &[APP.to_string()],
        )
        .await
        .expect("authorize");
    recorder.take();
    let a = session.check(APP, "amd64").await;
    assert_eq!(
        (a.status, a.missing),
        (Status::Missing, Some(Missing::Platform))
    );
    assert_eq!(
        recorder.take(),
        [
            (RequestKind::Manifest, Some(200)),
            (RequestKind::Manifest, Some(200)),
            (RequestKind::Blob, Some(200)),
        ]
    );
}

#[tokio::test]
async fn the_observer_sees_every_request_by_kind_and_code_and_no_secret() {
    let registry = token_registry(Duration::from_secs(300)).await;
    let (client, recorder) = observed();
    let session = client
        .authorize(&endpoint(registry.host()), &alice(), &[APP.to_string()])
        .await
        .expect("authorize");
    assert_eq!(session.check(APP, "3.19").await.status, Status::Present);
    let missing = session.check(APP, "3.91").await;
    assert_eq!(
        (missing.status, missing.missing),
        (Status::Missing, Some(Missing::Tag))
    );

    let events = recorder.events.lock().unwrap().clone();
    let kinds: Vec<(RequestKind, Option<u16>)> = events.iter().map(|e| (e.1, e.2)).collect();
    assert_eq!(
        kinds,
        [
            // https first: the testkit's registry speaks plain HTTP, so no answer.
            (RequestKind::Ping, None),
            (RequestKind::Ping, Some(401)),
            (RequestKind::Token, Some(200)),
            (RequestKind::Manifest, Some(200)),
            (RequestKind::Manifest, Some(404)),
            (RequestKind::Tags, Some(200)),
        ],
        "{events:?}"
    );
    let realm = registry.token_server().expect("token server").realm();
    for (host, kind, _, _) in &events {
        let want = match kind {
            RequestKind::Token => realm
                .trim_start_matches("http://")
                .trim_end_matches("/token"),
            _ => registry.host(),
        };
        assert_eq!(host, want, "{events:?}");
    }
    assert_eq!(events.len() as u64, client.request_count());
    // Both HEADs found the token in the cache (the tag list reuses the 404's).
    assert_eq!(
        *recorder.cache_hits.lock().unwrap(),
        vec![registry.host().to_string(); 2]
    );
    assert!(!format!("{events:?}").contains(PASSWORD));
}

#[tokio::test]
async fn a_second_authorize_sends_only_the_heads_and_recovers_when_the_token_expires() {
    let lifetime = Duration::from_secs(3);
    let registry = token_registry(lifetime).await;
    let (client, recorder) = observed();
    let endpoint = endpoint(registry.host());
    let repositories = [APP.to_string()];
    let sequence = || async {
        let session = client
            .authorize(&endpoint, &alice(), &repositories)
            .await
            .expect("authorize");
        let answer = session.check(APP, "3.19").await;
        assert_eq!(answer.status, Status::Present, "{answer:?}");
    };

    sequence().await;
    assert_eq!(
        recorder.take(),
        [
            (RequestKind::Ping, None),
            (RequestKind::Ping, Some(401)),
            (RequestKind::Token, Some(200)),
            (RequestKind::Manifest, Some(200)),
        ]
    );
    let (requests, tokens) = (client.request_count(), client.token_request_count());
    sequence().await;
    assert_eq!(recorder.take(), [(RequestKind::Manifest, Some(200))]);
    assert_eq!(client.request_count(), requests + 1);
    assert_eq!(client.token_request_count(), tokens);

    // Past the token's lifetime: a new token, still no ping.
    tokio::time::sleep(lifetime + Duration::from_millis(100)).await;
    sequence().await;
    assert_eq!(
        recorder.take(),
        [
            (RequestKind::Token, Some(200)),
            (RequestKind::Manifest, Some(200)),
        ]
    );
    assert_eq!(client.token_request_count(), tokens + 1);
}

/// A registry on the scripted server whose token realm moves from `/token-a` to
/// `/token-b` when `moved` is set: tokens of the old realm are then refused (401 with
/// the new challenge), and the old realm answers 404.
async fn moving_registry(moved: Arc<AtomicBool>) -> crate::support::server::Server {
    let host_cell: Arc<Mutex<String>> = Arc::default();
    let host = Arc::clone(&host_cell);
    let server = serve(move |r: &Request| {
        let host = host.lock().unwrap().clone();
        let realm = if moved.load(Ordering::SeqCst) {
            "b"
        } else {
            "a"
        };
        let challenge = format!(r#"Bearer realm="http://{host}/token-{realm}",service="s""#);
        let token = format!("Bearer tok-{realm}");
        let path = r.path();
        match path {
            "/v2/" => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
            "/token-a" | "/token-b" if path.ends_with(realm) => respond(
                200,
                &[("Content-Type", "application/json")],
                &format!(r#"{{"token":"tok-{realm}","expires_in":300}}"#),
            ),
            "/token-a" | "/token-b" => respond(404, &[], ""),
            _ if r.authorization.as_deref() == Some(token.as_str()) => respond(
                200,
                &[
                    ("Docker-Content-Digest", D1),
                    ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                ],
                "",
            ),
            _ => respond(401, &[("WWW-Authenticate", challenge.as_str())], ""),
        }
    })
    .await;
    *host_cell.lock().unwrap() = server.host.clone();
    server
}

#[tokio::test]
async fn a_changed_challenge_is_learned_again_by_a_401_or_a_failed_token_request() {
    let moved = Arc::new(AtomicBool::new(false));
    let server = moving_registry(Arc::clone(&moved)).await;
    let (client, _recorder) = observed();
    let endpoint = endpoint(&server.host);
    let pings = || {
        server
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path() == "/v2/")
            .count()
    };

    let session = client
        .authorize(&endpoint, &Credential::Anonymous, &["app".to_string()])
        .await
        .expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    assert_eq!(pings(), 1);

    // The realm moves. The next authorize uses what the first ping learned and the
    // cached token; the HEAD's 401 pings again and retries with the new realm's token.
    moved.store(true, Ordering::SeqCst);
    let session = client
        .authorize(&endpoint, &Credential::Anonymous, &["app".to_string()])
        .await
        .expect("authorize");
    assert_eq!(pings(), 1, "{:?}", server.seen());
    let answer = session.check("app", "v1").await;
    assert_eq!(answer.status, Status::Present, "{answer:?}");
    assert_eq!(pings(), 2, "{:?}", server.seen());
    // The session is renewed: another repository gets its token, and no ping.
    assert_eq!(session.check("other", "v1").await.status, Status::Present);
    assert_eq!(pings(), 2);

    // It moves back. A token request for new repositories fails at the cached realm
    // (404): authorize pings again and asks the realm the registry names now.
    moved.store(false, Ordering::SeqCst);
    let session = client
        .authorize(&endpoint, &Credential::Anonymous, &["fresh".to_string()])
        .await
        .expect("authorize");
    assert_eq!(pings(), 3, "{:?}", server.seen());
    assert_eq!(session.check("fresh", "v1").await.status, Status::Present);
}

#[tokio::test]
async fn one_shared_client_checks_a_platform_per_call() {
    let registry = token_registry(Duration::from_secs(300)).await;
    let (client, recorder) = observed();
    let session = client
        .authorize(&endpoint(registry.host()), &alice(), &[APP.to_string()])
        .await
        .expect("authorize");
    recorder.take();

    let arm64 = Platform::parse("linux/arm64").expect("platform");
    let s390x = Platform::parse("linux/s390x").expect("platform");
    let a = session.check_with(APP, "3.19", Some(&arm64), None).await;
    assert_eq!(a.status, Status::Present, "{a:?}");
    assert!(
        matches!(
            &a.finding,
            pullcheck_registry::Finding::Served { platform: Some((want, _, _)), .. } if *want == arm64
        ),
        "{a:?}"
    );
    let a = session.check_with(APP, "3.19", Some(&s390x), None).await;
    assert_eq!(
        (a.status, a.missing),
        (Status::Missing, Some(Missing::Platform)),
        "{a:?}"
    );
    // No platform: the HEAD alone, as `check` with no `ClientOptions::platform`.
    recorder.take();
    let a = session.check_with(APP, "3.19", None, None).await;
    assert_eq!(a.status, Status::Present);
    assert_eq!(recorder.take(), [(RequestKind::Manifest, Some(200))]);
    assert_eq!(session.check(APP, "3.19").await, a);
}

#[tokio::test]
async fn the_observer_reads_ratelimit_remaining() {
    // Docker Hub's form (draft-ietf-httpapi-ratelimit-headers): `<count>;w=<window>`.
    let server = serve(|r: &Request| match r.path() {
        "/v2/" => respond(200, &[], ""),
        _ => respond(
            200,
            &[
                ("Docker-Content-Digest", D1),
                ("Content-Type", "application/vnd.oci.image.manifest.v1+json"),
                ("RateLimit-Remaining", "97;w=21600"),
            ],
            "",
        ),
    })
    .await;
    let (client, recorder) = observed();
    let session = client
        .authorize(&endpoint(&server.host), &Credential::Anonymous, &[])
        .await
        .expect("authorize");
    assert_eq!(session.check("app", "v1").await.status, Status::Present);
    let events = recorder.events.lock().unwrap().clone();
    assert_eq!(
        events.last(),
        Some(&(
            server.host.clone(),
            RequestKind::Manifest,
            Some(200),
            Some(97)
        )),
        "{events:?}"
    );
    assert!(
        events.iter().rev().skip(1).all(|e| e.3.is_none()),
        "{events:?}"
    );
}
