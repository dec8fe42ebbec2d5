//! The one error type of the crate: a configuration file that cannot be read, does not
//! parse, or says something the runtime itself rejects.

use std::path::PathBuf;

use crate::redact::redact_urls;

/// Why a mirror configuration could not be loaded.
///
/// Every variant names the file; [`MirrorError::Invalid`] also names the entry
/// (`[[registry]] #2 (line 7) prefix="docker.io"`, `registry-mirrors[0]`, …) so that the
/// message alone is enough to find and fix the problem. A password written in a URL or
/// location is never shown: user info appears as `user:***@`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MirrorError {
    /// The file or directory could not be read (missing, permission, not UTF-8, …).
    #[error("{}: cannot read: {message}", path.display())]
    Read {
        /// The path that was read.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
    /// The file is not valid TOML or JSON, or a value has the wrong type
    /// (`insecure = "yes"`). Shown as `FILE: line L, column C: message` when the parser
    /// knows where.
    #[error("{file}: {}{message}", position(*line, *column))]
    Syntax {
        /// The file, as given to the loader.
        file: String,
        /// 1-based line, when the parser knows it.
        line: Option<usize>,
        /// 1-based column (characters), when the parser knows it.
        column: Option<usize>,
        /// What is wrong, without the position.
        message: String,
    },
    /// The file parses but one of its entries is rejected, as the runtime would reject
    /// it (conflicting `insecure`, a mirror without `location`, mixing v1 and v2, a
    /// `registry-mirrors` entry with a path, …).
    #[error("{file}: {entry}: {message}")]
    Invalid {
        /// The file, as given to the loader.
        file: String,
        /// The entry, e.g. `[[registry]] #2 (line 7) location="registry.com"`.
        entry: String,
        /// What is wrong with it.
        message: String,
    },
    /// The file is larger than the limit of a mirror configuration file
    /// ([`crate::MAX_CONFIG_BYTES`]): refused before it is parsed.
    #[error("{}: cannot read: larger than {} KiB, the limit of a mirror configuration file", path.display(), limit_bytes >> 10)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        limit_bytes: u64,
    },
    /// `--node-config` named no known profile.
    #[error("unknown node profile {0:?}: expected crio, containerd or docker")]
    UnknownProfile(String),
}

/// `line L, column C: ` for a known position, else nothing.
fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("line {l}, column {c}: "),
        (Some(l), None) => format!("line {l}: "),
        _ => String::new(),
    }
}

impl MirrorError {
    /// The file this error is about, as data: `None` for [`MirrorError::UnknownProfile`]
    /// (no file). An [`MirrorError::Invalid`] entry leads its message (`ENTRY: message`).
    pub fn fault(&self) -> Option<pullcheck_files::FileFault<'_>> {
        use pullcheck_files::{FaultKind, FileFault};
        use std::borrow::Cow;
        Some(match self {
            MirrorError::Read { path, message } => FileFault {
                path: path.to_string_lossy(),
                kind: FaultKind::Unreadable,
                line: None,
                column: None,
                message: Cow::Borrowed(message),
            },
            MirrorError::TooLarge { path, limit_bytes } => FileFault {
                path: path.to_string_lossy(),
                kind: FaultKind::Unreadable,
                line: None,
                column: None,
                message: Cow::Owned(format!(
                    "larger than {} KiB, the limit of a mirror configuration file",
                    limit_bytes >> 10
                )),
            },
            MirrorError::Syntax {
                file,
                line,
                column,
                message,
            } => FileFault {
                path: Cow::Borrowed(file),
                kind: FaultKind::Syntax,
                line: *line,
                column: *column,
                message: Cow::Borrowed(message),
            },
            MirrorError::Invalid {
                file,
                entry,
                message,
            } => FileFault {
                path: Cow::Borrowed(file),
                kind: FaultKind::Invalid,
                line: None,
                column: None,
                message: Cow::Owned(format!("{entry}: {message}")),
            },
            MirrorError::UnknownProfile(_) => return None,
        })
    }

    pub(crate) fn read(path: impl Into<PathBuf>, err: &std::io::Error) -> Self {
        MirrorError::Read {
            path: path.into(),
            message: err.to_string(),
        }
    }

    /// An [`MirrorError::Invalid`]. The user info of any URL in `entry` or `message` is
    /// masked (`https://user:***@host`) as a last line of defence; callers mask
    /// scheme-less values (`user:pw@host` locations) themselves.
    pub(crate) fn invalid(
        file: &str,
        entry: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        MirrorError::Invalid {
            file: file.to_owned(),
            entry: redact_urls(&entry.into()),
            message: redact_urls(&message.into()),
        }
    }
}
