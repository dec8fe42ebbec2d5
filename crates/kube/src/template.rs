//! The `PipelinePodsTemplate` custom resource (`go-vela.github.io/v1alpha1`), with the two
//! fields this project adds: `spec.template.spec.imagePullSecrets` and
//! `spec.template.spec.serviceAccountName`.
//!
//! The types mirror upstream's Go types (go-vela/worker
//! `runtime/kubernetes/apis/vela/v1alpha1`), field for field, in their JSON spelling.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, LocalObjectReference, PodDNSConfig, Sysctl, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pullcheck_input::InputError;
use serde::{Deserialize, Serialize};

use crate::chain::{PodPullSecrets, Subject};
use crate::de;
use crate::yaml::Stream;

/// The API group of the CRD.
pub const TEMPLATE_GROUP: &str = "go-vela.github.io";
/// The API version of the CRD.
pub const TEMPLATE_VERSION: &str = "v1alpha1";
/// The CRD's kind.
pub const TEMPLATE_KIND: &str = "PipelinePodsTemplate";
/// The CRD's plural resource name, as in the API path and RBAC rules.
pub const TEMPLATE_PLURAL: &str = "pipelinepodstemplates";

/// Where the worker takes its `PipelinePodsTemplate` from (upstream's worker flags
/// `VELA_RUNTIME_PODS_TEMPLATE_NAME` and `VELA_RUNTIME_PODS_TEMPLATE_FILE`; when both are
/// set, upstream uses the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateSource {
    /// No template: the build Pod gets no `imagePullSecrets` and the `default` ServiceAccount.
    None,
    /// A template fetched by name from the build namespace.
    Name(String),
    /// A template read from a file (strictly, as upstream's `yaml.UnmarshalStrict`).
    File(PathBuf),
}

/// A `PipelinePodsTemplate` object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodsTemplate {
    /// `go-vela.github.io/v1alpha1`; not checked, as upstream does not check it either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `PipelinePodsTemplate`; not checked, as upstream does not check it either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The template.
    #[serde(default)]
    pub spec: PipelinePodsTemplateSpec,
}

/// `spec` of a [`PipelinePodsTemplate`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodsTemplateSpec {
    /// Defaults for every pipeline Pod (required by the CRD's schema; a file without it
    /// reads as empty, as upstream's Go decoding leaves the zero value).
    #[serde(default)]
    pub template: PipelinePodTemplate,
}

/// `spec.template`: what the worker copies into each pipeline Pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodTemplate {
    /// Labels and annotations for the Pod.
    #[serde(default)]
    pub metadata: PipelinePodTemplateMeta,
    /// A subset of `PodSpec`.
    #[serde(default)]
    pub spec: PipelinePodTemplateSpec,
}

/// `spec.template.metadata`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodTemplateMeta {
    /// Labels added to the Pod (the worker's own labels win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations of the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// `spec.template.spec`: a subset of core/v1 `PodSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodTemplateSpec {
    /// `PodSpec.nodeSelector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// `PodSpec.affinity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// `PodSpec.tolerations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// `PodSpec.dnsPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_policy: Option<String>,
    /// `PodSpec.dnsConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_config: Option<PodDNSConfig>,
    /// Defaults for every container of the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<PipelineContainer>,
    /// A subset of `PodSecurityContext`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PipelinePodSecurityContext>,
    /// **New.** `PodSpec.imagePullSecrets`: the Secrets the kubelet pulls with. When set
    /// (non-empty), the ServiceAccount's `imagePullSecrets` are not used, since the
    /// ServiceAccount admission plugin copies them only into a Pod that has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// **New.** `PodSpec.serviceAccountName`: the Pod's ServiceAccount (`default` when
    /// empty), whose `imagePullSecrets` apply when the Pod has none of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// `spec.template.spec.container`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineContainer {
    /// A subset of the container `SecurityContext`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PipelineContainerSecurityContext>,
}

/// `spec.template.spec.container.securityContext`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineContainerSecurityContext {
    /// Capabilities to add and drop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

/// `spec.template.spec.securityContext`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelinePodSecurityContext {
    /// `PodSecurityContext.runAsNonRoot`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as_non_root: Option<bool>,
    /// `PodSecurityContext.sysctls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysctls: Option<Vec<Sysctl>>,
}

impl PipelinePodsTemplate {
    /// The names in `spec.template.spec.imagePullSecrets`, in order, empty names left out
    /// (an entry without a name refers to nothing).
    pub fn image_pull_secret_names(&self) -> Vec<String> {
        self.spec
            .template
            .spec
            .image_pull_secrets
            .iter()
            .flatten()
            .map(|r| r.name.clone())
            .filter(|n| !n.is_empty())
            .collect()
    }

    /// `spec.template.spec.serviceAccountName`, `None` when absent or empty.
    pub fn service_account_name(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .service_account_name
            .as_deref()
            .filter(|n| !n.is_empty())
    }

    /// What the credential chain needs from this template: its `imagePullSecrets` and
    /// `serviceAccountName`, in the build namespace. `subject` says where the template came
    /// from, for the record of the walk.
    pub fn pull_secrets(&self, subject: Subject) -> PodPullSecrets {
        PodPullSecrets {
            subject,
            namespace: None,
            image_pull_secrets: self.image_pull_secret_names(),
            service_account_name: self.service_account_name().map(str::to_owned),
        }
    }
}

/// Parses a `PipelinePodsTemplate` file's text strictly, as upstream's worker does with
/// `sigs.k8s.io/yaml.UnmarshalStrict`:
///
/// - an unknown field anywhere (in our fields or inside the core/v1 types they hold, such as
///   `affinity` or `tolerations`) is an error naming the field, with its path and position;
/// - a key written twice in one mapping is an error at the second, naming the first
///   (`duplicate key "spec" (first at 1:1)`);
/// - a value of the wrong shape (`annotations` as a list) is an error at that value;
/// - only the first YAML document is read; anchors, aliases and merge keys work, and an
///   error inside aliased content is at the alias that uses it, naming where it is written.
///
/// `file` is the name used in errors.
///
/// # Errors
/// [`InputError`] with the file, line and column: not YAML, empty, not a mapping, or any of
/// the above.
pub fn parse_template(file: &str, text: &str) -> Result<PipelinePodsTemplate, InputError> {
    let error = |pos: Option<crate::yaml::Pos>, message: String| InputError {
        file: Some(file.to_owned()),
        line: pos.map(|p| p.line),
        column: pos.map(|p| p.column),
        message,
        refusal: None,
    };
    let stream = Stream::load(text).map_err(|e| error(e.pos, e.message))?;
    if let Some(dup) = stream.documents.first().and_then(|d| d.duplicate.clone()) {
        return Err(error(dup.pos, dup.message));
    }
    let Some(root) = stream.documents.first().and_then(|d| d.root) else {
        return Err(error(
            None,
            "empty: no PipelinePodsTemplate in this file".to_owned(),
        ));
    };
    if !stream.is_map(root) {
        return Err(error(
            Some(stream.pos(root)),
            format!(
                "expected a PipelinePodsTemplate mapping, found {}",
                stream.kind_name(root)
            ),
        ));
    }
    de::from_node::<PipelinePodsTemplate>(&stream, root).map_err(|e| error(e.pos, e.to_string()))
}

/// Reads and parses a `PipelinePodsTemplate` file; see [`parse_template`].
///
/// Upstream's worker silently ignores a template file it cannot read; we report it, since
/// a check against the wrong template would be worse than none.
///
/// # Errors
/// [`InputError`] naming the file when it cannot be read, or as [`parse_template`].
pub fn read_template_file(path: &Path) -> Result<PipelinePodsTemplate, InputError> {
    let (name, text) = pullcheck_input::read_file(path)?;
    parse_template(&name, &text)
}
