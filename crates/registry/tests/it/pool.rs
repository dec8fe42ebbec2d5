//! The client's own connection pool against real distribution registries on
//! loopback, behind the testkit's counting proxy: at most
//! `ClientOptions::max_connections_per_host` HTTP/1.1 connections, one HTTP/2
//! connection over TLS, and `Client::pre_open` opening a group's connections while its
//! first request is in flight. Counts (connections accepted, requests served), not
//! times.

use std::time::{Duration, Instant};

use futures::future::join_all;
use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Session, Status};
use pullcheck_testkit::runtime::make_tls_files;
use pullcheck_testkit::{Auth, ImageKind, LatencyProxy, ProxyOptions, Registry, TempDir};

const APP: &str = "team/app";
/// Images checked, and the connection bound.
const IMAGES: usize = 50;
pub(super) const BOUND: usize = 8;

pub(super) fn soon() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

/// An anonymous registry (over TLS with `tls`) holding `team/app:v0` … `v{IMAGES-1}`,
/// its log cleared, behind a proxy delaying each byte `delay_ms` each way.
async fn registry_behind_a_proxy(
    tls: Option<&TempDir>,
    delay_ms: u64,
) -> (Registry, LatencyProxy, Option<std::path::PathBuf>) {
    let mut builder = Registry::builder().auth(Auth::Anonymous);
    let mut ca = None;
    if let Some(dir) = tls {
        let files = make_tls_files(dir.path()).expect("TLS files");
        ca = Some(files.ca.clone());
        builder = builder.tls(files);
    }
    let registry = builder.start().await.expect("registry");
    for i in 0..IMAGES {
        registry
            .push(APP, &format!("v{i}"), ImageKind::OciManifest)
            .await
            .expect("push");
    }
    registry.clear_requests().await.expect("clear");
    let proxy = LatencyProxy::start(
        registry.host().parse().expect("address"),
        ProxyOptions {
            delay: Duration::from_millis(delay_ms),
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy");
    (registry, proxy, ca)
}

pub(super) fn bounded_client(ca_file: Option<std::path::PathBuf>) -> Client {
    Client::new(ClientOptions {
        max_connections_per_host: BOUND,
        ca_file,
        ..ClientOptions::default()
    })
    .expect("client")
}

/// An anonymous session with `endpoint`: its first request is `v0`'s `HEAD`.
pub(super) async fn open_session(client: &Client, endpoint: &Endpoint) -> Session {
    client
        .authorize_first(
            endpoint,
            &Credential::Anonymous,
            &[APP.to_string()],
            (APP, "v0"),
            soon(),
        )
        .await
        .expect("authorize")
}

/// Every image's check, all at once.
async fn check_all(client: &Client, endpoint: &Endpoint) -> Vec<Status> {
    let session = open_session(client, endpoint).await;
    let tags: Vec<String> = (0..IMAGES).map(|i| format!("v{i}")).collect();
    join_all(tags.iter().map(|tag| session.check(APP, tag)))
        .await
        .into_iter()
        .map(|a| a.status)
        .collect()
}

#[tokio::test]
async fn fifty_images_at_a_bound_of_8_over_http1_open_at_most_8_connections() {
    let (registry, proxy, _) = registry_behind_a_proxy(None, 1).await;
    let client = bounded_client(None);
    let endpoint = Endpoint {
        http_only: true,
        ..Endpoint::new(proxy.host())
    };
    let statuses = check_all(&client, &endpoint).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    // One HEAD per image: the first one's answer is read, not sent again.
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    assert_eq!(client.request_count(), IMAGES as u64);
    let stats = proxy.stats();
    assert_eq!((stats.tls, stats.failed), (0, 0), "{stats:?}");
    assert!(
        (1..=BOUND as u64).contains(&stats.plain),
        "{stats:?}: at most {BOUND} connections"
    );
}

#[tokio::test]
async fn pre_open_opens_the_groups_connections_before_the_second_request() {
    // 20 ms each way: the first HEAD is in flight for 40 ms at least.
    let (registry, proxy, _) = registry_behind_a_proxy(None, 20).await;
    let client = bounded_client(None);
    let endpoint = Endpoint {
        http_only: true,
        ..Endpoint::new(proxy.host())
    };
    client.pre_open(&endpoint, IMAGES);
    let session = open_session(&client, &endpoint).await;
    // Only the first HEAD has been sent, and the bound's connections are open.
    assert_eq!(client.request_count(), 1);
    assert_eq!(registry.requests().await.expect("log").len(), 1);
    assert_eq!(
        proxy.stats().connections,
        BOUND as u64,
        "{:?}",
        proxy.stats()
    );
    let tags: Vec<String> = (0..IMAGES).map(|i| format!("v{i}")).collect();
    let answers = join_all(tags.iter().map(|tag| session.check(APP, tag))).await;
    assert!(answers.iter().all(|a| a.status == Status::Present));
    assert_eq!(client.request_count(), IMAGES as u64);
    // No more were needed.
    assert_eq!(
        proxy.stats().connections,
        BOUND as u64,
        "{:?}",
        proxy.stats()
    );
}

#[tokio::test]
async fn pre_open_waits_for_the_scheme_of_an_endpoint_allowed_plain_http() {
    let (_registry, proxy, _) = registry_behind_a_proxy(None, 1).await;
    let client = bounded_client(None);
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(proxy.host())
    };
    client.pre_open(&endpoint, 4);
    open_session(&client, &endpoint).await;
    // The https attempt (answered 400 in plain text) and the first plain HEAD's
    // connection; then the group's, over plain HTTP only: 3 more, which have sent
    // nothing yet (the proxy counts them as neither TLS nor plain).
    let seen = |s: pullcheck_testkit::ProxyStats| (s.connections, s.tls, s.plain);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen(proxy.stats()) != (5, 1, 1) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen(proxy.stats()), (5, 1, 1), "{:?}", proxy.stats());
}

#[tokio::test]
async fn over_tls_with_h2_a_group_shares_one_connection() {
    let dir = TempDir::new("pool-h2").expect("temp dir");
    let (registry, proxy, ca) = registry_behind_a_proxy(Some(&dir), 1).await;
    let client = bounded_client(ca);
    let endpoint = Endpoint::new(proxy.host());
    client.pre_open(&endpoint, IMAGES);
    let statuses = check_all(&client, &endpoint).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    // docker-registry speaks HTTP/2 by ALPN: the first handshake decides, and no other
    // connection opens, neither ahead nor for the 50 requests in flight.
    let stats = proxy.stats();
    assert_eq!((stats.connections, stats.tls), (1, 1), "{stats:?}");
}
