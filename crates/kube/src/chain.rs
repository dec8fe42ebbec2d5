//! The credential chain: which Secrets the kubelet will pull a Pod's images with.
//!
//! Upstream behaviour reproduced (Kubernetes):
//! - the ServiceAccount admission plugin copies the ServiceAccount's `imagePullSecrets` into
//!   a Pod **only when the Pod has none of its own**; the ServiceAccount is the Pod's
//!   `serviceAccountName`, `default` when empty;
//! - the kubelet then reads each named Secret of the Pod; one that does not exist is logged
//!   and skipped, and the pull goes on with the others.
//!
//! The walk asks an [`ObjectSource`] for named objects only (a `get` each, never a list or a
//! watch) and records every step, so `pullcheck explain` can say which template,
//! ServiceAccount and Secrets were used and which were missing.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use serde::Serialize;

use crate::KubeError;

/// The ServiceAccount a Pod gets when it names none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// Named-object reads the chain needs, a `get` each. [`Cluster`](crate::Cluster) implements
/// it against the API server; tests or offline callers can implement it over fixed objects.
pub trait ObjectSource: Sync {
    /// The namespace used for a Pod that names none (the build namespace).
    fn namespace(&self) -> &str;

    /// The ServiceAccount `name` in `namespace`; `Ok(None)` only when it is known not to
    /// exist (for [`Cluster`](crate::Cluster): a 404 `Status` of reason `NotFound`); an
    /// answer that does not say so is an error.
    fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ServiceAccount>, KubeError>> + Send;

    /// The Secret `name` in `namespace`; `Ok(None)` only when it is known not to exist, as
    /// for [`service_account`](ObjectSource::service_account).
    fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Secret>, KubeError>> + Send;
}

/// What a Pod is, for the record of the walk.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Subject {
    /// No `PipelinePodsTemplate` is configured: the build Pod has no `imagePullSecrets` and
    /// the `default` ServiceAccount.
    NoTemplate,
    /// A `PipelinePodsTemplate` fetched by name from the cluster.
    Template {
        /// The template's name.
        name: String,
    },
    /// A `PipelinePodsTemplate` read from a file.
    TemplateFile {
        /// The file, as given.
        path: String,
    },
    /// A workload read from a manifest.
    Workload {
        /// `Deployment`, `Pod`, ...
        kind: String,
        /// Its `metadata.name`.
        name: String,
        /// The manifest file.
        file: String,
    },
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::NoTemplate => f.write_str("no PipelinePodsTemplate"),
            Subject::Template { name } => {
                write!(f, "PipelinePodsTemplate {name:?} (from the cluster)")
            }
            Subject::TemplateFile { path } => write!(f, "PipelinePodsTemplate file {path}"),
            Subject::Workload { kind, name, file } => write!(f, "{kind} {name:?} ({file})"),
        }
    }
}

/// What the chain needs to know about one Pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PodPullSecrets {
    /// What the Pod is.
    pub subject: Subject,
    /// The Pod's namespace; `None` means the source's (the build namespace).
    pub namespace: Option<String>,
    /// The names in the Pod's `imagePullSecrets`, in order, empty names left out.
    pub image_pull_secrets: Vec<String>,
    /// The Pod's `serviceAccountName`; `None` (or empty) means `default`.
    pub service_account_name: Option<String>,
}

impl PodPullSecrets {
    /// The settings of a build Pod with no `PipelinePodsTemplate`.
    pub fn no_template() -> PodPullSecrets {
        PodPullSecrets {
            subject: Subject::NoTemplate,
            namespace: None,
            image_pull_secrets: Vec::new(),
            service_account_name: None,
        }
    }
}

/// A Secret the kubelet will read for the Pod, as the API server returned it.
///
/// Its `Debug` and `Serialize` show the name, namespace, type and data keys, never the data.
#[derive(Clone, PartialEq)]
pub struct FoundSecret {
    /// The Secret's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The whole object (`type`, `data` with `.dockerconfigjson` or `.dockercfg`).
    pub secret: Secret,
}

impl FoundSecret {
    /// The Secret's `type` (`kubernetes.io/dockerconfigjson`, ...), if set.
    pub fn secret_type(&self) -> Option<&str> {
        self.secret.type_.as_deref()
    }

    /// The keys of `data` and `stringData`.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self
            .secret
            .data
            .iter()
            .flat_map(|d| d.keys())
            .chain(self.secret.string_data.iter().flat_map(|d| d.keys()))
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

impl fmt::Debug for FoundSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FoundSecret")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("type", &self.secret_type())
            .field("keys", &self.keys())
            .finish_non_exhaustive()
    }
}

impl Serialize for FoundSecret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("FoundSecret", 4)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("namespace", &self.namespace)?;
        s.serialize_field("type", &self.secret_type())?;
        s.serialize_field("keys", &self.keys())?;
        s.end()
    }
}

/// One step of the walk, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Whose Pod this is, and its namespace.
    Pod {
        /// Where the Pod's settings come from.
        subject: Subject,
        /// The namespace of the Pod, its ServiceAccount and its Secrets.
        namespace: String,
    },
    /// The Pod has `imagePullSecrets` of its own: those are used, and the ServiceAccount's
    /// are not (admission copies them only into a Pod that has none).
    PodSecrets {
        /// The names, in order.
        names: Vec<String>,
    },
    /// The Pod has no `imagePullSecrets`: its ServiceAccount's apply.
    NoPodSecrets,
    /// The ServiceAccount looked up.
    ServiceAccount {
        /// Its name.
        name: String,
        /// True when the Pod names none and `default` was used.
        defaulted: bool,
        /// Its `imagePullSecrets`, or `None` when it does not exist.
        image_pull_secrets: Option<Vec<String>>,
    },
    /// A Secret looked up.
    Secret {
        /// Its name.
        name: String,
        /// Whether it exists.
        found: bool,
        /// Its `type`, when found and set.
        secret_type: Option<String>,
    },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Pod { subject, namespace } => {
                write!(f, "{subject}, namespace {namespace:?}")
            }
            Step::PodSecrets { names } => write!(
                f,
                "the pod has {} imagePullSecret{}: {} (its ServiceAccount's are not used)",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
            Step::NoPodSecrets => f.write_str(
                "the pod has no imagePullSecrets: its ServiceAccount's apply \
                 (the admission plugin copies them in)",
            ),
            Step::ServiceAccount {
                name,
                defaulted,
                image_pull_secrets,
            } => {
                write!(f, "ServiceAccount {name:?}")?;
                if *defaulted {
                    f.write_str(" (none named)")?;
                }
                match image_pull_secrets {
                    None => f.write_str(": not found, so no secrets from it"),
                    Some(names) if names.is_empty() => f.write_str(": has no imagePullSecrets"),
                    Some(names) => write!(f, ": imagePullSecrets {}", names.join(", ")),
                }
            }
            Step::Secret {
                name,
                found: true,
                secret_type,
            } => {
                write!(f, "Secret {name:?}: found")?;
                match secret_type {
                    Some(t) => write!(f, ", type {t}"),
                    None => f.write_str(", no type"),
                }
            }
            Step::Secret { name, .. } => {
                write!(
                    f,
                    "Secret {name:?}: not found, skipped as the kubelet skips it"
                )
            }
        }
    }
}

/// The outcome of the walk for one Pod.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PullSecretChain {
    /// Whose Pod this is.
    pub subject: Subject,
    /// The namespace looked in.
    pub namespace: String,
    /// The ServiceAccount consulted, if it was (the Pod had no secrets of its own).
    pub service_account: Option<String>,
    /// The Secrets found, in the order the kubelet reads them. Their credentials all go into
    /// one keyring (that is `pullcheck-credentials`' job).
    pub secrets: Vec<FoundSecret>,
    /// Every step, in order.
    pub walked: Vec<Step>,
    /// What the kubelet or admission would log or refuse: missing Secrets, a missing
    /// ServiceAccount.
    pub warnings: Vec<String>,
}

impl fmt::Display for PullSecretChain {
    /// The walk, one step a line, for `pullcheck explain`: the first line names the Pod,
    /// the others are indented by two spaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.walked.iter().enumerate() {
            if i > 0 {
                f.write_str("\n  ")?;
            }
            write!(f, "{step}")?;
        }
        if self.secrets.is_empty() {
            f.write_str("\n  no pull secrets: the kubelet pulls anonymously (or with the node's own credentials)")?;
        }
        Ok(())
    }
}

/// Walks the chain for one Pod: its own `imagePullSecrets`, or only if there are none its
/// ServiceAccount's; then each named Secret.
///
/// A Secret or ServiceAccount that does not exist is a warning and the walk goes on, as
/// the kubelet goes on. A missing ServiceAccount's warning also says that admission would
/// refuse to create the Pod (the ServiceAccount admission plugin rejects a Pod whose
/// ServiceAccount does not exist).
///
/// # Errors
/// What the source returns: [`KubeError::Forbidden`] naming the missing RBAC rule,
/// [`KubeError::Unreachable`], [`KubeError::Malformed`], [`KubeError::NotKubernetes`] (a
/// 404 that is not a Kubernetes `NotFound` `Status`: the server URL is likely wrong), ...
pub async fn walk_pull_secrets<S: ObjectSource + ?Sized>(
    source: &S,
    pod: &PodPullSecrets,
) -> Result<PullSecretChain, KubeError> {
    let namespace = pod
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| source.namespace().to_owned());
    let mut chain = PullSecretChain {
        subject: pod.subject.clone(),
        namespace: namespace.clone(),
        service_account: None,
        secrets: Vec::new(),
        walked: vec![Step::Pod {
            subject: pod.subject.clone(),
            namespace: namespace.clone(),
        }],
        warnings: Vec::new(),
    };

    let own = dedup(pod.image_pull_secrets.iter().filter(|n| !n.is_empty()));
    let names = if own.is_empty() {
        chain.walked.push(Step::NoPodSecrets);
        let (name, defaulted) = match pod.service_account_name.as_deref() {
            Some(name) if !name.is_empty() => (name.to_owned(), false),
            _ => (DEFAULT_SERVICE_ACCOUNT.to_owned(), true),
        };
        chain.service_account = Some(name.clone());
        match source.service_account(&namespace, &name).await? {
            Some(account) => {
                let names = dedup(
                    account
                        .image_pull_secrets
                        .iter()
                        .flatten()
                        .map(|r| &r.name)
                        .filter(|n| !n.is_empty()),
                );
                chain.walked.push(Step::ServiceAccount {
                    name,
                    defaulted,
                    image_pull_secrets: Some(names.clone()),
                });
                names
            }
            None => {
                chain.warnings.push(format!(
                    "ServiceAccount {name:?} not found in namespace {namespace:?}: no pull \
                     secrets come from it, and the ServiceAccount admission plugin will refuse \
                     to create the pod until it exists"
                ));
                chain.walked.push(Step::ServiceAccount {
                    name,
                    defaulted,
                    image_pull_secrets: None,
                });
                Vec::new()
            }
        }
    } else {
        chain.walked.push(Step::PodSecrets { names: own.clone() });
        own
    };

    for name in names {
        match source.secret(&namespace, &name).await? {
            Some(secret) => {
                chain.walked.push(Step::Secret {
                    name: name.clone(),
                    found: true,
                    secret_type: secret.type_.clone(),
                });
                chain.secrets.push(FoundSecret {
                    name,
                    namespace: namespace.clone(),
                    secret,
                });
            }
            None => {
                chain.warnings.push(format!(
                    "Secret {name:?} not found in namespace {namespace:?}: the kubelet skips it \
                     and pulls with the other secrets"
                ));
                chain.walked.push(Step::Secret {
                    name,
                    found: false,
                    secret_type: None,
                });
            }
        }
    }
    Ok(chain)
}

/// Walks the chain for several Pods (workloads of a manifest), asking for each
/// ServiceAccount and Secret at most once.
///
/// # Errors
/// As [`walk_pull_secrets`]: the first error stops the walk.
pub async fn walk_pull_secrets_many<S: ObjectSource + ?Sized>(
    source: &S,
    pods: &[PodPullSecrets],
) -> Result<Vec<PullSecretChain>, KubeError> {
    let cached = Cached {
        inner: source,
        accounts: Mutex::new(HashMap::new()),
        secrets: Mutex::new(HashMap::new()),
    };
    let mut chains = Vec::with_capacity(pods.len());
    for pod in pods {
        chains.push(walk_pull_secrets(&cached, pod).await?);
    }
    Ok(chains)
}

fn dedup<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

type Key = (String, String);

struct Cached<'a, S: ?Sized> {
    inner: &'a S,
    accounts: Mutex<HashMap<Key, Option<ServiceAccount>>>,
    secrets: Mutex<HashMap<Key, Option<Secret>>>,
}

fn cached_get<T: Clone>(map: &Mutex<HashMap<Key, Option<T>>>, key: &Key) -> Option<Option<T>> {
    map.lock().ok().and_then(|m| m.get(key).cloned())
}

fn cache_put<T>(map: &Mutex<HashMap<Key, Option<T>>>, key: Key, value: Option<T>) {
    if let Ok(mut m) = map.lock() {
        m.insert(key, value);
    }
}

impl<S: ObjectSource + ?Sized> ObjectSource for Cached<'_, S> {
    fn namespace(&self) -> &str {
        self.inner.namespace()
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, KubeError> {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(hit) = cached_get(&self.accounts, &key) {
            return Ok(hit);
        }
        let value = self.inner.service_account(namespace, name).await?;
        cache_put(&self.accounts, key, value.clone());
        Ok(value)
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, KubeError> {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(hit) = cached_get(&self.secrets, &key) {
            return Ok(hit);
        }
        let value = self.inner.secret(namespace, name).await?;
        cache_put(&self.secrets, key, value.clone());
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::LocalObjectReference;

    use super::*;

    #[derive(Default)]
    struct Fixed {
        accounts: HashMap<String, Vec<&'static str>>,
        secrets: Vec<&'static str>,
        calls: AtomicUsize,
    }

    impl ObjectSource for Fixed {
        fn namespace(&self) -> &str {
            "builds"
        }

        async fn service_account(
            &self,
            _namespace: &str,
            name: &str,
        ) -> Result<Option<ServiceAccount>, KubeError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(self.accounts.get(name).map(|names| ServiceAccount {
                image_pull_secrets: Some(
                    names
                        .iter()
                        .map(|n| LocalObjectReference {
                            name: (*n).to_owned(),
                        })
                        .collect(),
                ),
                ..ServiceAccount::default()
            }))
        }

        async fn secret(&self, _namespace: &str, name: &str) -> Result<Option<Secret>, KubeError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Ok(self.secrets.contains(&name).then(|| Secret {
                type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
                ..Secret::default()
            }))
        }
    }

    fn pod(secrets: &[&str], account: Option<&str>) -> PodPullSecrets {
        PodPullSecrets {
            subject: Subject::Template {
                name: "vela".to_owned(),
            },
            namespace: None,
            image_pull_secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
            service_account_name: account.map(str::to_owned),
        }
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    #[test]
    fn own_secrets_win_and_duplicates_are_read_once() {
        let source = Fixed {
            secrets: vec!["a", "b"],
            ..Fixed::default()
        };
        let chain = block_on(walk_pull_secrets(
            &source,
            &pod(&["a", "", "b", "a"], Some("x")),
        ))
        .unwrap();
        let names: Vec<_> = chain.secrets.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(chain.service_account, None);
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);
        assert!(chain.warnings.is_empty());
    }

    #[test]
    fn service_account_defaults_and_missing_ones_warn() {
        let mut source = Fixed {
            secrets: vec!["a"],
            ..Fixed::default()
        };
        source.accounts.insert("default".into(), vec!["a", "gone"]);
        let chain = block_on(walk_pull_secrets(&source, &pod(&[], Some("")))).unwrap();
        assert_eq!(chain.service_account.as_deref(), Some("default"));
        assert_eq!(chain.secrets.len(), 1);
        assert_eq!(chain.warnings.len(), 1);
        assert!(
            chain.warnings[0].contains("\"gone\""),
            "{:?}",
            chain.warnings
        );

        let chain = block_on(walk_pull_secrets(&source, &pod(&[], Some("nobody")))).unwrap();
        assert!(chain.secrets.is_empty());
        assert!(
            chain.warnings[0].contains("admission"),
            "{:?}",
            chain.warnings
        );
        let text = chain.to_string();
        assert!(
            text.contains("ServiceAccount \"nobody\": not found"),
            "{text}"
        );
    }

    #[test]
    fn many_pods_share_lookups() {
        let mut source = Fixed {
            secrets: vec!["a"],
            ..Fixed::default()
        };
        source.accounts.insert("default".into(), vec!["a"]);
        let pods = [pod(&[], None), pod(&[], None), pod(&["a"], None)];
        let chains = block_on(walk_pull_secrets_many(&source, &pods)).unwrap();
        assert_eq!(chains.len(), 3);
        assert_eq!(source.calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn found_secret_debug_and_json_hide_the_data() {
        let mut data = std::collections::BTreeMap::new();
        data.insert(
            ".dockerconfigjson".to_owned(),
            k8s_openapi::ByteString(b"{\"auths\":{\"r\":{\"auth\":\"c2VjcmV0\"}}}".to_vec()),
        );
        let found = FoundSecret {
            name: "regcred".into(),
            namespace: "builds".into(),
            secret: Secret {
                data: Some(data),
                ..Secret::default()
            },
        };
        let debug = format!("{found:?}");
        let json = serde_json::to_string(&found).unwrap();
        for shown in [&debug, &json] {
            assert!(shown.contains(".dockerconfigjson"), "{shown}");
            assert!(!shown.contains("c2VjcmV0"), "{shown}");
            assert!(!shown.contains("auths"), "{shown}");
        }
    }
}
