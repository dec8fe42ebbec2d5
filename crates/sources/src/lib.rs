//! pullcheck's inputs to image sets, shared by the `pullcheck` command and `pullcheck
//! serve`: texts of pipelines (Vela source YAML, a compiled build's JSON) and Kubernetes
//! manifests, `--image` uses and pull secrets become image sets (one per Pod), each with
//! the pull secrets that Pod would get — the given ones plus, with a cluster, those the
//! kubelet and the ServiceAccount admission plugin would choose.
//!
//! Everything works on texts in memory; reading files and standard input is the caller's
//! job (the CLI uses `pullcheck-files`, the service takes the request's text). Two steps:
//! [`read_inputs`] parses the texts (no IO), then [`find_pull_secrets`] asks the cluster
//! and builds the sets. [`gather`] runs both.
//!
//! [`CheckRequest`] is the whole check as one value, which the CLI, the service and the
//! admission webhook each fill from their own surface: read, gathered and checked once,
//! with the runtime default and the empty-input rule applied here.
//!
//! ```no_run
//! # async fn demo(checker: &pullcheck::Checker) -> Result<(), pullcheck_sources::RequestError> {
//! use pullcheck::input::PullPolicy;
//! use pullcheck_sources::{CheckRequest, image_use};
//!
//! let request = CheckRequest {
//!     images: vec![image_use("registry.example.com/app:1.0", PullPolicy::Always)],
//!     ..CheckRequest::default()
//! };
//! let report = request.run(checker, None).await?;
//! println!("{}", report.to_json());
//! # Ok(())
//! # }
//! ```
//!
//! For a build on the Kubernetes runtime ([`BuildRuntime`]), the sets come with the
//! runtime's placeholder image ([`Placeholder`]): every container of the build Pod starts
//! on it, so it is pulled at Pod creation. [`check_gathered`] checks it beside the sets,
//! with its own platform, and reports it as its own entry (origin kind `placeholder`).

#![warn(missing_docs)]

mod request;

pub use pullcheck::input::image_use;
pub use request::{
    CheckRequest, EmptyInput, Held, Input, NameOf, NameProblem, NothingToCheck, Prepared, Ready,
    RequestError, path_segment_problem,
};

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use pullcheck::credentials::{Keyring, PullSecret};
use pullcheck::input::{ContainerKind, Disposition, ImageUse, InputError, PullPolicy, Skip};
use pullcheck::registry::Platform;
use pullcheck::report::Report;
use pullcheck::{CheckOptions, Checker, ImageSet};
use pullcheck_kube::{
    Cluster, FoundSecret, PipelinePodsTemplate, PodPullSecrets, PullSecretChain, TemplateSource,
};

/// One input's text and the name it goes by in reports and errors (a path, `<stdin>`,
/// or the service request's `file_name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedText {
    /// The name: origins in the report and error messages start with it.
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// What kind of text an input is, as [`detect`] decides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// Kubernetes manifests (Pods, Deployments, ...).
    Manifests,
    /// A pipeline: Vela source YAML or a compiled build's JSON (told apart by the
    /// build's top-level `id`).
    Pipeline,
    /// A compiled Vela build (go-vela/server `pipeline.Build` JSON, as a worker gets it)
    /// whatever its keys: its `id` is `omitempty`, so a build may have none. Never
    /// detected ([`detect`]); a surface that only takes builds says it (the service's
    /// `build` field). An error about it has no line or column: the text is the
    /// surface's own encoding of the build, which its author never saw; the message
    /// names the container and field instead.
    Build,
}

/// Detects the kind of a text as the CLI does for its files: Kubernetes manifests when
/// [`pullcheck_kube::is_kubernetes_manifest`] says so, else a pipeline.
pub fn detect(text: &str) -> InputKind {
    if pullcheck_kube::is_kubernetes_manifest(text) {
        InputKind::Manifests
    } else {
        InputKind::Pipeline
    }
}

/// Why the inputs could not be turned into image sets, with its position as data: the
/// input's name (`file`), 1-based `line` and `column` when the problem has a position
/// in a text, and `message` without them. `Display` places the position as the CLI
/// prints it (`FILE:LINE:COLUMN: MESSAGE`, as [`InputError`]'s); a front end whose
/// reader does not know the text (the admission webhook's object) uses `message` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The input's name (a file, `<stdin>`, `request`, `Pod ci`), when the problem is
    /// about one input.
    pub file: Option<String>,
    /// 1-based line in the input's text, when known.
    pub line: Option<usize>,
    /// 1-based column in the input's text, when known.
    pub column: Option<usize>,
    /// What is wrong, without the input's name or the position.
    pub message: String,
    /// Set when Vela's compiler refuses the pipeline: why, as data
    /// ([`pullcheck::input::Refusal`]; the service's JSON error carries it as `refusal`).
    pub refusal: Option<Box<pullcheck::input::Refusal>>,
}

impl SourceError {
    /// An error about no one input, without a position.
    pub fn new(message: impl Into<String>) -> SourceError {
        SourceError {
            file: None,
            line: None,
            column: None,
            message: message.into(),
            refusal: None,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            f.write_str(file)?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {}

impl From<InputError> for SourceError {
    fn from(e: InputError) -> SourceError {
        SourceError {
            file: e.file,
            line: e.line,
            column: e.column,
            message: e.message,
            refusal: e.refusal,
        }
    }
}

impl From<String> for SourceError {
    fn from(message: String) -> SourceError {
        SourceError::new(message)
    }
}

/// The parsed inputs, before their pull secrets are looked up.
#[derive(Debug, Default)]
pub struct Inputs {
    /// The build Pod's uses: pipelines' images and the `--image`s.
    build_uses: Vec<ImageUse>,
    /// The workloads of the manifests, one Pod each.
    workloads: Vec<pullcheck_kube::Workload>,
    /// Documents, objects and kinds that were not read, so nothing is skipped silently.
    warnings: Vec<InputWarning>,
    /// The names of the texts in which no image was found, in input order.
    without_images: Vec<String>,
    /// The kind each of [`Inputs::without_images`] was read as, in the same order.
    without_image_kinds: Vec<InputKind>,
    /// The pipelines whose every image comes from a template the server expands
    /// (template steps, `render_inline` templates): name, template steps, inline
    /// templates.
    from_templates: Vec<(String, usize, usize)>,
}

/// A warning of the inputs read, as data until it is worded for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
enum InputWarning {
    /// No image was found in the text of this name.
    NoImage(String),
    /// A reader's warning (a document, object or kind not read), as it worded it.
    Read(String),
}

impl InputWarning {
    /// The report's warning: `NAME: no image found in this file`, or the reader's.
    fn into_text(self) -> String {
        match self {
            InputWarning::NoImage(name) => format!("{name}: no image found in this file"),
            InputWarning::Read(text) => text,
        }
    }
}

/// Whether `u` is a template step, whose image is known only once the server expands
/// its template (`Skip::Template`).
pub fn is_template_step(u: &ImageUse) -> bool {
    matches!(u.disposition, Disposition::Skip(Skip::Template { .. }))
}

impl Inputs {
    /// Whether there is nothing to check at all (no use, no workload).
    pub fn is_empty(&self) -> bool {
        self.build_uses.is_empty() && self.workloads.is_empty()
    }

    /// Whether there is no image to check: none but template steps, whose images are
    /// known only once the server expands their templates.
    pub fn nothing_checkable(&self) -> bool {
        self.workloads.is_empty() && self.build_uses.iter().all(is_template_step)
    }

    /// The image uses read: the build Pod's and every workload's, each container once
    /// (an image in three containers counts three; a container reached through a YAML
    /// alias counts where it is used), as the report's `summary.total` counts them:
    /// template steps, which the report counts apart (`template_steps`), are not
    /// counted. What a check plans and reports grows with it.
    pub fn use_count(&self) -> usize {
        self.build_uses
            .iter()
            .filter(|u| !is_template_step(u))
            .count()
            + self.workloads.iter().map(|w| w.images.len()).sum::<usize>()
    }

    /// Adds `other`'s uses, workloads and warnings after this one's (the CLI reads and
    /// parses one file after the other).
    pub fn append(&mut self, other: Inputs) {
        self.build_uses.extend(other.build_uses);
        self.workloads.extend(other.workloads);
        self.warnings.extend(other.warnings);
        self.without_images.extend(other.without_images);
        self.without_image_kinds.extend(other.without_image_kinds);
        self.from_templates.extend(other.from_templates);
    }

    /// The inputs of a text `name`, read as `kind`, in which no image was found (with
    /// its warning).
    pub(crate) fn without_image(name: &str, kind: InputKind) -> Inputs {
        Inputs {
            warnings: vec![InputWarning::NoImage(name.to_owned())],
            without_images: vec![name.to_owned()],
            without_image_kinds: vec![kind],
            ..Inputs::default()
        }
    }

    /// The names of the texts in which no image was found, in input order.
    pub fn without_images(&self) -> &[String] {
        &self.without_images
    }

    /// When there is nothing to check at all, what the inputs held instead, as data
    /// ([`NothingToCheck`]: every text, what it held, then the inputs' warnings, which
    /// tell why). `None` when there is an image, template steps apart: a pipeline whose
    /// every image comes from a template (template steps, or a `render_inline`
    /// pipeline's templates) is listed with [`Held::Templates`], since nothing of it
    /// would be checked.
    pub fn nothing_to_check(&self) -> Option<NothingToCheck> {
        if !self.nothing_checkable() {
            return None;
        }
        let mut inputs: Vec<EmptyInput> = self
            .without_images
            .iter()
            .zip(&self.without_image_kinds)
            .map(|(name, kind)| EmptyInput {
                name: name.clone(),
                read_as: *kind,
                held: Held::NoImage,
            })
            .collect();
        inputs.extend(
            self.from_templates
                .iter()
                .map(|(name, steps, inline)| EmptyInput {
                    name: name.clone(),
                    read_as: InputKind::Pipeline,
                    held: Held::Templates {
                        steps: *steps,
                        inline: *inline,
                    },
                }),
        );
        // The texts without an image are listed already.
        let warnings = self
            .warnings
            .iter()
            .filter_map(|w| match w {
                InputWarning::Read(text) => Some(text.clone()),
                InputWarning::NoImage(_) => None,
            })
            .collect();
        Some(NothingToCheck { inputs, warnings })
    }
}

/// The message for a pipeline `name` whose every image comes from a template the server
/// expands: `steps` template steps and `inline` `render_inline` templates (counts).
/// Callers add how to pass anyway, as for [`no_image_message`].
pub fn templates_only_message(name: &str, steps: usize, inline: usize) -> String {
    format!(
        "{}; nothing was checked",
        templates_only_part(name, steps, inline)
    )
}

/// [`templates_only_message`] without `; nothing was checked`, for a message that says
/// it once for several inputs.
pub(crate) fn templates_only_part(name: &str, steps: usize, inline: usize) -> String {
    let what = match (steps, inline) {
        (0, n) => format!("{n} `render_inline` template{}", plural(n)),
        (n, 0) => format!("{n} template step{}", plural(n)),
        (n, m) => format!(
            "{n} template step{} and {m} `render_inline` template{}",
            plural(n),
            plural(m)
        ),
    };
    format!(
        "no image to check in {name}: its images come from templates that are not \
         expanded ({what}); the Vela server expands them when it compiles the build, \
         pullcheck does not (check the compiled build instead)"
    )
}

/// The message for inputs that hold no image: `no image to check in a.yml, b.yml: …`,
/// naming `files` (none: the request held no input) and what is expected: a Vela
/// pipeline's `steps`, `services` or `stages` with `image:`, or Kubernetes Pod and
/// workload manifests. Callers add how to pass anyway (the CLI's `--allow-empty`, the
/// service's `"allow_empty": true`).
pub fn no_image_message(files: &[String]) -> String {
    format!(
        "{}; nothing was checked",
        no_image_part(files, &[InputKind::Pipeline, InputKind::Manifests])
    )
}

/// [`no_image_message`] without `; nothing was checked`, expecting what the inputs
/// were read as (`read_as`): a Vela pipeline (source or compiled build) or Kubernetes
/// manifests, or both when `read_as` holds both kinds or is empty.
pub(crate) fn no_image_part(files: &[String], read_as: &[InputKind]) -> String {
    let what = if files.is_empty() {
        String::new()
    } else {
        format!(" in {}", files.join(", "))
    };
    let pipeline = "a Vela pipeline (steps, services or stages with `image:`)";
    let manifests = "Kubernetes manifests (Pod, Deployment, StatefulSet, DaemonSet, \
                     ReplicaSet, Job, CronJob with containers)";
    let as_manifests = read_as.contains(&InputKind::Manifests);
    let as_pipeline = read_as
        .iter()
        .any(|k| matches!(k, InputKind::Pipeline | InputKind::Build));
    let expected = match (as_pipeline, as_manifests) {
        (true, false) => pipeline.to_owned(),
        (false, true) => manifests.to_owned(),
        _ => format!("{pipeline} or {manifests}"),
    };
    format!("no image to check{what}: expected {expected}")
}

/// Parses every text (kind detected by [`detect`]) and adds `images` to the build Pod's
/// uses. A text without any image gives the warning `NAME: no image found in this file`.
///
/// # Errors
/// The first text that is not a pipeline or manifest at all ([`InputError`], with its
/// position).
pub fn read_inputs(texts: &[NamedText], images: Vec<ImageUse>) -> Result<Inputs, SourceError> {
    let mut inputs = Inputs::default();
    for input in texts {
        inputs.append(read_text(input, detect(&input.text))?);
    }
    inputs.build_uses.extend(images);
    Ok(inputs)
}

/// Parses one text as `kind` (the service's `manifests` and `build` fields say the kind;
/// files and `pipeline` are detected). A text without any image gives the warning `NAME:
/// no image found in this file`.
///
/// # Errors
/// The text is not of that kind at all ([`InputError`], with its position).
pub fn read_text(input: &NamedText, kind: InputKind) -> Result<Inputs, SourceError> {
    let mut inputs = Inputs::default();
    let (name, text) = (&input.name, &input.text);
    let found = match kind {
        InputKind::Manifests => {
            let mut manifests = pullcheck_kube::read_manifests(name, text)?;
            // Report a workload's containers in file order (init containers usually come
            // first), not list by list.
            for workload in &mut manifests.workloads {
                workload
                    .images
                    .sort_by_key(|u| (u.origin.line, u.origin.column));
            }
            inputs
                .warnings
                .extend(manifests.warnings().into_iter().map(InputWarning::Read));
            let found = manifests
                .workloads
                .iter()
                .map(|w| w.images.len())
                .sum::<usize>();
            inputs.workloads.extend(manifests.workloads);
            found
        }
        InputKind::Pipeline | InputKind::Build => {
            let read = if kind == InputKind::Build {
                // A refusal names the field, not a place in a JSON that a machine
                // encoded; a text that is no JSON at all keeps its line:column.
                pullcheck::input::read_build_read(name, text).map_err(|mut e| {
                    if e.refusal.is_some() {
                        e.line = None;
                        e.column = None;
                    }
                    e
                })?
            } else {
                pullcheck::input::read_pipeline_read(name, text)?
            };
            inputs
                .warnings
                .extend(read.warnings.into_iter().map(InputWarning::Read));
            let templates = read.uses.iter().filter(|u| is_template_step(u)).count();
            if templates == read.uses.len() && (templates > 0 || read.inline_templates > 0) {
                inputs
                    .from_templates
                    .push((name.clone(), templates, read.inline_templates));
            }
            let found = read.uses.len();
            inputs.build_uses.extend(read.uses);
            if found == 0 && read.inline_templates > 0 {
                return Ok(inputs);
            }
            found
        }
    };
    if found == 0 {
        inputs.append(Inputs::without_image(name, kind));
    }
    Ok(inputs)
}

/// A Secret read from the cluster, as the kubelet reads it.
fn pull_secret_of(found: &FoundSecret) -> Result<PullSecret, String> {
    let mut data: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if let Some(d) = &found.secret.data {
        for (k, v) in d {
            data.insert(k.clone(), v.0.clone());
        }
    }
    if let Some(d) = &found.secret.string_data {
        for (k, v) in d {
            data.insert(k.clone(), v.clone().into_bytes());
        }
    }
    PullSecret::from_data(
        &format!("namespace {}", found.namespace),
        &found.name,
        found.secret.type_.as_deref(),
        &data,
    )
    .map_err(|e| e.to_string())
}

/// A Pod's keyring: the given pull secrets plus the cluster's secrets for the Pod.
///
/// # Errors
/// A Secret of the chain that the kubelet could not read (bad base64, bad JSON).
pub fn keyring_of(
    given: &[PullSecret],
    chain: Option<&PullSecretChain>,
) -> Result<Keyring, SourceError> {
    let mut secrets: Vec<PullSecret> = given.to_vec();
    if let Some(chain) = chain {
        for found in &chain.secrets {
            secrets.push(pull_secret_of(found)?);
        }
    }
    Ok(Keyring::from_pull_secrets(&secrets))
}

/// Everything to check, and what was walked to find the pull secrets.
#[derive(Debug)]
pub struct Gathered {
    /// The image sets: the build Pod's (when it has uses), one per workload, and a last
    /// set without uses that carries the inputs' warnings.
    pub sets: Vec<ImageSet>,
    /// The credential chains walked in the cluster, for `explain` and `-v`.
    pub walked: Vec<PullSecretChain>,
    /// The build Pod's placeholder image, on the Kubernetes runtime when the inputs hold
    /// a pipeline's containers; check it with [`check_gathered`].
    pub placeholder: Option<Placeholder>,
    /// Without a cluster: each Pod whose pull secrets could not be read, in input order
    /// (the build Pod's pods template file when it names `imagePullSecrets`, and every
    /// workload). The CLI and the API check anyway (with a warning where a Pod names
    /// secrets); the admission webhook does not check what they would refuse wrongly.
    pub unread: Vec<UnreadPullSecrets>,
}

/// A Pod whose pull secrets were not read, for want of a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadPullSecrets {
    /// The Pod: `Kind/name` of a workload, or the pods template file's path.
    pub pod: String,
    /// The object's kind (`Pod`, `Deployment`, ..., `PipelinePodsTemplate`).
    pub kind: String,
    /// The `imagePullSecrets` it names; empty: it pulls with its ServiceAccount's (a
    /// Pod at creation gets them copied in by the ServiceAccount admission plugin).
    pub names: Vec<String>,
}

/// The Vela runtime a build runs on (the worker's `VELA_RUNTIME_DRIVER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// `docker`: each container is created with its own image; no placeholder.
    Docker,
    /// `kubernetes`: one Pod whose containers all start on the placeholder image.
    Kubernetes,
}

impl Runtime {
    /// Parses `docker` or `kubernetes` (as the worker's runtime driver names them).
    ///
    /// # Errors
    /// Any other value, with the allowed ones.
    pub fn parse(s: &str) -> Result<Runtime, String> {
        match s {
            "docker" => Ok(Runtime::Docker),
            "kubernetes" => Ok(Runtime::Kubernetes),
            other => Err(format!(
                "unknown runtime {other:?}; expected docker or kubernetes"
            )),
        }
    }
}

/// The upstream Kubernetes runtime's placeholder image (go-vela/worker
/// `runtime/kubernetes/image.go`): single-architecture, linux/amd64 (Vela community
/// issue 780).
pub const DEFAULT_PLACEHOLDER_IMAGE: &str = "docker.io/kubernetes/pause:latest";

/// The node label the kubelet sets to the node's architecture (`GOARCH`), which a
/// `nodeSelector` names to pick nodes.
pub const ARCH_LABEL: &str = "kubernetes.io/arch";
/// The node label the kubelet sets to the node's operating system (`GOOS`).
pub const OS_LABEL: &str = "kubernetes.io/os";

/// How the build runs, as far as the placeholder check is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRuntime {
    /// The runtime.
    pub runtime: Runtime,
    /// The placeholder image (`--placeholder-image`), as written.
    pub placeholder_image: String,
    /// The platform asked for (`--platform`); it wins over the pods template's
    /// `nodeSelector`.
    pub platform: Option<Platform>,
}

impl BuildRuntime {
    /// The Docker runtime: no placeholder.
    pub fn docker() -> BuildRuntime {
        BuildRuntime {
            runtime: Runtime::Docker,
            placeholder_image: DEFAULT_PLACEHOLDER_IMAGE.to_owned(),
            platform: None,
        }
    }
}

/// A setting of a [`CheckRequest`] that a warning or a detail names (to ask for it, or
/// as where a value came from). Each front end names it in its own words
/// ([`CheckRequest::setting_name`]): the CLI by its flag, the service by its field; no
/// library sentence holds a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    /// [`CheckRequest::namespace`]: the build namespace, to read pull secrets from.
    Namespace,
    /// [`CheckRequest::platform`]: the platform every image must serve.
    Platform,
}

/// The names of [`Setting`]s without a front end: `a namespace`, `the platform asked
/// for`; [`CheckRequest`]'s default.
pub fn plain_setting_name(setting: Setting) -> &'static str {
    match setting {
        Setting::Namespace => "a namespace",
        Setting::Platform => "the platform asked for",
    }
}

/// The placeholder check of a build Pod.
#[derive(Debug)]
pub struct Placeholder {
    /// The placeholder's one use (origin kind [`ContainerKind::Placeholder`], policy the
    /// strictest any container gives it), with the build Pod's pull secrets.
    pub set: ImageSet,
    /// The platform it must serve: `--platform`, else the pods template's
    /// `nodeSelector`; `None`: only that it exists.
    pub platform: Option<Platform>,
    /// Where [`Placeholder::platform`] comes from, for the report's detail (the
    /// front end's name of [`Setting::Platform`], `the pods template's nodeSelector
    /// kubernetes.io/arch=arm64`).
    pub platform_source: Option<String>,
}

/// The Kubernetes pull policy a container gives the placeholder at Pod creation, by its
/// Vela `pull` (DOMAIN §1: `on_start` is `Always`, since the real image comes later),
/// ranked: `Always` 2, `IfNotPresent` 1, `Never` 0.
fn placeholder_rank(policy: PullPolicy) -> (u8, PullPolicy) {
    match policy {
        PullPolicy::Always | PullPolicy::OnStart => (2, PullPolicy::Always),
        PullPolicy::NotPresent => (1, PullPolicy::NotPresent),
        PullPolicy::Never => (0, PullPolicy::Never),
    }
}

/// The strictest policy the build Pod's containers give the placeholder, or `None`
/// when `uses` holds no pipeline container (only `--image`s, or templates and `#init`,
/// which are skipped).
pub fn placeholder_policy(uses: &[ImageUse]) -> Option<PullPolicy> {
    uses.iter()
        .filter(|u| {
            matches!(
                u.origin.kind,
                ContainerKind::Step | ContainerKind::Service | ContainerKind::Secret
            ) && !matches!(u.disposition, Disposition::Skip(_))
        })
        .map(|u| placeholder_rank(u.policy))
        .max_by_key(|(rank, _)| *rank)
        .map(|(_, policy)| policy)
}

/// The platform a pods template's `nodeSelector` pins the build Pod to:
/// `kubernetes.io/os` (default `linux`) and `kubernetes.io/arch`; `None` without an
/// architecture label.
///
/// # Errors
/// A label value that is not a platform part (empty, or containing `/`).
pub fn node_selector_platform(
    template: &PipelinePodsTemplate,
) -> Result<Option<(Platform, String)>, String> {
    let Some(selector) = &template.spec.template.spec.node_selector else {
        return Ok(None);
    };
    let Some(arch) = selector.get(ARCH_LABEL) else {
        return Ok(None);
    };
    let os = selector.get(OS_LABEL).map_or("linux", String::as_str);
    let platform = Platform::parse(&format!("{os}/{arch}")).map_err(|e| {
        format!("the pods template's nodeSelector {OS_LABEL}={os:?}, {ARCH_LABEL}={arch:?}: {e}")
    })?;
    let mut source = format!("the pods template's nodeSelector {ARCH_LABEL}={arch}");
    if selector.contains_key(OS_LABEL) {
        source.push_str(&format!(", {OS_LABEL}={os}"));
    }
    Ok(Some((platform, source)))
}

/// The placeholder of the build Pod whose uses are `uses`, or `None` when there is none
/// to check (the Docker runtime, no pipeline container). `loaded` is the pods template
/// as already loaded for the pull secrets (its `nodeSelector` gives the platform);
/// `template` says where it came from (a file names the placeholder's origin).
fn plan_placeholder(
    uses: &[ImageUse],
    runtime: &BuildRuntime,
    loaded: Option<&PipelinePodsTemplate>,
    template: &TemplateSource,
    keyring: &Keyring,
    name: fn(Setting) -> &'static str,
) -> Result<Option<Placeholder>, RequestError> {
    if runtime.runtime != Runtime::Kubernetes {
        return Ok(None);
    }
    let Some(policy) = placeholder_policy(uses) else {
        return Ok(None);
    };
    // Only an empty placeholder stops the request: any other reference that does not
    // parse is its row's `invalid` status, as an image of the inputs would be. Blank
    // (only whitespace) is empty, as `serve --placeholder-image` judges its own.
    if let Err(e) =
        pullcheck::reference::Reference::parse_normalized(runtime.placeholder_image.trim())
        && e.kind() == pullcheck::reference::ReferenceErrorKind::Empty
    {
        return Err(RequestError::PlaceholderImage(e));
    }
    let mut placeholder = pullcheck::input::image_use(&runtime.placeholder_image, policy);
    placeholder.origin.kind = ContainerKind::Placeholder;
    placeholder.origin.name = "build Pod placeholder".to_owned();
    let (platform, platform_source) = match &runtime.platform {
        Some(p) => (Some(p.clone()), Some(name(Setting::Platform).to_owned())),
        None => match loaded
            .map(node_selector_platform)
            .transpose()
            .map_err(|e| RequestError::Template(SourceError::new(e)))?
        {
            Some(Some((p, source))) => (Some(p), Some(source)),
            _ => (None, None),
        },
    };
    if let TemplateSource::File(path) = template {
        placeholder.origin.file = Some(path.display().to_string());
    }
    Ok(Some(Placeholder {
        set: ImageSet {
            uses: vec![placeholder],
            pull_secrets: keyring.clone(),
            ..ImageSet::default()
        },
        platform,
        platform_source,
    }))
}

/// Checks `gathered`'s sets and its placeholder at once on `checker`: the placeholder
/// with its own platform ([`Placeholder::platform`], whatever `options.platform` says),
/// and first in the report, since the runtime pulls it first. Its detail says what it
/// is and where its platform comes from. Never fails, as [`Checker::check_sets`].
pub async fn check_gathered(
    checker: &Checker,
    gathered: Gathered,
    options: &CheckOptions,
) -> Report {
    let Some(placeholder) = gathered.placeholder else {
        return checker.check_sets(gathered.sets, options).await;
    };
    let placeholder_options = CheckOptions {
        platform: placeholder.platform.clone(),
        ..options.clone()
    };
    let (first, rest) = tokio::join!(
        checker.check_sets(vec![placeholder.set], &placeholder_options),
        checker.check_sets(gathered.sets, options),
    );
    let mut images = first.images;
    for image in &mut images {
        let platform = match (&placeholder.platform, &placeholder.platform_source) {
            (Some(p), Some(source)) => format!(", for {p} from {source}"),
            _ => String::new(),
        };
        let what = format!(
            "placeholder image of the Kubernetes runtime (every container of the build Pod \
             starts on it; pulled at Pod creation under policy {}{platform})",
            image.policy.as_str()
        );
        image.detail = if image.detail.is_empty() {
            what
        } else if image.status.is_failure() {
            format!(
                "{what}: every build fails before its first step: {}",
                image.detail
            )
        } else {
            format!("{what}: {}", image.detail)
        };
    }
    images.extend(rest.images);
    let mut warnings = first.warnings;
    for w in rest.warnings {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    Report::new(images, warnings)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A duration as the duration options take it: `60s`, `1500ms`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Finds each Pod's pull secrets and builds the image sets: the build Pod's from the
/// pods `template` (its `imagePullSecrets`, else its ServiceAccount's), each workload's
/// from its own settings. Without a cluster, only `pull_secrets` are used, and a Pod
/// that names `imagePullSecrets` gets a warning saying so.
///
/// # Errors
/// A Kubernetes lookup that failed ([`pullcheck_kube::KubeError`]'s message), a template
/// file that cannot be read, or a malformed Secret.
pub async fn find_pull_secrets(
    inputs: Inputs,
    pull_secrets: &[PullSecret],
    cluster: Option<&Cluster>,
    template: &TemplateSource,
) -> Result<Gathered, SourceError> {
    find_pull_secrets_on(
        inputs,
        pull_secrets,
        cluster,
        template,
        &BuildRuntime::docker(),
    )
    .await
}

/// [`find_pull_secrets`] for a build on `runtime`: on [`Runtime::Kubernetes`], when the
/// inputs hold a pipeline's containers, [`Gathered::placeholder`] is the placeholder
/// image under the strictest policy they give it, with the build Pod's pull secrets,
/// and its platform from `runtime.platform`, else the pods template's `nodeSelector`
/// (a template named in the cluster is read once more for it).
///
/// # Errors
/// As [`find_pull_secrets`]; also an empty placeholder image, and a `nodeSelector`
/// platform label that is not a platform part.
pub async fn find_pull_secrets_on(
    inputs: Inputs,
    pull_secrets: &[PullSecret],
    cluster: Option<&Cluster>,
    template: &TemplateSource,
    runtime: &BuildRuntime,
) -> Result<Gathered, SourceError> {
    gather_sets(
        inputs,
        pull_secrets,
        cluster,
        template,
        runtime,
        plain_setting_name,
    )
    .await
    .map_err(|e| match e {
        RequestError::Template(e) | RequestError::PullSecret(e) => e,
        other => SourceError::new(other.to_string()),
    })
}

/// [`find_pull_secrets_on`] with its errors typed: a template file that cannot be read
/// or whose `nodeSelector` is not a platform ([`RequestError::Template`]), a Kubernetes
/// lookup ([`RequestError::Lookup`]), a malformed Secret ([`RequestError::PullSecret`]),
/// a placeholder that is not a reference ([`RequestError::PlaceholderImage`]). Without a
/// cluster, each Pod whose pull secrets could not be read is in [`Gathered::unread`].
/// `name` words the [`Setting`]s its warnings and details name.
pub(crate) async fn gather_sets(
    inputs: Inputs,
    pull_secrets: &[PullSecret],
    cluster: Option<&Cluster>,
    template: &TemplateSource,
    runtime: &BuildRuntime,
    name: fn(Setting) -> &'static str,
) -> Result<Gathered, RequestError> {
    let Inputs {
        build_uses,
        workloads,
        warnings: file_warnings,
        without_images: _,
        without_image_kinds: _,
        from_templates: _,
    } = inputs;
    let mut walked = Vec::new();
    let mut sets = Vec::new();
    let mut warnings = Vec::new();
    let mut placeholder = None;
    let mut unread = Vec::new();

    // The Vela build Pod: the template's secrets, else its ServiceAccount's.
    if !build_uses.is_empty() {
        // The template is loaded once: for its pull secrets and the placeholder's platform.
        let (loaded, chain) = match cluster {
            Some(c) => {
                let (loaded, chain) = c.build_pod(template).await.map_err(RequestError::Lookup)?;
                (loaded, Some(chain))
            }
            None => {
                let mut loaded = None;
                if let TemplateSource::File(path) = template {
                    // Read it anyway: a malformed template is an error, and secrets it
                    // names cannot be fetched without a cluster.
                    let read = pullcheck_kube::read_template_file(path)
                        .map_err(|e| RequestError::Template(e.into()))?;
                    let names = read.image_pull_secret_names();
                    if !names.is_empty() {
                        unread.push(UnreadPullSecrets {
                            pod: path.display().to_string(),
                            kind: "PipelinePodsTemplate".to_owned(),
                            names: names.clone(),
                        });
                        warnings.push(format!(
                            "{}: names imagePullSecrets {names:?}; give {} to read them from \
                             the cluster",
                            path.display(),
                            name(Setting::Namespace)
                        ));
                    }
                    loaded = Some(read);
                }
                (loaded, None)
            }
        };
        let keyring = keyring_of(pull_secrets, chain.as_ref()).map_err(RequestError::PullSecret)?;
        placeholder = plan_placeholder(
            &build_uses,
            runtime,
            loaded.as_ref(),
            template,
            &keyring,
            name,
        )?;
        if let Some(chain) = chain {
            warnings.extend(chain.warnings.iter().cloned());
            walked.push(chain);
        }
        sets.push(ImageSet {
            uses: build_uses,
            pull_secrets: keyring,
            warnings: std::mem::take(&mut warnings),
        });
    }

    // Each workload: its own imagePullSecrets, else its ServiceAccount's.
    if !workloads.is_empty() {
        let pods: Vec<PodPullSecrets> = workloads.iter().map(|w| w.pull_secrets.clone()).collect();
        let chains = match cluster {
            Some(c) => Some(
                pullcheck_kube::walk_pull_secrets_many(c, &pods)
                    .await
                    .map_err(RequestError::Lookup)?,
            ),
            None => None,
        };
        for (i, workload) in workloads.into_iter().enumerate() {
            let chain = chains.as_ref().and_then(|c| c.get(i));
            let mut set_warnings = Vec::new();
            if chain.is_none() {
                unread.push(UnreadPullSecrets {
                    pod: format!("{}/{}", workload.kind, workload.name),
                    kind: workload.kind.clone(),
                    names: workload.pull_secrets.image_pull_secrets.clone(),
                });
            }
            if chain.is_none() && !workload.pull_secrets.image_pull_secrets.is_empty() {
                set_warnings.push(format!(
                    "{}:{}: {}/{} names imagePullSecrets {:?}; give {} to read them from the \
                     cluster",
                    workload.file,
                    workload.line,
                    workload.kind,
                    workload.name,
                    workload.pull_secrets.image_pull_secrets,
                    name(Setting::Namespace)
                ));
            }
            if let Some(chain) = chain {
                set_warnings.extend(chain.warnings.iter().cloned());
                walked.push(chain.clone());
            }
            sets.push(ImageSet {
                uses: workload.images,
                pull_secrets: keyring_of(pull_secrets, chain).map_err(RequestError::PullSecret)?,
                warnings: set_warnings,
            });
        }
    }
    if !file_warnings.is_empty() {
        // Carried by a set of its own, so they reach the report even with no images.
        sets.push(ImageSet {
            warnings: file_warnings
                .into_iter()
                .map(InputWarning::into_text)
                .collect(),
            ..ImageSet::default()
        });
    }
    Ok(Gathered {
        sets,
        walked,
        placeholder,
        unread,
    })
}

/// [`read_inputs`] then [`find_pull_secrets`].
///
/// # Errors
/// As those two.
pub async fn gather(
    texts: &[NamedText],
    images: Vec<ImageUse>,
    pull_secrets: &[PullSecret],
    cluster: Option<&Cluster>,
    template: &TemplateSource,
) -> Result<Gathered, SourceError> {
    let inputs = read_inputs(texts, images)?;
    find_pull_secrets(inputs, pull_secrets, cluster, template).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_error_keeps_its_position() {
        let texts = [NamedText {
            name: "request".into(),
            text: "steps:\n  - name: a\n    image: [unclosed\n".into(),
        }];
        let err = read_inputs(&texts, Vec::new()).expect_err("bad YAML");
        assert_eq!(err.file.as_deref(), Some("request"), "{err:?}");
        assert_eq!(err.line, Some(4), "{err:?}");
        assert!(err.column.is_some(), "{err:?}");
        // The position is in the fields, not in the message; Display places it.
        assert!(!err.message.starts_with("request"), "{}", err.message);
        assert!(err.to_string().starts_with("request:4:1: "), "{err}");
    }

    #[test]
    fn the_placeholder_gets_the_strictest_policy_of_the_containers() {
        let uses = |pulls: &[&str]| {
            let steps: String = pulls
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    format!("  - name: s{i}\n    image: alpine\n    pull: {p}\n    commands: [x]\n")
                })
                .collect();
            let text = format!("version: \"1\"\nsteps:\n{steps}");
            pullcheck::input::read_pipeline("p.yml", &text).expect("pipeline")
        };
        assert_eq!(
            placeholder_policy(&uses(&["never", "not_present"])),
            Some(PullPolicy::NotPresent)
        );
        // on_start is Always at Pod creation.
        assert_eq!(
            placeholder_policy(&uses(&["never", "on_start"])),
            Some(PullPolicy::Always)
        );
        assert_eq!(
            placeholder_policy(&uses(&["never"])),
            Some(PullPolicy::Never)
        );
        // --image uses are not containers of the build Pod.
        let image = pullcheck::input::parse_image_arg("alpine=always").expect("image");
        assert_eq!(placeholder_policy(&[image]), None);
        assert_eq!(placeholder_policy(&[]), None);
    }

    #[test]
    fn the_node_selector_names_the_platform() {
        let template = |selector: &str| {
            pullcheck_kube::parse_template(
                "t.yaml",
                &format!(
                    "apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\n\
                     metadata: {{name: t}}\nspec:\n  template:\n    spec:\n      \
                     nodeSelector: {selector}\n"
                ),
            )
            .expect("template")
        };
        let (p, source) = node_selector_platform(&template("{kubernetes.io/arch: arm64}"))
            .unwrap()
            .unwrap();
        assert_eq!(p.to_string(), "linux/arm64");
        assert_eq!(
            source,
            "the pods template's nodeSelector kubernetes.io/arch=arm64"
        );
        let (p, _) = node_selector_platform(&template(
            "{kubernetes.io/arch: amd64, kubernetes.io/os: windows}",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(p.to_string(), "windows/amd64");
        assert_eq!(
            node_selector_platform(&template("{kubernetes.io/os: linux}")).unwrap(),
            None
        );
        assert_eq!(
            node_selector_platform(&PipelinePodsTemplate::default()).unwrap(),
            None
        );
        assert!(node_selector_platform(&template("{kubernetes.io/arch: \"a/b/c\"}")).is_err());
    }

    #[test]
    fn runtimes_parse() {
        assert_eq!(Runtime::parse("docker"), Ok(Runtime::Docker));
        assert_eq!(Runtime::parse("kubernetes"), Ok(Runtime::Kubernetes));
        assert!(
            Runtime::parse("podman")
                .unwrap_err()
                .contains("docker or kubernetes")
        );
    }

    #[test]
    fn kinds_are_detected() {
        assert_eq!(
            detect("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n"),
            InputKind::Manifests
        );
        assert_eq!(
            detect("version: \"1\"\nsteps: [{name: a, image: alpine, commands: [x]}]\n"),
            InputKind::Pipeline
        );
    }

    #[test]
    fn nothing_to_check_names_every_text_and_why() {
        let texts = [
            NamedText {
                name: "a.yml".into(),
                text: "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n"
                    .into(),
            },
            NamedText {
                name: "b.yaml".into(),
                text: "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\n\
                       spec:\n  template:\n    spec:\n      containers:\n        - name: app\n\
                       \x20         image: alpine\n"
                    .into(),
            },
        ];
        let inputs = read_inputs(&texts, Vec::new()).expect("reads");
        assert_eq!(inputs.without_images(), ["a.yml", "b.yaml"]);
        let nothing = inputs.nothing_to_check().expect("nothing to check");
        let held: Vec<(&str, InputKind, Held)> = nothing
            .inputs
            .iter()
            .map(|i| (i.name.as_str(), i.read_as, i.held))
            .collect();
        assert_eq!(
            held,
            [
                ("a.yml", InputKind::Pipeline, Held::NoImage),
                ("b.yaml", InputKind::Manifests, Held::NoImage)
            ]
        );
        // The manifests reader's warning about the kind it does not read tells why.
        assert_eq!(nothing.warnings.len(), 1, "{nothing:?}");
        assert!(nothing.warnings[0].contains("Rollout"), "{nothing:?}");
        let with_image = [NamedText {
            name: "c.yml".into(),
            text: "version: \"1\"\nsteps: [{name: a, image: alpine, commands: [x]}]\n".into(),
        }];
        let inputs = read_inputs(&with_image, Vec::new()).expect("reads");
        assert_eq!(inputs.nothing_to_check(), None);
    }

    /// `use_count` counts what the report's `summary.total` counts (and the Go
    /// package's `Summary.Total`): each container once, an image in two containers
    /// twice, a container reached through an alias where it is used, `pull: never` and
    /// `--image` uses too, template steps not at all (`template_steps`).
    #[test]
    fn use_count_counts_uses_as_the_summary_does() {
        let texts = [
            NamedText {
                name: ".vela.yml".into(),
                text: "version: \"1\"\nsteps:\n\
                       \x20 - &app {name: a, image: 127.0.0.1:1/team/app:v1, commands: [x]}\n\
                       \x20 - {name: b, image: 127.0.0.1:1/team/app:v1, commands: [x]}\n\
                       \x20 - {name: old, image: alpine:3.19, pull: never, commands: [x]}\n\
                       \x20 - {name: lint, template: {name: golangci}}\n\
                       services:\n  - *app\n\
                       templates: [{name: golangci, source: t.yml, type: github}]\n"
                    .into(),
            },
            NamedText {
                name: "pod.yaml".into(),
                text: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  \
                       initContainers: [{name: i, image: busybox}]\n  \
                       containers: [{name: c, image: busybox}, {name: d, image: nginx}]\n"
                    .into(),
            },
        ];
        let image = pullcheck::input::parse_image_arg("alpine=always").expect("image");
        let inputs = read_inputs(&texts, vec![image]).expect("reads");
        // Steps a, b, old and the service (through the alias), the --image use, and the
        // Pod's three containers; not the template step.
        assert_eq!(inputs.use_count(), 4 + 1 + 3);
        assert_eq!(inputs.build_uses.len(), 6);
        assert_eq!(inputs.workloads.len(), 1);
        assert!(!inputs.nothing_checkable());
    }

    #[test]
    fn an_input_without_images_warns() {
        let texts = [NamedText {
            name: "empty.yml".into(),
            text: "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n".into(),
        }];
        let inputs = read_inputs(&texts, Vec::new()).expect("reads");
        assert!(inputs.is_empty());
        assert_eq!(inputs.warnings, [InputWarning::NoImage("empty.yml".into())]);
    }
}
