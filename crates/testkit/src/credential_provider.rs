//! Fake kubelet credential provider plugins (a plugin is any executable): small
//! `/bin/sh` scripts that speak the exec protocol (`credentialprovider.kubelet.k8s.io/v1`)
//! and record every request, plus the `CredentialProviderConfig` that names them.
//!
//! Each run appends its request (one JSON line, as pullcheck writes it) to
//! `<bin dir>/<name>.calls`, so a test counts runs and sees which image each was for
//! ([`calls`]).

use std::path::{Path, PathBuf};

/// What a fake plugin does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakePlugin {
    /// Answers `auth` (`(key, username, password)`) with `cacheKeyType` `key_type`
    /// (`Image`, `Registry`, `Global`, or anything else to test the check) and, when
    /// given, `cacheDuration`.
    Answer {
        /// `cacheKeyType`.
        key_type: String,
        /// `cacheDuration`, a Go duration; `None` leaves it out.
        cache_duration: Option<String>,
        /// The `auth` entries.
        auth: Vec<(String, String, String)>,
    },
    /// Writes to stderr and exits 1.
    Fail,
    /// Never answers (sleeps ten minutes).
    Hang,
    /// Prints text that is not JSON, and exits 0.
    Garbage,
    /// Answers as `then` only when environment variable `name` is `value` (set by the
    /// config's `env`); else exits 2.
    NeedsEnv {
        /// The variable.
        name: String,
        /// Its expected value.
        value: String,
        /// The answer then.
        then: Box<FakePlugin>,
    },
}

impl FakePlugin {
    /// An answer with one `auth` entry.
    pub fn answer(
        key_type: &str,
        cache_duration: Option<&str>,
        key: &str,
        user: &str,
        password: &str,
    ) -> FakePlugin {
        FakePlugin::Answer {
            key_type: key_type.to_owned(),
            cache_duration: cache_duration.map(str::to_owned),
            auth: vec![(key.to_owned(), user.to_owned(), password.to_owned())],
        }
    }

    fn body(&self) -> String {
        match self {
            FakePlugin::Answer {
                key_type,
                cache_duration,
                auth,
            } => {
                let mut response = serde_json::json!({
                    "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                    "kind": "CredentialProviderResponse",
                    "cacheKeyType": key_type,
                    "auth": auth
                        .iter()
                        .map(|(k, u, p)| (k.clone(), serde_json::json!({"username": u, "password": p})))
                        .collect::<serde_json::Map<_, _>>(),
                });
                if let Some(d) = cache_duration {
                    response["cacheDuration"] = serde_json::Value::String(d.clone());
                }
                format!(
                    "printf '%s' '{}'",
                    response.to_string().replace('\'', r"'\''")
                )
            }
            FakePlugin::Fail => "echo 'fake plugin failure' >&2\nexit 1".to_owned(),
            FakePlugin::Hang => "sleep 600".to_owned(),
            FakePlugin::Garbage => "echo 'this is {not a response'".to_owned(),
            FakePlugin::NeedsEnv { name, value, then } => format!(
                "if [ \"${name}\" != '{value}' ]; then exit 2; fi\n{}",
                then.body()
            ),
        }
    }
}

/// Writes plugin `name` into `bin_dir` (executable) and returns its path.
///
/// # Panics
/// When the file cannot be written (a test's scratch directory).
pub fn write_plugin(bin_dir: &Path, name: &str, plugin: &FakePlugin) -> PathBuf {
    let path = bin_dir.join(name);
    let script = format!(
        "#!/bin/sh\nrequest=$(cat)\nprintf '%s\\n' \"$request\" >> \"$0.calls\"\n{}\n",
        plugin.body()
    );
    // Written under another name and renamed, so that no process forked meanwhile holds
    // the program open for writing when it is run (ETXTBSY).
    let tmp = bin_dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, script).expect("write fake plugin");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .expect("chmod fake plugin");
    }
    std::fs::rename(&tmp, &path).expect("rename fake plugin");
    path
}

/// The images plugin `name` in `bin_dir` was run for, in order (its `.calls` file);
/// empty when it never ran.
pub fn calls(bin_dir: &Path, name: &str) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(bin_dir.join(format!("{name}.calls"))) else {
        return Vec::new();
    };
    text.lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["image"].as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("<not a request: {line}>"))
        })
        .collect()
}

/// One provider of a [`config`]: `(name, matchImages, defaultCacheDuration, env)`.
pub type ProviderEntry<'a> = (&'a str, &'a [&'a str], &'a str, &'a [(&'a str, &'a str)]);

/// A `kubelet.config.k8s.io/v1` `CredentialProviderConfig` (JSON, which is YAML too)
/// over `providers`, each with apiVersion `credentialprovider.kubelet.k8s.io/v1`.
pub fn config(providers: &[ProviderEntry<'_>]) -> String {
    let providers: Vec<serde_json::Value> = providers
        .iter()
        .map(|(name, match_images, duration, env)| {
            serde_json::json!({
                "name": name,
                "matchImages": match_images,
                "defaultCacheDuration": duration,
                "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                "env": env.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "apiVersion": "kubelet.config.k8s.io/v1",
        "kind": "CredentialProviderConfig",
        "providers": providers,
    })
    .to_string()
}
