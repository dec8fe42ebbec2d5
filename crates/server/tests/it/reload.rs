//! Files re-read while the service runs: a broken token file or TLS pair keeps the last
//! good one (and is counted), and a change is seen by content, also when the length and
//! the modification time stay.

use std::time::{Duration, Instant};

use pullcheck_server::ServeOptions;
use serde_json::json;

use crate::tls::{client, serve_first};
use crate::util::{TestServer, temp_dir};

/// The status of a check with `token`: 400 (`images` is empty) means it was let in.
async fn status_with(server: &TestServer, token: &str) -> u16 {
    let body = json!({"images": []}).to_string();
    server.post(Some(token), &body).await.0
}

const TOKEN_ERRORS: &str = "pullcheck_config_reload_errors_total{file=\"api_token_file\"} ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_token_file_keeps_the_last_good_tokens() {
    let dir = temp_dir("reload-broken");
    let file = dir.join("tokens");
    std::fs::write(&file, "ci-token-1 ci\nother-token-2\n").expect("write");
    let server = TestServer::start(ServeOptions {
        api_token_file: Some(file.clone()),
        ..ServeOptions::default()
    })
    .await;
    assert_eq!(status_with(&server, "ci-token-1").await, 400);
    assert_eq!(server.metric(TOKEN_ERRORS).await, 0.0);

    // A space after the comma: the line does not parse. The old tokens stay.
    std::fs::write(&file, "ci-token-1 ci, ci-x\nother-token-2\nnew-token-3\n").expect("write");
    for _ in 0..3 {
        assert_eq!(status_with(&server, "ci-token-1").await, 400);
        assert_eq!(status_with(&server, "other-token-2").await, 400);
        assert_eq!(status_with(&server, "new-token-3").await, 401);
    }
    // Counted once for that content, however many requests saw it.
    assert_eq!(server.metric(TOKEN_ERRORS).await, 1.0);

    // Removed, then empty: still the last good tokens, each failure counted.
    std::fs::remove_file(&file).expect("remove");
    assert_eq!(status_with(&server, "ci-token-1").await, 400);
    std::fs::write(&file, "# nothing yet\n").expect("write");
    assert_eq!(status_with(&server, "ci-token-1").await, 400);
    assert_eq!(server.metric(TOKEN_ERRORS).await, 3.0);

    // Fixed: the new content is in use.
    std::fs::write(&file, "ci-token-1 ci,ci-x\nnew-token-3\n").expect("write");
    assert_eq!(status_with(&server, "new-token-3").await, 400);
    assert_eq!(status_with(&server, "other-token-2").await, 401);
    assert_eq!(server.metric(TOKEN_ERRORS).await, 3.0);
    let metrics = server.get("/metrics").await.1;
    assert!(!metrics.contains("token-"), "no token in the metrics");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_same_length_rotation_that_keeps_the_mtime_revokes_the_old_token() {
    let dir = temp_dir("reload-rotation");
    let file = dir.join("tokens");
    std::fs::write(&file, "token-aaaa\n").expect("write");
    let server = TestServer::start(ServeOptions {
        api_token_file: Some(file.clone()),
        ..ServeOptions::default()
    })
    .await;
    assert_eq!(status_with(&server, "token-aaaa").await, 400);
    let mtime = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .expect("mtime");

    // As `cp -p` or `rsync -t` rotate: same length, the old modification time.
    std::fs::write(&file, "token-bbbb\n").expect("write");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_modified(mtime))
        .expect("set mtime");
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!(meta.modified().expect("mtime"), mtime);
    assert_eq!(meta.len(), "token-aaaa\n".len() as u64);

    let started = Instant::now();
    while status_with(&server, "token-aaaa").await != 401 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the revoked token is still let in"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status_with(&server, "token-bbbb").await, 400);
    assert_eq!(server.metric(TOKEN_ERRORS).await, 0.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_tls_pair_keeps_the_old_certificate_and_is_counted() {
    let dir = temp_dir("reload-tls");
    let (server, first, cert, _) = serve_first(&dir).await;
    let metric = format!("https://{}/metrics", server.addr);
    let errors = || async {
        let text = client(&first)
            .get(&metric)
            .send()
            .await
            .expect("the old certificate is served")
            .text()
            .await
            .expect("text");
        text.lines()
            .find_map(|l| {
                l.strip_prefix("pullcheck_config_reload_errors_total{file=\"tls_cert\"} ")
            })
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(-1.0)
    };
    assert_eq!(errors().await, 0.0);
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nnot one\n").expect("write");
    let started = Instant::now();
    while errors().await != 1.0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the bad pair was not seen"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Still served with the first certificate (errors() connects with it).
    assert_eq!(errors().await, 1.0);
    server.stop().await;
}
