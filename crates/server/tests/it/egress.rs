//! The egress policy through the service: `POST /v1/checks` and `POST /v1/admission` name
//! a registry the policy refuses (a listener of the test's own on 127.0.0.2, which
//! counts the connections it accepts) and one it always refuses (cloud metadata): each
//! is `blocked` with its `egress` object, and nothing connects.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pullcheck::registry::{ClientOptions, EgressPolicy, EgressRule};
use pullcheck_server::ServeOptions;
use serde_json::{Value, json};

use crate::admission::{Webhook, container, deny, pod, registry, review};
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
    let rule = EgressRule::parse("127.0.0.2/32").expect("rule");
    ServeOptions {
        client: ClientOptions {
            egress: EgressPolicy::new(Vec::new(), vec![rule]),
            ..ClientOptions::default()
        },
        ..ServeOptions::default()
    }
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
    let (status, report) = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        server.check(None, &body),
    )
    .await
    .expect("answered in time");
    assert_eq!(status, 200, "{report}");
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
        hook.review(
            "/v1/admission",
            &review(
                "5b1c0c8e-9a41-4c55-8f0e-6c2d1b7a9e11",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &object,
                None,
                false,
            ),
        ),
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
