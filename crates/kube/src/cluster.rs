//! Cluster access: the kubeconfig (or in-cluster) configuration, and the only requests this
//! crate makes: a `GET` of one named object. Never a list, never a watch.

use pullcheck_files::FaultKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::de::DeserializeOwned;

use crate::KubeError;
use crate::chain::{ObjectSource, PodPullSecrets, PullSecretChain, Subject, walk_pull_secrets};
use crate::error::{ConfigGap, NotKubernetesAnswer};
use crate::template::{
    PipelinePodsTemplate, TEMPLATE_GROUP, TEMPLATE_PLURAL, TEMPLATE_VERSION, TemplateSource,
    read_template_file,
};

/// How to reach the cluster, as kubectl's flags say it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterOptions {
    /// An explicit kubeconfig file (`--kubeconfig`). When `None`: the files in
    /// `$KUBECONFIG` (merged, missing ones skipped), else `~/.kube/config`, else the
    /// in-cluster configuration (the Pod's ServiceAccount token).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (`--context`); `None` means its `current-context`.
    pub context: Option<String>,
    /// The build namespace: where the template, ServiceAccount and Secrets are looked up.
    /// Empty means the context's namespace (in a cluster: the Pod's own), as kubectl does.
    pub namespace: String,
}

/// A connection to one cluster's API server, with the build namespace.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    url: String,
    namespace: String,
    timeout: Duration,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Time to connect to the API server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The outcome of one `GET` that the caller interprets.
enum Answer {
    Found(Vec<u8>),
    /// 404 with a Kubernetes `Status` of reason `NotFound`: the API server served the path,
    /// and the named object does not exist.
    NotFound,
    /// Any other 404 (no body, HTML, text, JSON that is not such a `Status`): not what a
    /// Kubernetes API server answers for a missing object, so nothing is known about it.
    OtherNotFound(Other404),
}

/// A 404 that is not a Kubernetes `NotFound` `Status`.
struct Other404 {
    body: Vec<u8>,
    content_type: Option<String>,
}

/// The body of the Go mux's 404, which a real API server sends for a path it does not
/// serve at all (a CRD that is not installed), and so do Go proxies for theirs.
const GO_MUX_NOT_FOUND: &str = "404 page not found";

/// Names one object for requests and messages.
struct ObjectRef<'a> {
    /// `/api/v1` or `/apis/<group>/<version>`.
    prefix: String,
    api_group: &'static str,
    resource: &'static str,
    namespace: &'a str,
    name: &'a str,
}

impl ObjectRef<'_> {
    fn path(&self) -> String {
        format!(
            "{}/namespaces/{}/{}/{}",
            self.prefix,
            segment(self.namespace),
            self.resource,
            segment(self.name)
        )
    }
}

/// Percent-encodes one path segment (object names are DNS labels or subdomains, but the
/// names come from files we do not control).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The text of an error and its sources, each once (a source whose text is already part
/// of an outer message is left out).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut current = error.source();
    while let Some(inner) = current {
        let text = inner.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = inner.source();
    }
    parts.join(": ")
}

/// The `message` of a Kubernetes `Status` body, else the body itself (shortened).
fn status_message(body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<kube::core::Status>(body)
        && !status.message.is_empty()
    {
        return status.message;
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    let mut short: String = text.chars().take(300).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Whether `body` is a Kubernetes `Status` saying the object does not exist: JSON with
/// `"kind": "Status"` and `"reason": "NotFound"`, as a kube-apiserver answers a `GET` of a
/// missing named object (API conventions, "Response Status Kind":
/// <https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#response-status-kind>).
///
/// `kind` is checked on the JSON itself: `kube::core::Status` has no `kind` field and every
/// field defaulted, so any JSON object (even `{}`) deserializes into it.
fn is_not_found_status(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .is_some_and(|v| {
            v.get("kind").and_then(|k| k.as_str()) == Some("Status")
                && v.get("reason").and_then(|r| r.as_str()) == Some("NotFound")
        })
}

/// At most `max` characters of `text`, whitespace runs made one space, `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    let mut short: String = joined.chars().take(max).collect();
    if short.len() < joined.len() {
        short.push('…');
    }
    short
}

/// What a 404 that is not a `NotFound` `Status` carried, for an error message: `an empty
/// body`, `an HTML page titled "..."`, `JSON that is not a Kubernetes Status: ...`, `a
/// Status of reason "..."`, or the text itself.
fn describe_body(body: &[u8], content_type: Option<&str>) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "an empty body".to_owned();
    }
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        if value.get("kind").and_then(|k| k.as_str()) == Some("Status") {
            let reason = value.get("reason").and_then(|r| r.as_str()).unwrap_or("");
            return if reason.is_empty() {
                "a Status with no reason".to_owned()
            } else {
                format!("a Status of reason {reason:?}")
            };
        }
        return format!(
            "JSON that is not a Kubernetes Status: {}",
            shorten(text, 120)
        );
    }
    let lower = text.to_ascii_lowercase();
    let html = content_type.is_some_and(|t| t.to_ascii_lowercase().contains("html"))
        || lower.starts_with("<!doctype html")
        || lower.starts_with("<html");
    if html {
        let title = lower.find("<title>").and_then(|start| {
            let from = start + "<title>".len();
            let len = lower[from..].find("</title>")?;
            // `lower` has the byte offsets of `text`: ASCII lowercasing keeps lengths.
            Some(shorten(text.get(from..from + len)?, 80))
        });
        return match title {
            Some(title) if !title.is_empty() => format!("an HTML page titled {title:?}"),
            _ => "an HTML page".to_owned(),
        };
    }
    format!("the text {:?}", shorten(text, 120))
}

impl Cluster {
    /// How long one request may take, connection included, before the API server counts
    /// as unreachable.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// Loads the configuration `options` describe and builds a client; see
    /// [`ClusterOptions`] for the order of kubeconfig sources.
    ///
    /// No request is sent yet.
    ///
    /// # Errors
    /// [`KubeError::Config`] when the kubeconfig cannot be read or parsed, the context does
    /// not exist, or there is no kubeconfig and the process is not in a cluster.
    pub async fn connect(options: &ClusterOptions) -> Result<Cluster, KubeError> {
        let config = load_config(options).await?;
        Cluster::from_config(config, &options.namespace)
    }

    /// A client for the API server at `url` (`http://127.0.0.1:PORT` in tests), with no
    /// credentials and no TLS settings.
    ///
    /// # Errors
    /// [`KubeError::Config`] when `url` is not a URL.
    pub fn from_url(url: &str, namespace: &str) -> Result<Cluster, KubeError> {
        let uri = url
            .parse::<http::Uri>()
            .map_err(|e| KubeError::Config(format!("not a URL: {url:?}: {e}")))?;
        Cluster::from_config(kube::Config::new(uri), namespace)
    }

    /// A client from a ready `kube::Config`. `namespace` empty means the config's default
    /// namespace. The config's timeouts are tightened so that a silent server cannot hang
    /// the check.
    ///
    /// Like every constructor here, it must be called inside a Tokio runtime (kube spawns
    /// its request queue on it).
    ///
    /// # Errors
    /// [`KubeError::Config`] when kube cannot build a client from it (TLS settings), or when
    /// called outside a Tokio runtime.
    pub fn from_config(mut config: kube::Config, namespace: &str) -> Result<Cluster, KubeError> {
        // kube spawns its request queue on the current runtime, and would panic outside one.
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(KubeError::Config(
                "a Kubernetes client must be made inside a Tokio runtime".to_owned(),
            ));
        }
        let url = config.cluster_url.to_string();
        let namespace = if namespace.is_empty() {
            config.default_namespace.clone()
        } else {
            namespace.to_owned()
        };
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(Self::DEFAULT_TIMEOUT);
        config.reset_reader_on_write = true;
        let client = kube::Client::try_from(config).map_err(|e| {
            KubeError::Config(format!(
                "cannot make a client for {url}: {}",
                error_chain(&e)
            ))
        })?;
        Ok(Cluster {
            client,
            url,
            namespace,
            timeout: Self::DEFAULT_TIMEOUT,
        })
    }

    /// Sets the per-request timeout (default [`Cluster::DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Cluster {
        self.timeout = timeout;
        self
    }

    /// The same connection (client, timeout) for another build namespace; `pullcheck
    /// serve` connects once and names the namespace per request. Empty keeps this one.
    pub fn with_namespace(&self, namespace: &str) -> Cluster {
        let mut cluster = self.clone();
        if !namespace.is_empty() {
            cluster.namespace = namespace.to_owned();
        }
        cluster
    }

    /// The underlying `kube::Client`.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The API server URL, as configured.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The build namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The error for a 404 that is not a Kubernetes `NotFound` `Status`.
    fn not_kubernetes(&self, object: &ObjectRef<'_>, other: &Other404) -> KubeError {
        KubeError::NotKubernetes(Box::new(NotKubernetesAnswer {
            url: self.url.clone(),
            verb: "get",
            resource: object.resource,
            name: object.name.to_owned(),
            namespace: object.namespace.to_owned(),
            request: format!("GET {}{}", self.url.trim_end_matches('/'), object.path()),
            answer: describe_body(&other.body, other.content_type.as_deref()),
        }))
    }

    /// `GET` one object: its body, or a 404 told apart (a `NotFound` `Status` or anything
    /// else); every other answer is an error.
    async fn get(&self, object: &ObjectRef<'_>) -> Result<Answer, KubeError> {
        let path = object.path();
        let request = http::Request::builder()
            .method(http::Method::GET)
            .uri(&path)
            .header(http::header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| KubeError::Config(format!("cannot build the request for {path}: {e}")))?;
        let exchange = async {
            let response = self.client.send(request).await?;
            let status = response.status();
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response.into_body().collect_bytes().await?;
            Ok::<_, kube::Error>((status, content_type, body))
        };
        let (status, content_type, body) = match tokio::time::timeout(self.timeout, exchange).await
        {
            Err(_) => {
                return Err(KubeError::Unreachable {
                    url: self.url.clone(),
                    reason: format!("no answer within {} s", self.timeout.as_secs_f32()),
                });
            }
            Ok(Err(kube::Error::Auth(e))) => {
                return Err(KubeError::Unauthorized {
                    url: self.url.clone(),
                    message: error_chain(&e),
                });
            }
            Ok(Err(e)) => {
                // kube's wrappers ("ServiceError: ...") add nothing to the cause.
                let reason = match &e {
                    kube::Error::Service(inner) => error_chain(inner.as_ref()),
                    kube::Error::HyperError(inner) => error_chain(inner),
                    other => error_chain(other),
                };
                return Err(KubeError::Unreachable {
                    url: self.url.clone(),
                    reason,
                });
            }
            Ok(Ok(answer)) => answer,
        };
        tracing::debug!(path, status = status.as_u16(), "kubernetes get");
        match status.as_u16() {
            200..=299 => Ok(Answer::Found(body.to_vec())),
            404 if is_not_found_status(&body) => Ok(Answer::NotFound),
            404 => Ok(Answer::OtherNotFound(Other404 {
                body: body.to_vec(),
                content_type,
            })),
            401 => Err(KubeError::Unauthorized {
                url: self.url.clone(),
                message: status_message(&body),
            }),
            403 => Err(KubeError::Forbidden {
                verb: "get",
                resource: object.resource,
                api_group: object.api_group,
                name: object.name.to_owned(),
                namespace: object.namespace.to_owned(),
                message: status_message(&body),
            }),
            code => Err(KubeError::Api {
                verb: "get",
                resource: object.resource,
                name: object.name.to_owned(),
                namespace: object.namespace.to_owned(),
                code,
                message: status_message(&body),
            }),
        }
    }

    async fn get_core<T: DeserializeOwned>(
        &self,
        resource: &'static str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<T>, KubeError> {
        let object = ObjectRef {
            prefix: "/api/v1".to_owned(),
            api_group: "",
            resource,
            namespace,
            name,
        };
        match self.get(&object).await? {
            Answer::NotFound => Ok(None),
            Answer::OtherNotFound(other) => Err(self.not_kubernetes(&object, &other)),
            Answer::Found(body) => decode(&body, &object).map(Some),
        }
    }

    /// `GET /api/v1/namespaces/NS/secrets/NAME`; `Ok(None)` when the API server answers
    /// 404 with a `Status` of reason `NotFound` (the Secret does not exist).
    ///
    /// # Errors
    /// [`KubeError::NotKubernetes`] for any other 404 (no body, HTML, text, other JSON):
    /// the answer is not from a Kubernetes API server, so the Secret's absence is not
    /// known; [`KubeError::Forbidden`] (403), [`KubeError::Unauthorized`] (401),
    /// [`KubeError::Unreachable`], [`KubeError::Malformed`] (not a Secret), [`KubeError::Api`].
    pub async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, KubeError> {
        self.get_core("secrets", namespace, name).await
    }

    /// `GET /api/v1/namespaces/NS/serviceaccounts/NAME`; `Ok(None)` when the API server
    /// answers 404 with a `Status` of reason `NotFound` (the ServiceAccount does not exist).
    ///
    /// # Errors
    /// As [`Cluster::secret`]: any other 404 is [`KubeError::NotKubernetes`].
    pub async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, KubeError> {
        self.get_core("serviceaccounts", namespace, name).await
    }

    /// `GET /apis/go-vela.github.io/v1alpha1/namespaces/NS/pipelinepodstemplates/NAME` in the
    /// build namespace, as upstream's worker does in `SetupBuild`.
    ///
    /// The object is read leniently (unknown fields ignored), as Go's client decodes it: the
    /// API server has already pruned it to the CRD's schema.
    ///
    /// # Errors
    /// [`KubeError::TemplateNotFound`] on a 404 with a `Status` of reason `NotFound`;
    /// [`KubeError::TemplateApiMissing`] on the plain-text `404 page not found` a real API
    /// server sends when the CRD is not installed (a Go proxy's 404 reads the same); any
    /// other 404 is [`KubeError::NotKubernetes`]; otherwise as [`Cluster::secret`].
    pub async fn pipeline_pods_template(
        &self,
        name: &str,
    ) -> Result<PipelinePodsTemplate, KubeError> {
        let object = ObjectRef {
            prefix: format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
            api_group: TEMPLATE_GROUP,
            resource: TEMPLATE_PLURAL,
            namespace: &self.namespace,
            name,
        };
        match self.get(&object).await? {
            Answer::Found(body) => decode(&body, &object),
            Answer::NotFound => Err(KubeError::TemplateNotFound {
                name: name.to_owned(),
                namespace: self.namespace.clone(),
            }),
            Answer::OtherNotFound(other)
                if String::from_utf8_lossy(&other.body).trim() == GO_MUX_NOT_FOUND =>
            {
                Err(KubeError::TemplateApiMissing {
                    url: self.url.clone(),
                })
            }
            Answer::OtherNotFound(other) => Err(self.not_kubernetes(&object, &other)),
        }
    }

    /// The whole chain for the build Pod: loads the template from `source` (a GET by name, or
    /// a strict read of a file), then walks its `imagePullSecrets` or its ServiceAccount's,
    /// then the Secrets.
    ///
    /// # Errors
    /// [`KubeError::TemplateFile`] for a bad template file; otherwise as
    /// [`Cluster::pipeline_pods_template`] and [`walk_pull_secrets`].
    pub async fn build_pull_secrets(
        &self,
        source: &TemplateSource,
    ) -> Result<PullSecretChain, KubeError> {
        Ok(self.build_pod(source).await?.1)
    }

    /// [`Cluster::build_pull_secrets`], also returning the template it loaded (`None` for
    /// [`TemplateSource::None`]), so that a caller that needs more of it (the
    /// `nodeSelector` of the placeholder's platform) does not fetch it again.
    ///
    /// # Errors
    /// As [`Cluster::build_pull_secrets`].
    pub async fn build_pod(
        &self,
        source: &TemplateSource,
    ) -> Result<(Option<PipelinePodsTemplate>, PullSecretChain), KubeError> {
        let (template, pod) = match source {
            TemplateSource::None => (None, PodPullSecrets::no_template()),
            TemplateSource::Name(name) => {
                let template = self.pipeline_pods_template(name).await?;
                let pod = template.pull_secrets(Subject::Template { name: name.clone() });
                (Some(template), pod)
            }
            TemplateSource::File(path) => {
                let template = read_template_file(path).map_err(KubeError::TemplateFile)?;
                let pod = template.pull_secrets(Subject::TemplateFile {
                    path: path.display().to_string(),
                });
                (Some(template), pod)
            }
        };
        Ok((template, walk_pull_secrets(self, &pod).await?))
    }
}

fn decode<T: DeserializeOwned>(body: &[u8], object: &ObjectRef<'_>) -> Result<T, KubeError> {
    serde_json::from_slice(body).map_err(|e| KubeError::Malformed {
        resource: object.resource,
        name: object.name.to_owned(),
        namespace: object.namespace.to_owned(),
        message: e.to_string(),
    })
}

impl ObjectSource for Cluster {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, KubeError> {
        Cluster::service_account(self, namespace, name).await
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, KubeError> {
        Cluster::secret(self, namespace, name).await
    }
}

/// Where a kubeconfig came from: its file (the files `$KUBECONFIG` named, joined by `, `).
struct Origin {
    file: String,
    from_env: bool,
}

impl Origin {
    fn file(path: &Path) -> Origin {
        Origin {
            file: path.display().to_string(),
            from_env: false,
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.from_env {
            write!(f, "$KUBECONFIG ({})", self.file)
        } else {
            f.write_str(&self.file)
        }
    }
}

/// The configuration `options` describe: explicit kubeconfig, else `$KUBECONFIG`, else
/// `~/.kube/config`, else in-cluster.
async fn load_config(options: &ClusterOptions) -> Result<kube::Config, KubeError> {
    let kubeconfig = if let Some(path) = &options.kubeconfig {
        Some((read_kubeconfig(path, false)?, Origin::file(path)))
    } else if let Some(found) = from_env_list()? {
        Some(found)
    } else {
        match std::env::var_os("HOME").map(|home| Path::new(&home).join(".kube").join("config")) {
            Some(path) if path.is_file() => {
                Some((read_kubeconfig(&path, false)?, Origin::file(&path)))
            }
            _ => None,
        }
    };
    match kubeconfig {
        Some((kubeconfig, origin)) => {
            // A YAML file with none of a kubeconfig's lists is some other file.
            let no_kubeconfig = kubeconfig.clusters.is_empty()
                && kubeconfig.contexts.is_empty()
                && kubeconfig.auth_infos.is_empty();
            let kube_options = KubeConfigOptions {
                context: options.context.clone(),
                cluster: None,
                user: None,
            };
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube_options)
                .await
                .map_err(|e| {
                    let mut kind = FaultKind::Invalid;
                    let problem = match (&e, options.context.as_deref()) {
                        _ if no_kubeconfig => {
                            kind = FaultKind::Syntax;
                            "it has no clusters, contexts or users (expected apiVersion: v1, \
                             kind: Config)"
                                .to_owned()
                        }
                        (kube::config::KubeconfigError::LoadContext(_), Some(context)) => {
                            format!("it has no context {context:?}")
                        }
                        (kube::config::KubeconfigError::CurrentContextNotSet, None) => {
                            return KubeError::Incomplete(ConfigGap::NoCurrentContext {
                                kubeconfig: origin.to_string(),
                            });
                        }
                        _ => error_chain(&e),
                    };
                    KubeError::Kubeconfig {
                        file: origin.file.clone(),
                        from_env: origin.from_env,
                        kind,
                        line: None,
                        column: None,
                        message: problem,
                    }
                })
        }
        None if options.context.is_some() => {
            Err(KubeError::Incomplete(ConfigGap::NoKubeconfigForContext))
        }
        None => kube::Config::incluster().map_err(|e| {
            KubeError::Incomplete(ConfigGap::NoKubeconfig {
                in_cluster: error_chain(&e),
            })
        }),
    }
}

/// Reads a kubeconfig with kube-rs (which makes the paths in it absolute), after
/// refusing (`pullcheck_files::check_bounded`) a device or an over-large file there or
/// at any file it names (CA, client certificate and key, token file): kube-rs reads them whole.
/// `label` follows the path in errors.
fn read_kubeconfig(path: &Path, from_env: bool) -> Result<Kubeconfig, KubeError> {
    let error = |kind: FaultKind, problem: String| KubeError::Kubeconfig {
        file: path.display().to_string(),
        from_env,
        kind,
        line: None,
        column: None,
        message: problem,
    };
    pullcheck_files::check_bounded(path)
        .map_err(|e| error(FaultKind::Unreadable, e.to_string()))?;
    // kube-rs names the path quoted twice (`from '"nosuch"'`); the error names it already.
    let config = Kubeconfig::read_from(path).map_err(|e| {
        if let kube::config::KubeconfigError::Parse(yaml) = &e {
            return yaml_error(path, from_env, yaml);
        }
        let quoted = format!(" from '{:?}'", path.display().to_string());
        let quoted_path = format!(" from '{path:?}'");
        let kind = match &e {
            kube::config::KubeconfigError::ReadConfig(..) => FaultKind::Unreadable,
            kube::config::KubeconfigError::Parse(_) => FaultKind::Syntax,
            _ => FaultKind::Invalid,
        };
        error(
            kind,
            error_chain(&e)
                .replace(&quoted, "")
                .replace(&quoted_path, ""),
        )
    })?;
    let named = config
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref())
        .flat_map(|c| [("certificate-authority", &c.certificate_authority)])
        .chain(
            config
                .auth_infos
                .iter()
                .filter_map(|a| a.auth_info.as_ref())
                .flat_map(|a| {
                    [
                        ("client-certificate", &a.client_certificate),
                        ("client-key", &a.client_key),
                        ("tokenFile", &a.token_file),
                    ]
                }),
        );
    for (what, file) in named {
        if let Some(file) = file {
            pullcheck_files::check_bounded(Path::new(file))
                .map_err(|e| error(FaultKind::Unreadable, format!("{what} {file}: {e}")))?;
        }
    }
    Ok(config)
}

/// A kubeconfig's YAML error as file, line, column and the parser's words. Never the
/// source snippet serde-saphyr draws (the lines around the error, tokens and passwords
/// included) nor a value it quotes.
fn yaml_error(path: &Path, from_env: bool, error: &serde_saphyr::Error) -> KubeError {
    use serde_saphyr::MessageFormatter as _;
    let error = error.without_snippet();
    let (line, column) = error
        .location()
        .filter(|l| l.line() > 0)
        .map_or((None, None), |l| {
            (
                usize::try_from(l.line()).ok(),
                usize::try_from(l.column()).ok().filter(|&c| c > 0),
            )
        });
    let words = serde_saphyr::DefaultMessageFormatter.format_message(error);
    KubeError::Kubeconfig {
        file: path.display().to_string(),
        from_env,
        kind: FaultKind::Syntax,
        line,
        column,
        message: pullcheck_files::without_values(&words),
    }
}

/// `$KUBECONFIG`: a list of files, merged in order (first one to set a value wins); empty
/// entries and files that do not exist are skipped, as kubectl skips them.
fn from_env_list() -> Result<Option<(Kubeconfig, Origin)>, KubeError> {
    let Some(value) = std::env::var_os("KUBECONFIG") else {
        return Ok(None);
    };
    let paths: Vec<PathBuf> = std::env::split_paths(&value)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    if paths.is_empty() {
        return Ok(None);
    }
    let mut merged: Option<Kubeconfig> = None;
    let mut used = Vec::new();
    for path in &paths {
        // Skipped only when absent: a device or a directory there is an error.
        if !path.exists() {
            continue;
        }
        let config = read_kubeconfig(path, true)?;
        merged = Some(match merged {
            None => config,
            Some(m) => m
                .merge(config)
                .map_err(|e| KubeError::Config(format!("$KUBECONFIG: {}", error_chain(&e))))?,
        });
        used.push(path.display().to_string());
    }
    match merged {
        Some(config) => Ok(Some((
            config,
            Origin {
                file: used.join(", "),
                from_env: true,
            },
        ))),
        None => Err(KubeError::Config(format!(
            "$KUBECONFIG names no existing file: {}",
            value.to_string_lossy()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_is_an_error_not_a_panic() {
        let err = Cluster::from_url("http://127.0.0.1:1", "ns").expect_err("no runtime");
        assert!(err.to_string().contains("Tokio runtime"), "{err}");
        let err = Cluster::from_url("not a url at all", "ns").expect_err("bad url");
        assert!(err.to_string().contains("not a URL"), "{err}");
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(segment("regcred-1.x"), "regcred-1.x");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment("é"), "%C3%A9");
    }

    #[test]
    fn status_messages_prefer_the_status() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"secrets \"x\" is forbidden","reason":"Forbidden","code":403}"#;
        assert_eq!(status_message(body), "secrets \"x\" is forbidden");
        assert!(
            !is_not_found_status(body),
            "a Forbidden Status is not NotFound"
        );
        assert_eq!(
            status_message(b"404 page not found\n"),
            "404 page not found"
        );
        assert!(!is_not_found_status(b"404 page not found\n"));
        assert_eq!(status_message(b""), "(no message)");
    }

    #[test]
    fn only_a_not_found_status_means_not_found() {
        // What a kube-apiserver sends for a GET of a missing named object: the `Status`
        // kind of the API conventions ("Response Status Kind",
        // https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#response-status-kind).
        let real = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"serviceaccounts \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"serviceaccounts"},"code":404}"#;
        assert!(is_not_found_status(real));
        assert!(is_not_found_status(
            br#"{"reason":"NotFound","kind":"Status"}"#
        ));
        for other in [
            &b""[..],
            b"404 page not found\n",
            b"<!DOCTYPE HTML><html><head><title>Error response</title></head></html>",
            b"{}",
            br#"{"reason":"NotFound"}"#,
            br#"{"kind":"Status","reason":"Forbidden"}"#,
            br#"{"kind":"ServiceAccount","metadata":{"name":"x"}}"#,
            br#"{"error":"not found"}"#,
            b"null",
        ] {
            assert!(
                !is_not_found_status(other),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn other_404_bodies_are_described() {
        assert_eq!(describe_body(b"", None), "an empty body");
        assert_eq!(describe_body(b" \n", Some("text/plain")), "an empty body");
        // python3 -m http.server's 404 page.
        let html = b"<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 404</p>\n    </body>\n</html>\n";
        assert_eq!(
            describe_body(html, Some("text/html;charset=utf-8")),
            "an HTML page titled \"Error response\""
        );
        assert_eq!(
            describe_body(b"<h1>Not Found</h1>", Some("text/html")),
            "an HTML page"
        );
        assert_eq!(
            describe_body(b"404 page not found\n", Some("text/plain; charset=utf-8")),
            "the text \"404 page not found\""
        );
        assert_eq!(
            describe_body(br#"{"error":"no route"}"#, Some("application/json")),
            "JSON that is not a Kubernetes Status: {\"error\":\"no route\"}"
        );
        assert_eq!(
            describe_body(br#"{"kind":"Status","reason":"Gone"}"#, None),
            "a Status of reason \"Gone\""
        );
        let long = "x".repeat(500);
        let described = describe_body(long.as_bytes(), None);
        assert!(described.ends_with("…\""), "{described}");
        assert!(described.chars().count() < 140, "{described}");
    }
}
