//! No password, token or `Authorization` value appears in any trace event (at TRACE
//! level), answer detail, error message or `Debug` output, whatever the outcome.

use std::io::Write;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::sync::{Arc, Mutex};

use pullcheck_registry::{Client, ClientOptions, Credential, Endpoint, Session};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};

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
    assert!(
        !text.to_ascii_lowercase().contains("authorization: "),
        "{what}: {text}"
    );
}

async fn exercise(client: &Client, registry: &Registry, credentials: &[Credential]) -> String {
    let mut seen = String::new();
    let endpoint = Endpoint {
        host: registry.host().to_string(),
        allow_http: true,
        skip_verify: false,
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
