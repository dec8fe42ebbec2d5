//! [`Credential`]: what is presented to a registry. A plain value type, here so that
//! this crate (which finds credentials) needs no HTTP client; `pullcheck-registry`
//! (which sends them) re-exports it as `pullcheck_registry::Credential`.

use std::fmt;

/// A credential to present to a registry. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// No credentials.
    Anonymous,
    /// A user name and password (Basic to the registry or to the token realm).
    Basic {
        /// The user name.
        username: String,
        /// The password; never printed.
        password: String,
    },
    /// An OAuth2 refresh token (`identitytoken`).
    IdentityToken(String),
    /// A ready bearer token (`registrytoken`).
    RegistryToken(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            Self::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
            Self::RegistryToken(_) => f.write_str("RegistryToken(<redacted>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let shown = format!(
            "{:?} {:?} {:?}",
            Credential::Basic {
                username: "alice".into(),
                password: "hunter2".into()
            },
            Credential::IdentityToken("refresh-secret".into()),
            Credential::RegistryToken("bearer-secret".into())
        );
        assert_eq!(
            shown,
            "Basic(alice, <redacted>) IdentityToken(<redacted>) RegistryToken(<redacted>)"
        );
    }
}
