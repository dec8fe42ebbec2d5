//! At most --max-checks in flight (503 with Retry-After beyond), a client that goes away
//! cancels its check, and the deadline caps a check.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pullcheck_server::ServeOptions;
use serde_json::json;
use tokio::io::AsyncWriteExt as _;

use crate::util::{Hanging, TestServer};

/// One check slot, and registry requests that wait (for a [`Hanging`] registry).
pub(crate) fn slow_options() -> ServeOptions {
    ServeOptions {
        max_checks: 1,
        client: pullcheck::registry::ClientOptions {
            request_timeout: Duration::from_secs(120),
            max_attempts: 1,
            ..Default::default()
        },
        deadline: Duration::from_secs(120),
        ..ServeOptions::default()
    }
}

/// Sends a check of an image on `host` over a raw connection and returns it (unread).
pub(crate) async fn send_raw(server: &TestServer, host: &str) -> tokio::net::TcpStream {
    let body = json!({"images": [{"reference": format!("{host}/slow:v1")}]}).to_string();
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let request = format!(
        "POST /v1/checks HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_max_checks_is_503_and_a_disconnect_cancels_the_check() {
    let hanging = Hanging::start().await;
    let server = TestServer::start(slow_options()).await;
    let stream = send_raw(&server, &hanging.host).await;
    assert!(
        Hanging::wait(&hanging.accepted, 1).await,
        "the check reached the registry"
    );
    assert_eq!(server.metric("pullcheck_checks_in_flight ").await, 1.0);

    let (status, headers, text) = server
        .post(
            None,
            &json!({"images": [{"reference": "alpine"}]}).to_string(),
        )
        .await;
    assert_eq!(status, 503, "{text}");
    assert_eq!(headers["retry-after"], "1");

    // The client goes away: the check is dropped, its registry connection closed.
    drop(stream);
    let started = Instant::now();
    while server.metric("pullcheck_checks_in_flight ").await != 0.0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still in flight"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        Hanging::wait(&hanging.closed, hanging.accepted.load(Ordering::SeqCst)).await,
        "the registry connection was closed"
    );
    // Counted as abandoned, not as any answered result.
    assert_eq!(
        server
            .metric("pullcheck_checks_total{result=\"abandoned\"} ")
            .await,
        1.0
    );
    assert_eq!(
        server
            .metric("pullcheck_checks_total{result=\"unverified\"} ")
            .await,
        0.0
    );
    // A slot is free again.
    let (status, _, text) = server.post(None, &json!({"images": []}).to_string()).await;
    assert_eq!(status, 400, "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_seconds_ends_a_check_and_is_capped() {
    let hanging = Hanging::start().await;
    let server = TestServer::start(ServeOptions {
        deadline: Duration::from_secs(3),
        ..slow_options()
    })
    .await;
    let image = format!("{}/slow:v1", hanging.host);
    let started = Instant::now();
    let (status, report) = server
        .check(
            None,
            &json!({"images": [{"reference": image}], "deadline_seconds": 1}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["images"][0]["status"], "unreachable", "{report}");
    assert_eq!(report["exit_code"], 3);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // Asking for more than --deadline gets --deadline.
    let started = Instant::now();
    let (status, report) = server
        .check(
            None,
            &json!({"images": [{"reference": image}], "deadline_seconds": 600}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(10),
        "{took:?}"
    );
    server.stop().await;
}
