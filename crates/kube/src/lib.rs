//! Kubernetes for pullcheck: which pull secrets a build Pod will use, and Kubernetes
//! workload manifests as input.
//!
//! Two jobs, one per half of the crate:
//!
//! 1. **The credential chain** ([`Cluster`], [`walk_pull_secrets`]). The Vela Kubernetes
//!    runtime creates each build Pod from a `PipelinePodsTemplate` ([`TemplateSource`]: by
//!    name from the cluster, or from a file). The kubelet pulls with the Pod's
//!    `imagePullSecrets`, or only when it has none with its ServiceAccount's (`default`
//!    when none is named), as the ServiceAccount admission plugin copies them in. The crate
//!    finds those Secret objects and hands them over as [`FoundSecret`]s, with a record of
//!    every step ([`PullSecretChain::walked`]) for `pullcheck explain`. Parsing them into a
//!    keyring is `pullcheck-credentials`' job.
//! 2. **Workloads as input** ([`read_manifests`]): Pods, Deployments, StatefulSets,
//!    DaemonSets, ReplicaSets, Jobs and CronJobs give `pullcheck_input::ImageUse`s with the
//!    pull policy the API server would default and the position of each `image:`; each
//!    workload carries its own pull-secret settings for the chain.
//!
//! ```
//! use pullcheck_input::PullPolicy;
//! use pullcheck_kube::{is_kubernetes_manifest, read_manifests};
//!
//! let text = "\
//! apiVersion: apps/v1
//! kind: Deployment
//! metadata: {name: web}
//! spec:
//!   template:
//!     spec:
//!       imagePullSecrets: [{name: regcred}]
//!       containers:
//!         - name: app
//!           image: nginx
//! ";
//! assert!(is_kubernetes_manifest(text));
//! let manifests = read_manifests("web.yaml", text).unwrap();
//! let web = &manifests.workloads[0];
//! assert_eq!(web.pull_secrets.image_pull_secrets, ["regcred"]);
//! let image = &web.images[0];
//! assert_eq!(image.policy, PullPolicy::Always); // no tag: `latest`, so Always
//! assert_eq!((image.origin.line, image.origin.column), (Some(10), Some(18)));
//! assert_eq!(image.origin.name, "Deployment/web container app");
//! ```
//!
//! Architecture invariants:
//! - The only requests are `GET`s of named objects (a PipelinePodsTemplate, a
//!   ServiceAccount, Secrets) in one namespace: never a list, never a watch, so the RBAC
//!   Role in `deploy/rbac.yaml` can name every object with `resourceNames`.
//! - Every request has a timeout; an unreachable API server is an error naming its URL.
//! - An object is missing only when the API server says so: a 404 whose body is a `Status`
//!   of reason `NotFound`. Any other 404 (HTML, empty, other JSON) is not from a Kubernetes
//!   API server and is an error ([`KubeError::NotKubernetes`]), never a "not found"
//!   warning that would drop the cluster's pull secrets.
//! - Secret data never appears in `Debug`, `Display`, JSON or logs.
//! - The chain logic ([`walk_pull_secrets`]) sees the cluster only through
//!   [`ObjectSource`], so it is tested without a network.
//! - Manifest and template files are read with positions; a hostile file ends in bounded
//!   time and memory (aliases are shared, merges visited once, walks budgeted).

#![warn(missing_docs)]

mod chain;
mod cluster;
mod de;
mod error;
mod template;
mod workload;
mod yaml;

pub use chain::{
    DEFAULT_SERVICE_ACCOUNT, FoundSecret, ObjectSource, PodPullSecrets, PullSecretChain, Step,
    Subject, walk_pull_secrets, walk_pull_secrets_many,
};
pub use cluster::{Cluster, ClusterOptions};
pub use error::{ConfigGap, KubeError, NotKubernetesAnswer};
pub use template::{
    PipelineContainer, PipelineContainerSecurityContext, PipelinePodSecurityContext,
    PipelinePodTemplate, PipelinePodTemplateMeta, PipelinePodTemplateSpec, PipelinePodsTemplate,
    PipelinePodsTemplateSpec, TEMPLATE_GROUP, TEMPLATE_KIND, TEMPLATE_PLURAL, TEMPLATE_VERSION,
    TemplateSource, parse_template, read_template_file,
};
pub use workload::{
    Manifests, SkippedObject, Workload, default_pull_policy, is_kubernetes_manifest,
    kubernetes_pull_policy, read_manifests, read_manifests_file,
};

/// The `k8s-openapi` types this crate's API uses (`Secret`, `ServiceAccount`, ...), so that
/// callers name the same version.
pub use k8s_openapi;
