//! A stand-in Kubernetes API server on loopback: real API paths, real JSON shapes (Secret,
//! ServiceAccount, PipelinePodsTemplate, and `Status` bodies for 404 and 403), and a log of
//! every request so tests can assert exactly what was asked.

#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

#[derive(Default)]
struct State {
    /// Path → (status, body, content type).
    objects: HashMap<String, (u16, String, &'static str)>,
    /// `METHOD path?query`, in order.
    requests: Vec<String>,
    /// Whether `pipelinepodstemplates` is served (the CRD is installed).
    crd_installed: bool,
}

/// The server; stops when dropped.
pub struct ApiServer {
    pub url: String,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub const TEMPLATES: &str = "/apis/go-vela.github.io/v1alpha1";

/// A `Status` body as the API server sends it.
pub fn status(code: u16, reason: &str, message: &str, kind: &str, name: &str) -> String {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {"name": name, "kind": kind},
        "code": code,
    })
    .to_string()
}

/// `{"auths": {registry: {"auth": base64(user:password)}}}`, base64-encoded for `data`.
pub fn dockerconfigjson(registry: &str, user: &str, password: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let auth = b64.encode(format!("{user}:{password}"));
    let config = json!({"auths": {registry: {"auth": auth}}}).to_string();
    b64.encode(config)
}

impl ApiServer {
    pub async fn start() -> ApiServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State {
            crd_installed: true,
            ..State::default()
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(answer(&state, &req)) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        ApiServer {
            url: format!("http://{addr}"),
            state,
            task,
        }
    }

    fn put(&self, path: String, code: u16, body: String) {
        self.state
            .lock()
            .expect("state")
            .objects
            .insert(path, (code, body, "application/json"));
    }

    /// Serves any body at a path.
    pub fn raw(&self, path: &str, code: u16, body: &str, content_type: &'static str) {
        self.state
            .lock()
            .expect("state")
            .objects
            .insert(path.to_owned(), (code, body.to_owned(), content_type));
    }

    /// A `kubernetes.io/dockerconfigjson` Secret.
    pub fn secret(&self, namespace: &str, name: &str, registry: &str) {
        let body = json!({
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace, "uid": "0b6e1e4c", "resourceVersion": "17"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": dockerconfigjson(registry, "ci", "s3cret")},
        });
        self.put(
            format!("/api/v1/namespaces/{namespace}/secrets/{name}"),
            200,
            body.to_string(),
        );
    }

    /// Any Secret body.
    pub fn secret_json(&self, namespace: &str, name: &str, body: Value) {
        self.put(
            format!("/api/v1/namespaces/{namespace}/secrets/{name}"),
            200,
            body.to_string(),
        );
    }

    /// A ServiceAccount with these `imagePullSecrets`.
    pub fn service_account(&self, namespace: &str, name: &str, pull_secrets: &[&str]) {
        let secrets: Vec<Value> = pull_secrets.iter().map(|s| json!({"name": s})).collect();
        let body = json!({
            "kind": "ServiceAccount",
            "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace},
            "imagePullSecrets": secrets,
        });
        self.put(
            format!("/api/v1/namespaces/{namespace}/serviceaccounts/{name}"),
            200,
            body.to_string(),
        );
    }

    /// A PipelinePodsTemplate with this `spec.template.spec`.
    pub fn template(&self, namespace: &str, name: &str, pod_spec: Value) {
        let body = json!({
            "apiVersion": "go-vela.github.io/v1alpha1",
            "kind": "PipelinePodsTemplate",
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"template": {"metadata": {"labels": {"team": "ci"}}, "spec": pod_spec}},
        });
        self.put(
            format!("{TEMPLATES}/namespaces/{namespace}/pipelinepodstemplates/{name}"),
            200,
            body.to_string(),
        );
    }

    /// RBAC refuses `get` on this object (403 `Status`, as the API server words it).
    pub fn forbid(&self, namespace: &str, resource: &str, name: &str) {
        let (prefix, group) = if resource == "pipelinepodstemplates" {
            (TEMPLATES, "go-vela.github.io")
        } else {
            ("/api/v1", "")
        };
        let message = format!(
            "{resource} \"{name}\" is forbidden: User \"system:serviceaccount:vela:worker\" \
             cannot get resource \"{resource}\" in API group \"{group}\" in the namespace \
             \"{namespace}\""
        );
        self.put(
            format!("{prefix}/namespaces/{namespace}/{resource}/{name}"),
            403,
            status(403, "Forbidden", &message, resource, name),
        );
    }

    /// Stops serving `pipelinepodstemplates` (a plain 404, as for an uninstalled CRD).
    pub fn uninstall_crd(&self) {
        self.state.lock().expect("state").crd_installed = false;
    }

    /// Every request so far, `METHOD path?query`.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().expect("state").requests.clone()
    }
}

fn answer(state: &Mutex<State>, req: &Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let line = match req.uri().query() {
        Some(q) => format!("{} {path}?{q}", req.method()),
        None => format!("{} {path}", req.method()),
    };
    let mut state = state.lock().expect("state");
    state.requests.push(line);
    let (code, body, content_type) = match state.objects.get(&path) {
        Some((code, body, ct)) if req.method() == hyper::Method::GET => (*code, body.clone(), *ct),
        _ => not_found(&path, state.crd_installed),
    };
    Response::builder()
        .status(code)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}

/// What the API server says for an object that does not exist: a `Status` for a known
/// resource, a plain-text 404 for a path it does not serve.
fn not_found(path: &str, crd_installed: bool) -> (u16, String, &'static str) {
    let parts: Vec<&str> = path.split('/').collect();
    let served = path.starts_with("/api/v1/namespaces/")
        || (crd_installed && path.starts_with(&format!("{TEMPLATES}/namespaces/")));
    match parts.as_slice() {
        [.., "namespaces", _, resource, name] if served => {
            let message = format!("{resource} \"{name}\" not found");
            (
                404,
                status(404, "NotFound", &message, resource, name),
                "application/json",
            )
        }
        _ => (
            404,
            "404 page not found\n".to_owned(),
            "text/plain; charset=utf-8",
        ),
    }
}
