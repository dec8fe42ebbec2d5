//! The harness's error type.

use std::path::PathBuf;

/// Everything that can go wrong while starting registries or pushing images.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A helper tool (`htpasswd`, `openssl`) failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Tool {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The registry process exited before it answered `GET /v2/`.
    #[error(
        "docker-registry (config {config}) exited with {status} before answering; stderr:\n{stderr}"
    )]
    RegistryExited {
        /// The config file it was started with.
        config: PathBuf,
        /// Its exit status.
        status: String,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// The registry did not answer `GET /v2/` in time.
    #[error(
        "docker-registry on {host} did not answer GET /v2/ within {seconds}s; stderr:\n{stderr}"
    )]
    RegistryTimeout {
        /// The `127.0.0.1:PORT` it was started on.
        host: String,
        /// The timeout.
        seconds: u64,
        /// The last lines of its stderr.
        stderr: String,
    },
    /// An HTTP request failed below the HTTP level (connect, I/O).
    #[error("{method} {url}: {message}")]
    Http {
        /// The request method.
        method: String,
        /// The request URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The registry answered a push step with an unexpected status.
    #[error("{step}: registry answered {status}: {body}")]
    Push {
        /// The request, e.g. `PUT /v2/app/manifests/v1`.
        step: String,
        /// The HTTP status.
        status: u16,
        /// The response body (error envelope).
        body: String,
    },
    /// The call is not possible on this registry (e.g. pushing to a mirror).
    #[error("{0}")]
    Unsupported(String),
    /// An argument was malformed (e.g. an image spec).
    #[error("invalid {what}: {value:?}: {reason}")]
    Invalid {
        /// What was being parsed.
        what: &'static str,
        /// The offending value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The access log never showed the synchronisation request.
    #[error("the registry's access log did not catch up within {0}s")]
    LogSync(u64),
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
