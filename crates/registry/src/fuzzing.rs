//! The parsers, opened to the fuzz targets in `fuzz/` (feature `fuzzing`; not part of
//! the supported API). Each function runs a parser on arbitrary bytes and checks the
//! invariants its module promises, panicking when one is broken, so that a fuzzer
//! reports it.

use crate::auth;
use crate::challenge;
use crate::errcode;
use crate::{Credential, Status};

/// Parses `value` as one `WWW-Authenticate` field, then as several fields (split at
/// `\n`), then runs the authorization plan on it for an anonymous and a Basic
/// credential, and the `insufficient_scope` reading.
///
/// # Panics
/// When an invariant breaks: a parse error's position past the end, a scheme or
/// parameter name that is empty or not lower case, a message that shows the password,
/// a plan that fails with a status other than Unreachable, NoAccess or Denied, or a
/// non-pull scope.
pub fn www_authenticate(value: &[u8]) {
    match challenge::parse(value) {
        Ok(challenges) => {
            for c in &challenges {
                assert!(!c.scheme.is_empty(), "empty scheme");
                assert_eq!(c.scheme, c.scheme.to_ascii_lowercase(), "scheme case");
                assert!(c.token68.is_none() || c.params.is_empty(), "both forms");
                for (name, _) in &c.params {
                    assert!(!name.is_empty(), "empty parameter name");
                    assert_eq!(*name, name.to_ascii_lowercase(), "parameter case");
                }
            }
        }
        Err(e) => {
            assert!(
                e.position <= value.len(),
                "position {} past the end",
                e.position
            );
            assert!(!e.to_string().is_empty());
        }
    }
    let fields: Vec<&[u8]> = value.split(|b| *b == b'\n').collect();
    let _ = challenge::parse_fields(fields.clone());

    let password = "fuzz-password-canary";
    for credential in [
        Credential::Anonymous,
        Credential::Basic {
            username: "u".into(),
            password: password.into(),
        },
    ] {
        for allow_http_realm in [false, true] {
            let ping = auth::Ping {
                host: "reg.example",
                url: "https://reg.example/v2/",
                status: 401,
                www_authenticate: fields.clone(),
                allow_http_realm,
            };
            if let Err(e) = auth::plan(&ping, &credential) {
                assert!(
                    matches!(
                        e.status,
                        Status::Unreachable | Status::NoAccess | Status::Denied
                    ),
                    "{e:?}"
                );
                assert!(!format!("{e:?}").contains(password), "{e:?}");
                // The registry's challenge is at fault, never a token server.
                let failed = e.failure.failed_host();
                assert_eq!(
                    (failed.host.as_str(), failed.role),
                    ("reg.example", crate::HostRole::Registry),
                    "{e:?}"
                );
            }
        }
    }
    if let Some(scopes) = auth::insufficient_scope(fields, "fuzz/repo") {
        assert!(!scopes.is_empty());
        for s in scopes {
            assert!(s.starts_with("repository:") && s.ends_with(":pull"), "{s}");
        }
    }
}

/// Parses `body` as a registry error envelope and summarises it.
///
/// # Panics
/// When an invariant breaks: an empty code, a code or message longer than its clip
/// (64 and 200 characters, plus the ellipsis), or a control character in either.
pub fn error_envelope(body: &[u8]) {
    let errors = errcode::parse(body);
    assert!(errors.entries.len() <= errcode::KEPT_ENTRIES);
    for e in &errors.entries {
        assert!(!e.raw_code.is_empty(), "empty code");
        assert!(e.raw_code.chars().count() <= 65, "{}", e.raw_code);
        assert!(e.message.chars().count() <= 201, "{}", e.message);
        assert!(
            !e.raw_code.chars().any(char::is_control),
            "{:?}",
            e.raw_code
        );
        assert!(!e.message.chars().any(char::is_control), "{:?}", e.message);
        let _ = e.summary();
    }
    match errcode::summary(&errors) {
        None => assert!(errors.is_empty()),
        Some(s) => assert!(!s.is_empty()),
    }
}
