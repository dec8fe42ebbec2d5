//! A token server that misbehaves for some repositories (the testkit's `TokenFault`),
//! through `POST /v1/checks` and `POST /v1/admission`: each row's `status`, `reason`
//! and `failed_host` (the token server, with the HTTP status it answered), and the
//! webhook naming the token server.

use pullcheck_server::ServeOptions;
use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenFault, TokenPolicy};
use serde_json::{Value, json};

use crate::egress::admission_words;
use crate::util::TestServer;

/// A token-auth registry granting anonymous pulls of everything, holding `team/app:v1`,
/// whose token server answers `team/notoken` 200 without a token (distribution
/// token-auth spec, "Token Response Fields": `token` or `access_token` is required),
/// `team/forbidden` 403 and `team/broken` 500; and its token server's `host:port`.
async fn faulty_token_registry() -> (Registry, String) {
    let policy = TokenPolicy::new(Vec::new())
        .anonymous(Repos::All)
        .fault("team/notoken", TokenFault::NoToken)
        .fault("team/forbidden", TokenFault::Status(403))
        .fault("team/broken", TokenFault::Status(500));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("token registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let realm = registry.token_realm().expect("token mode");
    let token_server = realm
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http realm")
        .to_string();
    (registry, token_server)
}

/// The one row of a check of `reference`, answered 200 within 30 s.
async fn row_of(server: &TestServer, reference: &str) -> Value {
    let body = json!({"images": [{"reference": reference}]});
    let (status, report) = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        server.check(None, &body),
    )
    .await
    .expect("answered in time");
    assert_eq!(status, 200, "{report}");
    report["images"][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_server_faults_are_reasons_with_the_token_servers_status() {
    let (registry, token_server) = faulty_token_registry().await;
    let host = registry.host().to_string();
    let server = TestServer::start(ServeOptions::default()).await;
    let present = row_of(&server, &format!("{host}/team/app:v1")).await;
    assert_eq!(
        (&present["status"], present.get("failed_host")),
        (&json!("present"), None),
        "{present}"
    );
    // One image a check: the client asks one token for the scopes of all the images of
    // a registry, so a fault would be every image's.
    for (repository, status, reason, answered) in [
        ("team/notoken", "unreachable", "bad_token_reply", 200),
        ("team/forbidden", "no_access", "unauthorized_anonymous", 403),
        ("team/broken", "unreachable", "server_error", 500),
    ] {
        let row = row_of(&server, &format!("{host}/{repository}:v1")).await;
        assert_eq!(
            (&row["status"], &row["reason"], &row["failed_host"]),
            (
                &json!(status),
                &json!(reason),
                &json!({"host": token_server, "role": "token_server", "http_status": answered})
            ),
            "{repository}: {row}"
        );
        assert_eq!(row["registry"], json!(host), "{row}");
    }
    server.stop().await;

    // The webhook names the token server and what it did, not the registry.
    let image = format!("{host}/team/notoken:v1");
    let words = admission_words("token-no-token", ServeOptions::default(), &image).await;
    assert!(
        words.contains(&format!("token server {token_server} gave no usable token")),
        "{words}"
    );
    assert!(!words.contains(&format!("({host})")), "{words}");
}
