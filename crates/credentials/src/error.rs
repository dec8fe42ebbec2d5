//! The crate's error type. No variant ever holds a password, token, `auth` value or a
//! credential helper's output: messages name the file, secret, key or helper and say
//! what is wrong.

use std::fmt;
use std::time::Duration;

/// Why credentials could not be read or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// A file could not be read (missing when it was named explicitly, unreadable, not
    /// UTF-8).
    #[error("{path}: cannot read {what}: {message}")]
    Read {
        /// The file.
        path: String,
        /// What it was supposed to be, e.g. `pull secret manifest`.
        what: &'static str,
        /// The reason, from the OS.
        message: String,
    },
    /// A `--pull-secret` file that is neither JSON nor YAML, or holds something other
    /// than Secrets (or `List`s of them). `message` starts with the position or the
    /// document number when known.
    #[error("{file}: {message}")]
    Manifest {
        /// The file.
        file: String,
        /// What is wrong, e.g. `document 2: kind ConfigMap is not a Secret`.
        message: String,
    },
    /// A malformed pull secret: bad base64 in `data`, a `.dockerconfigjson` or
    /// `.dockercfg` that does not decode as the kubelet decodes it, an `auth` field that
    /// is not base64 of `user:password`. The kubelet fails the pull in these cases.
    #[error("pull secret {name} ({origin}): {message}")]
    Secret {
        /// `metadata.name`.
        name: String,
        /// Where it came from: the manifest file, or e.g. `namespace ci` for a Secret
        /// read from the cluster.
        origin: String,
        /// What is wrong, e.g. `.dockerconfigjson: auths["quay.io"]: \`auth\` is not
        /// valid base64`.
        message: String,
    },
    /// A malformed Docker `config.json` or containers `auth.json`: `PATH: line L column
    /// C: message` for a JSON syntax error, `PATH: message` for a bad value.
    #[error("{path}: {}{message}", match (line, column) {
        (Some(l), Some(c)) => format!("line {l} column {c}: "),
        _ => String::new(),
    })]
    AuthFile {
        /// The file.
        path: String,
        /// 1-based line of a JSON syntax error.
        line: Option<usize>,
        /// 1-based column of a JSON syntax error.
        column: Option<usize>,
        /// What is wrong, without the position.
        message: String,
    },
    /// A credential provider config (`--image-credential-provider-config`) that does
    /// not decode or does not validate as the kubelet validates it, or a provider whose
    /// program is not in the bin directory. Each error names its field, e.g.
    /// `providers[0].matchImages: Required value: …`.
    #[error("{file}: {}", errors.join("; "))]
    ProviderConfig {
        /// The file (or the directory) at fault.
        file: String,
        /// Every problem found, each naming its field.
        errors: Vec<String>,
    },
    /// A credential helper that could not answer. "Credentials not found" is not an
    /// error (it means no credential); everything else is.
    #[error(
        "credential helper docker-credential-{helper} (server {server}, configured in {configured_in}): {failure}"
    )]
    Helper {
        /// The helper name as configured, without the `docker-credential-` prefix.
        helper: String,
        /// The server URL sent on its standard input.
        server: String,
        /// The config file and key that named it, e.g. `/root/.docker/config.json
        /// credHelpers["ghcr.io"]`.
        configured_in: String,
        /// What went wrong.
        failure: HelperFailure,
    },
}

impl CredentialError {
    /// The file this error is about, as data, for a front end that names the option or
    /// field that gave it: `None` for a pull secret's content ([`CredentialError::Secret`],
    /// which may come from the cluster) and a helper's failure.
    /// [`CredentialError::ProviderConfig`]'s problems are joined by `; `.
    pub fn fault(&self) -> Option<pullcheck_files::FileFault<'_>> {
        use pullcheck_files::{FaultKind, FileFault};
        use std::borrow::Cow;
        fn fault<'a>(path: &'a str, kind: FaultKind, message: Cow<'a, str>) -> FileFault<'a> {
            FileFault {
                path: Cow::Borrowed(path),
                kind,
                line: None,
                column: None,
                message,
            }
        }
        Some(match self {
            CredentialError::Read { path, message, .. } => {
                fault(path, FaultKind::Unreadable, Cow::Borrowed(message.as_str()))
            }
            CredentialError::Manifest { file, message } => {
                fault(file, FaultKind::Invalid, Cow::Borrowed(message.as_str()))
            }
            CredentialError::AuthFile {
                path,
                line,
                column,
                message,
            } => FileFault {
                line: *line,
                column: *column,
                ..fault(
                    path,
                    if line.is_some() {
                        FaultKind::Syntax
                    } else {
                        FaultKind::Invalid
                    },
                    Cow::Borrowed(message.as_str()),
                )
            },
            CredentialError::ProviderConfig { file, errors } => {
                fault(file, FaultKind::Invalid, Cow::Owned(errors.join("; ")))
            }
            CredentialError::Secret { .. } | CredentialError::Helper { .. } => return None,
        })
    }
}

/// How a credential helper failed. Never holds the helper's output, which may contain
/// secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelperFailure {
    /// The name is empty or contains a path separator, so no program is run.
    InvalidName,
    /// No `docker-credential-<name>` program in the helper directories or on `PATH`.
    Missing,
    /// The program exists but could not be started (e.g. not executable).
    Spawn(String),
    /// It exited unsuccessfully with something other than "credentials not found".
    Exited {
        /// The exit code, `None` when killed by a signal.
        code: Option<i32>,
    },
    /// It did not answer within the timeout and was killed.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// It exited successfully but its output is not a `{ServerURL, Username, Secret}`
    /// JSON object.
    BadReply,
    /// It wrote more than 1 MiB to stdout or stderr, and was killed.
    OutputTooLarge,
}

impl fmt::Display for HelperFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HelperFailure::InvalidName => {
                f.write_str("the helper name is empty or contains a path separator")
            }
            HelperFailure::Missing => f.write_str("program not found"),
            HelperFailure::Spawn(why) => write!(f, "cannot start: {why}"),
            HelperFailure::Exited { code: Some(code) } => {
                write!(f, "exited with status {code} (output withheld)")
            }
            HelperFailure::Exited { code: None } => {
                f.write_str("killed by a signal (output withheld)")
            }
            HelperFailure::TimedOut { after } => {
                write!(f, "no answer within {} ms; killed", after.as_millis())
            }
            HelperFailure::BadReply => f.write_str(
                "the reply is not a {ServerURL, Username, Secret} JSON object (output withheld)",
            ),
            HelperFailure::OutputTooLarge => {
                f.write_str("it wrote more than 1 MiB; killed (output withheld)")
            }
        }
    }
}
