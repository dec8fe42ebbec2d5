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

/// An anonymous TLS registry (HTTP/2 by ALPN) holding `team/app:v0` …
/// `v{images-1}`, its log cleared; its TLS files, in a directory kept as long as the
/// returned one.
async fn tls_registry(
    name: &str,
    images: usize,
) -> (Registry, pullcheck_testkit::TlsFiles, TempDir) {
    let dir = TempDir::new(name).expect("temp dir");
    let files = make_tls_files(dir.path()).expect("TLS files");
    let registry = Registry::builder()
        .auth(Auth::Anonymous)
        .tls(files.clone())
        .start()
        .await
        .expect("registry");
    push(&registry, images).await;
    (registry, files, dir)
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

/// A manifest `HEAD`'s answer, as a registry sends it (distribution's
/// `Docker-Content-Digest`, an OCI manifest type).
const MANIFEST_HEAD_200: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nDocker-Content-Digest: sha256:0000000000000000000000000000000000000000000000000000000000000000\r\nContent-Length: 2\r\n\r\n";

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
        plain.write_all(MANIFEST_HEAD_200).await.expect("write");
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
    let (registry, files, _dir) = tls_registry("spare-h2", IMAGES).await;
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

/// What [`Front`] does with a connection, by its first byte.
#[derive(Debug, Clone, Copy)]
enum Then {
    /// Forward it, both ways, to this address.
    Forward(std::net::SocketAddr),
    /// Keep it open and never send a byte (a port that accepts and never answers).
    Hold,
    /// Close it with a TCP reset (`SO_LINGER` 0).
    Reset,
}

/// A front of the test's own on one port, telling TLS from plain HTTP by the first
/// byte (0x16, a TLS handshake record: RFC 8446, section 5.1) and doing `tls` or
/// `plain` with each; counts what it accepted.
struct Front {
    addr: std::net::SocketAddr,
    accepted: std::sync::Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Front {
    async fn start(bind: &str, tls: Then, plain: Then) -> Front {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let listener = TcpListener::bind(bind).await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let accepted = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            let held = Arc::new(std::sync::Mutex::new(Vec::new()));
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                counted.fetch_add(1, Ordering::Relaxed);
                let held = Arc::clone(&held);
                tokio::spawn(async move {
                    let mut first = [0u8; 1];
                    let then = match client.peek(&mut first).await {
                        Ok(1) if first[0] == 0x16 => tls,
                        Ok(1) => plain,
                        _ => return,
                    };
                    match then {
                        Then::Forward(to) => {
                            let Ok(mut upstream) = TcpStream::connect(to).await else {
                                return;
                            };
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                        }
                        Then::Hold => held.lock().expect("held").push(client),
                        Then::Reset => {
                            // A zero linger resets at once; it does not block the
                            // thread, which is what the deprecation warns of.
                            #[allow(deprecated)]
                            let _ = client.set_linger(Some(Duration::ZERO));
                            drop(client);
                        }
                    }
                });
            }
        });
        Front {
            addr,
            accepted,
            task,
        }
    }

    /// `host:port`, bracketed for IPv6.
    fn host(&self) -> String {
        self.addr.to_string()
    }

    fn accepted(&self) -> u64 {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the first request of `v0` on a port in front of a plain registry (holding
/// `v0`) did, when that port does `tls` with TLS hellos: how long it took, the scheme
/// the session kept, the client's requests, the registry's log (statuses), and the
/// connections the port accepted.
struct BehindATlsPort {
    took: Duration,
    base_url: String,
    requests: u64,
    statuses: Vec<u16>,
    accepted: u64,
}

async fn behind_a_tls_port(tls: Then) -> BehindATlsPort {
    let registry = plain_registry(1).await;
    let front = Front::start(
        "127.0.0.1:0",
        tls,
        Then::Forward(registry.host().parse().expect("address")),
    )
    .await;
    // Requests may take 30 s: a first request answered well within that did not wait
    // for a timeout.
    let client = Client::new(pullcheck_registry::ClientOptions {
        request_timeout: Duration::from_secs(30),
        ..pullcheck_registry::ClientOptions::default()
    })
    .expect("client");
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(front.host())
    };
    let started = Instant::now();
    let session = open_session(&client, &endpoint).await;
    BehindATlsPort {
        took: started.elapsed(),
        base_url: session.base_url().to_string(),
        requests: client.request_count(),
        statuses: registry
            .requests()
            .await
            .expect("log")
            .iter()
            .map(|r| r.status)
            .collect(),
        accepted: front.accepted(),
    }
}

#[tokio::test]
async fn a_tls_port_that_accepts_and_never_answers_lets_the_plain_answer_in_after_the_head_start() {
    // TLS hellos are accepted and never answered. Without a byte from the TLS port,
    // the plain answer is used once its verdict passes (the head start and about
    // twice the plain request's time), not after the request timeout (30 s).
    let seen = behind_a_tls_port(Then::Hold).await;
    assert!(seen.base_url.starts_with("http://"), "{}", seen.base_url);
    assert!(
        seen.took < Duration::from_secs(10),
        "took {:?}: waited for https's timeout",
        seen.took
    );
    // The https attempt (no answer) and the plain HEAD, on the spare.
    assert_eq!(seen.requests, 2);
    assert_eq!(seen.statuses, [200]);
    assert_eq!(seen.accepted, 2);
}

#[tokio::test]
async fn a_tls_port_that_resets_falls_back_to_plain_http_at_once() {
    let seen = behind_a_tls_port(Then::Reset).await;
    assert!(seen.base_url.starts_with("http://"), "{}", seen.base_url);
    assert!(seen.took < Duration::from_secs(10), "took {:?}", seen.took);
    assert_eq!(seen.requests, 2);
    assert_eq!(seen.statuses, [200]);
    assert_eq!(seen.accepted, 2);
}

#[tokio::test]
async fn https_is_kept_when_both_answer_even_when_plain_answers_first() {
    // One port in front of two registries: TLS goes to a TLS registry holding v0, plain
    // HTTP to a plain one holding nothing; 100 ms each way in front of both, so https
    // (TCP, TLS, HEAD: 600 ms or more) answers after the plain HEAD started at the head
    // start (250 ms) and answered (about 450 ms). The TLS port has said something
    // (its hello's answer, at about 400 ms) by the plain answer's verdict: https is
    // kept, and the plain port got the anonymous HEAD alone.
    let (tls_registry, files, _dir) = tls_registry("spare-both", 1).await;
    let empty = plain_registry(0).await;
    let front = Front::start(
        "127.0.0.1:0",
        Then::Forward(tls_registry.host().parse().expect("address")),
        Then::Forward(empty.host().parse().expect("address")),
    )
    .await;
    let delayed = LatencyProxy::start(
        front.addr,
        ProxyOptions {
            delay: Duration::from_millis(100),
            record_plain: true,
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy");
    let client = bounded_client(Some(files.ca.clone()));
    let endpoint = allowed_plain(&delayed);
    let session = open_session(&client, &endpoint).await;
    assert!(session.base_url().starts_with("https://"), "{session:?}");
    assert_eq!(session.check(APP, "v0").await.status, Status::Present);
    // The plain registry answered the plain attempt's HEAD (404), unused.
    let plain_log = empty.requests().await.expect("log");
    assert_eq!(plain_log.len(), 1, "{plain_log:?}");
    assert_eq!(plain_log[0].status, 404, "{plain_log:?}");
    let sent = delayed.plain_bytes();
    assert_eq!(sent.len(), 1);
    let head = String::from_utf8_lossy(&sent[0]).to_ascii_lowercase();
    let lines: Vec<&str> = head.split("\r\n").collect();
    assert_eq!(lines[0], "head /v2/team/app/manifests/v0 http/1.1");
    assert!(
        !lines.iter().any(|l| l.starts_with("authorization:")),
        "{lines:?}"
    );
}

#[tokio::test]
async fn at_a_bound_of_one_no_spare_is_opened() {
    // The https attempt's connection is the one connection the bound allows.
    let (registry, files, _dir) = tls_registry("spare-bound-one", 4).await;
    let proxy = proxy(&registry, None).await;
    let client = Client::new(pullcheck_registry::ClientOptions {
        max_connections_per_host: 1,
        ca_file: Some(files.ca.clone()),
        ..pullcheck_registry::ClientOptions::default()
    })
    .expect("client");
    let statuses = check_group(&client, &allowed_plain(&proxy), 4).await;
    assert_eq!(statuses, vec![Status::Present; 4]);
    // Give a spare the time to be counted had one been opened.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = proxy.stats();
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (1, 1, 0, 0),
        "{stats:?}"
    );
}

#[tokio::test]
async fn a_plain_registry_at_a_bound_of_two_uses_the_spare_as_one_of_its_two_connections() {
    // The spare is one of the plain origin's two connections (it holds one of its
    // permits): the TLS hello's connection, then the spare and one more.
    const IMAGES: usize = 10;
    let registry = plain_registry(IMAGES).await;
    let proxy = proxy(&registry, None).await;
    let client = Client::new(pullcheck_registry::ClientOptions {
        max_connections_per_host: 2,
        ..pullcheck_registry::ClientOptions::default()
    })
    .expect("client");
    let statuses = check_group(&client, &allowed_plain(&proxy), IMAGES).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    let stats = settled(&proxy, (3, 1, 2, 0)).await;
    assert_eq!(
        (stats.connections, stats.tls, stats.plain, stats.silent),
        (3, 1, 2, 0),
        "{stats:?}"
    );
    assert_eq!(client.request_count(), IMAGES as u64 + 1);
}

#[tokio::test]
async fn two_endpoints_on_one_address_each_get_their_own_spare() {
    // Two endpoints on one plain-HTTP address (a mirror's `ns` query for two
    // registries), their first requests together: each opens its own spare. The
    // origin's first TLS handshake goes alone (it may be HTTP/2), so the test's server
    // sees one TLS hello and the two spares, silent, before it answers that hello (a
    // plain 400); then the second hello, answered the same. Each endpoint has a
    // configured header, so its plain attempt starts only when its https has failed:
    // both plain HEADs go on the spares, and no other connection comes.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let host = listener.local_addr().expect("address").to_string();
    let server = tokio::spawn(async move {
        let wait = Duration::from_secs(5);
        let mut conns = Vec::new();
        for _ in 0..3 {
            let next = tokio::time::timeout(wait, listener.accept()).await;
            let (c, _) = next
                .expect("three connections before the first TLS hello is answered")
                .expect("accept");
            conns.push(c);
        }
        // Tell the hello from the silent spares.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut hellos = Vec::new();
        let mut spares = Vec::new();
        for c in conns {
            let mut byte = [0u8; 1];
            match c.try_read(&mut byte) {
                Ok(1) => hellos.push(c),
                _ => spares.push(c),
            }
        }
        assert_eq!((hellos.len(), spares.len()), (1, 2));
        let answer = b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let mut first = hellos.pop().expect("hello");
        first.write_all(answer).await.expect("write");
        first.shutdown().await.expect("shutdown");
        let (mut second, _) = tokio::time::timeout(wait, listener.accept())
            .await
            .expect("the second TLS hello")
            .expect("accept");
        let mut byte = [0u8; 1];
        second.read_exact(&mut byte).await.expect("hello");
        second.write_all(answer).await.expect("write");
        second.shutdown().await.expect("shutdown");
        let mut heads = Vec::new();
        for mut s in spares {
            heads.push(read_head(&mut s).await);
            s.write_all(MANIFEST_HEAD_200).await.expect("write");
        }
        let more = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        (byte[0], heads, more.is_ok())
    });
    let client = bounded_client(None);
    let endpoint = |ns: &str| Endpoint {
        allow_http: true,
        headers: vec![("X-Test".into(), "1".into())],
        query: vec![("ns".into(), ns.into())],
        ..Endpoint::new(host.clone())
    };
    let (a, b) = (endpoint("docker.io"), endpoint("ghcr.io"));
    let (sa, sb) = futures::join!(open_session(&client, &a), open_session(&client, &b));
    assert!(sa.base_url().starts_with("http://"), "{sa:?}");
    assert!(sb.base_url().starts_with("http://"), "{sb:?}");
    let (second_hello, heads, more) = server.await.expect("server");
    assert_eq!(
        second_hello, 0x16,
        "the second connection after the 400 is a TLS hello"
    );
    assert!(!more, "no connection beside the hellos and the spares");
    let mut heads: Vec<String> = heads
        .iter()
        .map(|h| {
            h.split("\r\n")
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        })
        .collect();
    heads.sort();
    assert_eq!(
        heads,
        [
            "head /v2/team/app/manifests/v0?ns=docker.io http/1.1",
            "head /v2/team/app/manifests/v0?ns=ghcr.io http/1.1",
        ]
    );
}

#[tokio::test]
async fn over_ipv6_loopback_the_plain_head_goes_on_the_spare() {
    const IMAGES: usize = 12;
    let registry = plain_registry(IMAGES).await;
    let to = registry.host().parse().expect("address");
    // `[::1]:PORT`, both schemes forwarded to the plain registry (which answers the
    // TLS hello with its 400).
    let front = Front::start("[::1]:0", Then::Forward(to), Then::Forward(to)).await;
    assert!(front.host().starts_with("[::1]:"), "{}", front.host());
    let client = bounded_client(None);
    let endpoint = Endpoint {
        allow_http: true,
        ..Endpoint::new(front.host())
    };
    let statuses = check_group(&client, &endpoint, IMAGES).await;
    assert_eq!(statuses, vec![Status::Present; IMAGES]);
    assert_eq!(client.request_count(), IMAGES as u64 + 1);
    assert_eq!(registry.requests().await.expect("log").len(), IMAGES);
    // The TLS hello's connection and BOUND plain ones, the spare among them.
    assert_eq!(front.accepted(), 1 + BOUND as u64);
}

#[tokio::test]
async fn many_cold_first_requests_leave_no_connection_open_beyond_the_bound() {
    // 60 cold endpoints on one plain address (each its own `ns`), one after the
    // other: each opens a spare and settles it; what stays open is the idle pool.
    let registry = plain_registry(1).await;
    let proxy = proxy(&registry, None).await;
    let client = bounded_client(None);
    for i in 0..60 {
        let endpoint = Endpoint {
            allow_http: true,
            query: vec![("ns".into(), format!("r{i}.example"))],
            ..Endpoint::new(proxy.host())
        };
        let session = open_session(&client, &endpoint).await;
        assert!(session.base_url().starts_with("http://"), "{session:?}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.stats().open > BOUND as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = proxy.stats();
    assert!(stats.open <= BOUND as u64, "{stats:?}");
    assert_eq!(stats.silent, 0, "{stats:?}");
    // One TLS hello per cold endpoint; the first plain HEAD on the spare, the others
    // on that connection, idle by then (no spare is opened beside an idle one).
    assert_eq!(stats.tls, 60, "{stats:?}");
    assert_eq!(stats.plain, 1, "{stats:?}");
}
