//! The stand-in Kubernetes API server, asked over plain HTTP: the bodies, codes and
//! content types a real API server sends for objects, missing objects, RBAC refusals, an
//! uninstalled CRD, lists, watches, other methods and missing credentials.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use pullcheck_testkit::kube::{
    self, ApiServer, DockerAuth, FORBIDDEN_USER, KUBECONFIG_CONTEXT, pods_template_path,
    secret_path, service_account_path,
};
use serde_json::{Value, json};

struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

async fn send(method: Method, url: &str, token: Option<&str>) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = Request::builder().method(method).uri(url);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = client
        .request(request.body(Full::new(Bytes::new())).expect("request"))
        .await
        .expect("answer");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    Answer {
        status,
        content_type,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn get(server: &ApiServer, path: &str) -> Answer {
    send(Method::GET, &format!("{}{path}", server.url()), None).await
}

#[tokio::test]
async fn objects_are_served_as_the_api_serves_them() {
    let server = ApiServer::start().expect("start");
    let auths = [DockerAuth::new("registry.example.com:5000", "ci", "pw")];
    server.add_pull_secret("builds", "regcred", &auths);
    server.add_service_account("builds", "builder", &["regcred", "other"]);
    server.add_service_account("builds", "default", &[]);
    server.add_pods_template(
        "builds",
        "vela-pods",
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    );

    let secret = get(&server, &secret_path("builds", "regcred")).await;
    assert_eq!(
        (secret.status, secret.content_type.as_str()),
        (200, "application/json")
    );
    let secret = secret.json();
    assert_eq!(secret["kind"], "Secret");
    assert_eq!(secret["apiVersion"], "v1");
    assert_eq!(secret["metadata"]["name"], "regcred");
    assert_eq!(secret["metadata"]["namespace"], "builds");
    assert!(secret["metadata"]["uid"].is_string());
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    let data = STANDARD
        .decode(secret["data"][".dockerconfigjson"].as_str().expect("data"))
        .expect("base64");
    let config: Value = serde_json::from_slice(&data).expect("config JSON");
    assert_eq!(
        config,
        json!({"auths": {"registry.example.com:5000": {"auth": STANDARD.encode("ci:pw")}}})
    );
    assert_eq!(
        String::from_utf8(data).expect("utf-8"),
        kube::dockerconfigjson(&auths)
    );

    let account = get(&server, &service_account_path("builds", "builder"))
        .await
        .json();
    assert_eq!(account["kind"], "ServiceAccount");
    assert_eq!(
        account["imagePullSecrets"],
        json!([{"name": "regcred"}, {"name": "other"}])
    );
    // An empty list is left out, as the API server leaves it out.
    let default = get(&server, &service_account_path("builds", "default"))
        .await
        .json();
    assert_eq!(default.get("imagePullSecrets"), None);

    let template = get(&server, &pods_template_path("builds", "vela-pods"))
        .await
        .json();
    assert_eq!(template["apiVersion"], "go-vela.github.io/v1alpha1");
    assert_eq!(template["kind"], "PipelinePodsTemplate");
    assert_eq!(
        template["spec"]["template"]["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}])
    );

    assert_eq!(
        server.request_lines(),
        [
            "GET /api/v1/namespaces/builds/secrets/regcred",
            "GET /api/v1/namespaces/builds/serviceaccounts/builder",
            "GET /api/v1/namespaces/builds/serviceaccounts/default",
            "GET /apis/go-vela.github.io/v1alpha1/namespaces/builds/pipelinepodstemplates/vela-pods",
        ]
    );
    assert!(server.requests().iter().all(|r| r.is_named_get()));
    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn missing_and_forbidden_objects_are_status_bodies() {
    let server = ApiServer::start().expect("start");
    server.add_pull_secret("builds", "regcred", &[]);
    server.forbid("builds", "secrets", "regcred");
    server.forbid("builds", "pipelinepodstemplates", "vela-pods");

    let missing = get(&server, &secret_path("builds", "gone")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.content_type, "application/json");
    assert_eq!(
        missing.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "secrets \"gone\" not found", "reason": "NotFound",
               "details": {"name": "gone", "kind": "secrets"}, "code": 404})
    );

    // Forbidden replaces the object.
    let forbidden = get(&server, &secret_path("builds", "regcred")).await;
    assert_eq!(forbidden.status, 403);
    let body = forbidden.json();
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["code"], 403);
    assert_eq!(
        body["message"],
        format!(
            "secrets \"regcred\" is forbidden: User \"{FORBIDDEN_USER}\" cannot get resource \
             \"secrets\" in API group \"\" in the namespace \"builds\""
        )
    );
    let template = get(&server, &pods_template_path("builds", "vela-pods"))
        .await
        .json();
    assert_eq!(
        template["details"],
        json!({"name": "vela-pods", "group": "go-vela.github.io", "kind": "pipelinepodstemplates"})
    );
    assert!(
        template["message"]
            .as_str()
            .is_some_and(|m| m.contains("in API group \"go-vela.github.io\"")),
        "{template}"
    );

    // The namespace exists once something is in it.
    let namespace = get(&server, "/api/v1/namespaces/builds").await;
    assert_eq!(namespace.status, 200);
    assert_eq!(namespace.json()["kind"], "Namespace");
    let nowhere = get(&server, "/api/v1/namespaces/nowhere").await;
    assert_eq!(nowhere.status, 404);
    assert_eq!(
        nowhere.json()["message"],
        "namespaces \"nowhere\" not found"
    );
}

#[tokio::test]
async fn an_uninstalled_crd_and_unknown_paths_are_plain_404s() {
    let server = ApiServer::start().expect("start");
    server.add_pods_template("builds", "vela-pods", json!({}));
    let apis = get(&server, "/apis").await.json();
    assert_eq!(apis["groups"][0]["name"], "go-vela.github.io");

    server.uninstall_crd();
    for path in [
        pods_template_path("builds", "vela-pods"),
        "/apis/go-vela.github.io/v1alpha1".to_owned(),
        "/api/v1/secrets".to_owned(),
        "/healthz/nothing".to_owned(),
    ] {
        let answer = get(&server, &path).await;
        assert_eq!(answer.status, 404, "{path}");
        assert_eq!(answer.content_type, "text/plain; charset=utf-8", "{path}");
        assert_eq!(answer.body, "404 page not found\n", "{path}");
    }
    assert_eq!(get(&server, "/apis").await.json()["groups"], json!([]));
}

#[tokio::test]
async fn lists_watches_and_other_methods_are_answered_and_recorded() {
    let server = ApiServer::start().expect("start");
    server.add_pull_secret("builds", "a", &[]);
    server.add_pull_secret("builds", "b", &[]);
    server.add_pull_secret("prod", "c", &[]);
    server.forbid("builds", "secrets", "d");

    let list = get(&server, "/api/v1/namespaces/builds/secrets")
        .await
        .json();
    assert_eq!(list["kind"], "SecretList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["a", "b"]);

    let watch = get(&server, "/api/v1/namespaces/builds/secrets?watch=true").await;
    assert_eq!(watch.status, 400);
    let delete = send(
        Method::DELETE,
        &format!("{}{}", server.url(), secret_path("builds", "a")),
        None,
    )
    .await;
    assert_eq!(delete.status, 405);
    assert_eq!(delete.json()["reason"], "MethodNotAllowed");

    let requests = server.requests();
    assert_eq!(
        requests.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "GET /api/v1/namespaces/builds/secrets",
            "GET /api/v1/namespaces/builds/secrets?watch=true",
            "DELETE /api/v1/namespaces/builds/secrets/a",
        ]
    );
    assert!(requests.iter().all(|r| !r.is_named_get()));
}

#[tokio::test]
async fn a_required_token_and_the_kubeconfig_that_carries_it() {
    let server = ApiServer::start().expect("start");
    server.add_service_account("builds", "default", &[]);
    server.require_token();

    let refused = get(&server, &service_account_path("builds", "default")).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["reason"], "Unauthorized");
    let wrong = send(
        Method::GET,
        &format!(
            "{}{}",
            server.url(),
            service_account_path("builds", "default")
        ),
        Some("not-the-token"),
    )
    .await;
    assert_eq!(wrong.status, 401);
    let accepted = send(
        Method::GET,
        &format!(
            "{}{}",
            server.url(),
            service_account_path("builds", "default")
        ),
        Some(server.token()),
    )
    .await;
    assert_eq!(accepted.status, 200);
    let tokens: Vec<Option<String>> = server
        .requests()
        .into_iter()
        .map(|r| r.bearer_token)
        .collect();
    assert_eq!(
        tokens,
        [
            None,
            Some("not-the-token".to_owned()),
            Some(server.token().to_owned())
        ]
    );
    // The token is recorded but never shown.
    assert!(!format!("{:?}", server.requests()).contains(server.token()));

    let config: Value = serde_json::from_str(&server.kubeconfig(Some("builds"))).expect("JSON");
    assert_eq!(config["current-context"], KUBECONFIG_CONTEXT);
    assert_eq!(config["clusters"][0]["cluster"]["server"], server.url());
    assert_eq!(config["users"][0]["user"]["token"], server.token());
    assert_eq!(config["contexts"][0]["context"]["namespace"], "builds");
    let config: Value = serde_json::from_str(&server.kubeconfig(None)).expect("JSON");
    assert_eq!(config["contexts"][0]["context"].get("namespace"), None);
}
