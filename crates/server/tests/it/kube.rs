//! Pull secrets from the stand-in Kubernetes API: the build Pod's through a
//! PipelinePodsTemplate, a workload's own imagePullSecrets; readiness waits for the API
//! server's first answer.

use pullcheck_testkit::ImageKind;
use pullcheck_testkit::kube::{ApiServer, DockerAuth};
use serde_json::json;

use crate::util::{TestServer, on_cluster, statuses, temp_dir, token_registry};

const NS: &str = "builds";
const PASSWORD: &str = "kube-serve-password-7d21";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_secrets_come_from_the_namespace() {
    let registry = token_registry(PASSWORD, &[("team/app", "v1", ImageKind::OciIndex)]).await;
    let host = registry.host().to_owned();
    let api = ApiServer::start().expect("stand-in API server");
    api.add_pull_secret(NS, "regcred", &[DockerAuth::new(&host, "ci", PASSWORD)]);
    api.add_pods_template(
        NS,
        "tpl",
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    );
    // Pinned to arm64 nodes, where a single-architecture placeholder cannot run.
    api.add_pods_template(
        NS,
        "arm",
        json!({"imagePullSecrets": [{"name": "regcred"}], "nodeSelector": {"kubernetes.io/arch": "arm64"}}),
    );
    registry
        .push("kubernetes/pause", "latest", ImageKind::DockerManifest)
        .await
        .expect("push");
    let dir = temp_dir("kube");
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, None).expect("kubeconfig");

    let server = TestServer::start(on_cluster(kubeconfig)).await;
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
    let pipeline =
        format!("version: \"1\"\nsteps:\n  - name: build\n    image: {image}\n    commands: [x]\n");
    // No namespace: no credentials.
    let (status, report) = server.check(None, &json!({"pipeline": pipeline})).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "no_access".into())]);
    // The template's secret.
    let (status, report) = server
        .check(
            None,
            &json!({"pipeline": pipeline, "namespace": NS, "pods_template": "tpl", "runtime": "docker"}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(statuses(&report), [(image.clone(), "present".into())]);
    // The Kubernetes runtime (the default with a namespace): the placeholder too, with
    // the template's pull secret and its nodeSelector's platform.
    let pause = format!("{host}/kubernetes/pause:latest");
    let (status, placeholder_report) = server
        .check(
            None,
            &json!({"pipeline": pipeline, "namespace": NS, "pods_template": "arm",
                    "placeholder_image": pause}),
        )
        .await;
    assert_eq!(status, 200, "{placeholder_report}");
    assert_eq!(
        statuses(&placeholder_report),
        [
            (pause.clone(), "unrunnable".into()),
            (image.clone(), "present".into())
        ]
    );
    let p = &placeholder_report["images"][0];
    assert_eq!(p["origins"][0]["kind"], "placeholder", "{p}");
    assert!(p["credential"].to_string().contains("regcred"), "{p}");
    let detail = p["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("linux/arm64") && detail.contains("single-platform image for linux/amd64"),
        "{detail}"
    );
    assert_eq!(placeholder_report["exit_code"], 1);
    // The template is fetched once, for its pull secrets and the placeholder's platform.
    let template_gets = api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/pipelinepodstemplates/arm"))
        .count();
    assert_eq!(template_gets, 1, "{:?}", api.requests());
    let (status, answer) = server
        .check(None, &json!({"pipeline": pipeline, "runtime": "podman"}))
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"].to_string().contains("runtime"),
        "{answer}"
    );
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
    // The lookup's error as facts: 502, the object and the API server's status.
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["error"]["kind"], "lookup", "{answer}");
    assert_eq!(
        answer["error"]["lookup"],
        json!({"error": "template_not_found", "resource": "pipelinepodstemplates",
               "name": "nope", "namespace": NS, "code": 404}),
        "{answer}"
    );
    let text = report.to_string() + &server.get("/metrics").await.1;
    assert!(!text.contains(PASSWORD));
    server.stop().await;
}
