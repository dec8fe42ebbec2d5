//! The crate's error type.

use pullcheck_input::InputError;

/// Why a lookup in the cluster, or the loading of a `PipelinePodsTemplate`, failed.
///
/// Only problems that stop the walk are errors. What the kubelet itself shrugs off (a named
/// Secret or ServiceAccount that does not exist) is a warning in
/// [`PullSecretChain::warnings`](crate::PullSecretChain::warnings) instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KubeError {
    /// No usable cluster configuration: the kubeconfig cannot be read or has no such
    /// context, and (when no kubeconfig exists at all) the process is not in a cluster.
    #[error("Kubernetes configuration: {0}")]
    Config(String),

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
    /// installed (a 404 that is not a Kubernetes `Status`).
    #[error(
        "the API server at {url} does not serve go-vela.github.io/v1alpha1 \
         pipelinepodstemplates: is the CRD installed (deploy/pipelinepodstemplate-crd.yaml)?"
    )]
    TemplateApiMissing {
        /// The API server URL.
        url: String,
    },

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
