//! Gathers what to check: pipeline files, Kubernetes manifests and `--image` arguments,
//! grouped into image sets (one per Pod) with the pull secrets each Pod would get — from
//! `--pull-secret` files and, with `--namespace`, from the cluster as the kubelet and the
//! ServiceAccount admission plugin would choose them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pullcheck::ImageSet;
use pullcheck::credentials::{Keyring, PullSecret};
use pullcheck::input::ImageUse;
use pullcheck_kube::{
    Cluster, ClusterOptions, FoundSecret, PodPullSecrets, PullSecretChain, TemplateSource,
};

/// Where the Pod's pull secrets come from, besides `--pull-secret` files.
#[derive(Debug, Clone, Default)]
pub struct ClusterArgs {
    /// The build namespace; with it, the cluster is asked.
    pub namespace: Option<String>,
    /// The kubeconfig file.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    pub context: Option<String>,
    /// `--pods-template NAME`.
    pub pods_template: Option<String>,
    /// `--pods-template-file PATH`.
    pub pods_template_file: Option<PathBuf>,
}

impl ClusterArgs {
    fn template_source(&self) -> TemplateSource {
        match (&self.pods_template, &self.pods_template_file) {
            (Some(name), _) => TemplateSource::Name(name.clone()),
            (None, Some(path)) => TemplateSource::File(path.clone()),
            (None, None) => TemplateSource::None,
        }
    }

    /// Connects when a namespace is given (or a template must be read from the cluster).
    pub async fn connect(&self) -> Result<Option<Cluster>, String> {
        if self.namespace.is_none() && self.pods_template.is_none() {
            return Ok(None);
        }
        let options = ClusterOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            namespace: self.namespace.clone().unwrap_or_default(),
        };
        Cluster::connect(&options)
            .await
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// Reads the `--pull-secret` files.
pub fn read_pull_secret_files(files: &[PathBuf]) -> Result<Vec<PullSecret>, String> {
    let mut secrets = Vec::new();
    for file in files {
        secrets.extend(PullSecret::read_manifests(file).map_err(|e| e.to_string())?);
    }
    Ok(secrets)
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

/// A set's keyring: the `--pull-secret` files plus the cluster's secrets for the Pod.
fn keyring_of(files: &[PullSecret], chain: Option<&PullSecretChain>) -> Result<Keyring, String> {
    let mut secrets: Vec<PullSecret> = files.to_vec();
    if let Some(chain) = chain {
        for found in &chain.secrets {
            secrets.push(pull_secret_of(found)?);
        }
    }
    Ok(Keyring::from_pull_secrets(&secrets))
}

/// Everything to check, and what was walked to find the pull secrets.
pub struct Gathered {
    /// The image sets.
    pub sets: Vec<ImageSet>,
    /// The credential chains walked in the cluster, for `explain` and `-v`.
    pub walked: Vec<PullSecretChain>,
    /// When `--deadline` started: after the inputs were read, before the first
    /// Kubernetes request.
    pub deadline_start: std::time::Instant,
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

/// Reads every file and `--image`, then finds each Pod's pull secrets. When the inputs
/// are read, the time is sent on `started`: `--deadline` starts there, for the caller
/// that bounds the Kubernetes lookups and for the query stage
/// ([`Gathered::deadline_start`]).
pub async fn gather(
    files: &[PathBuf],
    images: Vec<ImageUse>,
    pull_secret_files: &[PathBuf],
    cluster_args: &ClusterArgs,
    started: tokio::sync::oneshot::Sender<std::time::Instant>,
) -> Result<Gathered, String> {
    let file_secrets = read_pull_secret_files(pull_secret_files)?;
    let mut build_uses: Vec<ImageUse> = Vec::new();
    let mut workloads = Vec::new();
    // Documents, objects and kinds that were not read, so nothing is skipped silently.
    let mut file_warnings = Vec::new();
    if files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err("`-` (standard input) is given more than once".into());
    }
    for file in files {
        let (name, text) = if file.as_os_str() == "-" {
            ("<stdin>".to_string(), read_stdin()?)
        } else {
            (file.display().to_string(), read(file)?)
        };
        let found = if pullcheck_kube::is_kubernetes_manifest(&text) {
            let manifests =
                pullcheck_kube::read_manifests(&name, &text).map_err(|e| e.to_string())?;
            file_warnings.extend(manifests.warnings());
            let found = manifests
                .workloads
                .iter()
                .map(|w| w.images.len())
                .sum::<usize>();
            workloads.extend(manifests.workloads);
            found
        } else {
            let (uses, warnings) = pullcheck::input::read_pipeline_with_warnings(&name, &text)
                .map_err(|e| e.to_string())?;
            file_warnings.extend(warnings);
            let found = uses.len();
            build_uses.extend(uses);
            found
        };
        if found == 0 {
            file_warnings.push(format!("{name}: no image found in this file"));
        }
    }
    build_uses.extend(images);

    let deadline_start = std::time::Instant::now();
    // The caller watches the deadline from here; it may have stopped listening.
    let _ = started.send(deadline_start);
    let cluster = cluster_args.connect().await?;
    let mut walked = Vec::new();
    let mut sets = Vec::new();
    let mut warnings = Vec::new();

    // The Vela build Pod: the template's secrets, else its ServiceAccount's.
    if !build_uses.is_empty() {
        let chain = match &cluster {
            Some(c) => Some(
                c.build_pull_secrets(&cluster_args.template_source())
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            None => {
                if let Some(path) = &cluster_args.pods_template_file {
                    // Read it anyway: a malformed template is an error, and secrets it
                    // names cannot be fetched without a cluster.
                    let template =
                        pullcheck_kube::read_template_file(path).map_err(|e| e.to_string())?;
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
        let keyring = keyring_of(&file_secrets, chain.as_ref())?;
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
        let chains = match &cluster {
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
                pull_secrets: keyring_of(&file_secrets, chain)?,
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
    Ok(Gathered {
        sets,
        walked,
        deadline_start,
    })
}

/// The chain a `explain` would walk for the build Pod, when a cluster is given.
pub async fn build_chain(cluster_args: &ClusterArgs) -> Result<Option<PullSecretChain>, String> {
    match cluster_args.connect().await? {
        Some(c) => c
            .build_pull_secrets(&cluster_args.template_source())
            .await
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// The build Pod's keyring for `explain`.
pub fn build_keyring(
    pull_secret_files: &[PathBuf],
    chain: Option<&PullSecretChain>,
) -> Result<Keyring, String> {
    keyring_of(&read_pull_secret_files(pull_secret_files)?, chain)
}

fn read(path: &Path) -> Result<String, String> {
    named(
        pullcheck_files::read_to_string(path),
        &path.display().to_string(),
    )
}

fn read_stdin() -> Result<String, String> {
    named(
        pullcheck_files::read_from(std::io::stdin().lock()).and_then(pullcheck_files::text),
        "<stdin>",
    )
}

/// An input's text or read error (`pullcheck_files`: at most 64 MiB, UTF-8 named by
/// line and column), its error named `name`.
fn named(read: std::io::Result<String>, name: &str) -> Result<String, String> {
    read.map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => format!("{name}: {e}; not read"),
        std::io::ErrorKind::InvalidData => format!("{name}:{e}"),
        _ => format!("{name}: cannot read: {e}"),
    })
}
