//! The spare connection of a cold endpoint allowed plain HTTP: a bare TCP connection
//! to the plain address opened beside the `https://` attempt, which carries the plain
//! attempt's first request when https fails (a round trip sooner than a connection of
//! its own), is reused by the second HTTP/1.1 TLS connection when https wins on the
//! same port, and is closed unused when https wins over HTTP/2. Facts (who connected
//! when, what each connection sent, connections and requests counted), not times.

use std::time::{Duration, Instant};

use futures::future::join_all;
use pullcheck_registry::{Client, Credential, Endpoint, Status};
use pullcheck_testkit::proxy::tls_server_config;
use pullcheck_testkit::runtime::make_tls_files;
use pullcheck_testkit::{
    Auth, ImageKind, LatencyProxy, ProxyOptions, ProxyStats, Registry, TempDir,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::pool::{BOUND, bounded_client, open_session, soon};

const APP: &str = "team/app";

/// An anonymous plain-HTTP registry holding `team/app:v0` … `v{images-1}`, its log
/// cleared.
async fn plain_registry(images: usize) -> Registry {
    let registry = Registry::builder()
        .auth(Auth::Anonymous)
        .start()
        .await
        .expect("registry");
    push(&registry, images).await;
    registry
}

async fn push(registry: &Registry, images: usize) {
    for i in 0..images {
        registry
            .push(APP, &format!("v{i}"), ImageKind::OciManifest)
            .await
            .expect("push");
    }
    registry.clear_requests().await.expect("clear");
}

/// A counting proxy in front of `registry`, 1 ms each way (`tls`: terminating TLS,
/// HTTP/1.1 by ALPN, in front of a plain registry).
async fn proxy(registry: &Registry, tls: Option<&pullcheck_testkit::TlsFiles>) -> LatencyProxy {
    LatencyProxy::start(
        registry.host().parse().expect("address"),
        ProxyOptions {
            delay: Duration::from_millis(1),
            tls: tls.map(|f| tls_server_config(&f.cert, &f.key).expect("TLS config")),
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy")
}

fn allowed_plain(proxy: &LatencyProxy) -> Endpoint {
    Endpoint {
        allow_http: true,
        ..Endpoint::new(proxy.host())
    }
}

/// `images` checks in one group: `pre_open` for the group, the first request `v0`'s
/// `HEAD`, then every image's check at once.
async fn check_group(client: &Client, endpoint: &Endpoint, images: usize) -> Vec<Status> {
    client.pre_open(endpoint, images);
    let session = open_session(client, endpoint).await;
    let tags: Vec<String> = (0..images).map(|i| format!("v{i}")).collect();
    join_all(tags.iter().map(|tag| session.check(APP, tag)))
        .await
        .into_iter()
        .map(|a| a.status)
        .collect()
}

/// The proxy's counts (connections, TLS, plain, silent) once they equal `want`, or
/// after 10 s: a connection closed unused is counted when its end reaches the proxy.
async fn settled(proxy: &LatencyProxy, want: (u64, u64, u64, u64)) -> ProxyStats {
    let seen = |s: ProxyStats| (s.connections, s.tls, s.plain, s.silent);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen(proxy.stats()) != want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxy.stats()
}

/// Reads one request head (up to its blank line) from `stream`.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await.expect("read") {
            0 => break,
            _ => head.push(byte[0]),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test]
async fn the_plain_attempt_s_first_head_goes_on_the_connection_opened_beside_the_https_one() {
    // A server of the test's own on a free port, playing a plain-HTTP registry: it
    // answers the https attempt's TLS hello with a plain 400 (as Go's HTTP server does)
    // only once a second connection has come, and checks that the second one has sent
    // nothing until then. The endpoint has a configured header, so the plain attempt
    // starts only when https has failed (no head start): without a connection opened
    // ahead, no second connection comes before the 400.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("address").to_string();
    let server = tokio::spawn(async move {
        let wait = Duration::from_secs(5);
        let (a, _) = listener.accept().await.expect("accept");
        let second = tokio::time::timeout(wait, listener.accept()).await;
        let (b, _) = second
            .expect("a second connection before the https attempt is answered")
            .expect("accept");
        // The one that sends first is the https attempt (its TLS hello); `peek` waits
        // for a byte (`readable` may wake early).
        let (mut pa, mut pb) = ([0u8; 1], [0u8; 1]);
        let a_first = tokio::select! {
            r = a.peek(&mut pa) => { r.expect("peek"); true }
            r = b.peek(&mut pb) => { r.expect("peek"); false }
        };
        let (mut https, mut plain) = if a_first { (a, b) } else { (b, a) };
        let mut first = [0u8; 1];
        https.read_exact(&mut first).await.expect("TLS hello");
        let mut byte = [0u8; 1];
        let silent = matches!(plain.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        https
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request",
            )
            .await
            .expect("write");
        https.shutdown().await.expect("shutdown");
        let head = read_head(&mut plain).await;
        plain
            .write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\r\nContent-Length: 2\r\n\r\n",
            )
            .await
            .expect("write");
        let third = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        (first[0], silent, head, third.is_ok())
    });
    let client = bounded_client(None);
    let endpoint = Endpoint {
        allow_http: true,
        headers: vec![("X-Test".into(), "1".into())],
        ..Endpoint::new(host)
    };
    let session = client
        .authorize_first(
            &endpoint,
            &Credential::Anonymous,
            &[APP.to_string()],
            (APP, "v1"),
            soon(),
        )
        .await
        .expect("authorize");
    assert!(session.base_url().starts_with("http://"), "{session:?}");
    let (hello, silent, head, third) = server.await.expect("server");
    assert_eq!(hello, 0x16, "the first connection opens with a TLS hello");
    assert!(
        silent,
        "the connection opened ahead sent nothing while https ran"
    );
    assert!(
        head.to_ascii_lowercase()
            .starts_with("head /v2/team/app/manifests/v1 http/1.1\r\n"),
        "{head}"
    );
    assert!(!third, "no third connection");
    // The https attempt and the plain HEAD: the connection opened ahead is no request.
    assert_eq!(client.request_count(), 2);
}

/// A guard (it holds without the spare too): the spare is one of the plain
/// connections the group opens, not one more, and no request.
#[tokio::test]
async fn a_plain_registry_gets_no_extra_connection_nor_request() {
    const IMAGES: usize = 20;
    let registry = plain_registry(IMAGES).await;
    let proxy = proxy(&registry, None).await;
    let client = bounded_client(None);
    let statuses = check_group(&client, &allowed_plain(&proxy), IMAGES).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    // One HEAD per image, the first in place of the ping, and the https attempt.
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    assert_eq!(client.request_count(), IMAGES as u64 + 1);
    // The TLS hello, then BOUND plain connections, the first of them the one opened
    // beside the https attempt: as many as without it.
    let stats = settled(&proxy, (1 + BOUND as u64, 1, BOUND as u64, 0)).await;
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (1 + BOUND as u64, 1, BOUND as u64, 0),
        "{stats:?}"
    );
}

#[tokio::test]
async fn an_h2_registry_allowed_plain_http_uses_one_connection_and_the_spare_is_closed_unused() {
    const IMAGES: usize = 20;
    let dir = TempDir::new("spare-h2").expect("temp dir");
    let files = make_tls_files(dir.path()).expect("TLS files");
    let registry = Registry::builder()
        .auth(Auth::Anonymous)
        .tls(files.clone())
        .start()
        .await
        .expect("registry");
    push(&registry, IMAGES).await;
    let proxy = proxy(&registry, None).await;
    let client = bounded_client(Some(files.ca.clone()));
    let statuses = check_group(&client, &allowed_plain(&proxy), IMAGES).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    assert_eq!(client.request_count(), IMAGES as u64);
    // docker-registry speaks HTTP/2 by ALPN: every request went over the one TLS
    // connection; the spare was accepted, sent nothing, and was closed.
    let stats = settled(&proxy, (2, 1, 0, 1)).await;
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (2, 1, 0, 1),
        "{stats:?}"
    );
}

#[tokio::test]
async fn an_http1_tls_registry_on_the_same_port_reuses_the_spare_for_tls() {
    const IMAGES: usize = 20;
    let dir = TempDir::new("spare-h1").expect("temp dir");
    let files = make_tls_files(dir.path()).expect("TLS files");
    let registry = plain_registry(IMAGES).await;
    // The proxy terminates TLS (HTTP/1.1 by ALPN) in front of the plain registry.
    let proxy = proxy(&registry, Some(&files)).await;
    let client = bounded_client(Some(files.ca.clone()));
    let statuses = check_group(&client, &allowed_plain(&proxy), IMAGES).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    assert_eq!(client.request_count(), IMAGES as u64);
    // BOUND TLS connections, one of them the spare (its first bytes a TLS hello once
    // the first handshake said HTTP/1.1): no connection beyond the bound, none unused.
    let stats = settled(&proxy, (BOUND as u64, BOUND as u64, 0, 0)).await;
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (BOUND as u64, BOUND as u64, 0, 0),
        "{stats:?}"
    );
}

#[tokio::test]
async fn a_single_image_on_an_http1_tls_registry_closes_the_spare() {
    let dir = TempDir::new("spare-h1-one").expect("temp dir");
    let files = make_tls_files(dir.path()).expect("TLS files");
    let registry = plain_registry(1).await;
    let proxy = proxy(&registry, Some(&files)).await;
    let client = bounded_client(Some(files.ca.clone()));
    let statuses = check_group(&client, &allowed_plain(&proxy), 1).await;
    assert_eq!(statuses, [Status::Present]);
    assert_eq!(client.request_count(), 1);
    // Nothing more to open: the spare is closed unused.
    let stats = settled(&proxy, (2, 1, 0, 1)).await;
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (2, 1, 0, 1),
        "{stats:?}"
    );
}
