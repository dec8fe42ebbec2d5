//! The validating admission webhook (`POST /v1/admission`) end to end: AdmissionReviews in
//! the shape of the Kubernetes API reference ("kube-apiserver Admission (v1)",
//! kubernetes.io/docs/reference/config-api/apiserver-admission.v1/), sent over HTTPS with
//! the certificate `deploy/admission/make-certs.sh` makes, by a client that trusts only
//! that script's CA and connects by the Service's DNS name; real registries of the
//! testkit; pull secrets from the stand-in Kubernetes API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pullcheck_server::admission::{AdmissionMode, AdmissionOptions};
use pullcheck_server::{ServeOptions, TlsFiles};
use pullcheck_testkit::kube::{ApiServer, DockerAuth};
use pullcheck_testkit::{ImageKind, Registry};
use serde_json::{Value, json};

use crate::util::{Hanging, TestServer, on_cluster, temp_dir, token_registry};

/// The Service's name and namespace, as deploy/admission/service.yaml names them.
const SERVICE: &str = "pullcheck-admission";
const SERVICE_NS: &str = "pullcheck";
/// The Vela runtime's placeholder image (the default exempt image).
const PLACEHOLDER: &str = "docker.io/kubernetes/pause:latest";
const NS: &str = "vela-builds";

/// The CA and serving certificate from deploy/admission/make-certs.sh, in `dir`.
fn make_certs(dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/admission/make-certs.sh");
    let status = std::process::Command::new("sh")
        .arg(&script)
        .arg(dir)
        .args([SERVICE, SERVICE_NS])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("sh");
    assert!(status.success(), "make-certs.sh");
    let webhook = std::fs::read_to_string(dir.join("webhook.yaml")).expect("webhook.yaml");
    assert!(!webhook.contains("caBundle: \"\""), "caBundle filled in");
    assert!(
        !webhook.contains("<pullcheck-namespace>"),
        "namespace filled in"
    );
    dir.join("ca.crt")
}

/// A webhook served over TLS, and a client that trusts only the generated CA and
/// reaches it as `pullcheck-admission.pullcheck.svc`.
pub(crate) struct Webhook {
    pub(crate) server: TestServer,
    client: reqwest::Client,
    host: String,
}

impl Webhook {
    pub(crate) async fn start(
        name: &str,
        admission: AdmissionOptions,
        options: ServeOptions,
    ) -> Webhook {
        let dir = temp_dir(&format!("admission-{name}"));
        let ca = make_certs(&dir);
        let server = TestServer::start(ServeOptions {
            tls: Some(TlsFiles {
                cert: dir.join("tls.crt"),
                key: dir.join("tls.key"),
            }),
            admission: Some(admission),
            ..options
        })
        .await;
        let host = format!("{SERVICE}.{SERVICE_NS}.svc");
        let pem = std::fs::read(ca).expect("ca.crt");
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).expect("PEM")])
            .resolve(&host, server.addr)
            .build()
            .expect("client");
        Webhook {
            server,
            client,
            host,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}:{}{path}", self.host, self.server.addr.port())
    }

    /// POSTs `body` to `path`; the status and the body text.
    pub(crate) async fn post_raw(&self, path: &str, body: &str) -> (u16, String) {
        let answer = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .expect("HTTPS answer");
        let status = answer.status().as_u16();
        (status, answer.text().await.expect("body"))
    }

    /// POSTs a review to `path`; the whole answer, after checking its envelope.
    pub(crate) async fn review(&self, path: &str, review: &Value) -> Value {
        let (status, text) = self.post_raw(path, &review.to_string()).await;
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1", "{answer}");
        assert_eq!(answer["kind"], "AdmissionReview", "{answer}");
        assert_eq!(
            answer["response"]["uid"], review["request"]["uid"],
            "the uid is echoed: {answer}"
        );
        assert!(answer.get("request").is_none(), "{answer}");
        answer
    }

    pub(crate) async fn metrics(&self) -> String {
        let answer = self
            .client
            .get(self.url("/metrics"))
            .send()
            .await
            .expect("answer");
        answer.text().await.expect("text")
    }

    pub(crate) async fn stop(self) {
        self.server.stop().await;
    }
}

/// An AdmissionReview as the API server sends it, with every field of the reference's
/// `AdmissionRequest`: uid, kind, resource, subResource, requestKind, requestResource,
/// requestSubResource, name, namespace, operation, userInfo, object, oldObject, dryRun,
/// options. `resource` may name a subresource: `pods/ephemeralcontainers`.
pub(crate) fn review(
    uid: &str,
    operation: &str,
    gvk: (&str, &str, &str),
    resource: &str,
    object: &Value,
    old_object: Option<&Value>,
    dry_run: bool,
) -> Value {
    let (group, version, kind) = gvk;
    // `pods/ephemeralcontainers`: the resource and its subresource.
    let (resource, sub_resource) = match resource.split_once('/') {
        Some((r, sub)) => (r, Some(sub)),
        None => (resource, None),
    };
    let options_kind = if operation == "CREATE" {
        "CreateOptions"
    } else {
        "UpdateOptions"
    };
    let mut request = json!({
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": object["metadata"]["name"],
        "namespace": NS,
        "operation": operation,
        "userInfo": {
            "username": "system:serviceaccount:vela:vela-worker",
            "uid": "4a3f1c2e-0b8d-4a59-9f3e-2d1c7b6a5e40",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:vela", "system:authenticated"]
        },
        "object": object,
        "oldObject": old_object.cloned().unwrap_or(Value::Null),
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind}
    });
    if let Some(sub) = sub_resource {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// A container as the API server has defaulted it before validating webhooks see it.
/// The review of a Pod `object` at CREATE, with `uid`.
pub(crate) fn pod_review(uid: &str, object: &Value) -> Value {
    review(
        uid,
        "CREATE",
        ("", "v1", "Pod"),
        "pods",
        object,
        None,
        false,
    )
}

/// `hook`'s answer to the review of a Pod `object` at CREATE, with `uid`.
pub(crate) async fn create_pod(hook: &Webhook, uid: &str, object: &Value) -> Value {
    hook.review("/v1/admission", &pod_review(uid, object)).await
}

pub(crate) fn container(name: &str, image: &str) -> Value {
    let policy = if image.ends_with(":latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": policy,
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
    })
}

/// A Pod as stored: metadata, a defaulted spec and a status.
pub(crate) fn pod(name: &str, init: &[Value], containers: &[Value], labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": "9c1e7a52-51f4-4b8e-8f0e-6f2a3d4b5c61",
            "labels": labels,
            "creationTimestamp": "2026-12-01T08:00:00Z"
        },
        "spec": {
            "initContainers": init,
            "containers": containers,
            "restartPolicy": "Never",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"}
    })
}

/// A Deployment whose pod template runs `image`, with `pod_spec_extra` merged into its
/// pod spec.
fn deployment(name: &str, image: &str, pod_spec_extra: Value) -> Value {
    let mut spec = json!({
        "containers": [container("web", image)],
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), pod_spec_extra.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "generation": 1},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": spec
            }
        },
        "status": {}
    })
}

/// An anonymous registry with `library/golang:1.22` and `team/app:v1`.
pub(crate) async fn registry() -> Registry {
    let registry = Registry::anonymous().await.expect("registry");
    registry
        .push("library/golang", "1.22", ImageKind::OciIndex)
        .await
        .expect("push");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    registry
}

pub(crate) fn deny() -> AdmissionOptions {
    AdmissionOptions {
        mode: AdmissionMode::Deny,
        ..AdmissionOptions::default()
    }
}

pub(crate) fn warnings(answer: &Value) -> Vec<String> {
    answer["response"]["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|s| s.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The Vela build Pod as the runtime creates it: the clone step's image, the other steps
/// on the placeholder.
fn vela_pod(host: &str, step_image: &str, labels: Value) -> Value {
    pod(
        "vela-build-42",
        &[],
        &[
            container("clone", &format!("{host}/team/app:v1")),
            container("build", PLACEHOLDER),
            container("test", step_image),
        ],
        labels,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vela_step_patch_to_a_missing_tag_is_denied_or_warned() {
    let registry = registry().await;
    let host = registry.host().to_owned();
    let hook = Webhook::start("vela", deny(), ServeOptions::default()).await;
    let old = vela_pod(&host, PLACEHOLDER, json!({"vela": "build"}));
    let missing = format!("{host}/library/golang:1.2");
    let new = vela_pod(&host, &missing, json!({"vela": "build"}));
    let update = |uid: &str, dry_run: bool| {
        review(
            uid,
            "UPDATE",
            ("", "v1", "Pod"),
            "pods",
            &new,
            Some(&old),
            dry_run,
        )
    };

    // deny (the configured mode): refused, naming the container, the image, the reason
    // and the tag hint.
    let answer = hook
        .review(
            "/v1/admission",
            &update("0df28fbd-5f5f-11e8-9b0b-42010a800018", false),
        )
        .await;
    let response = &answer["response"];
    assert_eq!(response["allowed"], false, "{answer}");
    assert_eq!(response["status"]["code"], 403, "{answer}");
    let message = response["status"]["message"].as_str().expect("message");
    assert_eq!(
        message,
        format!(
            "pullcheck: container test: image {missing} not found: no such tag; did you mean \
             1.22?"
        ),
        "{answer}"
    );
    // Only the changed container was asked about: the clone step's image is not named.
    assert!(!message.contains("team/app"), "{message}");

    // dryRun: the same answer.
    let dry = hook
        .review(
            "/v1/admission",
            &update("1a2b3c4d-0000-4000-8000-000000000001", true),
        )
        .await;
    assert_eq!(dry["response"]["allowed"], false, "{dry}");
    assert_eq!(dry["response"]["status"]["message"], message, "{dry}");

    // warn (the namespace's label routes here): allowed, one warning for the container.
    let warned = hook
        .review(
            "/v1/admission/warn",
            &update("2b3c4d5e-0000-4000-8000-000000000002", false),
        )
        .await;
    assert_eq!(warned["response"]["allowed"], true, "{warned}");
    assert!(warned["response"].get("status").is_none(), "{warned}");
    let w = warnings(&warned);
    assert_eq!(w.len(), 1, "{warned}");
    assert!(w[0].chars().count() < 120, "{w:?}");
    // Each fact once: the whole line fits in a warning, the reference whole.
    assert_eq!(w[0], message, "{w:?}");

    // The present tag: allowed without a warning.
    let fixed = vela_pod(&host, &format!("{host}/library/golang:1.22"), json!({}));
    let ok = hook
        .review(
            "/v1/admission",
            &review(
                "3c4d5e6f-0000-4000-8000-000000000003",
                "UPDATE",
                ("", "v1", "Pod"),
                "pods",
                &fixed,
                Some(&old),
                false,
            ),
        )
        .await;
    assert_eq!(ok["response"]["allowed"], true, "{ok}");
    assert!(warnings(&ok).is_empty(), "{ok}");

    let metrics = hook.metrics().await;
    for line in [
        "pullcheck_admission_reviews_total{operation=\"UPDATE\",kind=\"Pod\",decision=\"denied\"} 2",
        "pullcheck_admission_reviews_total{operation=\"UPDATE\",kind=\"Pod\",decision=\"warned\"} 1",
        "pullcheck_admission_reviews_total{operation=\"UPDATE\",kind=\"Pod\",decision=\"allowed\"} 1",
        "pullcheck_admission_duration_seconds_count 4",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    hook.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_with_a_missing_init_container_image_is_denied_and_the_placeholder_is_exempt() {
    let registry = registry().await;
    let host = registry.host().to_owned();
    let hook = Webhook::start("init", deny(), ServeOptions::default()).await;
    let missing = format!("{host}/team/tools:v9");
    let object = pod(
        "with-init",
        &[container("setup", &missing)],
        &[
            container("app", &format!("{host}/team/app:v1")),
            // Not asked: exempt (docker.io is not reachable from the tests, so an ask
            // would be a warning).
            container("later", PLACEHOLDER),
        ],
        json!({}),
    );
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "705ab4f5-6393-11e8-b7cc-42010a800002",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &object,
                None,
                false,
            ),
        )
        .await;
    let response = &answer["response"];
    assert_eq!(response["allowed"], false, "{answer}");
    let message = response["status"]["message"].as_str().expect("message");
    assert!(
        message.starts_with(&format!(
            "pullcheck: init container setup: image {missing} not found"
        )),
        "{message}"
    );
    assert!(
        warnings(&answer).is_empty(),
        "the placeholder is not asked: {answer}"
    );

    // `kubectl debug`: pods/ephemeralcontainers, an UPDATE that adds one.
    let running = pod(
        "with-init",
        &[],
        &[container("app", &format!("{host}/team/app:v1"))],
        json!({}),
    );
    let mut debugged = running.clone();
    let mut debug = container("debug", &format!("{host}/library/golang:1.2"));
    debug["targetContainerName"] = json!("app");
    debugged["spec"]["ephemeralContainers"] = json!([debug]);
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "705ab4f5-6393-11e8-b7cc-42010a800003",
                "UPDATE",
                ("", "v1", "Pod"),
                "pods/ephemeralcontainers",
                &debugged,
                Some(&running),
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.starts_with("pullcheck: ephemeral container debug: image "),
        "{message}"
    );
    assert!(message.ends_with("did you mean 1.22?"), "{message}");
    hook.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_that_changes_no_image_sends_no_registry_request() {
    let registry = registry().await;
    let host = registry.host().to_owned();
    let hook = Webhook::start("labels", deny(), ServeOptions::default()).await;
    let image = format!("{host}/library/golang:1.2");
    let old = vela_pod(&host, &image, json!({"step": "pending"}));
    let new = vela_pod(&host, &image, json!({"step": "running"}));
    registry.clear_requests().await.expect("clear");
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "b1f0e2d3-0000-4000-8000-00000000000a",
                "UPDATE",
                ("", "v1", "Pod"),
                "pods",
                &new,
                Some(&old),
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(warnings(&answer).is_empty(), "{answer}");
    // The same UPDATE with the image changed does ask: the log would show it.
    let changed = vela_pod(&host, &format!("{host}/team/app:v1"), json!({}));
    let asked = hook
        .review(
            "/v1/admission",
            &review(
                "b1f0e2d3-0000-4000-8000-00000000000b",
                "UPDATE",
                ("", "v1", "Pod"),
                "pods",
                &changed,
                Some(&old),
                false,
            ),
        )
        .await;
    assert_eq!(asked["response"]["allowed"], true, "{asked}");
    let requests = registry.requests().await.expect("log");
    let manifests: Vec<_> = requests
        .iter()
        .filter(|r| r.path.contains("/manifests/"))
        .collect();
    assert_eq!(
        manifests.len(),
        1,
        "one HEAD, for the changed image only: {requests:?}"
    );
    assert!(
        manifests[0].path.ends_with("/team/app/manifests/v1"),
        "{manifests:?}"
    );
    hook.stop().await;
}

/// A webhook in `deny` mode (`name` for its files) whose cluster is the stand-in API
/// `api`, through a kubeconfig written for it.
async fn webhook_on(api: &ApiServer, name: &str) -> Webhook {
    let kubeconfig = temp_dir(&format!("admission-kube-{name}")).join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, None).expect("kubeconfig");
    Webhook::start(name, deny(), on_cluster(kubeconfig)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_with_a_typo_is_denied_and_its_service_account_secrets_are_used() {
    const PASSWORD: &str = "admission-sa-password-5e3b";
    let anonymous = registry().await;
    let private = token_registry(PASSWORD, &[("team/private", "v2", ImageKind::OciIndex)]).await;
    let api = ApiServer::start().expect("stand-in API server");
    api.add_pull_secret(
        NS,
        "regcred",
        &[DockerAuth::new(private.host(), "ci", PASSWORD)],
    );
    api.add_service_account(NS, "builder", &["regcred"]);
    api.add_service_account(NS, "default", &[]);
    let hook = webhook_on(&api, "deployment").await;
    let apps = ("apps", "v1", "Deployment");

    // A typo in the image: refused at apply time, with the reason.
    let typo = format!("{}/team/ap:v1", anonymous.host());
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "6e2d0c1b-0000-4000-8000-0000000000d1",
                "CREATE",
                apps,
                "deployments",
                &deployment("web", &typo, json!({})),
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.starts_with(&format!("pullcheck: container web: image {typo} not found")),
        "{message}"
    );

    // A private image, no imagePullSecrets, a ServiceAccount that has them: read from the
    // cluster as `check -n` does, so the image is present.
    let private_image = format!("{}/team/private:v2", private.host());
    let with_sa = deployment(
        "api",
        &private_image,
        json!({"serviceAccountName": "builder"}),
    );
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "6e2d0c1b-0000-4000-8000-0000000000d2",
                "CREATE",
                apps,
                "deployments",
                &with_sa,
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(warnings(&answer).is_empty(), "{answer}");
    assert!(
        api.request_lines()
            .iter()
            .any(|l| l.contains("serviceaccounts/builder")),
        "{:?}",
        api.request_lines()
    );
    // The default ServiceAccount has none: the registry refuses, so it is denied.
    let without = deployment("api", &private_image, json!({}));
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "6e2d0c1b-0000-4000-8000-0000000000d3",
                "CREATE",
                apps,
                "deployments",
                &without,
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    // An UPDATE of the Deployment that changes only its replicas asks nothing.
    let mut scaled = with_sa.clone();
    scaled["spec"]["replicas"] = json!(3);
    private.clear_requests().await.expect("clear");
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "6e2d0c1b-0000-4000-8000-0000000000d4",
                "UPDATE",
                apps,
                "deployments",
                &scaled,
                Some(&with_sa),
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(private.requests().await.expect("log").is_empty());
    let text = answer.to_string() + &hook.metrics().await;
    assert!(!text.contains(PASSWORD));
    hook.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_that_cannot_be_decided_are_allowed_and_malformed_ones_get_400() {
    let hanging = Hanging::start().await;
    let hook = Webhook::start(
        "hanging",
        AdmissionOptions {
            mode: AdmissionMode::Deny,
            timeout: Duration::from_secs(2),
            ..AdmissionOptions::default()
        },
        ServeOptions::default(),
    )
    .await;
    let image = format!("{}/team/app:v1", hanging.host);
    let object = pod("hangs", &[], &[container("app", &image)], json!({}));
    let started = Instant::now();
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "c0ffee00-0000-4000-8000-0000000000c1",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &object,
                None,
                false,
            ),
        )
        .await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "answered inside the timeout: {took:?}"
    );
    assert_eq!(
        answer["response"]["allowed"], true,
        "never refuses the undecided: {answer}"
    );
    let w = warnings(&answer);
    assert_eq!(w.len(), 1, "{answer}");
    assert!(
        w[0].contains("not verified") && w[0].contains(&image),
        "{w:?}"
    );
    assert!(
        Hanging::wait(&hanging.accepted, 1).await,
        "the registry was asked"
    );

    // An unknown kind: allowed with a warning.
    let config_map =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}});
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "c0ffee00-0000-4000-8000-0000000000c2",
                "CREATE",
                ("", "v1", "ConfigMap"),
                "configmaps",
                &config_map,
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(warnings(&answer)[0].contains("not reviewed"), "{answer}");

    // Pull secrets named but no Kubernetes API to read them: not decided, so allowed.
    let mut with_secrets = pod("private", &[], &[container("app", &image)], json!({}));
    with_secrets["spec"]["imagePullSecrets"] = json!([{"name": "regcred"}]);
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "c0ffee00-0000-4000-8000-0000000000c3",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &with_secrets,
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(
        warnings(&answer),
        ["pullcheck: imagePullSecrets not readable (no Kubernetes API); images not verified"],
        "{answer}"
    );

    // A workload without imagePullSecrets pulls with its ServiceAccount's, which cannot
    // be read without the API: not decided, so allowed with a warning (found by a
    // fresh-user review: it was refused after an anonymous 401).
    let answer = hook
        .review(
            "/v1/admission/deny",
            &review(
                "c0ffee00-0000-4000-8000-0000000000c4",
                "CREATE",
                ("apps", "v1", "Deployment"),
                "deployments",
                &deployment("private", &image, json!({"serviceAccountName": "builder"})),
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert!(
        warnings(&answer)[0].contains("ServiceAccount's imagePullSecrets are not readable"),
        "{answer}"
    );

    // Malformed: not JSON, not an AdmissionReview, no request, no uid.
    for body in [
        "{not json".to_owned(),
        json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}).to_string(),
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).to_string(),
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "", "kind": {}, "resource": {}, "operation": "CREATE"}}).to_string(),
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}}).to_string(),
    ] {
        let (status, text) = hook.post_raw("/v1/admission", &body).await;
        assert_eq!(status, 400, "{body}: {text}");
        let error: Value = serde_json::from_str(&text).expect("JSON error");
        assert!(error["error"]["message"].is_string(), "{text}");
    }
    // No bearer token is needed, but an unknown mode is no route.
    let (status, _) = hook.post_raw("/v1/admission/strict", "{}").await;
    assert_eq!(status, 404);
    let metrics = hook.metrics().await;
    assert!(
        metrics.contains("pullcheck_admission_reviews_total{operation=\"other\",kind=\"other\",decision=\"error\"} 5"),
        "{metrics}"
    );

    // An object that is no JSON object is said as such, not as a missing one; a
    // request without `kind` names the field at `request` (rev23q finding 17).
    let mut not_an_object = review(
        "c0ffee00-0000-4000-8000-0000000000c5",
        "CREATE",
        ("", "v1", "Pod"),
        "pods",
        &object,
        None,
        false,
    );
    not_an_object["request"]["object"] = json!("x");
    let answer = hook.review("/v1/admission", &not_an_object).await;
    assert_eq!(
        warnings(&answer),
        [
            "pullcheck: the request's object is a string, not an object; its images were not \
          checked"
        ],
        "{answer}"
    );
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "request": {"uid": "u", "resource": {}, "operation": "CREATE"}})
    .to_string();
    let (status, text) = hook.post_raw("/v1/admission", &body).await;
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).expect("JSON error");
    assert_eq!(
        error["error"]["message"],
        "the AdmissionReview's request is malformed: request: missing field \"kind\"",
        "{text}"
    );
    hook.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_needs_tls_and_answers_only_over_it() {
    let error = pullcheck_server::Server::bind(ServeOptions {
        admission: Some(AdmissionOptions::default()),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        ..ServeOptions::default()
    })
    .await
    .expect_err("refused without TLS");
    assert!(
        matches!(
            error,
            pullcheck_server::ServeError::Config(pullcheck_server::ConfigError::AdmissionNeedsTls)
        ),
        "{error}"
    );

    let hook = Webhook::start("tls", AdmissionOptions::default(), ServeOptions::default()).await;
    // Plain HTTP gets no answer from the TLS listener.
    let plain = reqwest::Client::new()
        .post(format!("http://{}/v1/admission", hook.server.addr))
        .body("{}")
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP is not answered: {plain:?}");
    // A client that trusts another CA does not connect.
    let other = temp_dir("admission-other-ca");
    let other_ca = std::fs::read(make_certs(&other)).expect("ca");
    let stranger = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&other_ca).expect("PEM")])
        .resolve(&hook.host, hook.server.addr)
        .build()
        .expect("client");
    assert!(stranger.get(hook.url("/healthz")).send().await.is_err());
    let (status, _) = hook.post_raw("/v1/admission", "{}").await;
    assert_eq!(status, 400, "the trusted client is answered");
    hook.stop().await;
}

/// A client certificate and key (one PEM) signed by make-certs.sh's CA in `dir`.
fn client_identity(dir: &Path) -> Vec<u8> {
    let (key, csr, cert) = (
        dir.join("client.key"),
        dir.join("client.csr"),
        dir.join("client.crt"),
    );
    let ext = dir.join("client.ext");
    std::fs::write(
        &ext,
        "extendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n",
    )
    .expect("ext");
    let run = |args: &[&std::ffi::OsStr]| {
        let status = std::process::Command::new("openssl")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl");
        assert!(status.success(), "openssl {args:?}");
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    run(&[
        os("req"),
        os("-new"),
        os("-nodes"),
        os("-newkey"),
        os("ec"),
        os("-pkeyopt"),
        os("ec_paramgen_curve:prime256v1"),
        os("-subj"),
        os("/CN=kube-apiserver"),
        os("-keyout"),
        key.as_os_str(),
        os("-out"),
        csr.as_os_str(),
    ]);
    run(&[
        os("x509"),
        os("-req"),
        os("-in"),
        csr.as_os_str(),
        os("-CA"),
        dir.join("ca.crt").as_os_str(),
        os("-CAkey"),
        dir.join("ca.key").as_os_str(),
        os("-CAcreateserial"),
        os("-days"),
        os("1"),
        os("-extfile"),
        ext.as_os_str(),
        os("-out"),
        cert.as_os_str(),
    ]);
    let mut pem = std::fs::read(&cert).expect("cert");
    pem.extend(std::fs::read(&key).expect("key"));
    pem
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_client_ca_only_certified_clients_are_reviewed() {
    let dir = temp_dir("admission-client-ca");
    let ca = make_certs(&dir);
    let identity = client_identity(&dir);
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }),
        admission: Some(AdmissionOptions {
            client_ca: Some(ca.clone()),
            ..AdmissionOptions::default()
        }),
        ..ServeOptions::default()
    })
    .await;
    let host = format!("{SERVICE}.{SERVICE_NS}.svc");
    let pem = std::fs::read(&ca).expect("ca");
    let builder = || {
        reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).expect("PEM")])
            .resolve(&host, server.addr)
    };
    let anonymous = builder().build().expect("client");
    let certified = builder()
        .identity(reqwest::Identity::from_pem(&identity).expect("identity"))
        .build()
        .expect("client");
    let url = |path: &str| format!("https://{host}:{}{path}", server.addr.port());
    let object = pod("p", &[], &[container("pause", PLACEHOLDER)], json!({}));
    let body = review(
        "d00dfeed-0000-4000-8000-000000000001",
        "CREATE",
        ("", "v1", "Pod"),
        "pods",
        &object,
        None,
        false,
    )
    .to_string();
    let post = |client: &reqwest::Client| {
        client
            .post(url("/v1/admission"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
    };
    let refused = post(&anonymous).await.expect("answer");
    assert_eq!(refused.status().as_u16(), 401);
    let health = anonymous.get(url("/healthz")).send().await.expect("answer");
    assert_eq!(health.status().as_u16(), 200, "probes need no certificate");
    let answered = post(&certified).await.expect("answer");
    assert_eq!(answered.status().as_u16(), 200);
    let answer: Value = serde_json::from_str(&answered.text().await.expect("body")).expect("JSON");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    server.stop().await;
}

/// A refusal of a Pod with many failing containers stays readable: at most 4096
/// characters, the rest counted (a fresh-user review saw 52,921 characters for 400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_of_many_containers_is_capped_and_counts_the_rest() {
    let registry = registry().await;
    let host = registry.host().to_owned();
    let hook = Webhook::start("many", deny(), ServeOptions::default()).await;
    let containers: Vec<Value> = (0..120)
        .map(|i| container(&format!("step-{i}"), &format!("{host}/team/missing-{i}:v1")))
        .collect();
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "705ab4f5-6393-11e8-b7cc-42010a8000ff",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &pod("many", &[], &containers, json!({})),
                None,
                false,
            ),
        )
        .await;
    let response = &answer["response"];
    assert_eq!(response["allowed"], false, "{answer}");
    let message = response["status"]["message"].as_str().expect("message");
    assert!(message.chars().count() <= 4096, "{}", message.len());
    assert!(
        message.starts_with("pullcheck: 120 containers cannot pull their images:\n"),
        "{message}"
    );
    let last = message.lines().last().expect("a last line");
    assert!(
        last.starts_with("… and ") && last.ends_with(" more"),
        "{last}"
    );
    let shown = message.lines().count() - 2;
    let more: usize = last
        .trim_start_matches("… and ")
        .trim_end_matches(" more")
        .parse()
        .expect("a count");
    assert_eq!(shown + more, 120, "{message}");
}

/// A Pod whose image volume (`volumes[].image.reference`) is missing is denied (warned on
/// `/warn`), naming the volume; an UPDATE that patches a container's image does not ask
/// about the (immutable) volumes again (a workload's changed volume reference: the unit
/// test `an_update_keeps_only_changed_image_volumes`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_volume_is_denied_or_warned_and_asked_only_when_it_changes() {
    let registry = registry().await;
    let host = registry.host().to_owned();
    let hook = Webhook::start("volumes", deny(), ServeOptions::default()).await;
    let missing = format!("{host}/team/models:v9");
    let mut object = pod(
        "infer",
        &[],
        &[container("app", &format!("{host}/team/app:v1"))],
        json!({}),
    );
    object["spec"]["volumes"] = json!([
        {"name": "scratch", "emptyDir": {}},
        {"name": "models", "image": {"reference": missing, "pullPolicy": "IfNotPresent"}}
    ]);
    let create = review(
        "3c2a1b0d-0000-4000-8000-0000000000v1",
        "CREATE",
        ("", "v1", "Pod"),
        "pods",
        &object,
        None,
        false,
    );
    let answer = hook.review("/v1/admission", &create).await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.starts_with(&format!("pullcheck: image volume models: image {missing} ")),
        "{message}"
    );
    let warned = hook.review("/v1/admission/warn", &create).await;
    assert_eq!(warned["response"]["allowed"], true, "{warned}");
    let w = warnings(&warned);
    assert_eq!(w.len(), 1, "{warned}");
    assert!(
        w[0].starts_with("pullcheck: image volume models: "),
        "{w:?}"
    );

    // A step's image patch: the volume is the same, so only the new image is asked.
    let mut patched = object.clone();
    patched["spec"]["containers"][0]["image"] = json!(format!("{host}/library/golang:1.22"));
    registry.clear_requests().await.expect("clear");
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "3c2a1b0d-0000-4000-8000-0000000000v2",
                "UPDATE",
                ("", "v1", "Pod"),
                "pods",
                &patched,
                Some(&object),
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let heads = |log: Vec<pullcheck_testkit::RequestRecord>| -> Vec<String> {
        log.into_iter()
            .filter(|r| r.method == "HEAD" && r.path.contains("/manifests/"))
            .map(|r| r.path)
            .collect()
    };
    let asked = heads(registry.requests().await.expect("log"));
    assert_eq!(asked, ["/v2/library/golang/manifests/1.22"], "{asked:?}");

    // An image volume without a reference: denied, the volume and the field named, and
    // no empty reference between two spaces.
    let mut empty = object.clone();
    empty["spec"]["volumes"][1]["image"] = json!({"pullPolicy": "IfNotPresent"});
    let answer = hook
        .review(
            "/v1/admission",
            &review(
                "3c2a1b0d-0000-4000-8000-0000000000v3",
                "CREATE",
                ("", "v1", "Pod"),
                "pods",
                &empty,
                None,
                false,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    let message = answer["response"]["status"]["message"]
        .as_str()
        .expect("message");
    assert_eq!(
        message, "pullcheck: image volume models: no image.reference",
        "{answer}"
    );

    hook.stop().await;
}

/// A review whose `namespace` is empty (the AdmissionRequest's `namespace` is empty
/// for a cluster-scoped resource, Kubernetes "Dynamic Admission Control"), with a
/// Kubernetes API configured: the pull secrets it names, or its ServiceAccount's,
/// cannot be read in a namespace, so the images are not decided and the object is
/// allowed with a warning naming why (not "no Kubernetes API"); neither the API nor
/// the registry is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_without_a_namespace_is_allowed_unverified_with_that_reason() {
    let anonymous = registry().await;
    let api = ApiServer::start().expect("stand-in API server");
    api.add_service_account(NS, "default", &[]);
    let hook = webhook_on(&api, "no-namespace").await;
    let image = format!("{}/team/app:v9", anonymous.host());
    let without_namespace = |uid: &str, kind: (&str, &str, &str), resource, object: &Value| {
        let mut object = object.clone();
        object["metadata"]["namespace"] = json!("");
        let mut review = review(uid, "CREATE", kind, resource, &object, None, false);
        review["request"]["namespace"] = json!("");
        review
    };
    api.clear_requests();
    anonymous.clear_requests().await.expect("clear");

    let mut with_secrets = pod("private", &[], &[container("app", &image)], json!({}));
    with_secrets["spec"]["imagePullSecrets"] = json!([{"name": "regcred"}]);
    let answer = hook
        .review(
            "/v1/admission/deny",
            &without_namespace(
                "0a0b0c0d-0000-4000-8000-0000000000e1",
                ("", "v1", "Pod"),
                "pods",
                &with_secrets,
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(
        warnings(&answer),
        [
            "pullcheck: imagePullSecrets not readable (the review names no namespace); \
          images not verified"
        ],
        "{answer}"
    );

    // A workload pulls with its ServiceAccount's secrets, which live in a namespace.
    let answer = hook
        .review(
            "/v1/admission/deny",
            &without_namespace(
                "0a0b0c0d-0000-4000-8000-0000000000e2",
                ("apps", "v1", "Deployment"),
                "deployments",
                &deployment("web", &image, json!({})),
            ),
        )
        .await;
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(
        warnings(&answer),
        [
            "pullcheck: the ServiceAccount's imagePullSecrets are not readable (the review \
          names no namespace); images not verified"
        ],
        "{answer}"
    );
    assert!(api.request_lines().is_empty(), "{:?}", api.request_lines());
    assert!(anonymous.requests().await.expect("log").is_empty());
    hook.stop().await;
}

/// With `--admission-client-ca`, a client without a certificate is answered 401 at its
/// request head, before it takes one of `--admission-max-reviews` or sends its body: a
/// slow body without a certificate cannot keep certified reviews out (an attacker
/// review held every slot with 17 such uploads and got 400 only after 8 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_review_without_a_client_certificate_is_refused_before_its_body() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = temp_dir("admission-client-ca-slow");
    let ca = make_certs(&dir);
    let identity = client_identity(&dir);
    let server = TestServer::start(ServeOptions {
        tls: Some(TlsFiles {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
        }),
        admission: Some(AdmissionOptions {
            client_ca: Some(ca.clone()),
            max_reviews: 1,
            ..AdmissionOptions::default()
        }),
        ..ServeOptions::default()
    })
    .await;
    let host = format!("{SERVICE}.{SERVICE_NS}.svc");
    let pem = std::fs::read(&ca).expect("ca");
    // A raw TLS client without a certificate that sends the head of a 100000-byte
    // review and one byte of it.
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject as _;
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.expect("PEM")).expect("a CA");
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let name = rustls::pki_types::ServerName::try_from(host.clone()).expect("name");
    let mut slow = connector.connect(name, tcp).await.expect("TLS handshake");
    let head = "POST /v1/admission HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Content-Length: 100000\r\n\r\n{";
    slow.write_all(head.as_bytes()).await.expect("send");
    slow.flush().await.expect("flush");
    // Its answer comes at once, while 99999 bytes of its body are still to come.
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = slow.read(&mut buf).await.expect("read");
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(read.is_ok(), "answered before its body was sent");
    let status_line = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(status_line.split(' ').nth(1), Some("401"), "{status_line}");
    // The one review slot is free for a certified client.
    let certified = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).expect("PEM")])
        .resolve(&host, server.addr)
        .identity(reqwest::Identity::from_pem(&identity).expect("identity"))
        .build()
        .expect("client");
    let object = pod("p", &[], &[container("pause", PLACEHOLDER)], json!({}));
    let body = review(
        "d00dfeed-0000-4000-8000-000000000002",
        "CREATE",
        ("", "v1", "Pod"),
        "pods",
        &object,
        None,
        false,
    )
    .to_string();
    let answered = certified
        .post(format!(
            "https://{host}:{}/v1/admission",
            server.addr.port()
        ))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("answer");
    assert_eq!(answered.status().as_u16(), 200);
    drop(slow);
    server.stop().await;
}
