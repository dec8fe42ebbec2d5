//! Inputs: the images a build will pull, each with its pull policy and origin.
//!
//! STUB: readers are being written; the public API below is the contract.

use std::fmt;
use std::path::Path;

/// A pull policy, in Vela's terms (which map onto Kubernetes' `imagePullPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PullPolicy {
    /// Vela `always` / Kubernetes `Always`.
    Always,
    /// Vela `not_present` / Kubernetes `IfNotPresent`.
    NotPresent,
    /// Vela `on_start`: pulled when the step starts, not at build start.
    OnStart,
    /// Vela `never` / Kubernetes `Never`.
    Never,
}

impl PullPolicy {
    /// The Vela spelling: `always`, `not_present`, `on_start`, `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::NotPresent => "not_present",
            Self::OnStart => "on_start",
            Self::Never => "never",
        }
    }

    /// Parses a policy as Vela normalises `pull:` (empty → `not_present`, `true`/`false`
    /// in any case → `always`/`not_present`), and also Kubernetes' `Always`, `IfNotPresent`,
    /// `Never`. `None` for anything else.
    pub fn parse(value: &str) -> Option<PullPolicy> {
        let _ = value;
        todo!()
    }
}

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
}

/// Where an image was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Origin {
    /// The file, as given by the user; `None` for `--image`.
    pub file: Option<String>,
    /// 1-based line of the `image:` value (of the container when it has no image).
    pub line: Option<usize>,
    /// 1-based column, in characters.
    pub column: Option<usize>,
    /// The kind of container.
    pub kind: ContainerKind,
    /// The container's name.
    pub name: String,
    /// The stage name, for stage steps.
    pub stage: Option<String>,
}

/// What to do with one use of an image, as far as the input can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// An image to plan (its policy decides whether it is checked).
    Check,
    /// Not an image that can be checked, with the reason (a `template:` step, `#init`).
    Skip(String),
    /// The container is malformed (an unknown `pull:` value, no image); the message names
    /// the file, line and column.
    Invalid(String),
}

/// One container's use of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageUse {
    /// The image as written; empty when the container has none.
    pub image: String,
    /// The normalised pull policy (`not_present` where the value was invalid).
    pub policy: PullPolicy,
    /// Where it was written.
    pub origin: Origin,
    /// Whether it can be checked.
    pub disposition: Disposition,
}

/// An input that cannot be read at all: unreadable, or not YAML/JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file, if any.
    pub file: Option<String>,
    /// 1-based line, if known.
    pub line: Option<usize>,
    /// 1-based column, if known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
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
/// # Errors
/// [`InputError`] when the text is not YAML/JSON at all or is not a pipeline; problems of
/// one container are [`Disposition::Invalid`] instead, so every image stays in the report.
pub fn read_pipeline(file: &str, text: &str) -> Result<Vec<ImageUse>, InputError> {
    let _ = (file, text);
    todo!()
}

/// Reads a pipeline file from disk; see [`read_pipeline`].
///
/// # Errors
/// [`InputError`] naming the file when it cannot be read.
pub fn read_pipeline_file(path: &Path) -> Result<Vec<ImageUse>, InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| InputError {
        file: Some(name.clone()),
        line: None,
        column: None,
        message: format!("cannot read: {e}"),
    })?;
    read_pipeline(&name, &text)
}

/// Parses a `--image REF[=POLICY]` argument; the default policy is `always`.
///
/// # Errors
/// [`InputError`] when the policy is not one [`PullPolicy::parse`] accepts.
pub fn parse_image_arg(arg: &str) -> Result<ImageUse, InputError> {
    let _ = arg;
    todo!()
}
