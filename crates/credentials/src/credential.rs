//! [`Credential`]: what is presented to a registry. A plain value type, here so that
//! this crate (which finds credentials) needs no HTTP client; `pullcheck-registry`
//! (which sends them) re-exports it as `pullcheck_registry::Credential`.

use std::fmt;

/// A password, token or other secret string. `Debug` and `Display` print
/// `<redacted>`, so a secret inside any value that derives them (a credential, a pull
/// secret's entry, an error) never shows; [`Secret::expose`] gives it to the one place
/// that sends it (an `Authorization` header, a token request's form). No `Serialize`.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for sending it (or comparing it) only; never for a message.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is the empty string (an entry without a password).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

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
        password: Secret,
    },
    /// An OAuth2 refresh token (`identitytoken`).
    IdentityToken(Secret),
    /// A ready bearer token (`registrytoken`).
    RegistryToken(Secret),
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

    #[test]
    fn a_secret_prints_as_redacted_and_exposes_only_on_request() {
        let secret = Secret::from("hunter2");
        assert_eq!(
            format!("{secret} {secret:?} {secret:#?}"),
            "<redacted> <redacted> <redacted>"
        );
        assert_eq!(secret.expose(), "hunter2");
        assert!(!secret.is_empty());
        assert!(Secret::default().is_empty());
    }
}
