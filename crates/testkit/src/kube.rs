//! A stand-in Kubernetes API server on loopback, for tests of pullcheck's cluster
//! lookups (the `PipelinePodsTemplate`, ServiceAccount and Secret `GET`s).
//!
//! It speaks plain HTTP/1 on a free `127.0.0.1` port, from its own thread (like the
//! [`TokenServer`](crate::TokenServer)), so it serves requests while a test blocks on a
//! child process such as the `pullcheck` binary. It is stopped when dropped.
//!
//! What it answers, as a real API server does:
//! - `GET /api/v1/namespaces/NS`: a Namespace when something was added in `NS`, else a
//!   404 `Status`;
//! - `GET /api/v1/namespaces/NS/{secrets,serviceaccounts,...}/NAME` and
//!   `GET /apis/go-vela.github.io/v1alpha1/namespaces/NS/pipelinepodstemplates/NAME`: the
//!   object added for that path (`application/json`), else a `Status` with reason
//!   `NotFound` and code 404;
//! - the same path without `NAME`: a `...List` of the objects added there (a list is never
//!   what pullcheck should ask, but answering it keeps the request log the judge);
//! - `pipelinepodstemplates` when the CRD is "uninstalled"
//!   ([`ApiServer::uninstall_crd`]), and any path the API does not serve: the plain-text
//!   `404 page not found` of the Go mux;
//! - an object made [`forbid`](ApiServer::forbid)den: a `Status` with reason `Forbidden`
//!   and code 403, worded as the RBAC authorizer words it;
//! - a method other than `GET` on a served path: a `Status` with reason
//!   `MethodNotAllowed`, code 405; a watch (`?watch=true`): a `Status` with reason
//!   `BadRequest`, code 400 (the stand-in does not stream);
//! - discovery: `/version`, `/api`, `/apis`, `/api/v1`, `/apis/go-vela.github.io` and
//!   `/apis/go-vela.github.io/v1alpha1` (pullcheck sends raw `GET`s and makes no discovery
//!   request; these are served so that other clients, such as `kubectl get`, work too);
//! - with [`require_token`](ApiServer::require_token), a request without that bearer token:
//!   `Status` reason `Unauthorized`, code 401, whatever the path.
//!
//! Every request is recorded ([`ApiServer::requests`]) with its method, path and query,
//! before it is answered.
//!
//! ```no_run
//! use pullcheck_testkit::kube::{ApiServer, DockerAuth};
//! use serde_json::json;
//!
//! # fn demo() -> Result<(), pullcheck_testkit::Error> {
//! let server = ApiServer::start()?;
//! server.add_pods_template("builds", "vela-pods", json!({"imagePullSecrets": [{"name": "regcred"}]}));
//! server.add_pull_secret("builds", "regcred", &[DockerAuth::new("127.0.0.1:5000", "ci", "secret")]);
//! server.forbid("builds", "secrets", "other");
//! let kubeconfig = std::env::temp_dir().join("kubeconfig");
//! server.write_kubeconfig(&kubeconfig, Some("builds"))?;
//! // ... run `pullcheck check --kubeconfig <kubeconfig> -n builds --pods-template vela-pods` ...
//! for request in server.requests() {
//!     assert!(request.is_named_get(), "{request}");
//! }
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{Value, json};

use crate::Error;

/// The API group of `PipelinePodsTemplate`.
pub const TEMPLATE_GROUP: &str = "go-vela.github.io";
/// The version of `PipelinePodsTemplate`.
pub const TEMPLATE_VERSION: &str = "v1alpha1";
/// The resource (plural) of `PipelinePodsTemplate`.
pub const TEMPLATE_RESOURCE: &str = "pipelinepodstemplates";
/// The path prefix of `PipelinePodsTemplate`s: `/apis/go-vela.github.io/v1alpha1`.
pub const TEMPLATE_PREFIX: &str = "/apis/go-vela.github.io/v1alpha1";
/// The path prefix of core resources.
pub const CORE_PREFIX: &str = "/api/v1";
/// The discovery path of the `PipelinePodsTemplate` group.
const TEMPLATE_GROUP_PATH: &str = "/apis/go-vela.github.io";
/// The name of the cluster, user and context in the kubeconfig files written here.
pub const KUBECONFIG_CONTEXT: &str = "pullcheck-testkit";
/// The user the RBAC messages of [`ApiServer::forbid`] name.
pub const FORBIDDEN_USER: &str = "system:serviceaccount:vela:worker";

/// `/api/v1/namespaces/NS/secrets/NAME`.
pub fn secret_path(namespace: &str, name: &str) -> String {
    object_path(namespace, "secrets", name)
}

/// `/api/v1/namespaces/NS/serviceaccounts/NAME`.
pub fn service_account_path(namespace: &str, name: &str) -> String {
    object_path(namespace, "serviceaccounts", name)
}

/// `/apis/go-vela.github.io/v1alpha1/namespaces/NS/pipelinepodstemplates/NAME`.
pub fn pods_template_path(namespace: &str, name: &str) -> String {
    object_path(namespace, TEMPLATE_RESOURCE, name)
}

/// The path of a named object of `resource` (a core resource, or
/// `pipelinepodstemplates`).
pub fn object_path(namespace: &str, resource: &str, name: &str) -> String {
    format!(
        "{}/namespaces/{namespace}/{resource}/{name}",
        prefix_of(resource)
    )
}

fn prefix_of(resource: &str) -> &'static str {
    if resource == TEMPLATE_RESOURCE {
        TEMPLATE_PREFIX
    } else {
        CORE_PREFIX
    }
}

fn group_of(resource: &str) -> &'static str {
    if resource == TEMPLATE_RESOURCE {
        TEMPLATE_GROUP
    } else {
        ""
    }
}

/// A `Status` object as the API server sends it with an error (`status: Failure`),
/// without `details`.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

/// A `Status` about one object: `details` names it, its resource and (for a group other
/// than core) its group.
fn object_status(code: u16, reason: &str, message: &str, resource: &str, name: &str) -> Value {
    let mut body = status(code, reason, message);
    let mut details = json!({"name": name, "kind": resource});
    let group = group_of(resource);
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    body["details"] = details;
    body
}

/// One `auths` entry of a Docker config: a registry key and the user name and password
/// that go, base64-encoded as `user:password`, into its `auth`.
#[derive(Clone, PartialEq, Eq)]
pub struct DockerAuth {
    /// The key as written, e.g. `127.0.0.1:5000`, `quay.io/org`,
    /// `https://index.docker.io/v1/`.
    pub registry: String,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl DockerAuth {
    /// An entry for `registry`.
    pub fn new(
        registry: impl Into<String>,
        username: impl Into<String>,
        password: impl Into<String>,
    ) -> DockerAuth {
        DockerAuth {
            registry: registry.into(),
            username: username.into(),
            password: password.into(),
        }
    }
}

impl fmt::Debug for DockerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DockerAuth")
            .field("registry", &self.registry)
            .field("username", &self.username)
            .field("password", &"******")
            .finish()
    }
}

/// The text of a Docker config holding `auths`: `{"auths": {KEY: {"auth": base64}}}`, as
/// `kubectl create secret docker-registry` writes it into `.dockerconfigjson`.
pub fn dockerconfigjson(auths: &[DockerAuth]) -> String {
    let mut map = serde_json::Map::new();
    for a in auths {
        let auth = STANDARD.encode(format!("{}:{}", a.username, a.password));
        map.insert(a.registry.clone(), json!({ "auth": auth }));
    }
    json!({ "auths": map }).to_string()
}

/// A `kubernetes.io/dockerconfigjson` Secret manifest (YAML, which JSON is), as
/// `kubectl get secret -o json` prints it: for `--pull-secret` files.
pub fn pull_secret_manifest(namespace: &str, name: &str, auths: &[DockerAuth]) -> String {
    let body = secret_object(
        namespace,
        name,
        "kubernetes.io/dockerconfigjson",
        &[(".dockerconfigjson", dockerconfigjson(auths).as_bytes())],
    );
    serde_json::to_string_pretty(&body).unwrap_or_default()
}

fn metadata(namespace: &str, name: &str) -> Value {
    static UID: AtomicU64 = AtomicU64::new(1);
    let n = UID.fetch_add(1, Ordering::Relaxed);
    json!({
        "name": name,
        "namespace": namespace,
        "uid": format!("6f1f2d3c-0000-4000-8000-{n:012x}"),
        "resourceVersion": (1000 + n).to_string(),
        "creationTimestamp": "2024-05-01T12:00:00Z",
    })
}

fn secret_object(namespace: &str, name: &str, secret_type: &str, data: &[(&str, &[u8])]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(STANDARD.encode(v))))
        .collect();
    json!({
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": metadata(namespace, name),
        "type": secret_type,
        "data": data,
    })
}

/// The text of a kubeconfig with one cluster at `server_url`, one user with a bearer
/// `token`, and one context, [`KUBECONFIG_CONTEXT`], that is current and (when given)
/// sets `namespace`. JSON, which kubeconfig readers accept as the YAML it is.
pub fn kubeconfig_for(server_url: &str, namespace: Option<&str>, token: &str) -> String {
    let mut context = json!({"cluster": KUBECONFIG_CONTEXT, "user": KUBECONFIG_CONTEXT});
    if let Some(ns) = namespace {
        context["namespace"] = json!(ns);
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": KUBECONFIG_CONTEXT,
        "clusters": [{"name": KUBECONFIG_CONTEXT, "cluster": {"server": server_url}}],
        "users": [{"name": KUBECONFIG_CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": KUBECONFIG_CONTEXT, "context": context}],
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// Writes [`kubeconfig_for`] to `path`.
///
/// # Errors
/// [`Error::Io`] when the file cannot be written.
pub fn write_kubeconfig_for(
    path: &Path,
    server_url: &str,
    namespace: Option<&str>,
    token: &str,
) -> Result<(), Error> {
    std::fs::write(path, kubeconfig_for(server_url, namespace, token))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// One request the stand-in received.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, without `?`, if any.
    pub query: Option<String>,
    /// The bearer token sent in `Authorization`, if any (never shown by `Debug` or
    /// `Display`).
    pub bearer_token: Option<String>,
}

impl ApiRequest {
    /// A `GET` of one named, namespaced object (`.../namespaces/NS/RESOURCE/NAME`), with
    /// no query: not a list, not a watch, not discovery.
    pub fn is_named_get(&self) -> bool {
        self.method == "GET"
            && self.query.is_none()
            && matches!(route(&self.path), Route::Object { name: Some(_), .. })
    }
}

impl fmt::Display for ApiRequest {
    /// `METHOD path[?query]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method, self.path)?;
        if let Some(q) = &self.query {
            write!(f, "?{q}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ApiRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "******"),
            )
            .finish()
    }
}

/// A canned answer for one path.
#[derive(Clone)]
struct Answer {
    code: u16,
    body: String,
    content_type: &'static str,
    /// Whether this is an object that lists include.
    object: bool,
}

struct State {
    answers: BTreeMap<String, Answer>,
    requests: Vec<ApiRequest>,
    crd_installed: bool,
    required_token: Option<String>,
    addr: SocketAddr,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running stand-in API server on `127.0.0.1`; stopped on drop. See the
/// [module docs](self).
pub struct ApiServer {
    url: String,
    token: String,
    state: Arc<Mutex<State>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ApiServer {
    /// Starts a server with no objects, the `PipelinePodsTemplate` CRD installed, and any
    /// (or no) bearer token accepted. Needs no Tokio runtime: it runs its own, on its
    /// own thread.
    ///
    /// # Errors
    /// [`Error::Io`] when no port can be bound or the thread cannot start.
    pub fn start() -> Result<ApiServer, Error> {
        static TOKENS: AtomicU64 = AtomicU64::new(0);
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("binding the stand-in API server", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("binding the stand-in API server", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("binding the stand-in API server", e))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("building the stand-in API server runtime", e))?;
        let state = Arc::new(Mutex::new(State {
            answers: BTreeMap::new(),
            requests: Vec::new(),
            crd_installed: true,
            required_token: None,
            addr,
        }));
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("pullcheck-testkit-kube".into())
            .spawn(move || runtime.block_on(serve(listener, served, stop)))
            .map_err(|e| Error::io("spawning the stand-in API server thread", e))?;
        let token = format!(
            "pullcheck-testkit-kube-token-{}-{}",
            std::process::id(),
            TOKENS.fetch_add(1, Ordering::Relaxed)
        );
        Ok(ApiServer {
            url: format!("http://{addr}"),
            token,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bearer token of the kubeconfig files this server writes
    /// ([`kubeconfig`](Self::kubeconfig)).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// From now on, answers 401 to every request without `Authorization: Bearer
    /// <token>`, where the token is [`ApiServer::token`].
    pub fn require_token(&self) {
        lock(&self.state).required_token = Some(self.token.clone());
    }

    /// A kubeconfig for this server: [`kubeconfig_for`] with its URL and token.
    pub fn kubeconfig(&self, namespace: Option<&str>) -> String {
        kubeconfig_for(&self.url, namespace, &self.token)
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, for `--kubeconfig`.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path, namespace: Option<&str>) -> Result<(), Error> {
        write_kubeconfig_for(path, &self.url, namespace, &self.token)
    }

    /// Serves `body` with status 200 at the path of a named object; lists of its
    /// resource include it. The body is served as given: fill in `metadata` yourself.
    pub fn add_object(&self, namespace: &str, resource: &str, name: &str, body: Value) {
        self.set(
            object_path(namespace, resource, name),
            Answer {
                code: 200,
                body: body.to_string(),
                content_type: "application/json",
                object: true,
            },
        );
    }

    /// Serves any status, body and content type at `path` (for malformed objects,
    /// 401s, 500s, ...). Not included in lists.
    pub fn add_raw(&self, path: &str, code: u16, body: &str, content_type: &'static str) {
        self.set(
            path.to_owned(),
            Answer {
                code,
                body: body.to_owned(),
                content_type,
                object: false,
            },
        );
    }

    /// A Secret of `secret_type` whose `data` holds these keys and (raw) values, which
    /// are base64-encoded as the API serves them.
    pub fn add_secret(
        &self,
        namespace: &str,
        name: &str,
        secret_type: &str,
        data: &[(&str, &[u8])],
    ) {
        self.add_object(
            namespace,
            "secrets",
            name,
            secret_object(namespace, name, secret_type, data),
        );
    }

    /// A `kubernetes.io/dockerconfigjson` Secret holding these `auths`, as
    /// `kubectl create secret docker-registry` makes it.
    pub fn add_pull_secret(&self, namespace: &str, name: &str, auths: &[DockerAuth]) {
        let config = dockerconfigjson(auths);
        self.add_secret(
            namespace,
            name,
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", config.as_bytes())],
        );
    }

    /// A ServiceAccount with these `imagePullSecrets` (none: the field is left out, as
    /// the API server leaves out an empty list).
    pub fn add_service_account(&self, namespace: &str, name: &str, image_pull_secrets: &[&str]) {
        let mut body = json!({
            "kind": "ServiceAccount",
            "apiVersion": "v1",
            "metadata": metadata(namespace, name),
        });
        if !image_pull_secrets.is_empty() {
            let secrets: Vec<Value> = image_pull_secrets
                .iter()
                .map(|s| json!({ "name": s }))
                .collect();
            body["imagePullSecrets"] = json!(secrets);
        }
        self.add_object(namespace, "serviceaccounts", name, body);
    }

    /// A `PipelinePodsTemplate` whose `spec.template.spec` is `pod_spec` (e.g.
    /// `{"imagePullSecrets": [{"name": "regcred"}], "serviceAccountName": "builder"}`).
    pub fn add_pods_template(&self, namespace: &str, name: &str, pod_spec: Value) {
        let mut meta = metadata(namespace, name);
        meta["generation"] = json!(1);
        let body = json!({
            "apiVersion": format!("{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
            "kind": "PipelinePodsTemplate",
            "metadata": meta,
            "spec": {"template": {"metadata": {"labels": {"team": "ci"}}, "spec": pod_spec}},
        });
        self.add_object(namespace, TEMPLATE_RESOURCE, name, body);
    }

    /// Makes RBAC refuse `get` on this object: a 403 `Status` with reason `Forbidden`,
    /// whose message names [`FORBIDDEN_USER`], as the API server words it. Replaces the
    /// object, if one was added.
    pub fn forbid(&self, namespace: &str, resource: &str, name: &str) {
        let message = format!(
            "{resource} \"{name}\" is forbidden: User \"{FORBIDDEN_USER}\" cannot get \
             resource \"{resource}\" in API group \"{}\" in the namespace \"{namespace}\"",
            group_of(resource)
        );
        self.set(
            object_path(namespace, resource, name),
            Answer {
                code: 403,
                body: object_status(403, "Forbidden", &message, resource, name).to_string(),
                content_type: "application/json",
                object: false,
            },
        );
    }

    /// Removes whatever was added for this object: it is not found again.
    pub fn remove(&self, namespace: &str, resource: &str, name: &str) {
        lock(&self.state)
            .answers
            .remove(&object_path(namespace, resource, name));
    }

    /// Stops serving `pipelinepodstemplates` at all (a plain-text 404, and no group in
    /// `/apis`), as when the CRD is not installed.
    pub fn uninstall_crd(&self) {
        lock(&self.state).crd_installed = false;
    }

    /// Every request received so far (or since [`clear_requests`](Self::clear_requests)),
    /// in order. A request is recorded before it is answered.
    pub fn requests(&self) -> Vec<ApiRequest> {
        lock(&self.state).requests.clone()
    }

    /// [`requests`](Self::requests) as `METHOD path[?query]` lines.
    pub fn request_lines(&self) -> Vec<String> {
        self.requests().iter().map(ToString::to_string).collect()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.state).requests.clear();
    }

    fn set(&self, path: String, answer: Answer) {
        lock(&self.state).answers.insert(path, answer);
    }
}

/// What a path means to the API server.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// `/version`, `/api`, `/apis`, and the resource lists.
    Discovery(&'a str),
    /// `/api/v1/namespaces/NS`: the Namespace itself.
    Namespace(&'a str),
    /// A namespaced resource: its collection (`name: None`) or one object.
    Object {
        namespace: &'a str,
        resource: &'a str,
        name: Option<&'a str>,
    },
    /// Not served.
    Unknown,
}

fn route(path: &str) -> Route<'_> {
    if matches!(
        path,
        "/version" | "/api" | "/apis" | CORE_PREFIX | TEMPLATE_PREFIX | TEMPLATE_GROUP_PATH
    ) {
        return Route::Discovery(path);
    }
    let rest = if let Some(rest) = path.strip_prefix(CORE_PREFIX) {
        rest
    } else if let Some(rest) = path.strip_prefix(TEMPLATE_PREFIX) {
        rest
    } else {
        return Route::Unknown;
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let (namespace, resource, name) = match segments.as_slice() {
        ["", "namespaces", ns] if !ns.is_empty() && path.starts_with(CORE_PREFIX) => {
            return Route::Namespace(ns);
        }
        ["", "namespaces", ns, resource] => (*ns, *resource, None),
        ["", "namespaces", ns, resource, name] => (*ns, *resource, Some(*name)),
        _ => return Route::Unknown,
    };
    if namespace.is_empty() || resource.is_empty() || name == Some("") {
        return Route::Unknown;
    }
    // Under the template group only its one resource exists.
    if path.starts_with(TEMPLATE_PREFIX) != (resource == TEMPLATE_RESOURCE) {
        return Route::Unknown;
    }
    Route::Object {
        namespace,
        resource,
        name,
    }
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<Mutex<State>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    crate::http::serve_until(listener, stop, move |req: Request<Incoming>| {
        let answer = handle(&state, &req);
        async move { answer }
    })
    .await;
}

fn respond(code: u16, body: String, content_type: &'static str) -> Response<Full<Bytes>> {
    static AUDIT: AtomicU64 = AtomicU64::new(1);
    let audit = AUDIT.fetch_add(1, Ordering::Relaxed);
    Response::builder()
        .status(code)
        .header("content-type", content_type)
        .header("cache-control", "no-cache, private")
        .header("audit-id", format!("0b5e7a10-0000-4000-8000-{audit:012x}"))
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())))
}

fn json_response(code: u16, body: &Value) -> Response<Full<Bytes>> {
    respond(code, body.to_string(), "application/json")
}

fn page_not_found() -> Response<Full<Bytes>> {
    respond(
        404,
        "404 page not found\n".to_owned(),
        "text/plain; charset=utf-8",
    )
}

fn handle(state: &Mutex<State>, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let bearer_token = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let mut state = lock(state);
    state.requests.push(ApiRequest {
        method: req.method().to_string(),
        path: path.clone(),
        query: query.clone(),
        bearer_token: bearer_token.clone(),
    });
    if let Some(required) = &state.required_token
        && bearer_token.as_ref() != Some(required)
    {
        return json_response(401, &status(401, "Unauthorized", "Unauthorized"));
    }
    let route = route(&path);
    let served = match &route {
        Route::Unknown => false,
        Route::Discovery(which) => state.crd_installed || !which.starts_with(TEMPLATE_GROUP_PATH),
        Route::Namespace(_) => true,
        Route::Object { resource, .. } => *resource != TEMPLATE_RESOURCE || state.crd_installed,
    };
    if !served {
        return page_not_found();
    }
    if req.method() != Method::GET {
        return json_response(
            405,
            &status(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            ),
        );
    }
    let watch = query
        .as_deref()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    match route {
        Route::Discovery(which) => json_response(200, &discovery(which, &state)),
        // A namespace exists when something was added in it.
        Route::Namespace(namespace) => {
            let inside = format!("/namespaces/{namespace}/");
            if state.answers.keys().any(|p| p.contains(&inside)) {
                let mut meta = metadata("", namespace);
                if let Some(m) = meta.as_object_mut() {
                    m.remove("namespace");
                }
                json_response(
                    200,
                    &json!({
                        "kind": "Namespace",
                        "apiVersion": "v1",
                        "metadata": meta,
                        "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"},
                    }),
                )
            } else {
                json_response(
                    404,
                    &object_status(
                        404,
                        "NotFound",
                        &format!("namespaces \"{namespace}\" not found"),
                        "namespaces",
                        namespace,
                    ),
                )
            }
        }
        Route::Object { .. } if watch => json_response(
            400,
            &status(
                400,
                "BadRequest",
                "the pullcheck-testkit stand-in API server does not serve watches",
            ),
        ),
        Route::Object {
            resource,
            name: Some(name),
            ..
        } => match state.answers.get(&path) {
            Some(a) => respond(a.code, a.body.clone(), a.content_type),
            None => json_response(
                404,
                &object_status(
                    404,
                    "NotFound",
                    &format!("{resource} \"{name}\" not found"),
                    resource,
                    name,
                ),
            ),
        },
        Route::Object {
            resource,
            name: None,
            ..
        } => json_response(200, &list(&state, &path, resource)),
        Route::Unknown => page_not_found(),
    }
}

/// The list of the objects added under `collection` (one more path segment).
fn list(state: &State, collection: &str, resource: &str) -> Value {
    let prefix = format!("{collection}/");
    let items: Vec<Value> = state
        .answers
        .iter()
        .filter(|(path, a)| {
            a.object
                && path
                    .strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/'))
        })
        .filter_map(|(_, a)| serde_json::from_str(&a.body).ok())
        .collect();
    let (kind, api_version) = match resource {
        "secrets" => ("SecretList", "v1".to_owned()),
        "serviceaccounts" => ("ServiceAccountList", "v1".to_owned()),
        TEMPLATE_RESOURCE => (
            "PipelinePodsTemplateList",
            format!("{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
        ),
        _ => ("List", "v1".to_owned()),
    };
    json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"resourceVersion": "5000"},
        "items": items,
    })
}

fn discovery(which: &str, state: &State) -> Value {
    let template_version = json!({
        "groupVersion": format!("{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
        "version": TEMPLATE_VERSION,
    });
    let template_group = json!({
        "name": TEMPLATE_GROUP,
        "versions": [template_version.clone()],
        "preferredVersion": template_version,
    });
    let resource = |name: &str, kind: &str, short: &[&str]| {
        json!({
            "name": name,
            "singularName": "",
            "namespaced": true,
            "kind": kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": short,
        })
    };
    match which {
        CORE_PREFIX => json!({
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                resource("secrets", "Secret", &[]),
                resource("serviceaccounts", "ServiceAccount", &["sa"]),
            ],
        }),
        TEMPLATE_PREFIX => json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
            "resources": [resource(TEMPLATE_RESOURCE, "PipelinePodsTemplate", &[])],
        }),
        TEMPLATE_GROUP_PATH => {
            let mut group = template_group;
            group["kind"] = json!("APIGroup");
            group["apiVersion"] = json!("v1");
            group
        }
        "/version" => json!({
            "major": "1",
            "minor": "35",
            "gitVersion": "v1.35.0",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-12-01T00:00:00Z",
            "goVersion": "go1.25.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }),
        "/api" => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": state.addr.to_string()}
            ],
        }),
        _ => {
            let groups: Vec<Value> = if state.crd_installed {
                vec![template_group]
            } else {
                Vec::new()
            };
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/api/v1/namespaces/ns/secrets/x"),
            Route::Object {
                namespace: "ns",
                resource: "secrets",
                name: Some("x")
            }
        );
        assert_eq!(
            route("/apis/go-vela.github.io/v1alpha1/namespaces/ns/pipelinepodstemplates"),
            Route::Object {
                namespace: "ns",
                resource: "pipelinepodstemplates",
                name: None
            }
        );
        assert_eq!(route("/api/v1/secrets"), Route::Unknown);
        assert_eq!(route("/api/v1/namespaces/ns/secrets/x/y"), Route::Unknown);
        assert_eq!(route("/api/v1/namespaces/ns"), Route::Namespace("ns"));
        assert_eq!(
            route("/apis/go-vela.github.io/v1alpha1/namespaces/ns"),
            Route::Unknown
        );
        assert_eq!(route("/api/v1/namespaces/ns/secrets/"), Route::Unknown);
        assert_eq!(
            route("/apis/go-vela.github.io/v1alpha1/namespaces/ns/secrets/x"),
            Route::Unknown
        );
        assert_eq!(
            route("/api/v1/namespaces/ns/pipelinepodstemplates/x"),
            Route::Unknown
        );
        assert_eq!(route("/apis"), Route::Discovery("/apis"));
        assert_eq!(route("/api/v1"), Route::Discovery("/api/v1"));
    }

    #[test]
    fn named_gets() {
        let request = |method: &str, path: &str, query: Option<&str>| ApiRequest {
            method: method.into(),
            path: path.into(),
            query: query.map(Into::into),
            bearer_token: None,
        };
        assert!(request("GET", &secret_path("ns", "x"), None).is_named_get());
        assert!(request("GET", &pods_template_path("ns", "t"), None).is_named_get());
        assert!(!request("GET", "/api/v1/namespaces/ns/secrets", None).is_named_get());
        assert!(!request("GET", &secret_path("ns", "x"), Some("watch=true")).is_named_get());
        assert!(!request("DELETE", &secret_path("ns", "x"), None).is_named_get());
        assert!(!request("GET", "/version", None).is_named_get());
    }

    #[test]
    fn dockerconfigjson_is_what_kubectl_writes() {
        let text = dockerconfigjson(&[DockerAuth::new("r.example", "u", "p")]);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["auths"]["r.example"]["auth"], STANDARD.encode("u:p"));
        assert!(!format!("{:?}", DockerAuth::new("r", "u", "pw-secret")).contains("pw-secret"));
    }
}
