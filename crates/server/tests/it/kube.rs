//! Pull secrets from the stand-in Kubernetes API: the build Pod's through a
//! PipelinePodsTemplate, a workload's own imagePullSecrets; readiness waits for the API
//! server's first answer.

use pullcheck_kube::ClusterOptions;
use pullcheck_server::ServeOptions;
use pullcheck_testkit::kube::{ApiServer, DockerAuth};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};
use serde_json::json;

use crate::util::{TestServer, statuses, temp_dir};

const NS: &str = "builds";
const PASSWORD: &str = "kube-serve-password-7d21";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_secrets_come_from_the_namespace() {
    let registry = Registry::builder()
        .auth(Auth::Token(TokenPolicy::new(vec![User::new(
            "ci", PASSWORD,
        )])))
        .start()
        .await
        .expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciIndex)
        .await
        .expect("push");
    let host = registry.host().to_owned();
    let api = ApiServer::start().expect("stand-in API server");
    api.add_pull_secret(NS, "regcred", &[DockerAuth::new(&host, "ci", PASSWORD)]);
    api.add_pods_template(
        NS,
        "tpl",
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    );
    let dir = temp_dir("kube");
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, None).expect("kubeconfig");

    let server = TestServer::start(ServeOptions {
        cluster: Some(ClusterOptions {
            kubeconfig: Some(kubeconfig),
            context: None,
            namespace: String::new(),
        }),
        cluster_required: true,
        ..ServeOptions::default()
    })
    .await;
    let mut ready = false;
    for _ in 0..100 {
        if server.get("/readyz").await.0 == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(ready, "ready once the API server answered");

    let image = format!("{host}/team/app:v1");
    let pipeline = format!("version: \"1\"\nsteps:\n  - name: build\n    image: {image}\n");
    // No namespace: no credentials.
    let (status, report) = server.check(None, &json!({"pipeline": pipeline})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "no_access".into())]);
    // The template's secret.
    let (status, report) = server
        .check(
            None,
            &json!({"pipeline": pipeline, "namespace": NS, "pods_template": "tpl"}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "present".into())]);
    assert!(
        report["images"][0]["credential"]
            .to_string()
            .contains("regcred"),
        "{report}"
    );
    // A workload's own imagePullSecrets.
    let manifests = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  imagePullSecrets: [{{name: regcred}}]\n  containers:\n    - name: c\n      image: {image}\n"
    );
    let (status, report) = server
        .check(None, &json!({"manifests": manifests, "namespace": NS}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "present".into())]);
    // A template that does not exist: the check cannot run, and says why.
    let (status, answer) = server
        .check(
            None,
            &json!({"pipeline": pipeline, "namespace": NS, "pods_template": "nope"}),
        )
        .await;
    assert_ne!(status, 200, "{answer}");
    assert!(
        answer["error"]["message"].to_string().contains("nope"),
        "{answer}"
    );
    let text = report.to_string() + &server.get("/metrics").await.1;
    assert!(!text.contains(PASSWORD));
    server.stop().await;
}
