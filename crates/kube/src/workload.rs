//! Kubernetes workload manifests as input: the images of every container, with the pull
//! policy the API server would default, and each workload's own pull-secret settings.

use std::path::Path;

use pullcheck_input::{ContainerKind, Disposition, ImageUse, InputError, Origin, PullPolicy};
use pullcheck_reference::Reference;

use crate::chain::{PodPullSecrets, Subject};
use crate::yaml::{NodeId, Pos, Stream, YamlError};

/// One workload (or bare Pod) of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `Pod`, `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`, `Job`, `CronJob`,
    /// `ReplicationController` or `PodTemplate`.
    pub kind: String,
    /// As written (`apps/v1`, ...).
    pub api_version: String,
    /// `metadata.name`; else `metadata.generateName` followed by `*`; else `document N`.
    pub name: String,
    /// `metadata.namespace`, if set.
    pub namespace: Option<String>,
    /// The file, as given.
    pub file: String,
    /// 1-based line of the object.
    pub line: usize,
    /// 1-based column of the object.
    pub column: usize,
    /// The pod spec's `imagePullSecrets` and `serviceAccountName` (or the deprecated
    /// `serviceAccount` when that is empty), for the credential chain.
    pub pull_secrets: PodPullSecrets,
    /// One use per container, init container and ephemeral container, in that order.
    pub images: Vec<ImageUse>,
}

/// A document or list item that is not a workload, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedObject {
    /// Its `kind`, if it has one.
    pub kind: Option<String>,
    /// Its `metadata.name`, if it has one.
    pub name: Option<String>,
    /// 1-based line where it starts.
    pub line: usize,
    /// Why it was skipped.
    pub reason: String,
}

/// Everything read from one manifest file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifests {
    /// The workloads, in file order (the items of a `List` where it stands).
    pub workloads: Vec<Workload>,
    /// Objects that hold no pod template (Services, ConfigMaps, ...).
    pub skipped: Vec<SkippedObject>,
}

impl Manifests {
    /// Every image use of every workload, in order.
    pub fn images(&self) -> Vec<ImageUse> {
        self.workloads
            .iter()
            .flat_map(|w| w.images.iter().cloned())
            .collect()
    }

    /// The pull-secret settings of every workload, in order, for
    /// [`walk_pull_secrets_many`](crate::walk_pull_secrets_many).
    pub fn pull_secrets(&self) -> Vec<PodPullSecrets> {
        self.workloads
            .iter()
            .map(|w| w.pull_secrets.clone())
            .collect()
    }
}

/// The `imagePullPolicy` the API server gives a container that has none
/// (`SetDefaults_Container` in core/v1): the image is parsed as the kubelet's
/// `parsers.ParseImageName` does, and a reference with neither tag nor digest counts as tag
/// `latest`.
///
/// - tag `latest` (written, or implied) → `Always`, even when a digest is present too;
/// - anything else, a digest-only reference included → `IfNotPresent`
///   ([`PullPolicy::NotPresent`]);
/// - a reference that does not parse → `IfNotPresent` (upstream ignores the parse error
///   there and leaves the rejection to validation).
pub fn default_pull_policy(image: &str) -> PullPolicy {
    match Reference::parse_normalized(image) {
        Ok(r) if r.tag() == Some("latest") => PullPolicy::Always,
        Ok(r) if r.tag().is_none() && r.digest().is_none() => PullPolicy::Always,
        _ => PullPolicy::NotPresent,
    }
}

/// Maps a Kubernetes `imagePullPolicy` (`Always`, `IfNotPresent`, `Never`; case-sensitive,
/// as the API validates it). `None` for anything else.
pub fn kubernetes_pull_policy(value: &str) -> Option<PullPolicy> {
    match value {
        "Always" => Some(PullPolicy::Always),
        "IfNotPresent" => Some(PullPolicy::NotPresent),
        "Never" => Some(PullPolicy::Never),
        _ => None,
    }
}

/// Whether `text` looks like a Kubernetes manifest: its first non-empty YAML document is a
/// mapping with `apiVersion` and `kind` strings. A Vela pipeline has neither. For routing
/// files between readers; it does not say the file holds a workload.
pub fn is_kubernetes_manifest(text: &str) -> bool {
    let Ok(stream) = Stream::load(text) else {
        return false;
    };
    let Some(root) = stream.documents.iter().find_map(|d| d.root) else {
        return false;
    };
    let scalar = |key: &str| {
        stream
            .get(root, key)
            .ok()
            .flatten()
            .and_then(|n| stream.text(n))
            .is_some_and(|t| !t.is_empty())
    };
    scalar("apiVersion") && scalar("kind")
}

/// Reads a manifest file from disk; see [`read_manifests`].
///
/// # Errors
/// [`InputError`] naming the file when it cannot be read, or as [`read_manifests`].
pub fn read_manifests_file(path: &Path) -> Result<Manifests, InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| InputError {
        file: Some(name.clone()),
        line: None,
        column: None,
        message: format!("cannot read: {e}"),
    })?;
    read_manifests(&name, &text)
}

/// Reads Kubernetes manifests: every YAML document, and the `items` of a `List` (`v1/List`,
/// or any `…List` kind).
///
/// - Workloads: `Pod` (`spec`), `Deployment`, `StatefulSet`, `DaemonSet`, `ReplicaSet`,
///   `Job`, `ReplicationController` (`spec.template.spec`), `CronJob`
///   (`spec.jobTemplate.spec.template.spec`) and `PodTemplate` (`template.spec`), in the core,
///   `apps`, `batch` or `extensions` API groups. Other objects are [`Manifests::skipped`].
/// - Each of `containers`, `initContainers` and `ephemeralContainers` gives one
///   [`ImageUse`], with the position of its `image:` value. `imagePullPolicy` maps
///   `Always` → always, `IfNotPresent` → not_present, `Never` → never; when absent or empty
///   it is defaulted by [`default_pull_policy`]. Any other value, a container without an
///   image, or a container that is not a mapping is [`Disposition::Invalid`] at its position.
/// - The origin's kind is [`ContainerKind::Container`], and its name says the rest:
///   `Deployment/web container app`, `CronJob/backup initContainer setup`.
/// - Anchors, aliases and merge keys work.
///
/// # Errors
/// [`InputError`] with file, line and column when the text is not YAML, or a workload's pod
/// spec has the wrong shape (`containers` not a list, `spec` not a mapping).
pub fn read_manifests(file: &str, text: &str) -> Result<Manifests, InputError> {
    let stream = Stream::load(text).map_err(|e| yaml_error(file, e))?;
    let mut reader = Reader {
        file,
        stream: &stream,
        out: Manifests::default(),
    };
    for (index, doc) in stream.documents.iter().enumerate() {
        if let Some(root) = doc.root {
            reader
                .object(root, index + 1, 0)
                .map_err(|e| yaml_error(file, e))?;
        }
    }
    Ok(reader.out)
}

fn yaml_error(file: &str, e: YamlError) -> InputError {
    InputError {
        file: Some(file.to_owned()),
        line: e.pos.map(|p| p.line),
        column: e.pos.map(|p| p.column),
        message: e.message,
    }
}

/// Where the pod spec of each workload kind is.
fn pod_spec_path(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "Pod" => &["spec"],
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => &["spec", "template", "spec"],
        "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
        "PodTemplate" => &["template", "spec"],
        _ => return None,
    })
}

/// The API groups whose kinds of these names are the core/v1 workloads.
fn is_workload_group(api_version: &str) -> bool {
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    matches!(group, "" | "apps" | "batch" | "extensions")
}

/// The three container lists, and the word for one entry of each.
const CONTAINER_LISTS: [(&str, &str); 3] = [
    ("containers", "container"),
    ("initContainers", "initContainer"),
    ("ephemeralContainers", "ephemeralContainer"),
];

struct Reader<'a> {
    file: &'a str,
    stream: &'a Stream,
    out: Manifests,
}

impl Reader<'_> {
    fn err(&self, pos: Pos, message: String) -> YamlError {
        YamlError {
            pos: Some(pos),
            message,
        }
    }

    fn text_of(&self, map: NodeId, key: &str) -> Result<Option<String>, YamlError> {
        Ok(self
            .stream
            .get(map, key)?
            .and_then(|n| self.stream.text(n))
            .filter(|t| !t.is_empty())
            .map(str::to_owned))
    }

    fn skip(&mut self, node: NodeId, kind: Option<String>, name: Option<String>, reason: String) {
        self.out.skipped.push(SkippedObject {
            kind,
            name,
            line: self.stream.pos(node).line,
            reason,
        });
    }

    fn object(&mut self, node: NodeId, document: usize, depth: usize) -> Result<(), YamlError> {
        if !self.stream.is_map(node) {
            let what = self.stream.kind_name(node);
            self.skip(node, None, None, format!("not a Kubernetes object: {what}"));
            return Ok(());
        }
        let kind = self.text_of(node, "kind")?;
        let api_version = self.text_of(node, "apiVersion")?;
        let metadata = self.stream.get(node, "metadata")?;
        let meta = |key: &str| -> Result<Option<String>, YamlError> {
            match metadata {
                Some(m) if self.stream.is_map(m) => self.text_of(m, key),
                _ => Ok(None),
            }
        };
        let name = meta("name")?;
        let generate_name = meta("generateName")?;
        let namespace = meta("namespace")?;
        let (Some(kind), Some(api_version)) = (kind, api_version) else {
            self.skip(node, None, name, "no apiVersion and kind".to_owned());
            return Ok(());
        };

        if kind == "List" || (kind.ends_with("List") && pod_spec_path(&kind).is_none()) {
            if depth > 0 {
                self.skip(node, Some(kind), name, "a List inside a List".to_owned());
                return Ok(());
            }
            let items = match self.stream.get(node, "items")? {
                None => return Ok(()),
                Some(items) if self.stream.is_null(items) => return Ok(()),
                Some(items) => items,
            };
            let Some(items) = self.stream.items(items) else {
                return Err(self.err(
                    self.stream.pos(items),
                    format!("{kind}: items must be a list"),
                ));
            };
            for &item in items {
                self.object(item, document, depth + 1)?;
            }
            return Ok(());
        }

        let Some(path) = pod_spec_path(&kind) else {
            self.skip(node, Some(kind), name, "holds no pod template".to_owned());
            return Ok(());
        };
        if !is_workload_group(&api_version) {
            let reason = format!("{api_version} is not a core workload API group");
            self.skip(node, Some(kind), name, reason);
            return Ok(());
        }
        let display_name = name
            .or_else(|| generate_name.map(|g| format!("{g}*")))
            .unwrap_or_else(|| format!("document {document}"));

        // Walk to the pod spec; a missing level means an empty pod (nothing to pull).
        let mut spec = Some(node);
        let mut walked = kind.clone();
        for key in path {
            let Some(current) = spec else { break };
            if !self.stream.is_map(current) {
                return Err(self.err(
                    self.stream.pos(current),
                    format!(
                        "{kind} {display_name:?}: {walked} must be a mapping, found {}",
                        self.stream.kind_name(current)
                    ),
                ));
            }
            spec = self
                .stream
                .get(current, key)?
                .filter(|n| !self.stream.is_null(*n));
            walked = format!("{walked}.{key}");
        }
        if let Some(s) = spec
            && !self.stream.is_map(s)
        {
            return Err(self.err(
                self.stream.pos(s),
                format!(
                    "{kind} {display_name:?}: the pod spec must be a mapping, found {}",
                    self.stream.kind_name(s)
                ),
            ));
        }

        let pos = self.stream.pos(node);
        let mut workload = Workload {
            kind: kind.clone(),
            api_version,
            name: display_name.clone(),
            namespace: namespace.clone(),
            file: self.file.to_owned(),
            line: pos.line,
            column: pos.column,
            pull_secrets: PodPullSecrets {
                subject: Subject::Workload {
                    kind: kind.clone(),
                    name: display_name.clone(),
                    file: self.file.to_owned(),
                },
                namespace,
                image_pull_secrets: Vec::new(),
                service_account_name: None,
            },
            images: Vec::new(),
        };
        if let Some(spec) = spec {
            self.pod_spec(spec, &mut workload)?;
        }
        self.out.workloads.push(workload);
        Ok(())
    }

    fn pod_spec(&self, spec: NodeId, workload: &mut Workload) -> Result<(), YamlError> {
        let owner = format!("{}/{}", workload.kind, workload.name);
        // imagePullSecrets: [{name}]
        if let Some(list) = self.stream.get(spec, "imagePullSecrets")?
            && !self.stream.is_null(list)
        {
            let Some(items) = self.stream.items(list) else {
                return Err(self.err(
                    self.stream.pos(list),
                    format!("{owner}: imagePullSecrets must be a list of {{name: ...}}"),
                ));
            };
            for &item in items {
                let name = if self.stream.is_map(item) {
                    self.text_of(item, "name")?
                } else {
                    None
                };
                match name {
                    Some(name) => workload.pull_secrets.image_pull_secrets.push(name),
                    None if self.stream.is_map(item) => {}
                    None => {
                        return Err(self.err(
                            self.stream.pos(item),
                            format!("{owner}: an imagePullSecrets entry must be {{name: ...}}"),
                        ));
                    }
                }
            }
        }
        workload.pull_secrets.service_account_name =
            match self.text_of(spec, "serviceAccountName")? {
                Some(name) => Some(name),
                // The deprecated alias, which the API server copies over when the name is empty.
                None => self.text_of(spec, "serviceAccount")?,
            };

        for (list_key, word) in CONTAINER_LISTS {
            let Some(list) = self.stream.get(spec, list_key)? else {
                continue;
            };
            if self.stream.is_null(list) {
                continue;
            }
            let Some(items) = self.stream.items(list) else {
                return Err(self.err(
                    self.stream.pos(list),
                    format!(
                        "{owner}: {list_key} must be a list, found {}",
                        self.stream.kind_name(list)
                    ),
                ));
            };
            for (index, &container) in items.iter().enumerate() {
                let image_use = self.container(container, &owner, list_key, word, index)?;
                workload.images.push(image_use);
            }
        }
        Ok(())
    }

    fn container(
        &self,
        container: NodeId,
        owner: &str,
        list_key: &str,
        word: &str,
        index: usize,
    ) -> Result<ImageUse, YamlError> {
        let at = |pos: Pos| format!("{}:{}:{}", self.file, pos.line, pos.column);
        let container_pos = self.stream.pos(container);
        let place = format!("{list_key}[{index}]");
        let mut origin = Origin {
            file: Some(self.file.to_owned()),
            line: Some(container_pos.line),
            column: Some(container_pos.column),
            kind: ContainerKind::Container,
            name: format!("{owner} {word} {place}"),
            stage: None,
        };
        if !self.stream.is_map(container) {
            return Ok(ImageUse {
                image: String::new(),
                policy: PullPolicy::NotPresent,
                disposition: Disposition::Invalid(format!(
                    "{}: {owner} {place} must be a mapping, found {}",
                    at(container_pos),
                    self.stream.kind_name(container)
                )),
                origin,
            });
        }
        if let Some(name) = self.text_of(container, "name")? {
            origin.name = format!("{owner} {word} {name}");
        }
        let image_node = self.stream.get(container, "image")?;
        let image = image_node
            .and_then(|n| self.stream.text(n))
            .unwrap_or_default()
            .to_owned();
        if let Some(n) = image_node {
            let pos = self.stream.pos(n);
            origin.line = Some(pos.line);
            origin.column = Some(pos.column);
        }
        let policy_node = self.stream.get(container, "imagePullPolicy")?;
        let written_policy = policy_node
            .and_then(|n| self.stream.text(n))
            .filter(|t| !t.is_empty());
        let mut disposition = Disposition::Check;
        let policy = match written_policy {
            None => default_pull_policy(&image),
            Some(value) => match kubernetes_pull_policy(value) {
                Some(policy) => policy,
                None => {
                    let pos = policy_node.map_or(container_pos, |n| self.stream.pos(n));
                    disposition = Disposition::Invalid(format!(
                        "{}: unsupported imagePullPolicy {value:?}: must be Always, \
                         IfNotPresent or Never",
                        at(pos)
                    ));
                    PullPolicy::NotPresent
                }
            },
        };
        if image.is_empty() {
            let pos = image_node.map_or(container_pos, |n| self.stream.pos(n));
            let found = match image_node {
                Some(n) if !self.stream.is_null(n) && self.stream.text(n).is_none() => {
                    format!(
                        ": image must be a string, found {}",
                        self.stream.kind_name(n)
                    )
                }
                _ => ": no image".to_owned(),
            };
            disposition = Disposition::Invalid(format!("{}: {}{found}", at(pos), origin.name));
        }
        Ok(ImageUse {
            image,
            policy,
            origin,
            disposition,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaulting_follows_set_defaults_container() {
        let digest = format!("sha256:{}", "a".repeat(64));
        for (image, want) in [
            ("nginx", PullPolicy::Always),
            ("nginx:latest", PullPolicy::Always),
            ("registry.example.com:5000/team/app", PullPolicy::Always),
            ("nginx:1.27", PullPolicy::NotPresent),
            ("localhost:5000/app:v1", PullPolicy::NotPresent),
            (&format!("nginx@{digest}"), PullPolicy::NotPresent),
            (&format!("nginx:1.27@{digest}"), PullPolicy::NotPresent),
            (&format!("nginx:latest@{digest}"), PullPolicy::Always),
            ("Not A Reference", PullPolicy::NotPresent),
            ("", PullPolicy::NotPresent),
        ] {
            assert_eq!(default_pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn kubernetes_policies_are_case_sensitive() {
        assert_eq!(kubernetes_pull_policy("Always"), Some(PullPolicy::Always));
        assert_eq!(
            kubernetes_pull_policy("IfNotPresent"),
            Some(PullPolicy::NotPresent)
        );
        assert_eq!(kubernetes_pull_policy("Never"), Some(PullPolicy::Never));
        for bad in ["always", "not_present", "NEVER", "true", ""] {
            assert_eq!(kubernetes_pull_policy(bad), None, "{bad}");
        }
    }

    #[test]
    fn manifest_detection() {
        assert!(is_kubernetes_manifest("apiVersion: v1\nkind: Pod\n"));
        assert!(is_kubernetes_manifest(
            "---\n# c\n---\napiVersion: apps/v1\nkind: Deployment\n"
        ));
        assert!(!is_kubernetes_manifest("version: \"1\"\nsteps: []\n"));
        assert!(!is_kubernetes_manifest("kind: Pod\n"));
        assert!(!is_kubernetes_manifest("[unclosed"));
        assert!(!is_kubernetes_manifest(""));
        assert!(!is_kubernetes_manifest("apiVersion: {a: b}\nkind: Pod\n"));
    }
}
