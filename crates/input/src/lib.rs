//! Inputs: the images a build will pull, each with its pull policy and origin.
//!
//! Three inputs give [`ImageUse`]s, one per container:
//! - a Vela pipeline source (`.vela.yml`, `version: "1"`),
//! - a compiled Vela `Build` as a worker receives it (JSON, or the CLI's YAML of it),
//! - `--image REF[=POLICY]` arguments.
//!
//! ```
//! use pullcheck_input::{read_pipeline, Disposition, PullPolicy};
//!
//! let text = "\
//! version: \"1\"
//! steps:
//!   - name: test
//!     image: golang:1.22
//!     pull: true
//!     commands: [go test ./...]
//! ";
//! let uses = read_pipeline(".vela.yml", text).unwrap();
//! assert_eq!(uses[0].image, "golang:1.22");
//! assert_eq!(uses[0].policy, PullPolicy::Always);
//! assert_eq!((uses[0].origin.line, uses[0].origin.column), (Some(4), Some(12)));
//! assert_eq!(uses[0].disposition, Disposition::Check);
//! ```
//!
//! Architecture invariants:
//! - No IO except [`read_pipeline_file`] reading its one file.
//! - Nothing the file holds is dropped silently: a key written twice where Vela decodes it
//!   (or anywhere in a compiled build) is an [`InputError`], and a YAML document after the first (which upstream does not read either) is named by
//!   [`read_pipeline_with_warnings`].
//! - Image references are passed on as written: parsing them is `pullcheck-reference`'s job.
//! - A problem with one container never hides the others: it becomes
//!   [`Disposition::Invalid`] with its position, and every container stays in the output.
//!   [`InputError`] is only for a file that is not a pipeline at all.
//! - Hostile input ends in bounded time and memory, never in a panic: aliases are shared and
//!   not copied, nesting and node count are capped, and lookups spend from a fixed budget
//!   (see [`yaml`] and `tree.rs`).

mod compiler;
mod container;
mod decode;
pub mod envsubst;
mod gojson;
mod image_arg;
mod pipeline;
mod policy;
mod problem;
mod refusal;
mod resolve;
mod substitute;
mod tree;
pub mod yaml;

use std::fmt;
use std::path::Path;

pub use container::closest_key;
pub use gojson::folds_equal;
pub use policy::{ALL_PULL_VALUES, PullPolicy, VELA_PULL_VALUES};
pub use problem::{
    Field, LineColumn, Position, Problem, Unresolved, UnresolvedVariable, ValueSource,
};
pub use refusal::{DecodeFailure, Refusal};

/// What kind of container an image belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerKind {
    /// A step (top-level or in a stage).
    Step,
    /// A service.
    Service,
    /// A secret's `origin` container.
    Secret,
    /// An image given on the command line (`--image`).
    Image,
    /// A container of a Kubernetes Pod or pod template (`containers`, `initContainers`
    /// or `ephemeralContainers` of a Pod, Deployment, StatefulSet, DaemonSet,
    /// ReplicaSet, Job or CronJob).
    Container,
    /// The placeholder image the Vela Kubernetes runtime starts every container of the
    /// build Pod on (upstream `kubernetes/pause:latest`), pulled at Pod creation.
    Placeholder,
    /// An image volume of a Pod or pod template (`volumes[].image.reference`,
    /// Kubernetes 1.31+): the kubelet pulls it, with its own `pullPolicy`, before the
    /// Pod's containers start.
    Volume,
}

/// Where an image was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Origin {
    /// The file, as given by the user; `None` for `--image`.
    pub file: Option<String>,
    /// 1-based line of the `image:` value where the container uses it (of the container
    /// when it has no image); for a value reached through an alias, of that alias.
    pub line: Option<usize>,
    /// 1-based column, in characters.
    pub column: Option<usize>,
    /// The kind of container.
    pub kind: ContainerKind,
    /// The container's `name`; for a secret origin without one, the secret's name; for a
    /// container without a name, its place (`steps[2]`, `services[0]`, `secrets[1].origin`);
    /// for `--image`, the reference.
    pub name: String,
    /// The stage name, for stage steps.
    pub stage: Option<String>,
    /// For a container of a Kubernetes object: its owner, list and name apart (the
    /// `name` above says them in one: `Pod/p initContainer clone`); `null` otherwise,
    /// and for a pod spec with no container at all. In JSON only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodContainer>,
}

/// A container of a Kubernetes object, for [`Origin::pod`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PodContainer {
    /// The object: `Kind/name` (`Deployment/web`), or `document N` for one without a
    /// name.
    pub owner: String,
    /// Which list of the pod spec.
    pub list: ContainerList,
    /// The container's `name`, or its place (`containers[0]`) when it has none.
    pub name: String,
}

/// A list of containers of a pod spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ContainerList {
    /// `containers`.
    Containers,
    /// `initContainers`.
    InitContainers,
    /// `ephemeralContainers`.
    EphemeralContainers,
    /// `volumes` (an image volume, `volumes[].image.reference`; [`PodContainer::name`]
    /// is the volume's name).
    Volumes,
}

/// What to do with one use of an image, as far as the input can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// An image to plan (its policy decides whether it is checked).
    Check,
    /// Not an image that can be checked, and why ([`Skip`]); the report words it.
    Skip(Skip),
    /// The container is malformed (no image, a `${` that Vela's substitution refuses, a
    /// `pull:` that is not a string): each problem with its position.
    Invalid(Vec<Problem>),
    /// The pull policy is not one of the known values: `written` is the value as
    /// written (`""` for `--image ref=`); `problems` say it (positioned, or naming the
    /// argument) with the allowed values, and any other problem of the container.
    UnknownPolicy {
        /// The policy as written.
        written: String,
        /// Every problem of the container, positioned.
        problems: Vec<Problem>,
    },
    /// The image (or its `pull:`) depends on a value known only when the build runs: a
    /// `${VAR}` that is the target of one of the container's secrets, or, in pipeline
    /// source, a `VELA_*` variable the server sets or a variable set nowhere. Never
    /// checked; [`Unresolved`] names the position, each variable and where its value
    /// would come from.
    Unresolved(Unresolved),
}

/// Why a use is not checked ([`Disposition::Skip`]), as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// A Vela step that uses a `template:` (its name): its images are known only after
    /// the server expands the template.
    Template {
        /// The template's `name`.
        name: String,
    },
    /// The `#init` step Vela injects, which is not an image.
    Init,
    /// The caller exempted the image (the admission webhook's exempt patterns).
    Exempt,
}

/// One container's use of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// The image as written; empty when the container has none.
    pub image: String,
    /// The image after Vela's `${VAR}` substitution, when it has anything to substitute
    /// and the result is known (`golang:${GO}` → `golang:1.22`); `None` when the image
    /// is used as written (and for [`Disposition::Unresolved`]). See
    /// [`read_pipeline`] for whose substitution is reproduced.
    pub substituted: Option<String>,
    /// The normalised pull policy (`not_present` where the value was invalid, as upstream's
    /// worker treats an unknown value as `IfNotPresent`).
    pub policy: PullPolicy,
    /// Where it was written.
    pub origin: Origin,
    /// Whether it can be checked.
    pub disposition: Disposition,
}

/// An input that cannot be read at all: unreadable, not YAML/JSON, or not a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file, if any.
    pub file: Option<String>,
    /// 1-based line, if known.
    pub line: Option<usize>,
    /// 1-based column, if known.
    pub column: Option<usize>,
    /// What is wrong, as the CLI prints it after the position (for a refusal, its
    /// [`Refusal`]'s words).
    pub message: String,
    /// Set when Vela's compiler refuses the pipeline: why, as data. The file is then
    /// not checked at all, as Vela never runs it.
    pub refusal: Option<Box<Refusal>>,
}

impl ImageUse {
    /// The image the node will pull: [`ImageUse::substituted`] when there is one, else
    /// the image as written.
    pub fn pulled(&self) -> &str {
        self.substituted.as_deref().unwrap_or(&self.image)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            write!(f, ": ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}

/// Reads a pipeline: Vela source YAML or a compiled `Build` JSON, detected from the content.
///
/// `file` is the name to put in origins and errors.
///
/// - Containers are read from `services[]`, `stages` (a mapping of name → `{steps[]}` in
///   source, in file order; a list of `{name, steps[]}` compiled), `steps[]`, and the
///   `origin` of each `secrets[]` entry that has a non-empty one, in that order (upstream's
///   executor "assemble" order).
/// - YAML anchors, aliases and merge keys (`<<: *a`, `<<: [*a, *b]`) are resolved; an
///   origin's line and column are those of the `image:` value where this container uses
///   it, or of the container when it has no image. A value reached through an alias is used
///   at that alias: `image: *img` at the `*img`, a step written `- *stepa` at the
///   `*stepa`, an image merged in by `<<: *defaults` at the `*defaults` (the first alias on
///   the way from the top of the document; see [`yaml`]). So two steps that share an image
///   through an anchor have origins of their own. A message about such a value names the
///   use and where the value is written: `.vela.yml:7:12 (written at 4:17): ...`. JSON is
///   read by the same YAML parser, so it gets positions too; JSON the YAML parser refuses
///   is read as plain JSON, without positions.
/// - `pull:` is normalised as upstream does (see [`PullPolicy::from_vela`]); any other value
///   is [`Disposition::Invalid`], naming `file:line:column` of the value.
/// - A step with `template:` is [`Disposition::Skip`] (its images are known only after the
///   server expands the template); so is Vela's injected `#init` image. A container with
///   neither image nor template is [`Disposition::Invalid`].
/// - `${VAR}` in `image` and `pull` is substituted as Vela does ([`envsubst`] syntax):
///   in a compiled build (a top-level `id`) as the worker, from the container's own
///   `environment`, an unknown variable empty; in source as the compiler, from the
///   pipeline's, the stage's and the step's `environment:` (a mapping, or a list of
///   `NAME=value`; the step wins), an unknown variable kept as `${NAME}` and a value with
///   a newline inserted quoted (Go's `%q`), then as the worker again on that result
///   (`$${VAR}` is `${VAR}` after compiling, then the variable's value). The result is
///   [`ImageUse::substituted`]. An
///   image or pull value that depends on a variable known only at build time (the
///   `target` of one of the container's `secrets`; in source, a `VELA_*` variable or one
///   set nowhere) is [`Disposition::Unresolved`], naming each variable and where its
///   value comes from; a `${` that upstream's parser refuses is [`Disposition::Invalid`].
/// - Only the first YAML document is read, as upstream does; [`read_pipeline_with_warnings`]
///   says where the ignored ones are. Unknown keys are ignored, as upstream does (but see
///   the warnings of [`read_pipeline_with_warnings`]).
/// - In source, `stages` that is no mapping (a list, a scalar) is refused at it ("invalid
///   yaml: expected map node for stage", as Vela says it).
/// - A key written twice in a mapping go-yaml v3 decodes (`steps:` twice, `image:` twice
///   in one step) is refused ([`Refusal::DuplicateKey`]); under a key Vela's types have
///   not, it is read, as Vela reads it; merge keys (`<<`) may repeat.
///
/// # Errors
/// [`InputError`] when the text is not YAML/JSON at all (with the position of the syntax
/// error), is empty, is not a mapping with pipeline keys (`version`, `steps`, `stages`,
/// `services`, `secrets`, or a compiled build's `id`), when `steps`, `services`, `secrets`
/// or `stages` has the wrong shape, when a compiled build has a key twice (at the second,
/// with `(first at line:column)` in the message), or when the file exceeds the limits that
/// guard against hostile YAML (nesting, node count, alias and merge-key expansion).
/// Problems of one container are [`Disposition::Invalid`] instead, so every image stays in
/// the report.
pub fn read_pipeline(file: &str, text: &str) -> Result<Vec<ImageUse>, InputError> {
    read_pipeline_with_warnings(file, text).map(|(uses, _)| uses)
}

/// [`read_pipeline`], with warnings about what the file holds but is not read.
///
/// The warnings, in this order:
/// - a container key in source that Vela does not know but that is at most two edits
///   from one it does (`imagee`, `pul`): `file:line:column: unknown key `imagee` in step
///   `a` (Vela ignores it); did you mean `image`?` (the keys of go-vela/server's
///   `compiler/types/yaml` `Step`, `Service` and secret `Origin`);
/// - Go template syntax where YAML reads it as structure (`pull: {{ .pull_policy }}`, a
///   line starting `{{`): the server expands such a file before it is a pipeline. When
///   such a file does not load at all, the [`InputError`] says so instead;
/// - the YAML documents after the first: upstream reads only the
///   first document of a pipeline file, and so does this reader, but a second document is
///   usually a mistake whose images would never be checked. Each warning names
///   `file:line` where an ignored, non-empty document starts, e.g.
///   `.vela.yml:12: YAML document 2 is not read: Vela reads only the first document of a
///   pipeline file, so its images are not checked`. Empty documents (a trailing `---`,
///   only comments) give none; an ignored document with a syntax error gives one, not an
///   error.
///
/// # Errors
/// As [`read_pipeline`].
pub fn read_pipeline_with_warnings(
    file: &str,
    text: &str,
) -> Result<(Vec<ImageUse>, Vec<String>), InputError> {
    read_pipeline_read(file, text).map(|read| (read.uses, read.warnings))
}

/// [`read_pipeline_with_warnings`] for pipeline source read inside a running build (a
/// Vela plugin step), where the build's variables are known: `build_env` holds the
/// `VELA_*` variables the server set for this build (`VELA_BUILD_NUMBER`,
/// `VELA_REPO_NAME`, …), which the compiler sets over the pipeline's, stage's and
/// step's own `environment:` (go-vela/server `compiler/native/environment.go`), so an
/// image that reads one is substituted with the build's value rather than
/// [`Disposition::Unresolved`]. Ignored for a compiled build, whose containers carry
/// their environment.
///
/// # Errors
/// As [`read_pipeline`].
pub fn read_pipeline_in_build(
    file: &str,
    text: &str,
    build_env: &std::collections::HashMap<String, String>,
) -> Result<(Vec<ImageUse>, Vec<String>), InputError> {
    read_pipeline_full(file, text, build_env, false).map(|read| (read.uses, read.warnings))
}

/// [`read_pipeline_in_build`] with what is not read ([`PipelineRead`]).
///
/// # Errors
/// As [`read_pipeline`].
pub fn read_pipeline_read_in_build(
    file: &str,
    text: &str,
    build_env: &std::collections::HashMap<String, String>,
) -> Result<PipelineRead, InputError> {
    read_pipeline_full(file, text, build_env, false)
}

/// What [`read_pipeline_read`] gives: the uses and warnings of
/// [`read_pipeline_with_warnings`], and what of the pipeline is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineRead {
    /// The image uses, as [`read_pipeline`] gives them.
    pub uses: Vec<ImageUse>,
    /// The warnings, as [`read_pipeline_with_warnings`] gives them.
    pub warnings: Vec<String>,
    /// How many templates of a `metadata.render_inline` pipeline make its steps: the
    /// server expands them before compiling (go-vela/server `compileInline`), so their
    /// images are not read here (0 for any other pipeline).
    pub inline_templates: usize,
}

/// [`read_pipeline_with_warnings`], with what is not read ([`PipelineRead`]).
///
/// # Errors
/// As [`read_pipeline`].
pub fn read_pipeline_read(file: &str, text: &str) -> Result<PipelineRead, InputError> {
    read_pipeline_full(file, text, &std::collections::HashMap::new(), false)
}

/// [`read_pipeline_read`] for a text that is a compiled build whatever its keys: what a
/// worker receives (go-vela/server `pipeline.Build`, whose `id` is `omitempty`, so a
/// build may have none). Its `${VAR}`s get the worker's substitution and none of the
/// compiler's refusals apply; a document with none of a pipeline's keys is an empty
/// build, not an error.
///
/// # Errors
/// As [`read_pipeline`], except that the keys are not required.
pub fn read_build_read(file: &str, text: &str) -> Result<PipelineRead, InputError> {
    read_pipeline_full(file, text, &std::collections::HashMap::new(), true)
}

/// [`read_pipeline_read`] with the build's server-set variables ([`read_pipeline_in_build`]).
fn read_pipeline_full(
    file: &str,
    text: &str,
    build_env: &std::collections::HashMap<String, String>,
    compiled: bool,
) -> Result<PipelineRead, InputError> {
    let with_template_note = |mut e: InputError| {
        if let Some(line) = template_line(text, false) {
            e.message.push_str(&template_note(line));
        }
        e
    };
    // A compiled build is what the worker decodes with Go's encoding/json: so is a JSON
    // text with a top-level `id` (which makes it a compiled build, see `pipeline`).
    let doc = if compiled || (looks_like_json(text) && gojson::has_build_id(text)) {
        go_json_build(file, text)?
    } else {
        let doc = match tree::Doc::load_yaml(text) {
            Ok(doc) => doc,
            // JSON that the YAML parser refuses (an escaped surrogate pair such as `\ud83d\ude80`).
            Err(yaml) if yaml.syntax && looks_like_json(text) => tree::Doc::load_json(text)
                .map_err(|json| with_template_note(load_error(file, json.pos, json.message)))?,
            Err(yaml) => {
                return Err(with_template_note(load_error(file, yaml.pos, yaml.message)));
            }
        };
        if looks_like_json(text) && pipeline::has_build_id(&doc) {
            go_json_build(file, text)?
        } else {
            doc
        }
    };
    let (uses, mut warnings, inline_templates) =
        pipeline::read(file, &doc, build_env, compiled).map_err(with_template_note)?;
    if let Some(line) = template_line(text, true) {
        warnings.push(format!(
            "{file}:{line}: `{{{{ ... }}}}` looks like Go template syntax: the Vela server \
             expands a template before it is a pipeline, so what is read here is not what \
             the build runs; check the expanded pipeline (the compiled build) instead"
        ));
    }
    warnings.extend(doc.ignored_documents.iter().enumerate().map(|(i, pos)| {
        format!(
            "{file}:{}: YAML document {} is not read: Vela reads only the first document \
                 of a pipeline file, so its images are not checked",
            pos.line,
            i + 2
        )
    }));
    Ok(PipelineRead {
        uses,
        warnings,
        inline_templates,
    })
}

/// The first line (1-based) with `{{` and a later `}}` that is not a comment: Go
/// template syntax, which Vela's server expands (a `render_inline` pipeline, a template
/// file) before the result is a pipeline. With `structural`, only where YAML would read
/// it as part of the document's structure: a line or list item that starts with `{{`, or
/// a value after `key: ` that does (`pull: {{ .pull_policy }}`), not a `{{` inside a
/// command such as `docker ps --format "{{.Names}}"`.
fn template_line(text: &str, structural: bool) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            if line.starts_with('#')
                || !line
                    .find("{{")
                    .is_some_and(|i| line[i + 2..].contains("}}"))
            {
                return false;
            }
            if !structural {
                return true;
            }
            let item = line.trim_start_matches("- ").trim_start();
            item.starts_with("{{")
                || item
                    .split_once(": ")
                    .is_some_and(|(_, value)| value.trim_start().starts_with("{{"))
        })
        .map(|i| i + 1)
}

/// What an error or warning about a file with Go template syntax adds.
fn template_note(line: usize) -> String {
    format!(
        "; the file looks like a Go template ({{{{ ... }}}} at line {line}), which the Vela \
         server expands before it is a pipeline: check the expanded pipeline (the compiled \
         build) instead"
    )
}

/// Whether `text` holds no YAML or JSON document at all (empty, blank, or only
/// comments and `---`): such a text is no pipeline ([`read_pipeline`] says so), and it
/// holds no image either, which `--allow-empty` accepts. `false` for a text that does
/// not parse.
pub fn holds_no_document(text: &str) -> bool {
    tree::Doc::load_yaml(text).is_ok_and(|doc| doc.root.is_none())
}

fn looks_like_json(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with(['{', '['])
}

/// A compiled build's text decoded as the worker's encoding/json decodes it into
/// `pipeline.Build` ([`gojson`]): the build, or Go's error: a syntax error at its line
/// and column, a type error or a `raw.StringSliceMap` failure as a [`Refusal`].
fn go_json_build(file: &str, text: &str) -> Result<tree::Doc, InputError> {
    let refused = |pos: tree::Pos, refusal: Refusal| InputError {
        file: Some(file.to_owned()),
        line: Some(pos.line),
        column: Some(pos.column),
        message: refusal.to_string(),
        refusal: Some(Box::new(refusal)),
    };
    match gojson::load(text) {
        Ok(stream) => Ok(tree::Doc::from_stream(stream)),
        Err(gojson::GoJsonError::Syntax { message, pos }) => Err(load_error(
            file,
            Some(pos),
            format!(
                "not valid JSON (a compiled build is read as Go's encoding/json reads it): {message}"
            ),
        )),
        Err(gojson::GoJsonError::Limit { message, pos }) => {
            Err(load_error(file, Some(pos), message))
        }
        Err(gojson::GoJsonError::Type {
            field,
            expected,
            found,
            pos,
        }) => Err(refused(
            pos,
            Refusal::WrongType {
                field,
                expected,
                found,
                value: None,
                json: true,
            },
        )),
        Err(gojson::GoJsonError::Decode { field, pos }) => {
            Err(refused(pos, Refusal::StringSliceMap { field }))
        }
    }
}

fn load_error(file: &str, pos: Option<tree::Pos>, message: String) -> InputError {
    InputError {
        file: Some(file.to_owned()),
        line: pos.map(|p| p.line),
        column: pos.map(|p| p.column),
        message,
        refusal: None,
    }
}

/// Reads a pipeline file from disk; see [`read_pipeline`].
///
/// # Errors
/// [`InputError`] naming the file when it cannot be read.
pub fn read_pipeline_file(path: &Path) -> Result<Vec<ImageUse>, InputError> {
    let (name, text) = read_file(path)?;
    read_pipeline(&name, &text)
}

/// Reads an input file as UTF-8 text through `pullcheck-files` (at most 64 MiB), for
/// the readers of this crate and `pullcheck-kube`: the file's name as errors show it
/// (`path` displayed) and its text.
///
/// # Errors
/// [`InputError`] naming the file, with `cannot read: ` and the error of
/// [`pullcheck_files::read_to_string`] as its message, when it cannot be read.
pub fn read_file(path: &Path) -> Result<(String, String), InputError> {
    let name = path.display().to_string();
    match pullcheck_files::read_to_string(path) {
        Ok(text) => Ok((name, text)),
        Err(e) => Err(InputError {
            file: Some(name),
            line: None,
            column: None,
            message: format!("cannot read: {e}"),
            refusal: None,
        }),
    }
}

/// An image to check as written, under `policy`, with origin kind `image`: what
/// `--image REF=POLICY` gives, for callers that take reference and policy apart (the
/// service's `images`). The reference is taken whole: an `=` in it is part of it.
pub fn image_use(reference: &str, policy: PullPolicy) -> ImageUse {
    image_arg::image_use(reference, policy)
}

/// The use of `reference` (taken whole) under the pull policy `written`, read as
/// `--image REF=POLICY` reads it ([`image_arg_use`]): `None` is `always`; an empty or
/// unknown policy makes the use [`Disposition::UnknownPolicy`] (policy `not_present`, the
/// message naming the allowed values), reported `invalid` with reason
/// `unknown_pull_policy`. For callers that take reference and policy apart (the
/// service's `images`), so that they give the CLI's rows.
pub fn image_policy_use(reference: &str, written: Option<&str>) -> ImageUse {
    image_arg::with_policy(reference, written)
}

/// Parses a `--image REF[=POLICY]` argument; the default policy is `always`.
///
/// The argument is split at its last `=` (a reference never contains one). The policy is
/// read by [`PullPolicy::parse`], so Kubernetes names work too, and an empty policy means
/// `not_present` as an empty Vela `pull:` does. The result has kind
/// [`ContainerKind::Image`], the reference as its name, no file or position, and
/// [`Disposition::Check`]; the reference itself is not parsed here.
///
/// # Errors
/// [`InputError`] (without a file or position) naming the allowed values when the policy
/// is not one [`PullPolicy::parse`] accepts, or saying the reference is empty; the
/// caller names the argument (`--image "alpine=sometimes": ...` in the CLI's words).
pub fn parse_image_arg(arg: &str) -> Result<ImageUse, InputError> {
    image_arg::parse(arg)
}

/// As [`parse_image_arg`], but an unknown or empty policy is an invalid use of that image,
/// as an unknown `pull:` in a pipeline is: [`Disposition::UnknownPolicy`] with the message
/// naming the argument and the allowed values, policy `not_present` (the CLI reports it
/// `invalid`, exit 1).
///
/// # Errors
/// [`InputError`] when the argument holds no reference at all (`""`, `=always`): there is
/// no image to report.
pub fn image_arg_use(arg: &str) -> Result<ImageUse, InputError> {
    image_arg::parse_lenient(arg)
}
