//! How many connections a check opens: `Checker::check` of many images on one plain
//! HTTP/1.1 registry (Debian's docker-registry on loopback) behind the testkit's
//! counting proxy, with a small `concurrency`.

use std::time::Duration;

use pullcheck::credentials::NodeCredentials;
use pullcheck::input::parse_image_arg;
use pullcheck::report::{Reason, Status};
use pullcheck::resolve::Resolver;
use pullcheck::{CheckOptions, Checker, CheckerOptions};
use pullcheck_testkit::{Auth, ImageKind, LatencyProxy, ProxyOptions, Registry};

/// Images checked, and the concurrency of the check.
const IMAGES: usize = 50;
const CONCURRENCY: usize = 8;

#[tokio::test]
async fn fifty_images_at_concurrency_8_over_http1_open_at_most_8_plain_connections() {
    let registry = Registry::builder()
        .auth(Auth::Anonymous)
        .start()
        .await
        .expect("registry");
    for i in 0..IMAGES {
        registry
            .push("team/app", &format!("v{i}"), ImageKind::OciManifest)
            .await
            .expect("push");
    }
    registry.clear_requests().await.expect("clear");
    // 1 ms each way, so that requests overlap as across a network.
    let proxy = LatencyProxy::start(
        registry.host().parse().expect("address"),
        ProxyOptions {
            delay: Duration::from_millis(1),
            ..ProxyOptions::default()
        },
    )
    .await
    .expect("proxy");
    let host = proxy.host();
    let checker = Checker::new(
        CheckerOptions {
            concurrency: CONCURRENCY,
            ..CheckerOptions::default()
        },
        Resolver::default(),
        NodeCredentials::empty(),
    )
    .expect("checker");
    let uses = (0..IMAGES)
        .map(|i| parse_image_arg(&format!("{host}/team/app:v{i}")).expect("image"))
        .collect();
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        checker.check(uses, &CheckOptions::default()),
    )
    .await
    .expect("the check ends");
    assert_eq!(report.images.len(), IMAGES);
    for image in &report.images {
        assert_eq!(
            image.status,
            Status::Present,
            "{}: {}",
            image.reference,
            image.detail
        );
        assert_eq!(image.reason, Reason::Found);
    }
    // One HEAD per image and nothing else: the first in place of the ping.
    let served = registry.requests().await.expect("log");
    assert_eq!(served.len(), IMAGES, "{served:?}");
    let stats = proxy.stats();
    // The https attempt (a TLS hello, answered with a plain 400), then CONCURRENCY
    // connections to the plain port: the client's pool holds at most that many
    // (`max_connections_per_host`, set from the concurrency) and opens them together
    // once the first answer named the scheme (`Client::pre_open`); those opened ahead
    // that no request needed sent nothing (neither TLS nor plain).
    assert_eq!(stats.tls, 1, "{stats:?}");
    assert_eq!(stats.connections, 1 + CONCURRENCY as u64, "{stats:?}");
    assert!((1..=CONCURRENCY as u64).contains(&stats.plain), "{stats:?}");
}
