//! Docker credential helpers (`docker-credential-helpers` protocol).
//!
//! `docker-credential-<name> get` is run with the server URL on standard input (no
//! newline). It answers on standard output:
//! - success: `{"ServerURL": …, "Username": …, "Secret": …}`. A `Username` of
//!   `<token>` means `Secret` is an identity token (OAuth2 refresh token); otherwise
//!   it is a password. Both empty means no credential.
//! - "credentials not found in native keychain" with a non-zero exit: no credential.
//! - anything else with a non-zero exit: an error.
//!
//! The helper gets a timeout (default 10 s). It runs in its own process group, and
//! when the timeout runs out the whole group is killed (the helper and anything it
//! started), then the helper is reaped. Errors name the helper, never show its output
//! (which may hold secrets).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use crate::Credential;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::{CredentialError, HelperFailure};
use crate::tree::{self, Node};

/// The program name prefix of credential helpers.
pub const HELPER_PREFIX: &str = "docker-credential-";

/// The text a helper prints when it has no credential for the server.
pub const NOT_FOUND_MESSAGE: &str = "credentials not found in native keychain";

/// The `Username` a helper answers when `Secret` is an identity token.
pub const TOKEN_USERNAME: &str = "<token>";

/// How helpers are found and run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperOptions {
    /// How long one helper may take, from start to exit. Default 10 s.
    pub timeout: Duration,
    /// Directories searched for `docker-credential-<name>`, in order; `None` (the
    /// default) uses `PATH`. Tests set this so they need not touch the global `PATH`.
    pub search_path: Option<Vec<PathBuf>>,
}

impl Default for HelperOptions {
    fn default() -> Self {
        HelperOptions {
            timeout: Duration::from_secs(10),
            search_path: None,
        }
    }
}

/// One helper invocation a config file asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct HelperCall {
    /// The helper name without the prefix, e.g. `ecr-login`.
    pub helper: String,
    /// The server URL written on its standard input, e.g. `https://index.docker.io/v1/`
    /// or `ghcr.io`.
    pub server: String,
    /// The config file that names the helper.
    pub configured_in: String,
    /// Where in it: `credHelpers["<key>"]` or `credsStore`.
    pub key: String,
}

impl HelperCall {
    /// The program run: `docker-credential-<helper>`.
    pub fn program(&self) -> String {
        format!("{HELPER_PREFIX}{}", self.helper)
    }

    /// `credential helper docker-credential-<name> (<file>)`, the `source` of its
    /// credential.
    pub fn describe(&self) -> String {
        format!(
            "credential helper {} ({})",
            self.program(),
            self.configured_in
        )
    }

    fn error(&self, failure: HelperFailure) -> CredentialError {
        CredentialError::Helper {
            helper: self.helper.clone(),
            server: self.server.clone(),
            configured_in: format!("{} {}", self.configured_in, self.key),
            failure,
        }
    }
}

/// What a helper answered when it had a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperAnswer {
    /// Basic (user name and password) or an identity token (`<token>`).
    pub credential: Credential,
    /// The user name, except for identity tokens.
    pub username: Option<String>,
}

/// How long the reaping of a killed helper is waited for.
const REAP_WAIT: Duration = Duration::from_secs(1);

/// The most a helper may write to stdout or stderr, in bytes (1 MiB): a reply is a
/// small JSON object.
pub const HELPER_OUTPUT_LIMIT: u64 = 1 << 20;

/// Reads a pipe to its end, at most [`HELPER_OUTPUT_LIMIT`] bytes; no pipe reads as
/// nothing.
///
/// # Errors
/// The read error; `FileTooLarge` past the limit.
async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        pipe.take(HELPER_OUTPUT_LIMIT + 1)
            .read_to_end(&mut bytes)
            .await?;
    }
    if bytes.len() as u64 > HELPER_OUTPUT_LIMIT {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    Ok(bytes)
}

/// Kills the helper's process group (its id is the helper's pid: it was started with
/// `process_group(0)`): the helper and everything it started and left in its group.
#[cfg(unix)]
fn kill_group(group: Option<u32>) {
    let Some(pgid) = group.and_then(|g| libc::pid_t::try_from(g).ok()) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals that process group; it takes no
    // pointers. ESRCH (the group is already gone) is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_group: Option<u32>) {}

/// Kills a helper's process group when dropped; forgotten once the helper is done.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Runs the helper of `call`. `Ok(None)` means it has no credential for the server.
///
/// # Errors
/// [`CredentialError::Helper`] with a [`HelperFailure`]: invalid name, missing program,
/// cannot start, non-zero exit (other than "not found"), timeout, unreadable reply.
pub async fn run_helper(
    call: &HelperCall,
    options: &HelperOptions,
) -> Result<Option<HelperAnswer>, CredentialError> {
    if call.helper.is_empty() || call.helper.contains(['/', '\\']) || call.helper == ".." {
        return Err(call.error(HelperFailure::InvalidName));
    }
    let program = match &options.search_path {
        None => PathBuf::from(call.program()),
        Some(dirs) => dirs
            .iter()
            .map(|d| d.join(call.program()))
            .find(|p| p.is_file())
            .ok_or_else(|| call.error(HelperFailure::Missing))?,
    };
    let mut command = tokio::process::Command::new(&program);
    command
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so that a timeout kills whatever the helper started too
    // (a `sleep`, a keychain client), not the helper alone.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => call.error(HelperFailure::Missing),
        _ => call.error(HelperFailure::Spawn(e.kind().to_string())),
    })?;
    let group = child.id();
    // Dropped before the helper is done (the caller's deadline passed, say): the whole
    // group goes, not the helper alone, which `kill_on_drop` would leave its children.
    let guard = GroupGuard(group);
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let server = call.server.clone();
    let exchange = async {
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A helper that exits without reading its input is not an error here;
                // its exit status says what happened.
                let _ = stdin.write_all(server.as_bytes()).await;
                let _ = stdin.shutdown().await;
            }
        };
        // The first failure (an output over the limit) ends the exchange at once; the
        // helper is killed below rather than waited for.
        let (_, stdout, stderr, status) = tokio::try_join!(
            async {
                write.await;
                Ok(())
            },
            read_all(stdout),
            read_all(stderr),
            child.wait()
        )?;
        Ok::<_, std::io::Error>((status, stdout, stderr))
    };
    let (status, stdout, stderr) = match tokio::time::timeout(options.timeout, exchange).await {
        Err(_) => {
            kill_group(group);
            // Reap the helper (the group's leader); `kill_on_drop` is the fallback.
            let _ = child.start_kill();
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            return Err(call.error(HelperFailure::TimedOut {
                after: options.timeout,
            }));
        }
        Ok(Err(e)) => {
            kill_group(group);
            let _ = child.start_kill();
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            return Err(call.error(match e.kind() {
                std::io::ErrorKind::FileTooLarge => HelperFailure::OutputTooLarge,
                kind => HelperFailure::Spawn(kind.to_string()),
            }));
        }
        Ok(Ok(output)) => output,
    };
    std::mem::forget(guard);
    let output = std::process::Output {
        status,
        stdout,
        stderr,
    };
    if !output.status.success() {
        let says_not_found = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .trim()
                .to_ascii_lowercase()
                .contains("credentials not found")
        };
        if says_not_found(&output.stdout) || says_not_found(&output.stderr) {
            return Ok(None);
        }
        return Err(call.error(HelperFailure::Exited {
            code: output.status.code(),
        }));
    }
    let reply =
        tree::parse_json(&output.stdout).map_err(|_| call.error(HelperFailure::BadReply))?;
    if !matches!(reply, Node::Object(_)) {
        return Err(call.error(HelperFailure::BadReply));
    }
    let [_server_url, username, secret] =
        tree::go_fields(&reply, ["ServerURL", "Username", "Secret"], "reply")
            .map_err(|_| call.error(HelperFailure::BadReply))?;
    let (username, secret) = (username.unwrap_or_default(), secret.unwrap_or_default());
    Ok(if username == TOKEN_USERNAME {
        Some(HelperAnswer {
            credential: Credential::IdentityToken(secret.into()),
            username: None,
        })
    } else if username.is_empty() && secret.is_empty() {
        None
    } else {
        Some(HelperAnswer {
            credential: Credential::Basic {
                username: username.clone(),
                password: secret.into(),
            },
            username: Some(username),
        })
    })
}
