//! The egress policy through the service: `POST /v1/checks` and `POST /v1/admission` name
//! a registry the policy refuses (a listener of the test's own on 127.0.0.2, which
//! counts the connections it accepts) and one it always refuses (cloud metadata): each
//! is `blocked` with its `egress` object, and nothing connects.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pullcheck::registry::{ClientOptions, EgressPolicy, EgressRule};
use pullcheck_server::ServeOptions;
use serde_json::{Value, json};

use crate::admission::{Webhook, container, create_pod, deny, pod, registry};
use crate::util::{TestServer, statuses};

/// A listener on 127.0.0.2 that counts the connections it accepts and never answers.
struct Counted {
    host: String,
    port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Counted {
    async fn start() -> Counted {
        let listener = tokio::net::TcpListener::bind("127.0.0.2:0")
            .await
            .expect("bind 127.0.0.2");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Counted {
            host: addr.to_string(),
            port: addr.port(),
            accepted,
            task,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The service's options with `--deny-registry 127.0.0.2/32`.
fn denying_127_0_0_2() -> ServeOptions {
    denying("127.0.0.2/32")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_naming_a_denied_registry_is_blocked_and_connects_nowhere() {
    let registry = registry().await;
    let denied = Counted::start().await;
    let server = TestServer::start(denying_127_0_0_2()).await;
    let present = format!("{}/team/app:v1", registry.host());
    let refused = format!("{}/team/app:v1", denied.host);
    let metadata = "169.254.169.254/team/app:v1".to_string();
    let body = json!({"images": [
        {"reference": present},
        {"reference": refused},
        {"reference": metadata},
    ]});
    let report = report_of(&server, &body).await;
    assert_eq!(
        statuses(&report),
        [
            (present.clone(), "present".to_string()),
            (refused.clone(), "blocked".to_string()),
            (metadata.clone(), "blocked".to_string()),
        ]
    );
    assert_eq!(report["exit_code"], 1, "{report}");
    let reasons: Vec<&Value> = (0..3).map(|i| &report["images"][i]["reason"]).collect();
    assert_eq!(
        reasons,
        ["found", "egress_denied", "egress_denied"],
        "{report}"
    );
    assert_eq!(
        report["images"][1]["egress"],
        json!({
            "matched": {"kind": "address", "address": "127.0.0.2", "port": denied.port, "name": null},
            "rule": {"kind": "deny", "pattern": "127.0.0.2/32", "default": false}
        })
    );
    assert_eq!(
        report["images"][2]["egress"]["rule"],
        json!({"kind": "deny", "pattern": "169.254.0.0/16", "default": true})
    );
    assert_eq!(report["images"][0].get("egress"), None, "{report}");
    assert_eq!(denied.accepted(), 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_review_naming_a_denied_registry_sends_nothing_there() {
    let registry = registry().await;
    let denied = Counted::start().await;
    let hook = Webhook::start("egress", deny(), denying_127_0_0_2()).await;
    let refused = format!("{}/team/app:v1", denied.host);
    let object = pod(
        "probe",
        &[],
        &[
            container("app", &format!("{}/team/app:v1", registry.host())),
            container("scan", &refused),
        ],
        json!({}),
    );
    let answer: Value = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        create_pod(&hook, "5b1c0c8e-9a41-4c55-8f0e-6c2d1b7a9e11", &object),
    )
    .await
    .expect("answered in time");
    let response = &answer["response"];
    assert_eq!(response["allowed"], false, "{answer}");
    assert_eq!(response["status"]["code"], 403, "{answer}");
    let message = response["status"]["message"].as_str().expect("message");
    assert!(
        message.starts_with(&format!(
            "pullcheck: container scan: image {refused} blocked"
        )),
        "{message}"
    );
    assert!(!message.contains("container app"), "{message}");
    assert_eq!(denied.accepted(), 0);
    hook.stop().await;
}

/// A testkit registry in token mode (distribution's `auth.token`, the testkit's token
/// server as its realm) granting anonymous pulls of `team/app`, which it holds, and
/// its token server's `host:port`.
async fn token_registry() -> (pullcheck_testkit::Registry, String) {
    use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenPolicy};
    let registry = Registry::builder()
        .auth(Auth::Token(
            TokenPolicy::new(Vec::new()).anonymous(Repos::only(["team/app"])),
        ))
        .start()
        .await
        .expect("token registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    // `http://127.0.0.1:PORT/token`.
    let realm = registry.token_realm().expect("token mode");
    let host = realm
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http realm")
        .to_string();
    (registry, host)
}

/// The service's options with `--deny-registry PATTERN`.
fn denying(pattern: &str) -> ServeOptions {
    let rule = EgressRule::parse(pattern).expect("rule");
    ServeOptions {
        client: ClientOptions {
            egress: EgressPolicy::new(Vec::new(), vec![rule]),
            ..ClientOptions::default()
        },
        ..ServeOptions::default()
    }
}

/// `server`'s report for the check `body`, answered 200 within 30 s.
async fn report_of(server: &TestServer, body: &Value) -> Value {
    let (status, report) =
        tokio::time::timeout(std::time::Duration::from_secs(30), server.check(None, body))
            .await
            .expect("answered in time");
    assert_eq!(status, 200, "{report}");
    report
}

/// The one row's JSON of a check of `reference` by a service with `options`.
async fn checked_row(options: ServeOptions, reference: &str) -> Value {
    let server = TestServer::start(options).await;
    let report = report_of(&server, &json!({"images": [{"reference": reference}]})).await;
    server.stop().await;
    report["images"][0].clone()
}

/// The admission answer's status message and warnings, for one container `app` of
/// `image`, by a webhook with `options` (that refuses failed images).
pub(crate) async fn admission_words(name: &str, options: ServeOptions, image: &str) -> String {
    let hook = Webhook::start(name, deny(), options).await;
    let object = pod("probe", &[], &[container("app", image)], json!({}));
    let answer: Value = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        create_pod(&hook, "0f2e7c1a-3b5d-4e6f-8a9b-1c2d3e4f5a6b", &object),
    )
    .await
    .expect("answered in time");
    hook.stop().await;
    let response = &answer["response"];
    let mut words = vec![
        response["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ];
    if let Some(warnings) = response["warnings"].as_array() {
        words.extend(
            warnings
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string),
        );
    }
    words.join("\n")
}

/// `row` has `status` and `reason`, and `token_server` as the host that failed.
fn assert_failed_at(row: &Value, (status, reason): (&str, &str), token_server: &str) {
    assert_eq!(
        (&row["status"], &row["reason"], &row["failed_host"]),
        (
            &json!(status),
            &json!(reason),
            &json!({"host": token_server, "role": "token_server"})
        ),
        "{row}"
    );
}

/// The webhook's `words` name the host that failed as `named`, and never as `blamed`.
fn says_not(words: &str, named: &str, blamed: &str) {
    assert!(words.contains(named), "{words}");
    assert!(!words.contains(blamed), "{words}");
}

/// The egress policy refuses the token server of a token-auth registry (not the
/// registry): the JSON row names the token server as the host that failed, and the
/// webhook names it instead of blaming the registry (review finding of issue 23).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_server_is_named_not_the_registry() {
    let (registry, token_server) = token_registry().await;
    let image = format!("{}/team/app:v1", registry.host());
    let row = checked_row(denying(&token_server), &image).await;
    assert_failed_at(&row, ("blocked", "egress_denied"), &token_server);
    assert_eq!(row["registry"], json!(registry.host()), "{row}");

    let words = admission_words("token-refused", denying(&token_server), &image).await;
    says_not(
        &words,
        &format!("blocked by the service's egress policy (token server {token_server})"),
        &format!("({})", registry.host()),
    );
}

/// The token server of a token-auth registry is down (its port refuses connections):
/// the row names it as the host that failed, and so does the webhook.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_token_server_is_named_not_the_registry() {
    let (mut registry, token_server) = token_registry().await;
    registry.stop_token_server();
    let image = format!("{}/team/app:v1", registry.host());
    let row = checked_row(ServeOptions::default(), &image).await;
    assert_failed_at(&row, ("unreachable", "connection_refused"), &token_server);

    let words = admission_words("token-down", ServeOptions::default(), &image).await;
    says_not(
        &words,
        &format!("token server {token_server} refused the connection"),
        &format!("{} refused the connection", registry.host()),
    );
}
