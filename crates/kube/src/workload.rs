//! Kubernetes workload manifests as input: the images of every container, with the pull
//! policy the API server would default, and each workload's own pull-secret settings.

use std::fmt;
use std::path::Path;

use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
use pullcheck_input::{
    ContainerKind, ContainerList, Disposition, ImageUse, InputError, LineColumn, Origin,
    PodContainer, Position, Problem, PullPolicy,
};
use pullcheck_reference::Reference;

use crate::chain::{PodPullSecrets, Subject};
use crate::de::field_names;
use crate::template::{TEMPLATE_GROUP, TEMPLATE_KIND};
use crate::yaml::{Reached, Stream, YamlError};

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
    /// The file, as given.
    pub file: String,
    /// 1-based line where it starts.
    pub line: usize,
    /// 1-based column where it starts.
    pub column: usize,
    /// Why it was skipped.
    pub reason: String,
    /// Whether it may hold images that are therefore not checked, so that a caller should
    /// warn: a document that is not a Kubernetes object at all (junk, a bare list, a Vela
    /// pipeline after `---`), a `List` inside a `List`, or an object of a kind this reader
    /// does not know that has a pod template or containers (an Argo `Rollout`, a Knative
    /// `Service`). False for objects that hold no pod template (Services, ConfigMaps).
    pub may_hide_images: bool,
}

impl fmt::Display for SkippedObject {
    /// `file:line:column: Kind "name": reason`, the kind and name as far as known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        match (&self.kind, &self.name) {
            (Some(kind), Some(name)) => write!(f, "{kind} {name:?}: ")?,
            (Some(kind), None) => write!(f, "{kind}: ")?,
            (None, Some(name)) => write!(f, "{name:?}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.reason)
    }
}

/// Everything read from one manifest file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifests {
    /// The workloads, in file order (the items of a `List` where it stands).
    pub workloads: Vec<Workload>,
    /// Objects that are not read: those that hold no pod template (Services, ConfigMaps,
    /// ...), and those that may hide images ([`SkippedObject::may_hide_images`]).
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

    /// One warning per skipped object that may hide images
    /// ([`SkippedObject::may_hide_images`]), in file order, as its `Display`:
    /// `file:line:column: Kind "name": reason`.
    pub fn warnings(&self) -> Vec<String> {
        self.skipped
            .iter()
            .filter(|s| s.may_hide_images)
            .map(ToString::to_string)
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
        // A YAML error in a later document: decide by the documents before it, so that
        // the manifest reader reports that error rather than the pipeline reader
        // calling the file "not a pipeline".
        return first_document(text).is_some_and(is_kubernetes_manifest);
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

/// The text before the second `---` document marker (a leading one starts the first
/// document), or `None` when there is no second document.
fn first_document(text: &str) -> Option<&str> {
    let mut offset = 0;
    let mut seen_content = false;
    for line in text.split_inclusive('\n') {
        let marker =
            line.starts_with("---") && line[3..].chars().next().is_none_or(char::is_whitespace);
        if marker && seen_content {
            return Some(&text[..offset]);
        }
        seen_content |= !marker && !line.trim().is_empty() && !line.trim_start().starts_with('#');
        offset += line.len();
    }
    None
}

/// Reads a manifest file from disk; see [`read_manifests`].
///
/// # Errors
/// [`InputError`] naming the file when it cannot be read, or as [`read_manifests`].
pub fn read_manifests_file(path: &Path) -> Result<Manifests, InputError> {
    let (name, text) = pullcheck_input::read_file(path)?;
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
/// - After them, each image volume (`volumes[].image.reference`, Kubernetes 1.31+) gives
///   one use of kind [`ContainerKind::Volume`] (`Pod/p volume models`), its `pullPolicy`
///   defaulted as a container's; one without a reference is [`Disposition::Invalid`].
/// - A pod spec (or a level on the way to it) that lacks what it should have but has keys
///   the Kubernetes API does not know (`containres:`, `tempalte:`) gives one
///   [`Disposition::Invalid`] use with an empty image at that mapping, naming the unknown
///   keys; so does an unknown key that looks like a misspelt container list next to
///   `containers` (`initContainres:`). Partial objects with only known keys (kustomize
///   patches) stay empty pods.
/// - Documents that are not workloads are [`Manifests::skipped`] with their file, line,
///   column and reason; [`Manifests::warnings`] lists those that may hide images.
/// - Anchors, aliases and merge keys work. A value reached through an alias is used at that
///   alias (`image: *img`, a container written `- *c`, `containers: *list`, `<<: *base`),
///   as [`pullcheck_input::yaml`] says: the use's position is there, and a message about
///   the value names where it is written too (`m.yaml:23:21 (written at 16:28): ...`).
///
/// # Errors
/// [`InputError`] with file, line and column when the text is not YAML, a mapping has a
/// key twice (`duplicate key "image" (first at 7:5)`, as kubectl refuses it; merge keys
/// may repeat), or a workload's pod spec has the wrong shape (`containers` not a list,
/// `spec` not a mapping).
pub fn read_manifests(file: &str, text: &str) -> Result<Manifests, InputError> {
    let stream = Stream::load(text).map_err(|e| yaml_error(file, e))?;
    if let Some(dup) = stream.documents.iter().find_map(|d| d.duplicate.clone()) {
        return Err(yaml_error(file, dup.into()));
    }
    let mut reader = Reader {
        file,
        stream: &stream,
        out: Manifests::default(),
    };
    for (index, doc) in stream.documents.iter().enumerate() {
        if let Some(root) = doc.root {
            reader
                .object(stream.reach_root(root), index + 1, 0)
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
        refusal: None,
    }
}

/// The field names a Kubernetes type declares, for naming unknown keys.
type Fields = fn() -> &'static [&'static str];

/// One level on the way to a workload's pod spec: the key, and the fields of the mapping
/// that holds it.
type Level = (&'static str, Fields);

const POD_TEMPLATE: Level = ("spec", field_names::<core::PodTemplateSpec>);

/// Where the pod spec of each workload kind is.
fn pod_spec_path(kind: &str) -> Option<&'static [Level]> {
    Some(match kind {
        "Pod" => &[("spec", field_names::<core::Pod>)],
        "Deployment" => &[
            ("spec", field_names::<apps::Deployment>),
            ("template", field_names::<apps::DeploymentSpec>),
            POD_TEMPLATE,
        ],
        "StatefulSet" => &[
            ("spec", field_names::<apps::StatefulSet>),
            ("template", field_names::<apps::StatefulSetSpec>),
            POD_TEMPLATE,
        ],
        "DaemonSet" => &[
            ("spec", field_names::<apps::DaemonSet>),
            ("template", field_names::<apps::DaemonSetSpec>),
            POD_TEMPLATE,
        ],
        "ReplicaSet" => &[
            ("spec", field_names::<apps::ReplicaSet>),
            ("template", field_names::<apps::ReplicaSetSpec>),
            POD_TEMPLATE,
        ],
        "Job" => &[
            ("spec", field_names::<batch::Job>),
            ("template", field_names::<batch::JobSpec>),
            POD_TEMPLATE,
        ],
        "ReplicationController" => &[
            ("spec", field_names::<core::ReplicationController>),
            ("template", field_names::<core::ReplicationControllerSpec>),
            POD_TEMPLATE,
        ],
        "CronJob" => &[
            ("spec", field_names::<batch::CronJob>),
            ("jobTemplate", field_names::<batch::CronJobSpec>),
            ("spec", field_names::<batch::JobTemplateSpec>),
            ("template", field_names::<batch::JobSpec>),
            POD_TEMPLATE,
        ],
        "PodTemplate" => &[("template", field_names::<core::PodTemplate>), POD_TEMPLATE],
        _ => return None,
    })
}

/// Whether an unknown pod-spec key looks like a misspelt container list; the list it
/// most likely means.
fn misspelt_container_list(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let (distance, best) = CONTAINER_LISTS
        .iter()
        .map(|(list, _)| (edit_distance(&lower, &list.to_ascii_lowercase()), *list))
        .min()?;
    (distance <= 2 || lower.contains("container")).then_some(best)
}

/// Levenshtein distance, in characters (keys are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `unknown key `a`?` or `unknown keys `a`, `b`?`, for a message.
fn unknown_keys_hint(keys: &[String]) -> String {
    let listed: Vec<String> = keys.iter().take(5).map(|k| format!("`{k}`")).collect();
    let more = if keys.len() > 5 { ", ..." } else { "" };
    let s = if keys.len() == 1 { "" } else { "s" };
    format!("unknown key{s} {}{more}?", listed.join(", "))
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
    /// An error about `node`: where it is used, naming where it is written when that is
    /// elsewhere (it was reached through an alias).
    fn err(&self, node: Reached, message: String) -> YamlError {
        YamlError {
            pos: Some(self.stream.used(node)),
            message: message + &self.stream.written_note(node),
        }
    }

    /// Where `node` is used, and where it is written when that is elsewhere.
    fn at(&self, node: Reached) -> Position {
        let used = self.stream.used(node);
        let written = self.stream.written_pos(node);
        Position {
            file: self.file.to_owned(),
            line: Some(used.line),
            column: Some(used.column),
            written: (written != used).then_some(LineColumn {
                line: written.line,
                column: written.column,
            }),
        }
    }

    fn text_of(&self, map: Reached, key: &str) -> Result<Option<String>, YamlError> {
        Ok(self
            .stream
            .get(map.id, key)?
            .and_then(|n| self.stream.text(n))
            .filter(|t| !t.is_empty())
            .map(str::to_owned))
    }

    fn skip(
        &mut self,
        node: Reached,
        kind: Option<String>,
        name: Option<String>,
        reason: String,
        may_hide_images: bool,
    ) {
        let pos = self.stream.used(node);
        self.out.skipped.push(SkippedObject {
            kind,
            name,
            file: self.file.to_owned(),
            line: pos.line,
            column: pos.column,
            reason,
            may_hide_images,
        });
    }

    /// The value of `key` in mapping `map`, as reached from it.
    fn get(&self, map: Reached, key: &str) -> Result<Option<Reached>, YamlError> {
        self.stream.lookup(map, key)
    }

    /// The non-null value of `key` in mapping `map`.
    fn present(&self, map: Reached, key: &str) -> Result<Option<Reached>, YamlError> {
        if !self.stream.is_map(map.id) {
            return Ok(None);
        }
        Ok(self.get(map, key)?.filter(|n| !self.stream.is_null(n.id)))
    }

    /// The keys of mapping `map` (merge keys resolved) that `fields` does not name.
    fn unknown_keys(&self, map: Reached, fields: &[&str]) -> Result<Vec<String>, YamlError> {
        Ok(self
            .stream
            .entries(map.id)?
            .unwrap_or_default()
            .into_iter()
            .filter(|e| !fields.contains(&e.key.as_str()))
            .map(|e| e.key)
            .collect())
    }

    /// For an object of a kind this reader does not read: what of it holds images, if
    /// anything (`spec.template.spec`, `spec.jobTemplate.spec.template.spec`,
    /// `spec.containers`).
    fn pod_holder(&self, node: Reached) -> Result<Option<&'static str>, YamlError> {
        let Some(spec) = self.present(node, "spec")? else {
            return Ok(None);
        };
        let at = |path: &[&str]| -> Result<bool, YamlError> {
            let mut current = spec;
            for key in path {
                match self.present(current, key)? {
                    Some(next) => current = next,
                    None => return Ok(false),
                }
            }
            Ok(self.stream.is_map(current.id))
        };
        if at(&["template", "spec"])? || at(&["jobTemplate", "spec", "template", "spec"])? {
            return Ok(Some("its pod template's images are not checked"));
        }
        if self.present(spec, "containers")?.is_some() {
            return Ok(Some("the images of its spec.containers are not checked"));
        }
        Ok(None)
    }

    fn object(&mut self, node: Reached, document: usize, depth: usize) -> Result<(), YamlError> {
        if !self.stream.is_map(node.id) {
            let what = self.stream.kind_name(node.id);
            let reason = format!("not a Kubernetes object: {what}, so nothing in it is read");
            self.skip(node, None, None, reason, true);
            return Ok(());
        }
        let kind = self.text_of(node, "kind")?;
        let api_version = self.text_of(node, "apiVersion")?;
        let metadata = self.get(node, "metadata")?;
        let meta = |key: &str| -> Result<Option<String>, YamlError> {
            match metadata {
                Some(m) if self.stream.is_map(m.id) => self.text_of(m, key),
                _ => Ok(None),
            }
        };
        let name = meta("name")?;
        let generate_name = meta("generateName")?;
        let namespace = meta("namespace")?;
        let (Some(kind), Some(api_version)) = (kind, api_version) else {
            let mut vela = false;
            for key in ["steps", "stages", "services", "secrets", "version"] {
                vela |= self.stream.get(node.id, key)?.is_some();
            }
            let reason = if vela {
                "not a Kubernetes object: no apiVersion and kind; it looks like a Vela \
                 pipeline, whose images are read only from a file of its own"
            } else {
                "not a Kubernetes object: no apiVersion and kind, so nothing in it is read"
            };
            self.skip(node, None, name, reason.to_owned(), true);
            return Ok(());
        };

        if kind == "List" || (kind.ends_with("List") && pod_spec_path(&kind).is_none()) {
            if depth > 0 {
                let reason = "a List inside a List: its items are not read".to_owned();
                self.skip(node, Some(kind), name, reason, true);
                return Ok(());
            }
            let list = match self.get(node, "items")? {
                None => return Ok(()),
                Some(list) if self.stream.is_null(list.id) => return Ok(()),
                Some(list) => list,
            };
            let Some(items) = self.stream.items(list.id) else {
                return Err(self.err(list, format!("{kind}: items must be a list")));
            };
            for &item in items {
                self.object(self.stream.reach(list, None, item), document, depth + 1)?;
            }
            return Ok(());
        }

        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(path) = pod_spec_path(&kind).filter(|_| is_workload_group(&api_version)) else {
            let (reason, may_hide) = if kind == TEMPLATE_KIND && group == TEMPLATE_GROUP {
                // Its pod template holds scheduling settings, never containers.
                ("holds no pod template".to_owned(), false)
            } else if let Some(what) = self.pod_holder(node)? {
                (
                    format!("kind {kind} ({api_version}) is not read: {what}"),
                    true,
                )
            } else if pod_spec_path(&kind).is_some() {
                (
                    format!("{api_version} is not a core workload API group"),
                    false,
                )
            } else {
                ("holds no pod template".to_owned(), false)
            };
            self.skip(node, Some(kind), name, reason, may_hide);
            return Ok(());
        };
        let display_name = name
            .or_else(|| generate_name.map(|g| format!("{g}*")))
            .unwrap_or_else(|| format!("document {document}"));
        let owner = format!("{kind}/{display_name}");

        // Walk to the pod spec; a missing level means an empty pod (nothing to pull),
        // unless the mapping that lacks it has keys the API does not know (a misspelt
        // level), which is an invalid use at that mapping.
        let mut spec = Some(node);
        let mut walked = kind.clone();
        let mut at_path = String::new();
        let mut misspelt = None;
        for &(key, fields) in path {
            let Some(current) = spec else { break };
            if !self.stream.is_map(current.id) {
                return Err(self.err(
                    current,
                    format!(
                        "{kind} {display_name:?}: {walked} must be a mapping, found {}",
                        self.stream.kind_name(current.id)
                    ),
                ));
            }
            spec = self.present(current, key)?;
            if spec.is_none() {
                let unknown = self.unknown_keys(current, fields())?;
                if !unknown.is_empty() {
                    let holder = if at_path.is_empty() {
                        "the object".to_owned()
                    } else {
                        at_path.clone()
                    };
                    misspelt = Some(self.invalid_use(
                        current,
                        &owner,
                        format!(
                            "{holder} has no `{key}` ({}), so its pod spec is not read",
                            unknown_keys_hint(&unknown)
                        ),
                    ));
                }
            }
            walked = format!("{walked}.{key}");
            at_path = if at_path.is_empty() {
                key.to_owned()
            } else {
                format!("{at_path}.{key}")
            };
        }
        if let Some(s) = spec
            && !self.stream.is_map(s.id)
        {
            return Err(self.err(
                s,
                format!(
                    "{kind} {display_name:?}: the pod spec must be a mapping, found {}",
                    self.stream.kind_name(s.id)
                ),
            ));
        }

        let pos = self.stream.used(node);
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
        workload.images.extend(misspelt);
        self.out.workloads.push(workload);
        Ok(())
    }

    /// An invalid use with no image, at mapping `at`, for a problem of the pod spec (or
    /// the way to it) rather than of one container.
    fn invalid_use(&self, at: Reached, owner: &str, problem: String) -> ImageUse {
        let pos = self.stream.used(at);
        ImageUse {
            image: String::new(),
            substituted: None,
            policy: PullPolicy::NotPresent,
            origin: Origin {
                file: Some(self.file.to_owned()),
                line: Some(pos.line),
                column: Some(pos.column),
                kind: ContainerKind::Container,
                name: format!("{owner} pod spec"),
                stage: None,
                pod: None,
            },
            disposition: Disposition::Invalid(vec![Problem::at(
                self.at(at),
                format!("{owner}: {problem}"),
            )]),
        }
    }

    fn pod_spec(&self, spec: Reached, workload: &mut Workload) -> Result<(), YamlError> {
        let owner = format!("{}/{}", workload.kind, workload.name);
        // imagePullSecrets: [{name}]
        if let Some(list) = self.get(spec, "imagePullSecrets")?
            && !self.stream.is_null(list.id)
        {
            let Some(items) = self.stream.items(list.id) else {
                return Err(self.err(
                    list,
                    format!("{owner}: imagePullSecrets must be a list of {{name: ...}}"),
                ));
            };
            for &item in items {
                let item = self.stream.reach(list, None, item);
                let name = if self.stream.is_map(item.id) {
                    self.text_of(item, "name")?
                } else {
                    None
                };
                match name {
                    Some(name) => workload.pull_secrets.image_pull_secrets.push(name),
                    None if self.stream.is_map(item.id) => {}
                    None => {
                        return Err(self.err(
                            item,
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
            let Some(list) = self.get(spec, list_key)? else {
                continue;
            };
            if self.stream.is_null(list.id) {
                continue;
            }
            let Some(items) = self.stream.items(list.id) else {
                return Err(self.err(
                    list,
                    format!(
                        "{owner}: {list_key} must be a list, found {}",
                        self.stream.kind_name(list.id)
                    ),
                ));
            };
            for (index, &container) in items.iter().enumerate() {
                let container = self.stream.reach(list, None, container);
                let image_use = self.container(container, &owner, list_key, word, index)?;
                workload.images.push(image_use);
            }
        }

        self.image_volumes(spec, &owner, workload)?;

        // Keys the API does not know: with no `containers` at all, a misspelt one is the
        // likely reason; next to `containers`, one that looks like a misspelt list hides
        // the containers written under it.
        let unknown = self.unknown_keys(spec, field_names::<core::PodSpec>())?;
        if unknown.is_empty() {
            return Ok(());
        }
        if self.present(spec, "containers")?.is_none() {
            workload.images.push(self.invalid_use(
                spec,
                &owner,
                format!(
                    "pod spec has no `containers` ({})",
                    unknown_keys_hint(&unknown)
                ),
            ));
            return Ok(());
        }
        for key in &unknown {
            let Some(meant) = misspelt_container_list(key) else {
                continue;
            };
            let at = self
                .stream
                .entries(spec.id)?
                .unwrap_or_default()
                .into_iter()
                .find(|e| e.key == *key)
                .map_or(spec, |e| self.stream.reach(spec, e.via, e.key_node));
            let mut invalid = self.invalid_use(
                at,
                &owner,
                format!(
                    "pod spec has unknown key `{key}` (a misspelt `{meant}`?): its \
                     containers are not read"
                ),
            );
            invalid.origin.name = format!("{owner} pod spec {key}");
            workload.images.push(invalid);
        }
        Ok(())
    }

    /// The pod spec's image volumes (`volumes[].image`, core/v1 `ImageVolumeSource`,
    /// Kubernetes 1.31+): `reference` is pulled by the kubelet as a container's image,
    /// with the Pod's pull secrets, under `pullPolicy`, which the API server defaults as
    /// a container's (`Always` for `:latest` or no tag, else `IfNotPresent`). Each is a
    /// use of kind [`ContainerKind::Volume`] named `Kind/name volume VOLUME`, at its
    /// `reference`; one without a reference, or with a policy that is not a Kubernetes
    /// one, is invalid there.
    fn image_volumes(
        &self,
        spec: Reached,
        owner: &str,
        workload: &mut Workload,
    ) -> Result<(), YamlError> {
        let Some(list) = self.get(spec, "volumes")? else {
            return Ok(());
        };
        let Some(items) = self.stream.items(list.id) else {
            return Ok(());
        };
        for (index, &volume) in items.iter().enumerate() {
            let volume = self.stream.reach(list, None, volume);
            if !self.stream.is_map(volume.id) {
                continue;
            }
            let Some(image) = self.present(volume, "image")? else {
                continue;
            };
            let name = self
                .text_of(volume, "name")?
                .unwrap_or_else(|| format!("volumes[{index}]"));
            let reference_node = self.get(image, "reference")?;
            let reference = reference_node
                .and_then(|n| self.stream.text(n.id))
                .unwrap_or_default()
                .to_owned();
            let at = reference_node.unwrap_or(image);
            let pos = self.stream.used(at);
            let origin = Origin {
                file: Some(self.file.to_owned()),
                line: Some(pos.line),
                column: Some(pos.column),
                kind: ContainerKind::Volume,
                name: format!("{owner} volume {name}"),
                stage: None,
                pod: Some(PodContainer {
                    owner: owner.to_owned(),
                    list: ContainerList::Volumes,
                    name: name.clone(),
                }),
            };
            let policy_node = self.get(image, "pullPolicy")?;
            let written = policy_node
                .and_then(|n| self.stream.text(n.id))
                .filter(|t| !t.is_empty());
            let mut disposition = Disposition::Check;
            let policy = match written {
                None => default_pull_policy(&reference),
                Some(value) => kubernetes_pull_policy(value).unwrap_or_else(|| {
                    disposition = Disposition::UnknownPolicy {
                        written: value.to_owned(),
                        problems: vec![Problem::at(
                            self.at(policy_node.unwrap_or(image)),
                            format!(
                                "unsupported pullPolicy {value:?} of image volume {name}: \
                                 must be Always, IfNotPresent or Never"
                            ),
                        )],
                    };
                    PullPolicy::NotPresent
                }),
            };
            if reference.is_empty() {
                disposition = Disposition::Invalid(vec![Problem::at(
                    self.at(at),
                    "no image.reference".to_owned(),
                )]);
            }
            workload.images.push(ImageUse {
                image: reference,
                substituted: None,
                policy,
                origin,
                disposition,
            });
        }
        Ok(())
    }

    fn container(
        &self,
        container: Reached,
        owner: &str,
        list_key: &str,
        word: &str,
        index: usize,
    ) -> Result<ImageUse, YamlError> {
        let container_pos = self.stream.used(container);
        let place = format!("{list_key}[{index}]");
        let mut origin = Origin {
            file: Some(self.file.to_owned()),
            line: Some(container_pos.line),
            column: Some(container_pos.column),
            kind: ContainerKind::Container,
            name: format!("{owner} {word} {place}"),
            stage: None,
            pod: Some(PodContainer {
                owner: owner.to_owned(),
                list: match list_key {
                    "initContainers" => ContainerList::InitContainers,
                    "ephemeralContainers" => ContainerList::EphemeralContainers,
                    _ => ContainerList::Containers,
                },
                name: place.clone(),
            }),
        };
        if !self.stream.is_map(container.id) {
            return Ok(ImageUse {
                image: String::new(),
                substituted: None,
                policy: PullPolicy::NotPresent,
                disposition: Disposition::Invalid(vec![Problem::at(
                    self.at(container),
                    format!(
                        "{owner} {place} must be a mapping, found {}",
                        self.stream.kind_name(container.id)
                    ),
                )]),
                origin,
            });
        }
        if let Some(name) = self.text_of(container, "name")? {
            origin.name = format!("{owner} {word} {name}");
            if let Some(pod) = &mut origin.pod {
                pod.name = name;
            }
        }
        // The `image:` value where this container uses it (at an alias on the way, if any).
        let image_node = self.get(container, "image")?;
        let image = image_node
            .and_then(|n| self.stream.text(n.id))
            .unwrap_or_default()
            .to_owned();
        if let Some(n) = image_node {
            let pos = self.stream.used(n);
            origin.line = Some(pos.line);
            origin.column = Some(pos.column);
        }
        let policy_node = self.get(container, "imagePullPolicy")?;
        let written_policy = policy_node
            .and_then(|n| self.stream.text(n.id))
            .filter(|t| !t.is_empty());
        let mut disposition = Disposition::Check;
        let policy = match written_policy {
            None => default_pull_policy(&image),
            Some(value) => match kubernetes_pull_policy(value) {
                Some(policy) => policy,
                None => {
                    disposition = Disposition::UnknownPolicy {
                        written: value.to_owned(),
                        problems: vec![Problem::at(
                            self.at(policy_node.unwrap_or(container)),
                            format!(
                                "unsupported imagePullPolicy {value:?}: must be Always, \
                                 IfNotPresent or Never"
                            ),
                        )],
                    };
                    PullPolicy::NotPresent
                }
            },
        };
        if image.is_empty() {
            let found = match image_node {
                Some(n) if !self.stream.is_null(n.id) && self.stream.text(n.id).is_none() => {
                    format!(
                        "image must be a string, found {}",
                        self.stream.kind_name(n.id)
                    )
                }
                Some(_) => "no image".to_owned(),
                None => {
                    let fields = if list_key == "ephemeralContainers" {
                        field_names::<core::EphemeralContainer>()
                    } else {
                        field_names::<core::Container>()
                    };
                    let unknown = self.unknown_keys(container, fields)?;
                    if unknown.is_empty() {
                        "no image".to_owned()
                    } else {
                        format!("no image ({})", unknown_keys_hint(&unknown))
                    }
                }
            };
            // The origin names the container; the message says only what is wrong.
            disposition = Disposition::Invalid(vec![Problem::at(
                self.at(image_node.unwrap_or(container)),
                found,
            )]);
        }
        Ok(ImageUse {
            image,
            substituted: None,
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
