//! One check request, filled by every front end from its own surface (the CLI's
//! options and files, the service's JSON body, an admission review's object), then
//! consumed once: [`CheckRequest::read`] parses the texts and applies the empty-input
//! rule, [`Prepared::gather`] finds each Pod's pull secrets (the runtime default
//! applied), [`Ready::check`] checks. [`CheckRequest::run`] does all three.
//!
//! The stages are apart because the front ends differ between them: the CLI runs the
//! Kubernetes lookups on a task of their own under its deadline, the service checks the
//! namespace before it reads, and the webhook skips exempt images before it checks.

use std::fmt;
use std::time::{Duration, Instant};

use pullcheck::credentials::PullSecret;
use pullcheck::input::ImageUse;
#[cfg(test)]
use pullcheck::input::{PullPolicy, image_use};
use pullcheck::registry::Platform;
use pullcheck::report::Report;
use pullcheck::{CheckOptions, Checker};
use pullcheck_kube::{Cluster, TemplateSource};

use crate::{
    BuildRuntime, DEFAULT_PLACEHOLDER_IMAGE, Gathered, InputKind, Inputs, NamedText, Runtime,
    Setting, SourceError,
};

/// One input text of a [`CheckRequest`] and its kind: `None` detects it as the CLI does
/// for files ([`crate::detect`]); the service's `manifests` and `build` fields say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The text and its name.
    pub text: NamedText,
    /// Its kind, when the surface says it.
    pub kind: Option<InputKind>,
}

/// Everything one check is asked with. Each front end fills it from its own surface
/// and hands it over whole; nothing here is a CLI flag or a JSON field. `Default` is an
/// empty request: no input, a 60 s deadline, the runtime by its default rule.
#[derive(Clone)]
pub struct CheckRequest {
    /// The texts to read: pipelines (Vela source YAML, a compiled build's JSON) and
    /// Kubernetes manifests, in order.
    pub inputs: Vec<Input>,
    /// Images to check as the build Pod's, beside the pipelines' (the CLI's `--image`,
    /// the service's `images`); see [`pullcheck::input::image_use`].
    pub images: Vec<ImageUse>,
    /// Pull secrets every Pod gets, beside the cluster's.
    pub pull_secrets: Vec<PullSecret>,
    /// The build namespace: with it, the pull secrets are read from the cluster.
    pub namespace: Option<String>,
    /// The build Pod's PipelinePodsTemplate: none, a name in the namespace, or a file.
    pub template: TemplateSource,
    /// The Vela runtime; `None`: Kubernetes when a namespace or a pods template is
    /// given, else Docker ([`CheckRequest::build_runtime`]).
    pub runtime: Option<Runtime>,
    /// The Kubernetes runtime's placeholder image; `None`:
    /// [`DEFAULT_PLACEHOLDER_IMAGE`].
    pub placeholder_image: Option<String>,
    /// The platform (`os/arch[/variant]`) every image must serve; it also wins over the
    /// pods template's `nodeSelector` for the placeholder.
    pub platform: Option<Platform>,
    /// The check's overall deadline, Kubernetes lookups included.
    pub deadline: Duration,
    /// When the deadline's clock started; `None`: once the inputs are read
    /// ([`CheckRequest::read`]), before the Kubernetes lookups.
    pub deadline_start: Option<Instant>,
    /// Check `on_start` images too, instead of reporting them deferred.
    pub include_on_start: bool,
    /// Inputs without any image give an empty report instead of
    /// [`RequestError::NothingToCheck`].
    pub allow_empty: bool,
    /// Whether the cluster's own namespace (its kubeconfig context's) is the build
    /// namespace when [`CheckRequest::namespace`] is `None`, as for the CLI; `false` (the
    /// default, the service's: it ignores its kubeconfig's namespace): a pods template
    /// named without a namespace is [`RequestError::TemplateWithoutNamespace`].
    pub cluster_namespace: bool,
    /// How the front end names a [`Setting`] in the warnings and details the request
    /// gives (`--namespace` in the CLI, `"namespace"` in the service); default
    /// [`crate::plain_setting_name`].
    pub setting_name: fn(Setting) -> &'static str,
}

impl Default for CheckRequest {
    fn default() -> Self {
        CheckRequest {
            inputs: Vec::new(),
            images: Vec::new(),
            pull_secrets: Vec::new(),
            namespace: None,
            template: TemplateSource::None,
            runtime: None,
            placeholder_image: None,
            platform: None,
            deadline: CheckOptions::default().deadline,
            deadline_start: None,
            include_on_start: false,
            allow_empty: false,
            cluster_namespace: false,
            setting_name: crate::plain_setting_name,
        }
    }
}

impl fmt::Debug for CheckRequest {
    /// Which inputs are set and their sizes, never a text or a pull secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inputs: Vec<(&str, usize)> = self
            .inputs
            .iter()
            .map(|i| (i.text.name.as_str(), i.text.text.len()))
            .collect();
        f.debug_struct("CheckRequest")
            .field("inputs", &inputs)
            .field("images", &self.images.len())
            .field("pull_secrets", &self.pull_secrets.len())
            .field("namespace", &self.namespace)
            .field("template", &self.template)
            .field("runtime", &self.runtime)
            .field("placeholder_image", &self.placeholder_image)
            .field("platform", &self.platform)
            .field("deadline", &self.deadline)
            .field("include_on_start", &self.include_on_start)
            .field("allow_empty", &self.allow_empty)
            .field("cluster_namespace", &self.cluster_namespace)
            .finish_non_exhaustive()
    }
}

/// Why a [`CheckRequest`] gave no report, as facts: each variant names the part of the
/// request it is about and carries what was found, never a sentence for one surface.
/// Each front end words it for its own (the CLI's flags, the service's JSON fields and
/// `kind`, the webhook's short brief); `Display` is a plain rendering naming neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// Texts that are not a pipeline or manifests at all: each with the index of its
    /// [`Input`] in [`CheckRequest::inputs`], in input order.
    Inputs(Vec<(usize, SourceError)>),
    /// No image in any input and not [`CheckRequest::allow_empty`]: every text and what
    /// it held instead; a request without any input or image has none listed.
    NothingToCheck(NothingToCheck),
    /// A pods template named (to be read from the cluster) without a build namespace,
    /// where the cluster's own namespace does not stand in
    /// ([`CheckRequest::cluster_namespace`]): the template's name.
    TemplateWithoutNamespace(String),
    /// The placeholder image is empty or blank (only whitespace, as `serve
    /// --placeholder-image` judges its own), as the reference parser says it (kind
    /// [`ReferenceErrorKind::Empty`](pullcheck::reference::ReferenceErrorKind::Empty));
    /// any other reference that does not parse is the placeholder row's `invalid`.
    PlaceholderImage(pullcheck::reference::ReferenceError),
    /// The pods template file cannot be read, or its `nodeSelector` does not name a
    /// platform.
    Template(SourceError),
    /// A Kubernetes lookup of the pull secrets failed: the kube error as data (the
    /// object, the API server and its answer; [`pullcheck_kube::KubeError`]).
    Lookup(pullcheck_kube::KubeError),
    /// A Secret of a Pod's chain that the kubelet could not read either.
    PullSecret(SourceError),
    /// The Kubernetes lookups did not finish within the request's deadline (the
    /// deadline as given).
    LookupDeadline(Duration),
    /// The build namespace or the pods template's name cannot be a path segment of
    /// the Kubernetes API, as client-go's `rest.Request` refuses it before sending
    /// (`Name`, `Namespace`, `IsValidPathSegmentName` in client-go rest/request.go):
    /// which name, the name as given, and what is wrong with it.
    InvalidName {
        /// The namespace or the pods template's name.
        of: NameOf,
        /// The name as given.
        name: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
}

/// Which name of a request is [`RequestError::InvalidName`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameOf {
    /// [`CheckRequest::namespace`].
    Namespace,
    /// The name of [`CheckRequest::template`] ([`TemplateSource::Name`]).
    PodsTemplate,
}

/// What is wrong with a name that must be one path segment of the Kubernetes API, in
/// client-go's order (rest/request.go: `Name` refuses an empty name first, then
/// `IsValidPathSegmentName` a name that is `NameMayNotBe`, then one containing
/// `NameMayNotContain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameProblem {
    /// The name is empty (client-go: "resource name may not be empty"). A pods
    /// template's empty name would GET the template collection; an empty namespace
    /// would stand for the kubeconfig's.
    Empty,
    /// The name is `.` or `..` (client-go's `NameMayNotBe`): the segment that is
    /// given.
    Dots(&'static str),
    /// The name contains `/` or `%`, or both (client-go's `NameMayNotContain`), in
    /// that order.
    Contains(Vec<char>),
}

impl NameProblem {
    /// The problem's snake_case name, for machine-readable renderings: `empty`,
    /// `dots`, `contains`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NameProblem::Empty => "empty",
            NameProblem::Dots(_) => "dots",
            NameProblem::Contains(_) => "contains",
        }
    }
}

impl fmt::Display for NameProblem {
    /// client-go's words: `may not be empty`, `may not be '..'`, `may not contain '/'`
    /// (several `, `-separated).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameProblem::Empty => f.write_str("may not be empty"),
            NameProblem::Dots(dots) => write!(f, "may not be '{dots}'"),
            NameProblem::Contains(chars) => {
                let parts: Vec<String> = chars
                    .iter()
                    .map(|c| format!("may not contain '{c}'"))
                    .collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}

/// What keeps `name` from being one path segment of the Kubernetes API, as client-go
/// checks a resource name or a namespace (rest/request.go `Name` and
/// `IsValidPathSegmentName`); `None`: it can be one. client-go allows an empty
/// namespace (all namespaces); a build namespace cannot be, so empty is refused for
/// both.
pub fn path_segment_problem(name: &str) -> Option<NameProblem> {
    if name.is_empty() {
        return Some(NameProblem::Empty);
    }
    for dots in [".", ".."] {
        if name == dots {
            return Some(NameProblem::Dots(dots));
        }
    }
    let contained: Vec<char> = ['/', '%']
        .into_iter()
        .filter(|c| name.contains(*c))
        .collect();
    (!contained.is_empty()).then_some(NameProblem::Contains(contained))
}

/// What a request held instead of an image to check ([`RequestError::NothingToCheck`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NothingToCheck {
    /// Every input text, with what it held: first those without any image (input
    /// order), then pipelines whose every image comes from a template (input order).
    /// Empty: the request held no input and no image at all.
    pub inputs: Vec<EmptyInput>,
    /// The readers' warnings about the inputs (a document, object or kind not read),
    /// which tell why, in input order.
    pub warnings: Vec<String>,
}

/// One input text of a [`NothingToCheck`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyInput {
    /// The text's name ([`NamedText::name`]).
    pub name: String,
    /// What it was read as, and so what it was expected to hold: a pipeline's
    /// containers with `image:` ([`InputKind::Pipeline`], [`InputKind::Build`]) or
    /// workloads with containers ([`InputKind::Manifests`]).
    pub read_as: InputKind,
    /// What it held instead.
    pub held: Held,
}

/// What an [`EmptyInput`] held instead of an image to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// No image at all: no Vela `steps`, `services` or `stages` with `image:`, no Pod,
    /// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob with containers.
    NoImage,
    /// Only images from templates the Vela server expands when it compiles the build,
    /// which pullcheck does not: `steps` template steps, `inline` `render_inline`
    /// templates (counts).
    Templates {
        /// Template steps.
        steps: usize,
        /// `render_inline` templates.
        inline: usize,
    },
}

impl fmt::Display for NothingToCheck {
    /// `no image to check in a.yml, b.yml: expected …` (what they were read as), then
    /// each templates-only pipeline, then `nothing was checked` once, then the
    /// warnings, `; `-separated; no way to pass anyway (each front end adds its own).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let no_image: Vec<&EmptyInput> = self
            .inputs
            .iter()
            .filter(|i| i.held == Held::NoImage)
            .collect();
        let mut parts = Vec::new();
        if !no_image.is_empty() || self.inputs.is_empty() {
            let names: Vec<String> = no_image.iter().map(|i| i.name.clone()).collect();
            let read_as: Vec<InputKind> = no_image.iter().map(|i| i.read_as).collect();
            parts.push(crate::no_image_part(&names, &read_as));
        }
        for input in &self.inputs {
            if let Held::Templates { steps, inline } = input.held {
                parts.push(crate::templates_only_part(&input.name, steps, inline));
            }
        }
        parts.push("nothing was checked".to_owned());
        parts.extend(self.warnings.iter().cloned());
        f.write_str(&parts.join("; "))
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Inputs(errors) => {
                let messages: Vec<String> = errors.iter().map(|(_, e)| e.to_string()).collect();
                f.write_str(&messages.join("\n"))
            }
            RequestError::NothingToCheck(nothing) => nothing.fmt(f),
            RequestError::TemplateWithoutNamespace(name) => write!(
                f,
                "the pods template {name:?} is read from the build namespace, and none is given"
            ),
            RequestError::Lookup(e) => e.fmt(f),
            RequestError::PlaceholderImage(e) => write!(f, "placeholder image: {}", e.message()),
            RequestError::Template(e) | RequestError::PullSecret(e) => e.fmt(f),
            RequestError::LookupDeadline(deadline) => write!(
                f,
                "the Kubernetes lookups of the pull secrets did not finish within the \
                 deadline of {}",
                crate::format_duration(*deadline)
            ),
            RequestError::InvalidName { of, name, problem } => {
                let of = match of {
                    NameOf::Namespace => "namespace",
                    NameOf::PodsTemplate => "pods template name",
                };
                write!(f, "invalid {of} {name:?}: {problem}")
            }
        }
    }
}

impl std::error::Error for RequestError {}

impl CheckRequest {
    /// How the build runs: [`CheckRequest::runtime`], else Kubernetes when a namespace
    /// or a pods template (name or file) is given, else Docker; the placeholder image's
    /// default applied.
    pub fn build_runtime(&self) -> BuildRuntime {
        let runtime = self.runtime.unwrap_or(
            if self.namespace.is_some() || !matches!(self.template, TemplateSource::None) {
                Runtime::Kubernetes
            } else {
                Runtime::Docker
            },
        );
        BuildRuntime {
            runtime,
            placeholder_image: self
                .placeholder_image
                .clone()
                .unwrap_or_else(|| DEFAULT_PLACEHOLDER_IMAGE.to_owned()),
            platform: self.platform.clone(),
        }
    }

    /// The request's own rules, before anything is read: the namespace and the pods
    /// template's name each one path segment of the Kubernetes API
    /// ([`path_segment_problem`]), namespace first; a pods template named without a
    /// namespace for it. [`CheckRequest::read`] applies them first; the empty-input
    /// rule needs the texts read, so it is [`CheckRequest::read`]'s.
    ///
    /// # Errors
    /// [`RequestError::InvalidName`], [`RequestError::TemplateWithoutNamespace`].
    pub fn validate(&self) -> Result<(), RequestError> {
        let names = [
            (NameOf::Namespace, self.namespace.as_deref()),
            (
                NameOf::PodsTemplate,
                match &self.template {
                    TemplateSource::Name(name) => Some(name.as_str()),
                    _ => None,
                },
            ),
        ];
        for (of, name) in names {
            if let Some(name) = name
                && let Some(problem) = path_segment_problem(name)
            {
                return Err(RequestError::InvalidName {
                    of,
                    name: name.to_owned(),
                    problem,
                });
            }
        }
        if let TemplateSource::Name(name) = &self.template
            && self.namespace.is_none()
            && !self.cluster_namespace
        {
            return Err(RequestError::TemplateWithoutNamespace(name.clone()));
        }
        Ok(())
    }

    /// Parses every input (no IO) and applies the empty-input rule. The deadline's
    /// clock starts here unless [`CheckRequest::deadline_start`] says otherwise. With
    /// [`CheckRequest::allow_empty`], a text with no document at all (an empty file) is
    /// an input without images, not an error.
    ///
    /// # Errors
    /// As [`CheckRequest::validate`]; [`RequestError::Inputs`] naming every text that is
    /// not a pipeline or manifests; else [`RequestError::NothingToCheck`] when no input
    /// holds an image (a request without any input or image included) and
    /// [`CheckRequest::allow_empty`] is not set.
    pub fn read(self) -> Result<Prepared, RequestError> {
        self.validate()?;
        let runtime = self.build_runtime();
        let mut inputs = Inputs::default();
        let mut errors = Vec::new();
        for (i, input) in self.inputs.iter().enumerate() {
            let kind = input
                .kind
                .unwrap_or_else(|| crate::detect(&input.text.text));
            match crate::read_text(&input.text, kind) {
                Ok(read) => inputs.append(read),
                // A text with no document holds no image: with `allow_empty`, one more
                // input without images rather than an error.
                Err(_)
                    if self.allow_empty
                        && pullcheck::input::holds_no_document(&input.text.text) =>
                {
                    inputs.append(Inputs::without_image(&input.text.name, kind));
                }
                Err(e) => errors.push((i, e)),
            }
        }
        if !errors.is_empty() {
            return Err(RequestError::Inputs(errors));
        }
        inputs.build_uses.extend(self.images);
        if !self.allow_empty
            && let Some(nothing) = inputs.nothing_to_check()
        {
            return Err(RequestError::NothingToCheck(nothing));
        }
        Ok(Prepared {
            inputs,
            pull_secrets: self.pull_secrets,
            namespace: self.namespace,
            template: self.template,
            runtime,
            setting_name: self.setting_name,
            options: CheckOptions {
                include_on_start: self.include_on_start,
                deadline: self.deadline,
                deadline_start: Some(self.deadline_start.unwrap_or_else(Instant::now)),
                platform: self.platform,
            },
        })
    }

    /// [`CheckRequest::read`], [`Prepared::gather_within_deadline`] on `cluster`, and
    /// [`Ready::check`] on `checker`: the whole check.
    ///
    /// # Errors
    /// As those: a problem of the request, or of its Kubernetes lookups. Problems of
    /// images are their statuses in the report.
    pub async fn run(
        self,
        checker: &Checker,
        cluster: Option<&Cluster>,
    ) -> Result<Report, RequestError> {
        let ready = self.read()?.gather_within_deadline(cluster).await?;
        Ok(ready.check(checker).await)
    }
}

/// A [`CheckRequest`] whose inputs are read: what is left is to find the pull secrets.
#[derive(Debug)]
pub struct Prepared {
    inputs: Inputs,
    pull_secrets: Vec<PullSecret>,
    namespace: Option<String>,
    template: TemplateSource,
    runtime: BuildRuntime,
    setting_name: fn(Setting) -> &'static str,
    options: CheckOptions,
}

impl Prepared {
    /// The check's options: `include_on_start`, the deadline and when it started, the
    /// platform.
    pub fn options(&self) -> &CheckOptions {
        &self.options
    }

    /// How many image uses the inputs hold, counted as read ([`Inputs::use_count`]): an
    /// image used in three steps counts three. For a front end's limit, before anything
    /// is gathered or planned.
    pub fn use_count(&self) -> usize {
        self.inputs.use_count()
    }

    /// Whether the cluster is asked: with a namespace, or a pods template named in it.
    pub fn needs_cluster(&self) -> bool {
        self.namespace.is_some() || matches!(self.template, TemplateSource::Name(_))
    }

    /// Finds each Pod's pull secrets ([`crate::find_pull_secrets_on`] on the request's
    /// runtime): from `cluster` (in the request's namespace) when
    /// [`Prepared::needs_cluster`], else only the request's own, and each Pod that
    /// would have needed the cluster is in [`Gathered::unread`]. No deadline of its
    /// own; see [`Prepared::gather_within_deadline`].
    ///
    /// # Errors
    /// [`RequestError::Template`], [`RequestError::Lookup`],
    /// [`RequestError::PullSecret`], [`RequestError::PlaceholderImage`].
    pub async fn gather(self, cluster: Option<&Cluster>) -> Result<Ready, RequestError> {
        let cluster = cluster
            .filter(|_| self.needs_cluster())
            .map(|c| c.with_namespace(self.namespace.as_deref().unwrap_or_default()));
        let gathered = crate::gather_sets(
            self.inputs,
            &self.pull_secrets,
            cluster.as_ref(),
            &self.template,
            &self.runtime,
            self.setting_name,
        )
        .await?;
        Ok(Ready {
            gathered,
            options: self.options,
        })
    }

    /// [`Prepared::gather`] within the request's deadline.
    ///
    /// # Errors
    /// As [`Prepared::gather`]; [`RequestError::LookupDeadline`] past the deadline.
    pub async fn gather_within_deadline(
        self,
        cluster: Option<&Cluster>,
    ) -> Result<Ready, RequestError> {
        let deadline = self.options.deadline;
        let start = self.options.deadline_start.unwrap_or_else(Instant::now);
        let watch = tokio::time::Instant::from_std(pullcheck::deadline_at(start, deadline));
        tokio::time::timeout_at(watch, self.gather(cluster))
            .await
            .map_err(|_| RequestError::LookupDeadline(deadline))?
    }
}

/// A request with its image sets: what is left is to check them.
#[derive(Debug)]
pub struct Ready {
    /// The image sets, the placeholder and what was walked; a front end may mark uses
    /// (the webhook skips exempt images) before [`Ready::check`].
    pub gathered: Gathered,
    /// The check's options, as the request gave them.
    pub options: CheckOptions,
}

impl Ready {
    /// Checks the sets and the placeholder on `checker` ([`crate::check_gathered`]).
    /// Never fails: problems are images' statuses.
    pub async fn check(self, checker: &Checker) -> Report {
        crate::check_gathered(checker, self.gathered, &self.options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(name: &str, text: &str) -> Input {
        Input {
            text: NamedText {
                name: name.into(),
                text: text.into(),
            },
            kind: None,
        }
    }

    #[test]
    fn the_runtime_defaults_to_kubernetes_with_a_namespace_or_template() {
        let mut request = CheckRequest::default();
        assert_eq!(request.build_runtime().runtime, Runtime::Docker);
        assert_eq!(
            request.build_runtime().placeholder_image,
            DEFAULT_PLACEHOLDER_IMAGE
        );
        request.namespace = Some("ci".into());
        assert_eq!(request.build_runtime().runtime, Runtime::Kubernetes);
        request.namespace = None;
        request.template = TemplateSource::File("t.yaml".into());
        assert_eq!(request.build_runtime().runtime, Runtime::Kubernetes);
        request.runtime = Some(Runtime::Docker);
        assert_eq!(request.build_runtime().runtime, Runtime::Docker);
    }

    #[test]
    fn every_bad_input_is_named_with_its_index() {
        let request = CheckRequest {
            inputs: vec![
                pipeline("a.yml", "steps:\n  - name: a\n    image: [unclosed\n"),
                pipeline(
                    "b.yml",
                    "version: \"1\"\nsteps: [{name: a, image: alpine, commands: [x]}]\n",
                ),
                pipeline("c.yml", "steps: [\n"),
            ],
            ..CheckRequest::default()
        };
        let Err(RequestError::Inputs(errors)) = request.read() else {
            panic!("two bad inputs");
        };
        let indexes: Vec<usize> = errors.iter().map(|(i, _)| *i).collect();
        assert_eq!(indexes, [0, 2]);
        assert!(errors[0].1.line.is_some(), "{errors:?}");
    }

    #[test]
    fn inputs_without_images_are_refused_unless_allowed() {
        let empty = || CheckRequest {
            inputs: vec![pipeline(
                "e.yml",
                "version: \"1\"\ntemplates: [{name: t, source: t.yml, type: github}]\n",
            )],
            ..CheckRequest::default()
        };
        let Err(RequestError::NothingToCheck(nothing)) = empty().read() else {
            panic!("nothing to check");
        };
        assert_eq!(
            nothing.inputs,
            [EmptyInput {
                name: "e.yml".into(),
                read_as: InputKind::Pipeline,
                held: Held::NoImage,
            }]
        );
        // A request without any input or image is nothing to check, with none listed.
        let Err(RequestError::NothingToCheck(none)) = CheckRequest::default().read() else {
            panic!("an empty request");
        };
        assert_eq!(none.inputs, []);
        assert!(
            CheckRequest {
                allow_empty: true,
                ..CheckRequest::default()
            }
            .read()
            .is_ok()
        );
        let allowed = CheckRequest {
            allow_empty: true,
            ..empty()
        };
        assert!(allowed.read().is_ok());
        // An image alone is something to check.
        let image = CheckRequest {
            images: vec![image_use("alpine", PullPolicy::Always)],
            ..CheckRequest::default()
        };
        assert!(image.read().is_ok());
    }

    #[test]
    fn a_template_name_needs_a_namespace_unless_the_cluster_s_stands_in() {
        let named = || CheckRequest {
            template: TemplateSource::Name("vela-pods".into()),
            images: vec![image_use("alpine", PullPolicy::Always)],
            ..CheckRequest::default()
        };
        assert_eq!(
            named().read().err(),
            Some(RequestError::TemplateWithoutNamespace("vela-pods".into()))
        );
        let with_namespace = CheckRequest {
            namespace: Some("ci".into()),
            ..named()
        };
        assert!(with_namespace.read().is_ok());
        let cluster_s = CheckRequest {
            cluster_namespace: true,
            ..named()
        };
        assert!(cluster_s.read().is_ok());
        // A file needs no namespace.
        let file = CheckRequest {
            template: TemplateSource::File("t.yaml".into()),
            ..named()
        };
        assert_eq!(file.validate(), Ok(()));
    }

    #[test]
    fn names_that_are_no_path_segment_are_refused_as_client_go_refuses_them() {
        // client-go rest/request.go: `Name` refuses "" ("resource name may not be
        // empty"); `IsValidPathSegmentName` refuses NameMayNotBe = {".", ".."} and
        // NameMayNotContain = {"/", "%"} (every one contained, in that order).
        let cases: [(&str, Option<NameProblem>); 7] = [
            ("", Some(NameProblem::Empty)),
            (".", Some(NameProblem::Dots("."))),
            ("..", Some(NameProblem::Dots(".."))),
            ("a/b", Some(NameProblem::Contains(vec!['/']))),
            ("%2F/x", Some(NameProblem::Contains(vec!['/', '%']))),
            ("...", None),
            ("vela-pods.v1", None),
        ];
        for (name, problem) in cases {
            assert_eq!(path_segment_problem(name), problem, "{name:?}");
        }
        let request = |namespace: Option<&str>, template: Option<&str>| CheckRequest {
            namespace: namespace.map(str::to_owned),
            template: template.map_or(TemplateSource::None, |t| TemplateSource::Name(t.into())),
            images: vec![image_use("alpine", PullPolicy::Always)],
            ..CheckRequest::default()
        };
        assert_eq!(
            request(Some(""), None).read().err(),
            Some(RequestError::InvalidName {
                of: NameOf::Namespace,
                name: String::new(),
                problem: NameProblem::Empty,
            })
        );
        assert_eq!(
            request(Some("ci"), Some("..")).validate(),
            Err(RequestError::InvalidName {
                of: NameOf::PodsTemplate,
                name: "..".into(),
                problem: NameProblem::Dots(".."),
            })
        );
        // The namespace is checked first; a bad name beats a missing namespace.
        assert_eq!(
            request(Some("a/b"), Some("")).validate(),
            Err(RequestError::InvalidName {
                of: NameOf::Namespace,
                name: "a/b".into(),
                problem: NameProblem::Contains(vec!['/']),
            })
        );
        assert_eq!(
            request(None, Some("")).validate(),
            Err(RequestError::InvalidName {
                of: NameOf::PodsTemplate,
                name: String::new(),
                problem: NameProblem::Empty,
            })
        );
        assert_eq!(request(Some("ci"), Some("vela-pods")).validate(), Ok(()));
        // A file's path is no name.
        let file = CheckRequest {
            template: TemplateSource::File("../t/p.yaml".into()),
            ..request(Some("ci"), None)
        };
        assert_eq!(file.validate(), Ok(()));
    }

    #[tokio::test]
    async fn an_empty_placeholder_is_the_reference_error_others_are_rows() {
        let request = |placeholder: &str| CheckRequest {
            inputs: vec![pipeline(
                "p.yml",
                "version: \"1\"\nsteps: [{name: a, image: alpine, commands: [x]}]\n",
            )],
            runtime: Some(Runtime::Kubernetes),
            placeholder_image: Some(placeholder.into()),
            ..CheckRequest::default()
        };
        let Err(RequestError::PlaceholderImage(e)) =
            request("").read().expect("reads").gather(None).await
        else {
            panic!("an empty placeholder");
        };
        assert_eq!(e.kind(), pullcheck::reference::ReferenceErrorKind::Empty);
        // Blank is empty, as `serve --placeholder-image` judges its own (rev23q 15).
        let Err(RequestError::PlaceholderImage(e)) =
            request(" \t ").read().expect("reads").gather(None).await
        else {
            panic!("a blank placeholder");
        };
        assert_eq!(e.kind(), pullcheck::reference::ReferenceErrorKind::Empty);
        // Not a reference, but not empty: the placeholder's row says `invalid`.
        let ready = request("Bad/Pause")
            .read()
            .expect("reads")
            .gather(None)
            .await
            .expect("gathers");
        let placeholder = ready.gathered.placeholder.expect("a placeholder");
        assert_eq!(placeholder.set.uses[0].image, "Bad/Pause");
    }

    #[tokio::test]
    async fn without_a_cluster_every_workload_s_unread_secrets_are_listed() {
        let manifests = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  \
                         imagePullSecrets: [{name: regcred}]\n  containers: [{name: a, image: alpine}]\n\
                         ---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  \
                         template:\n    spec:\n      containers: [{name: b, image: alpine}]\n";
        // The front end names the setting the warning asks for (here as a flag would).
        fn flag(setting: Setting) -> &'static str {
            match setting {
                Setting::Namespace => "--ns-flag",
                Setting::Platform => "--platform-flag",
            }
        }
        let request = CheckRequest {
            inputs: vec![pipeline("m.yaml", manifests)],
            namespace: Some("ci".into()),
            setting_name: flag,
            ..CheckRequest::default()
        };
        let prepared = request.read().expect("reads");
        assert!(prepared.needs_cluster());
        let ready = prepared.gather(None).await.expect("gathers");
        let unread: Vec<(&str, &str, usize)> = ready
            .gathered
            .unread
            .iter()
            .map(|u| (u.pod.as_str(), u.kind.as_str(), u.names.len()))
            .collect();
        assert_eq!(
            unread,
            [("Pod/p", "Pod", 1), ("Deployment/d", "Deployment", 0)]
        );
        // The CLI's and the service's warning for the Pod that names secrets.
        assert_eq!(
            ready.gathered.sets[0].warnings,
            [
                "m.yaml:1: Pod/p names imagePullSecrets [\"regcred\"]; give --ns-flag to read them \
              from the cluster"
            ]
        );
        assert!(ready.gathered.sets[1].warnings.is_empty());
    }
}
