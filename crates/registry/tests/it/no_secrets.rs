//! No password, token or `Authorization` value appears in any trace event (at TRACE
//! level), answer detail, error message or `Debug` output, whatever the outcome: on real
//! registries (htpasswd, token), and on a scripted one that takes every new path
//! (retries, a new token for an insufficient scope, a redirect to another host, the
//! platform check's GET, the token cache).

use crate::support;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::sync::{Arc, Mutex};

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Platform, Session};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};
use support::server::{respond, serve};

/// Tokens the scripted realm issues.
const ISSUED: [&str; 2] = ["issued-token-alpha-secret", "issued-token-beta-secret"];

const SECRETS: [&str; 4] = [
    "pw-correct-horse",
    "pw-wrong-battery",
    "refresh-staple-token",
    "bearer-xyzzy-token",
];

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn assert_clean(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows a secret: {text}");
    }
    // Basic credentials travel base64-encoded; their encodings must not show either.
    for password in &SECRETS[..3] {
        for user in ["alice", ""] {
            let encoded = STANDARD.encode(format!("{user}:{password}"));
            assert!(
                !text.contains(&encoded),
                "{what} shows a Basic value: {text}"
            );
        }
    }
    for token in ISSUED {
        assert!(
            !text.contains(token),
            "{what} shows an issued token: {text}"
        );
    }
    assert!(
        !text.to_ascii_lowercase().contains("authorization: "),
        "{what}: {text}"
    );
}

/// A registry that takes every new path: the realm issues `ISSUED[0]` for several
/// scopes and `ISSUED[1]` for one; `a` fails once with 503 and is an index (platform
/// check); `b` wants its own token, then redirects to another host.
async fn scripted_paths() -> String {
    let other = serve(|_| respond(200, &[], "")).await;
    let other_host = other.host.clone();
    let flaky = std::sync::Arc::new(AtomicUsize::new(0));
    let host_cell = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let realm_host = host_cell.clone();
    let index = r#"{"manifests":[{"platform":{"os":"linux","architecture":"amd64"}}]}"#;
    let server = serve(move |r| {
        let host = realm_host.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let challenge =
            |error: &str| format!(r#"Bearer realm="http://{host}/token",service="svc"{error}"#);
        let alpha = format!("Bearer {}", ISSUED[0]);
        let beta = format!("Bearer {}", ISSUED[1]);
        let auth = r.authorization.clone().unwrap_or_default();
        match r.path() {
            "/token" if r.target.matches("scope=").count() > 1 => respond(
                200,
                &[],
                &format!(r#"{{"token":"{}","expires_in":300}}"#, ISSUED[0]),
            ),
            "/token" => respond(
                200,
                &[],
                &format!(r#"{{"access_token":"{}","expires_in":300}}"#, ISSUED[1]),
            ),
            "/v2/" => respond(401, &[("WWW-Authenticate", challenge("").as_str())], ""),
            p if p.starts_with("/v2/a/") && auth == alpha => {
                if flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                    respond(503, &[], "")
                } else {
                    respond(
                        200,
                        &[("Content-Type", "application/vnd.oci.image.index.v1+json")],
                        index,
                    )
                }
            }
            p if p.starts_with("/v2/b/") && auth == beta => {
                let to = format!("http://{other_host}{p}");
                respond(307, &[("Location", to.as_str())], "")
            }
            p if p.starts_with("/v2/b/") && auth == alpha => respond(
                401,
                &[(
                    "WWW-Authenticate",
                    challenge(r#",scope="repository:b:pull",error="insufficient_scope""#).as_str(),
                )],
                "",
            ),
            // A registry that echoes the request's Authorization in its error message
            // (found by a reviewer): the answer must not repeat it.
            p if p.starts_with("/v2/e/") && !auth.is_empty() => respond(
                404,
                &[("Content-Type", "application/json")],
                &format!(
                    r#"{{"errors":[{{"code":"NAME_UNKNOWN","message":"unknown for {auth}"}}]}}"#
                ),
            ),
            _ => respond(401, &[("WWW-Authenticate", challenge("").as_str())], ""),
        }
    })
    .await;
    *host_cell.lock().unwrap_or_else(|e| e.into_inner()) = server.host.clone();

    let client = Client::new(ClientOptions {
        backoff_base: Duration::from_millis(5),
        backoff_max: Duration::from_millis(10),
        platform: Some(Platform::parse("linux/amd64").expect("platform")),
        ..ClientOptions::default()
    })
    .expect("client");
    let endpoint = Endpoint {
        allow_http: true,
        skip_verify: false,
        ..Endpoint::new(server.host.clone())
    };
    let credential = Credential::Basic {
        username: "alice".into(),
        password: SECRETS[0].into(),
    };
    let mut seen = String::new();
    let repositories = vec!["a".to_string(), "b".to_string()];
    for _ in 0..2 {
        let session = client
            .authorize(&endpoint, &credential, &repositories)
            .await
            .expect("authorize");
        seen.push_str(&format!("{session:?}\n"));
        for repo in ["a", "b", "c", "e"] {
            let answer = session.check(repo, "v1").await;
            seen.push_str(&format!("{answer:?}\n"));
        }
    }
    assert!(
        seen.contains("attempts: 2"),
        "the flaky path was taken: {seen}"
    );
    // The platform check was made (the index listed it).
    assert!(seen.contains(", Index)) }"), "{seen}");
    assert!(seen.contains("unknown for Bearer <redacted>"), "{seen}");
    seen.push_str(&format!("{client:?}\n"));
    // The redirect to another host carried no credential.
    let redirected = other.requests();
    assert!(!redirected.is_empty(), "{seen}");
    assert!(redirected.iter().all(|r| r.authorization.is_none()));
    // One token for a and b, one for b alone, one each for c and e (not authorized);
    // the second session finds all four in the cache.
    assert_eq!(client.token_request_count(), 4);
    seen
}

async fn exercise(client: &Client, registry: &Registry, credentials: &[Credential]) -> String {
    let mut seen = String::new();
    let endpoint = Endpoint {
        allow_http: true,
        skip_verify: false,
        ..Endpoint::new(registry.host().to_string())
    };
    let repositories = vec!["team/app".to_string(), "team/none".to_string()];
    for credential in credentials {
        seen.push_str(&format!("{credential:?}\n"));
        match client.authorize(&endpoint, credential, &repositories).await {
            Err(e) => seen.push_str(&format!("{e} {e:?}\n")),
            Ok(session) => {
                seen.push_str(&format!("{session:?}\n"));
                seen.push_str(&checks(&session).await);
            }
        }
    }
    seen.push_str(&format!("{client:?}\n"));
    seen
}

async fn checks(session: &Session) -> String {
    let mut seen = String::new();
    for (repo, reference) in [
        ("team/app", "v1"),
        ("team/app", "v2"),
        ("team/none", "v1"),
        ("other/repo", "v1"),
    ] {
        let answer = session.check(repo, reference).await;
        seen.push_str(&format!("{answer:?}\n"));
    }
    seen
}

#[tokio::test]
async fn secrets_never_leak() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    let client = Client::new(ClientOptions::default()).expect("client");
    let credentials = [
        Credential::Basic {
            username: "alice".into(),
            password: SECRETS[0].into(),
        },
        Credential::Basic {
            username: "alice".into(),
            password: SECRETS[1].into(),
        },
        Credential::IdentityToken(SECRETS[2].into()),
        Credential::RegistryToken(SECRETS[3].into()),
        Credential::Anonymous,
    ];
    let mut seen = String::new();
    for auth in [
        Auth::Htpasswd(vec![User::new("alice", SECRETS[0])]),
        Auth::Token(TokenPolicy::new(vec![User::new("alice", SECRETS[0])])),
    ] {
        let registry = Registry::builder()
            .auth(auth)
            .start()
            .await
            .expect("registry");
        registry
            .push("team/app", "v1", ImageKind::OciIndex)
            .await
            .expect("push");
        seen.push_str(&exercise(&client, &registry, &credentials).await);
    }
    seen.push_str(&scripted_paths().await);
    assert_clean("answers, errors and Debug", &seen);

    let logs =
        String::from_utf8_lossy(&captured.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    assert!(
        logs.contains("registry request"),
        "trace events were captured: {logs}"
    );
    assert!(logs.contains("HEAD"), "{logs}");
    assert_clean("trace events", &logs);
    // The query of a token request (service, scopes) is left out as well.
    assert!(!logs.contains("scope="), "{logs}");
}
