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

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use pullcheck::ImageSet;
use pullcheck::credentials::{Keyring, PullSecret};
use pullcheck::input::{ImageUse, InputError};
use pullcheck_kube::{Cluster, FoundSecret, PodPullSecrets, PullSecretChain, TemplateSource};

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
    /// A pipeline: Vela source YAML or a compiled build's JSON.
    Pipeline,
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

/// Why the inputs could not be turned into image sets. `message` is the whole message
/// as the CLI prints it (it starts with the input's name and position when known);
/// `line` and `column` (1-based) are set when the problem has a position in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The message.
    pub message: String,
    /// 1-based line in the input's text, when known.
    pub line: Option<usize>,
    /// 1-based column in the input's text, when known.
    pub column: Option<usize>,
}

impl SourceError {
    /// An error without a position.
    pub fn new(message: impl Into<String>) -> SourceError {
        SourceError {
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {}

impl From<InputError> for SourceError {
    fn from(e: InputError) -> SourceError {
        SourceError {
            message: e.to_string(),
            line: e.line,
            column: e.column,
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
    warnings: Vec<String>,
}

impl Inputs {
    /// Whether there is nothing to check at all (no use, no workload).
    pub fn is_empty(&self) -> bool {
        self.build_uses.is_empty() && self.workloads.is_empty()
    }

    /// Adds `other`'s uses, workloads and warnings after this one's (the CLI reads and
    /// parses one file after the other, so the first bad file is the error).
    pub fn append(&mut self, other: Inputs) {
        self.build_uses.extend(other.build_uses);
        self.workloads.extend(other.workloads);
        self.warnings.extend(other.warnings);
    }
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
            let manifests = pullcheck_kube::read_manifests(name, text)?;
            inputs.warnings.extend(manifests.warnings());
            let found = manifests
                .workloads
                .iter()
                .map(|w| w.images.len())
                .sum::<usize>();
            inputs.workloads.extend(manifests.workloads);
            found
        }
        InputKind::Pipeline => {
            let (uses, warnings) = pullcheck::input::read_pipeline_with_warnings(name, text)?;
            inputs.warnings.extend(warnings);
            let found = uses.len();
            inputs.build_uses.extend(uses);
            found
        }
    };
    if found == 0 {
        inputs
            .warnings
            .push(format!("{name}: no image found in this file"));
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
    let Inputs {
        build_uses,
        workloads,
        warnings: file_warnings,
    } = inputs;
    let mut walked = Vec::new();
    let mut sets = Vec::new();
    let mut warnings = Vec::new();

    // The Vela build Pod: the template's secrets, else its ServiceAccount's.
    if !build_uses.is_empty() {
        let chain = match cluster {
            Some(c) => Some(
                c.build_pull_secrets(template)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            None => {
                if let TemplateSource::File(path) = template {
                    // Read it anyway: a malformed template is an error, and secrets it
                    // names cannot be fetched without a cluster.
                    let template = pullcheck_kube::read_template_file(path)?;
                    let names = template.image_pull_secret_names();
                    if !names.is_empty() {
                        warnings.push(format!(
                            "{}: names imagePullSecrets {names:?}; give --namespace to read them \
                             from the cluster",
                            path.display()
                        ));
                    }
                }
                None
            }
        };
        let keyring = keyring_of(pull_secrets, chain.as_ref())?;
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
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        for (i, workload) in workloads.into_iter().enumerate() {
            let chain = chains.as_ref().and_then(|c| c.get(i));
            let mut set_warnings = Vec::new();
            if chain.is_none() && !workload.pull_secrets.image_pull_secrets.is_empty() {
                set_warnings.push(format!(
                    "{}:{}: {}/{} names imagePullSecrets {:?}; give --namespace to read them \
                     from the cluster",
                    workload.file,
                    workload.line,
                    workload.kind,
                    workload.name,
                    workload.pull_secrets.image_pull_secrets
                ));
            }
            if let Some(chain) = chain {
                set_warnings.extend(chain.warnings.iter().cloned());
                walked.push(chain.clone());
            }
            sets.push(ImageSet {
                uses: workload.images,
                pull_secrets: keyring_of(pull_secrets, chain)?,
                warnings: set_warnings,
            });
        }
    }
    if !file_warnings.is_empty() {
        // Carried by a set of its own, so they reach the report even with no images.
        sets.push(ImageSet {
            warnings: file_warnings,
            ..ImageSet::default()
        });
    }
    Ok(Gathered { sets, walked })
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
        assert!(err.message.starts_with("request:"), "{}", err.message);
        assert!(err.line.is_some(), "{err:?}");
    }

    #[test]
    fn kinds_are_detected() {
        assert_eq!(
            detect("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n"),
            InputKind::Manifests
        );
        assert_eq!(
            detect("version: \"1\"\nsteps: [{name: a, image: alpine}]\n"),
            InputKind::Pipeline
        );
    }

    #[test]
    fn an_input_without_images_warns() {
        let texts = [NamedText {
            name: "empty.yml".into(),
            text: "version: \"1\"\nsteps: []\n".into(),
        }];
        let inputs = read_inputs(&texts, Vec::new()).expect("reads");
        assert!(inputs.is_empty());
        assert_eq!(inputs.warnings, ["empty.yml: no image found in this file"]);
    }
}
