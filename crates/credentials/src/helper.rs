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
use std::time::Duration;

use crate::Credential;
use crate::error::{CredentialError, HelperFailure};
use crate::exec::{self, ExecFailure};
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

/// The most a helper may write to stdout or stderr, in bytes (1 MiB): a reply is a
/// small JSON object.
pub const HELPER_OUTPUT_LIMIT: u64 = exec::OUTPUT_LIMIT;

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
    let output = exec::run_bounded(
        &program,
        &["get".to_owned()],
        &[],
        call.server.as_bytes().to_vec(),
        options.timeout,
    )
    .await
    .map_err(|failure| {
        call.error(match failure {
            ExecFailure::Missing => HelperFailure::Missing,
            ExecFailure::Spawn(why) => HelperFailure::Spawn(why),
            ExecFailure::TimedOut => HelperFailure::TimedOut {
                after: options.timeout,
            },
            ExecFailure::OutputTooLarge => HelperFailure::OutputTooLarge,
        })
    })?;
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
