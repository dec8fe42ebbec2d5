//! The credential chain against a stand-in API server: exact requests, 404s, 403s,
//! malformed objects and unreachable servers.

use std::time::{Duration, Instant};

use pullcheck_kube::{
    Cluster, ClusterOptions, KubeError, NotKubernetesAnswer, PullSecretChain, Step, Subject,
    TemplateSource, walk_pull_secrets_many,
};
use pullcheck_testkit::kube::{self, ApiServer, DockerAuth, status};
use serde_json::json;

const NS: &str = "builds";

fn start() -> ApiServer {
    ApiServer::start().expect("stand-in API server")
}

fn cluster(server: &ApiServer) -> Cluster {
    Cluster::from_url(server.url(), NS).expect("client")
}

/// A pull secret for `registry`, user `ci`.
fn add_secret(server: &ApiServer, namespace: &str, name: &str, registry: &str) {
    server.add_pull_secret(
        namespace,
        name,
        &[DockerAuth::new(registry, "ci", "s3cret")],
    );
}

fn get(path: &str) -> String {
    format!("GET {path}")
}

fn template_path(name: &str) -> String {
    kube::pods_template_path(NS, name)
}

fn secret_path(name: &str) -> String {
    kube::secret_path(NS, name)
}

fn account_path(name: &str) -> String {
    kube::service_account_path(NS, name)
}

/// The build Pod's pull-secret chain as `Cluster::build_pull_secrets` walks it on
/// `server`, in namespace `NS`.
async fn walk(server: &ApiServer, source: &TemplateSource) -> Result<PullSecretChain, KubeError> {
    cluster(server).build_pull_secrets(source).await
}

/// The chain from the `vela-pods` template, which must be walked without error.
async fn template_chain(server: &ApiServer) -> PullSecretChain {
    walk(server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect("chain")
}

/// Only GETs of named objects: no list, no watch.
fn assert_only_named_gets(server: &ApiServer) {
    for r in server.requests() {
        assert!(r.is_named_get(), "not a GET of a named object: {r}");
    }
}

#[tokio::test]
async fn template_secrets_are_used_and_the_service_account_is_not_asked() {
    let server = start();
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({
            "imagePullSecrets": [{"name": "regcred"}, {"name": "quay"}],
            "serviceAccountName": "builder",
            "nodeSelector": {"disktype": "ssd"},
        }),
    );
    add_secret(&server, NS, "regcred", "registry.example.com");
    add_secret(&server, NS, "quay", "quay.io");

    let chain = template_chain(&server).await;

    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&secret_path("regcred")),
            get(&secret_path("quay")),
        ]
    );
    assert_only_named_gets(&server);
    let names: Vec<_> = chain.secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["regcred", "quay"]);
    assert!(chain.secrets.iter().all(|s| s.namespace == NS));
    assert_eq!(
        chain.secrets[0].secret_type(),
        Some("kubernetes.io/dockerconfigjson")
    );
    assert!(
        chain.secrets[0]
            .secret
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key(".dockerconfigjson"))
    );
    assert_eq!(chain.service_account, None);
    assert!(chain.warnings.is_empty());
    assert_eq!(
        chain.walked[1],
        Step::PodSecrets {
            names: vec!["regcred".into(), "quay".into()]
        }
    );
    let text = chain.to_string();
    assert!(
        text.starts_with(
            "PipelinePodsTemplate \"vela-pods\" (from the cluster), namespace \"builds\""
        ),
        "{text}"
    );
    assert!(
        text.contains("the pod has 2 imagePullSecrets: regcred, quay"),
        "{text}"
    );
    assert!(
        text.contains("Secret \"quay\": found, type kubernetes.io/dockerconfigjson"),
        "{text}"
    );
}

#[tokio::test]
async fn no_template_secrets_means_the_named_service_accounts() {
    let server = start();
    server.add_pods_template(NS, "vela-pods", json!({"serviceAccountName": "builder"}));
    server.add_service_account(NS, "builder", &["from-sa"]);
    add_secret(&server, NS, "from-sa", "registry.example.com");

    let chain = template_chain(&server).await;

    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&account_path("builder")),
            get(&secret_path("from-sa")),
        ]
    );
    assert_eq!(chain.service_account.as_deref(), Some("builder"));
    assert_eq!(chain.secrets.len(), 1);
    assert_eq!(chain.secrets[0].name, "from-sa");
    assert_eq!(
        chain.walked[2],
        Step::ServiceAccount {
            name: "builder".into(),
            defaulted: false,
            image_pull_secrets: Some(vec!["from-sa".into()]),
        }
    );
    assert!(
        chain
            .to_string()
            .contains("ServiceAccount \"builder\": imagePullSecrets from-sa")
    );
}

#[tokio::test]
async fn no_secrets_and_no_service_account_named_means_default() {
    let server = start();
    // An empty list and an empty name are the same as none.
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [], "serviceAccountName": ""}),
    );
    server.add_service_account(NS, "default", &["hub"]);
    add_secret(&server, NS, "hub", "https://index.docker.io/v1/");

    let chain = template_chain(&server).await;

    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&account_path("default")),
            get(&secret_path("hub")),
        ]
    );
    assert_eq!(chain.service_account.as_deref(), Some("default"));
    assert!(
        chain
            .to_string()
            .contains("ServiceAccount \"default\" (none named)")
    );
    assert_eq!(chain.secrets[0].name, "hub");
}

#[tokio::test]
async fn no_template_at_all_means_default_service_account() {
    let server = start();
    server.add_service_account(NS, "default", &[]);

    let chain = walk(&server, &TemplateSource::None).await.expect("chain");

    assert_eq!(server.request_lines(), [get(&account_path("default"))]);
    assert_eq!(chain.subject, Subject::NoTemplate);
    assert!(chain.secrets.is_empty());
    let text = chain.to_string();
    assert!(text.contains("has no imagePullSecrets"), "{text}");
    assert!(text.contains("pulls anonymously"), "{text}");
}

#[tokio::test]
async fn a_missing_secret_is_a_warning_and_the_chain_goes_on() {
    let server = start();
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "gone"}, {"name": "regcred"}]}),
    );
    add_secret(&server, NS, "regcred", "registry.example.com");

    let chain = template_chain(&server).await;

    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&secret_path("gone")),
            get(&secret_path("regcred")),
        ]
    );
    assert_eq!(chain.secrets.len(), 1);
    assert_eq!(chain.warnings.len(), 1);
    assert!(
        chain.warnings[0].contains("Secret \"gone\" not found in namespace \"builds\""),
        "{:?}",
        chain.warnings
    );
    assert!(chain.walked.contains(&Step::Secret {
        name: "gone".into(),
        found: false,
        secret_type: None
    }));
    assert!(
        chain
            .to_string()
            .contains("Secret \"gone\": not found, skipped")
    );
}

#[tokio::test]
async fn a_missing_service_account_is_a_warning_with_no_secrets() {
    let server = start();
    server.add_pods_template(NS, "vela-pods", json!({"serviceAccountName": "ghost"}));

    let chain = template_chain(&server).await;

    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&account_path("ghost"))
        ]
    );
    assert!(chain.secrets.is_empty());
    assert_eq!(chain.warnings.len(), 1);
    assert!(chain.warnings[0].contains("ServiceAccount \"ghost\" not found"));
}

#[tokio::test]
async fn forbidden_names_verb_resource_name_namespace_and_the_rule() {
    let server = start();
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    );
    server.forbid(NS, "secrets", "regcred");

    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("403");

    assert!(matches!(err, KubeError::Forbidden { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(
            "forbidden: get secrets \"regcred\" in namespace \"builds\": add this to the Role"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "{apiGroups: [\"\"], resources: [\"secrets\"], verbs: [\"get\"], resourceNames: [\"regcred\"]}"
        ),
        "{text}"
    );
    assert!(text.contains("system:serviceaccount:vela:worker"), "{text}");
    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&secret_path("regcred"))
        ]
    );
}

#[tokio::test]
async fn forbidden_on_the_service_account_and_the_template() {
    let server = start();
    server.forbid(NS, "serviceaccounts", "default");
    let err = walk(&server, &TemplateSource::None).await.expect_err("403");
    assert!(
        err.to_string()
            .starts_with("forbidden: get serviceaccounts \"default\" in namespace \"builds\""),
        "{err}"
    );

    server.forbid(NS, "pipelinepodstemplates", "vela-pods");
    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("403");
    let text = err.to_string();
    assert!(
        text.contains("get pipelinepodstemplates \"vela-pods\""),
        "{text}"
    );
    assert!(
        text.contains("apiGroups: [\"go-vela.github.io\"]"),
        "{text}"
    );
}

#[tokio::test]
async fn a_template_that_does_not_exist_or_a_crd_that_is_not_installed() {
    let server = start();
    let err = walk(&server, &TemplateSource::Name("nope".into()))
        .await
        .expect_err("404");
    assert_eq!(
        err,
        KubeError::TemplateNotFound {
            name: "nope".into(),
            namespace: NS.into()
        }
    );
    server.uninstall_crd();
    let err = walk(&server, &TemplateSource::Name("nope".into()))
        .await
        .expect_err("404");
    assert!(
        matches!(err, KubeError::TemplateApiMissing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("is the CRD installed"), "{err}");
}

#[tokio::test]
async fn a_malformed_secret_is_an_error_naming_it() {
    let server = start();
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "bad"}]}),
    );
    // `data` values must be base64 strings.
    server.add_object(
        NS,
        "secrets",
        "bad",
        json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "bad"},
               "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "%%% not base64"}}),
    );
    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("malformed");
    assert!(matches!(err, KubeError::Malformed { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("malformed secrets \"bad\" in namespace \"builds\""),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_bodies_of_every_kind() {
    let server = start();
    server.add_raw(&template_path("t"), 200, "this is not json", "text/plain");
    let err = walk(&server, &TemplateSource::Name("t".into()))
        .await
        .expect_err("malformed template");
    assert!(
        err.to_string()
            .starts_with("malformed pipelinepodstemplates \"t\""),
        "{err}"
    );

    server.add_raw(
        &account_path("default"),
        200,
        r#"{"kind":"ServiceAccount","imagePullSecrets":"regcred"}"#,
        "application/json",
    );
    let err = walk(&server, &TemplateSource::None)
        .await
        .expect_err("malformed account");
    assert!(
        err.to_string()
            .starts_with("malformed serviceaccounts \"default\""),
        "{err}"
    );

    // A template whose spec has the wrong shape.
    server.add_raw(
        &template_path("t"),
        200,
        r#"{"apiVersion":"go-vela.github.io/v1alpha1","kind":"PipelinePodsTemplate","spec":{"template":{"spec":{"imagePullSecrets":{"name":"x"}}}}}"#,
        "application/json",
    );
    let err = walk(&server, &TemplateSource::Name("t".into()))
        .await
        .expect_err("malformed template spec");
    assert!(matches!(err, KubeError::Malformed { .. }), "{err:?}");
}

#[tokio::test]
async fn other_answers_are_errors_with_the_code_and_401_names_the_server() {
    let server = start();
    // The client has no token; the server wants one.
    server.require_token();
    let err = walk(&server, &TemplateSource::None).await.expect_err("401");
    assert!(matches!(err, KubeError::Unauthorized { .. }), "{err:?}");
    assert!(err.to_string().contains(server.url()), "{err}");

    let server = start();
    server.add_raw(
        &account_path("default"),
        500,
        &status(500, "InternalError", "etcdserver: request timed out").to_string(),
        "application/json",
    );
    let err = walk(&server, &TemplateSource::None).await.expect_err("500");
    assert!(matches!(err, KubeError::Api { code: 500, .. }), "{err:?}");
    assert!(
        err.to_string().contains("etcdserver: request timed out"),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error_not_a_hang() {
    // A port nobody listens on, held so that no parallel test's server is given it.
    let closed = pullcheck_testkit::ClosedPort::new();
    let url = format!("http://{}", closed.host());

    let started = Instant::now();
    let err = Cluster::from_url(&url, NS)
        .expect("client")
        .build_pull_secrets(&TemplateSource::None)
        .await
        .expect_err("refused");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(err, KubeError::Unreachable { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot reach the Kubernetes API server at {url}")),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let hold = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            open.push(stream);
        }
    });

    let started = Instant::now();
    let err = Cluster::from_url(&url, NS)
        .expect("client")
        .with_timeout(Duration::from_millis(300))
        .secret(NS, "regcred")
        .await
        .expect_err("timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.to_string().contains("no answer within 0.3 s"), "{err}");
    hold.abort();
}

#[tokio::test]
async fn template_file_source_reads_the_file_then_walks_the_cluster() {
    let server = start();
    add_secret(&server, NS, "regcred", "registry.example.com");
    let dir = std::env::temp_dir().join(format!("pullcheck-kube-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("template.yaml");
    std::fs::write(
        &path,
        "apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\nmetadata:\n  name: t\n\
         spec:\n  template:\n    spec:\n      imagePullSecrets:\n        - name: regcred\n",
    )
    .expect("write");

    let chain = walk(&server, &TemplateSource::File(path.clone()))
        .await
        .expect("chain");
    assert_eq!(server.request_lines(), [get(&secret_path("regcred"))]);
    assert_eq!(
        chain.subject,
        Subject::TemplateFile {
            path: path.display().to_string()
        }
    );

    std::fs::write(
        &path,
        "spec:\n  template:\n    spec:\n      imagePullSecret: []\n",
    )
    .expect("write");
    let err = walk(&server, &TemplateSource::File(path.clone()))
        .await
        .expect_err("strict");
    assert!(matches!(err, KubeError::TemplateFile(_)), "{err:?}");
    assert!(err.to_string().contains(":4:7: "), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn workloads_share_lookups_and_keep_their_namespaces() {
    let server = start();
    server.add_service_account(NS, "default", &["regcred"]);
    server.add_service_account("prod", "web", &[]);
    add_secret(&server, NS, "regcred", "registry.example.com");
    let manifests = pullcheck_kube::read_manifests(
        "all.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n\
         ---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c, image: y}]}\n\
         ---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod}\n\
         spec: {template: {spec: {serviceAccountName: web, containers: [{name: c, image: z}]}}}\n",
    )
    .expect("manifests");
    let chains = walk_pull_secrets_many(&cluster(&server), &manifests.pull_secrets())
        .await
        .expect("chains");
    assert_eq!(chains.len(), 3);
    assert_eq!(chains[0].secrets.len(), 1);
    assert_eq!(chains[1].secrets.len(), 1);
    assert_eq!(chains[2].namespace, "prod");
    assert!(chains[2].secrets.is_empty());
    assert_eq!(
        server.request_lines(),
        [
            get(&account_path("default")),
            get(&secret_path("regcred")),
            get("/api/v1/namespaces/prod/serviceaccounts/web"),
        ]
    );
}

#[tokio::test]
async fn kubeconfig_file_and_context_select_the_server() {
    let server = start();
    server.add_service_account("from-context", "default", &[]);
    let dir = std::env::temp_dir().join(format!("pullcheck-kubeconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("config");
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n\
         clusters:\n- name: stand-in\n  cluster: {{server: \"{url}\"}}\n\
         - name: nowhere\n  cluster: {{server: \"http://127.0.0.1:9\"}}\n\
         users:\n- name: ci\n  user: {{token: not-a-real-token}}\n\
         contexts:\n- name: stand-in\n  context: {{cluster: stand-in, user: ci, namespace: from-context}}\n\
         - name: nowhere\n  context: {{cluster: nowhere, user: ci}}\n",
        url = server.url()
    );
    std::fs::write(&path, kubeconfig).expect("write");

    // An empty namespace means the context's.
    let options = ClusterOptions {
        kubeconfig: Some(path.clone()),
        context: Some("stand-in".into()),
        namespace: String::new(),
    };
    let cluster = Cluster::connect(&options).await.expect("connect");
    assert_eq!(cluster.namespace(), "from-context");
    assert!(cluster.url().starts_with(server.url()), "{}", cluster.url());
    let chain = cluster
        .build_pull_secrets(&TemplateSource::None)
        .await
        .expect("chain");
    assert_eq!(chain.namespace, "from-context");
    assert_eq!(
        server.request_lines(),
        [get(
            "/api/v1/namespaces/from-context/serviceaccounts/default"
        )]
    );
    // The context's user's token is what is sent.
    assert_eq!(
        server.requests()[0].bearer_token.as_deref(),
        Some("not-a-real-token")
    );

    let missing = ClusterOptions {
        context: Some("no-such-context".into()),
        ..options.clone()
    };
    let err = Cluster::connect(&missing).await.expect_err("no context");
    // The kubeconfig named, as data: a value it lacks, not an unreadable file.
    match &err {
        KubeError::Kubeconfig {
            file,
            from_env,
            kind,
            message,
            ..
        } => {
            assert_eq!(
                (file.as_str(), *from_env, *kind),
                (
                    dir.join("config").display().to_string().as_str(),
                    false,
                    pullcheck_files::FaultKind::Invalid
                ),
                "{err:?}"
            );
            assert_eq!(message, "it has no context \"no-such-context\"");
        }
        other => panic!("{other:?}"),
    }

    let absent = ClusterOptions {
        kubeconfig: Some(dir.join("absent")),
        ..options
    };
    let err = Cluster::connect(&absent).await.expect_err("no file");
    assert!(
        matches!(&err, KubeError::Kubeconfig { file, kind: pullcheck_files::FaultKind::Unreadable, .. }
            if file.ends_with("absent")),
        "{err:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_written_kubeconfig_carries_the_server_namespace_and_token() {
    let server = start();
    server.require_token();
    server.add_service_account("team", "default", &["regcred"]);
    add_secret(&server, "team", "regcred", "registry.example.com");
    let dir = std::env::temp_dir().join(format!("pullcheck-kube-written-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("kubeconfig");
    server
        .write_kubeconfig(&path, Some("team"))
        .expect("kubeconfig");

    let cluster = Cluster::connect(&ClusterOptions {
        kubeconfig: Some(path),
        context: None,
        namespace: String::new(),
    })
    .await
    .expect("connect");
    assert_eq!(cluster.namespace(), "team");
    let chain = cluster
        .build_pull_secrets(&TemplateSource::None)
        .await
        .expect("chain with the token");
    assert_eq!(chain.secrets.len(), 1);
    assert_eq!(
        server.request_lines(),
        [
            get(&kube::service_account_path("team", "default")),
            get(&kube::secret_path("team", "regcred")),
        ]
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.bearer_token.as_deref() == Some(server.token()))
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What a kube-apiserver sends for a `GET` of a missing named object: the `Status` kind of
/// the API conventions ("Response Status Kind",
/// https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#response-status-kind),
/// in the shape the apiserver writes it.
fn real_not_found(resource: &str, name: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{resource} \"{name}\" not found","reason":"NotFound","details":{{"name":"{name}","kind":"{resource}"}},"code":404}}"#
    )
}

/// The 404 page of `python3 -m http.server`: a web server, not an API server.
const HTML_404: &str = "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        \
    <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        \
    <h1>Error response</h1>\n        <p>Error code: 404</p>\n        \
    <p>Message: File not found.</p>\n    </body>\n</html>\n";

/// The error for a 404 that is not a `NotFound` `Status`: it names the server, the verb,
/// resource, name and namespace, the request's URL, and what came back.
fn assert_not_kubernetes(err: &KubeError, url: &str, resource: &str, name: &str, answer: &str) {
    match err {
        KubeError::NotKubernetes(answer_404) => {
            let NotKubernetesAnswer {
                url: u,
                verb,
                resource: r,
                name: n,
                namespace,
                request,
                answer: a,
                ..
            } = answer_404.as_ref();
            assert_eq!(u, url);
            assert_eq!(*verb, "get");
            assert_eq!(*r, resource);
            assert_eq!(n, name);
            assert_eq!(namespace, NS);
            assert_eq!(
                *request,
                format!(
                    "GET {}{}",
                    url.trim_end_matches('/'),
                    kube::object_path(NS, resource, name)
                )
            );
            assert_eq!(a, answer);
        }
        other => panic!("not NotKubernetes: {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "get {resource} \"{name}\" in namespace \"{NS}\": GET {}",
            url.trim_end_matches('/')
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("was answered 404 with {answer}")),
        "{text}"
    );
    assert!(text.contains("not from a Kubernetes API server"), "{text}");
    assert!(
        text.contains(&format!("check the kubeconfig's server URL {url}")),
        "{text}"
    );
}

#[tokio::test]
async fn a_real_not_found_status_is_still_a_warning_and_the_chain_goes_on() {
    let server = start();
    // The kube-apiserver's exact bodies, not the stand-in's own.
    server.add_raw(
        &account_path("default"),
        404,
        &real_not_found("serviceaccounts", "default"),
        "application/json",
    );
    let chain = walk(&server, &TemplateSource::None)
        .await
        .expect("a missing ServiceAccount is not an error");
    assert!(chain.secrets.is_empty());
    assert_eq!(chain.warnings.len(), 1, "{:?}", chain.warnings);
    assert!(
        chain.warnings[0]
            .starts_with("ServiceAccount \"default\" not found in namespace \"builds\""),
        "{:?}",
        chain.warnings
    );
    assert_eq!(
        chain.walked[2],
        Step::ServiceAccount {
            name: "default".into(),
            defaulted: true,
            image_pull_secrets: None,
        }
    );

    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "gone"}, {"name": "regcred"}]}),
    );
    server.add_raw(
        &secret_path("gone"),
        404,
        &real_not_found("secrets", "gone"),
        "application/json",
    );
    add_secret(&server, NS, "regcred", "registry.example.com");
    server.clear_requests();
    let chain = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect("a missing Secret is not an error");
    // The walk went on to the next Secret.
    assert_eq!(
        server.request_lines(),
        [
            get(&template_path("vela-pods")),
            get(&secret_path("gone")),
            get(&secret_path("regcred")),
        ]
    );
    let names: Vec<_> = chain.secrets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["regcred"]);
    assert_eq!(chain.warnings.len(), 1, "{:?}", chain.warnings);
    assert!(
        chain.warnings[0].starts_with("Secret \"gone\" not found in namespace \"builds\""),
        "{:?}",
        chain.warnings
    );
}

#[tokio::test]
async fn a_404_that_is_not_a_not_found_status_at_the_service_account_is_an_error() {
    let server = start();
    let url = cluster(&server).url().to_owned();
    let cases: [(String, &str, &str); 5] = [
        (
            HTML_404.to_owned(),
            "text/html;charset=utf-8",
            "an HTML page titled \"Error response\"",
        ),
        (String::new(), "text/plain", "an empty body"),
        // A JSON 404 of some other API.
        (
            r#"{"error":"route not found"}"#.to_owned(),
            "application/json",
            "JSON that is not a Kubernetes Status: {\"error\":\"route not found\"}",
        ),
        // `kind` is what tells a Status: a reason alone is not one.
        (
            r#"{"reason":"NotFound","code":404}"#.to_owned(),
            "application/json",
            "JSON that is not a Kubernetes Status: {\"reason\":\"NotFound\",\"code\":404}",
        ),
        // A Status, but not one that says the object is missing.
        (
            status(404, "Gone", "no such route").to_string(),
            "application/json",
            "a Status of reason \"Gone\"",
        ),
    ];
    for (body, content_type, answer) in cases {
        server.add_raw(&account_path("default"), 404, &body, content_type);
        server.clear_requests();
        let err = walk(&server, &TemplateSource::None)
            .await
            .expect_err(answer);
        assert_not_kubernetes(&err, &url, "serviceaccounts", "default", answer);
        // The walk stopped there: no Secret was read as if the account had none.
        assert_eq!(server.request_lines(), [get(&account_path("default"))]);
    }
}

#[tokio::test]
async fn a_404_that_is_not_a_not_found_status_at_a_secret_is_an_error() {
    let server = start();
    let url = cluster(&server).url().to_owned();
    server.add_pods_template(
        NS,
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "regcred"}, {"name": "other"}]}),
    );
    add_secret(&server, NS, "other", "registry.example.com");
    for (body, content_type, answer) in [
        (
            HTML_404,
            "text/html;charset=utf-8",
            "an HTML page titled \"Error response\"",
        ),
        ("", "text/plain", "an empty body"),
    ] {
        server.add_raw(&secret_path("regcred"), 404, body, content_type);
        server.clear_requests();
        let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
            .await
            .expect_err(answer);
        assert_not_kubernetes(&err, &url, "secrets", "regcred", answer);
        assert_eq!(
            server.request_lines(),
            [
                get(&template_path("vela-pods")),
                get(&secret_path("regcred"))
            ]
        );
    }

    // The same through the ServiceAccount's secrets, and through many workloads.
    server.add_service_account(NS, "default", &["regcred"]);
    let err = walk(&server, &TemplateSource::None)
        .await
        .expect_err("empty 404");
    assert_not_kubernetes(&err, &url, "secrets", "regcred", "an empty body");
    let manifests = pullcheck_kube::read_manifests(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n\
         spec: {imagePullSecrets: [{name: regcred}], containers: [{name: c, image: x}]}\n",
    )
    .expect("manifests");
    let err = walk_pull_secrets_many(&cluster(&server), &manifests.pull_secrets())
        .await
        .expect_err("empty 404");
    assert_not_kubernetes(&err, &url, "secrets", "regcred", "an empty body");
}

#[tokio::test]
async fn a_server_url_with_a_wrong_path_is_an_error_not_a_missing_service_account() {
    let server = start();
    server.add_service_account(NS, "default", &["regcred"]);
    add_secret(&server, NS, "regcred", "registry.example.com");
    // Every path under the prefix is one the stand-in does not serve: the Go mux's
    // plain-text 404, with no Status.
    let wrong = format!("{}/wrong-prefix", server.url());
    let cluster = Cluster::from_url(&wrong, NS).expect("client");
    let err = cluster
        .build_pull_secrets(&TemplateSource::None)
        .await
        .expect_err("not an API server at that path");
    assert_not_kubernetes(
        &err,
        &wrong,
        "serviceaccounts",
        "default",
        "the text \"404 page not found\"",
    );
    assert_eq!(
        server.request_lines(),
        [get(&format!("/wrong-prefix{}", account_path("default")))]
    );

    // A pods template there gets the same plain 404 a real API server sends for a CRD
    // that is not installed: that error now also says to check the server URL.
    let err = cluster
        .build_pull_secrets(&TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("plain 404");
    assert_eq!(err, KubeError::TemplateApiMissing { url: wrong.clone() });
    let text = err.to_string();
    assert!(text.contains("is the CRD installed"), "{text}");
    assert!(text.contains("check the kubeconfig's server URL"), "{text}");
}

#[tokio::test]
async fn a_pods_template_404_that_is_neither_not_found_nor_the_go_mux_is_an_error() {
    let server = start();
    let url = cluster(&server).url().to_owned();
    server.add_raw(&template_path("vela-pods"), 404, HTML_404, "text/html");
    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("HTML 404");
    assert_not_kubernetes(
        &err,
        &url,
        "pipelinepodstemplates",
        "vela-pods",
        "an HTML page titled \"Error response\"",
    );

    server.add_raw(&template_path("vela-pods"), 404, "", "text/plain");
    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("empty 404");
    assert_not_kubernetes(
        &err,
        &url,
        "pipelinepodstemplates",
        "vela-pods",
        "an empty body",
    );

    // The apiserver's own NotFound Status is still "the template does not exist".
    server.add_raw(
        &template_path("vela-pods"),
        404,
        &real_not_found("pipelinepodstemplates.go-vela.github.io", "vela-pods"),
        "application/json",
    );
    let err = walk(&server, &TemplateSource::Name("vela-pods".into()))
        .await
        .expect_err("NotFound");
    assert_eq!(
        err,
        KubeError::TemplateNotFound {
            name: "vela-pods".into(),
            namespace: NS.into()
        }
    );
}

/// A kubeconfig's YAML error is its position and the parser's words: never the lines
/// around it, where the tokens and passwords are.
#[tokio::test]
async fn a_kubeconfig_syntax_error_shows_no_line_of_the_file() {
    const TOKEN: &str = "kube-yaml-token-canary-5a1e";
    const PASSWORD: &str = "kube-yaml-password-canary-0c9b";
    let dir = std::env::temp_dir().join(format!("pullcheck-kube-yaml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cases = [
        // Line 7, column 15: the `[` that is never closed.
        (
            format!(
                "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {TOKEN}\n    password: [{PASSWORD}\n"
            ),
            (7, 15),
        ),
        // A value of the wrong type is named by its type only.
        (
            format!(
                "apiVersion: v1\nkind: Config\nusers: \"{TOKEN}\"\ncontexts: [{{name: {PASSWORD}"
            ),
            (4, 11),
        ),
    ];
    for (i, (text, _)) in cases.iter().enumerate() {
        let file = dir.join(format!("config{i}"));
        std::fs::write(&file, text).expect("write");
        let err = Cluster::connect(&ClusterOptions {
            kubeconfig: Some(file.clone()),
            ..ClusterOptions::default()
        })
        .await
        .expect_err("not YAML");
        let KubeError::Kubeconfig {
            file: named,
            kind,
            line,
            column,
            message,
            ..
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(
            (named.as_str(), *kind),
            (
                file.display().to_string().as_str(),
                pullcheck_files::FaultKind::Syntax
            ),
            "{err:?}"
        );
        assert!(line.is_some() && column.is_some(), "{err:?}");
        assert_eq!(message.lines().count(), 1, "{err:?}");
        for canary in [TOKEN, PASSWORD] {
            assert!(!format!("{err} {err:?}").contains(canary), "{err:?}");
        }
    }
    let first = Cluster::connect(&ClusterOptions {
        kubeconfig: Some(dir.join("config0")),
        ..ClusterOptions::default()
    })
    .await
    .expect_err("not YAML");
    assert!(
        matches!(
            first,
            KubeError::Kubeconfig {
                line: Some(l),
                column: Some(c),
                ..
            } if (l, c) == cases[0].1
        ),
        "{first:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
