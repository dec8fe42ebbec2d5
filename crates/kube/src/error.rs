//! The crate's error type.

use pullcheck_input::InputError;

/// Why a lookup in the cluster, or the loading of a `PipelinePodsTemplate`, failed.
///
/// Only problems that stop the walk are errors. What the kubelet itself shrugs off (a named
/// Secret or ServiceAccount that does not exist) is a warning in
/// [`PullSecretChain::warnings`](crate::PullSecretChain::warnings) instead; an object counts
/// as missing only when the API server says so with a 404 `Status` of reason `NotFound`.
/// Any other 404 is [`KubeError::NotKubernetes`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KubeError {
    /// No usable cluster configuration: the kubeconfig cannot be read or has no such
    /// context, and (when no kubeconfig exists at all) the process is not in a cluster.
    #[error("Kubernetes configuration: {0}")]
    Config(String),

    /// A kubeconfig file that cannot be read (kind `Unreadable`, also a file it names:
    /// `certificate-authority PATH: …`), is not a kubeconfig (`Syntax`: not YAML, or none
    /// of `clusters`, `contexts`, `users`), or names a context or value kube-rs refuses
    /// (`Invalid`). `file` is the kubeconfig's path, `from_env` whether `$KUBECONFIG`
    /// named it; each front end names its own option for the file. A YAML error gives its
    /// `line` and `column` (1-based) and the parser's words without the file's lines or
    /// values (`pullcheck_files::without_values`): a kubeconfig holds tokens and passwords.
    #[error(
        "Kubernetes configuration: kubeconfig {file}{}: {}{}{message}",
        if *from_env { " (from $KUBECONFIG)" } else { "" },
        if *kind == pullcheck_files::FaultKind::Syntax { "not a kubeconfig: " } else { "" },
        match (line, column) {
            (Some(l), Some(c)) => format!("line {l}, column {c}: "),
            (Some(l), None) => format!("line {l}: "),
            _ => String::new(),
        }
    )]
    Kubeconfig {
        /// The kubeconfig's path, as given or found.
        file: String,
        /// Whether `$KUBECONFIG` named it.
        from_env: bool,
        /// What kind of problem.
        kind: pullcheck_files::FaultKind,
        /// 1-based line of a YAML error, when known.
        line: Option<usize>,
        /// 1-based column (in characters) of a YAML error, when known.
        column: Option<usize>,
        /// What is wrong, without the path, the position or any of the file's text.
        message: String,
    },

    /// No usable cluster configuration, for a reason the caller can fix by naming a
    /// context or a kubeconfig ([`ConfigGap`]); each front end names its own option.
    #[error("Kubernetes configuration: {0}")]
    Incomplete(ConfigGap),

    /// The API server did not answer: connection refused, DNS, TLS, or no answer within the
    /// request timeout. `url` is the API server's URL as configured.
    #[error("cannot reach the Kubernetes API server at {url}: {reason}")]
    Unreachable {
        /// The API server URL.
        url: String,
        /// What went wrong, innermost cause included.
        reason: String,
    },

    /// The API server did not accept our credentials (401), or the kubeconfig's
    /// credential plugin failed.
    #[error("the Kubernetes API server at {url} did not accept our credentials: {message}")]
    Unauthorized {
        /// The API server URL.
        url: String,
        /// The server's message or the plugin's error.
        message: String,
    },

    /// RBAC refused a request (403). The message names the verb, resource, name and
    /// namespace, and the rule to add to the Role of `deploy/rbac.yaml`.
    #[error(
        "forbidden: {verb} {resource} {name:?} in namespace {namespace:?}: add this to the Role \
         (see deploy/rbac.yaml): {{apiGroups: [{api_group:?}], resources: [{resource:?}], \
         verbs: [{verb:?}], resourceNames: [{name:?}]}}; the API server said: {message}"
    )]
    Forbidden {
        /// Always `get`: nothing else is ever asked.
        verb: &'static str,
        /// `secrets`, `serviceaccounts` or `pipelinepodstemplates`.
        resource: &'static str,
        /// The API group: empty for core, `go-vela.github.io` for templates.
        api_group: &'static str,
        /// The object's name.
        name: String,
        /// The namespace.
        namespace: String,
        /// The API server's own message (it names the user or ServiceAccount refused).
        message: String,
    },

    /// The named `PipelinePodsTemplate` does not exist. Upstream's worker fails the build
    /// in this case too (its `SetupBuild` returns the GET error).
    #[error(
        "PipelinePodsTemplate {name:?} not found in namespace {namespace:?} \
         (go-vela.github.io/v1alpha1)"
    )]
    TemplateNotFound {
        /// The template name.
        name: String,
        /// The namespace.
        namespace: String,
    },

    /// The API server does not serve `pipelinepodstemplates` at all: the CRD is not
    /// installed. That is the plain-text `404 page not found` a kube-apiserver sends for a
    /// path it does not serve; since a Go proxy or another server in front of the wrong
    /// path answers the same, the message also asks to check the server URL.
    #[error(
        "the API server at {url} does not serve go-vela.github.io/v1alpha1 \
         pipelinepodstemplates: is the CRD installed (deploy/pipelinepodstemplate-crd.yaml)? \
         If it is, check the kubeconfig's server URL: a plain 404 page is also what a server \
         that is not a Kubernetes API server answers"
    )]
    TemplateApiMissing {
        /// The API server URL.
        url: String,
    },

    /// A `GET` of a named object was answered 404 with something other than a Kubernetes
    /// `Status` of reason `NotFound` (no body, an HTML page, text, other JSON). A
    /// kube-apiserver answers a missing object with such a `Status`, so this answer is not
    /// from one: typically the kubeconfig's `server` URL has a wrong path or points at a
    /// proxy or web server. Whether the object exists is unknown, so this is an error, not
    /// the "not found" warning. The message names the server URL, the request (verb,
    /// resource, name, namespace and the full URL) and what came back.
    #[error("{0}")]
    NotKubernetes(Box<NotKubernetesAnswer>),
    /// An object came back but cannot be read as its type (a Secret whose `data` is not
    /// base64, a body that is not JSON).
    #[error("malformed {resource} {name:?} in namespace {namespace:?}: {message}")]
    Malformed {
        /// The resource (`secrets`, ...).
        resource: &'static str,
        /// The object's name.
        name: String,
        /// The namespace.
        namespace: String,
        /// What is wrong.
        message: String,
    },

    /// Any other error answer from the API server (5xx, 429 after kube's own retries, ...).
    #[error(
        "{verb} {resource} {name:?} in namespace {namespace:?}: the API server answered \
         {code}: {message}"
    )]
    Api {
        /// Always `get`.
        verb: &'static str,
        /// The resource.
        resource: &'static str,
        /// The object's name.
        name: String,
        /// The namespace.
        namespace: String,
        /// The HTTP status code.
        code: u16,
        /// The server's message.
        message: String,
    },

    /// A `PipelinePodsTemplate` file cannot be read or parsed; the error names the file,
    /// line and column.
    #[error("{0}")]
    TemplateFile(InputError),
}

/// The details of [`KubeError::NotKubernetes`]: a 404 that is not a Kubernetes `NotFound`
/// `Status`, and the request it answered. (Boxed there, to keep `KubeError` small.)
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotKubernetesAnswer {
    /// The server URL, as configured (the kubeconfig's `server`).
    pub url: String,
    /// Always `get`.
    pub verb: &'static str,
    /// `secrets`, `serviceaccounts` or `pipelinepodstemplates`.
    pub resource: &'static str,
    /// The object's name.
    pub name: String,
    /// The namespace.
    pub namespace: String,
    /// The request as sent: the method and the full URL,
    /// `GET https://host/prefix/api/v1/namespaces/NS/serviceaccounts/NAME`.
    pub request: String,
    /// What the answer carried: `an empty body`, `an HTML page titled "..."`, `the text
    /// "..."`, `JSON that is not a Kubernetes Status: ...`, `a Status of reason "..."`.
    pub answer: String,
}

impl std::fmt::Display for NotKubernetesAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {:?} in namespace {:?}: {} was answered 404 with {}, which is not from a \
             Kubernetes API server (it answers a missing object with a Status of reason \
             NotFound): check the kubeconfig's server URL {}",
            self.verb,
            self.resource,
            self.name,
            self.namespace,
            self.request,
            self.answer,
            self.url
        )
    }
}

/// What the cluster configuration lacks ([`KubeError::Incomplete`]), as data. `Display`
/// says it without naming any option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigGap {
    /// The kubeconfig (`kubeconfig`, its path or origin) sets no `current-context`, and
    /// no context was given.
    #[error("kubeconfig {kubeconfig}: it sets no current-context; name a context")]
    NoCurrentContext {
        /// Where the kubeconfig came from (its path).
        kubeconfig: String,
    },
    /// A context was given, but there is no kubeconfig (none given, no `$KUBECONFIG`, no
    /// `~/.kube/config`).
    #[error("a context was given but there is no kubeconfig ($KUBECONFIG, ~/.kube/config)")]
    NoKubeconfigForContext,
    /// There is no kubeconfig, and the process is not in a cluster (`in_cluster` says why
    /// the in-cluster configuration failed).
    #[error("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster: {in_cluster}")]
    NoKubeconfig {
        /// Why the in-cluster configuration is unusable.
        in_cluster: String,
    },
}
