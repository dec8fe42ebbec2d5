//! Redaction: how values that may carry a credential are shown.
//!
//! **Invariant:** a password or token written into a configuration value (the user info
//! of a URL, `scheme://user:password@host`, or of a registries.conf `location` or
//! `prefix`, `user:password@host/path`) never leaves this crate as written: every error
//! message, rule, reason, origin and endpoint URL built from such a value goes through
//! this module first, and shows the user info as `user:***@` (or `***@` when it is one
//! token, which may itself be the secret). `MirrorError::invalid` masks the URL
//! user info in its entry and message again, as a last line of defence (scheme-less
//! values are the caller's to mask); `tests/redaction.rs` checks the whole crate's
//! output.

/// User info as shown: `user:***` when it has a password, `***` when it is one token
/// (which may itself be a secret).
fn mask_user_info(user_info: &str) -> String {
    match user_info.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => "***".to_owned(),
    }
}

/// `text` with the user info of every `scheme://user:password@host` in it masked
/// (`scheme://user:***@host`), wherever it appears: a value, a quoted value in a message,
/// a rule. The authority ends at `/`, `?`, `#`, white space, a quote or a backslash.
pub(crate) fn redact_urls(text: &str) -> String {
    if !text.contains('@') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (before, after) = rest.split_at(i + 3);
        out.push_str(before);
        let end = after
            .find(|c: char| {
                c.is_whitespace()
                    || matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '\\' | '<' | '>')
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str(&mask_user_info(&authority[..at]));
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// A registries.conf `location` or `prefix` (`[user:password@]host[:port][/path]`, no
/// scheme), or a containerd host name, as shown: user info before the host masked. A
/// value with a scheme is masked as a URL. An `@` that starts a digest
/// (`name@sha256:…`) is not user info, nor is one after a wildcard (`*.example.com@x`,
/// an invalid prefix shown as written).
pub(crate) fn redact_location(value: &str) -> String {
    if value.contains("://") {
        return redact_urls(value);
    }
    if value.starts_with("*.") {
        return value.to_owned();
    }
    let host_end = value.find('/').unwrap_or(value.len());
    let host = &value[..host_end];
    let at = host.char_indices().rev().find(|&(i, c)| {
        c == '@'
            && !["sha256:", "sha384:", "sha512:"]
                .iter()
                .any(|alg| host[i + 1..].starts_with(alg))
    });
    match at {
        Some((i, _)) => format!("{}{}", mask_user_info(&host[..i]), &value[i..]),
        None => value.to_owned(),
    }
}

/// `text` with each of `values` (raw locations, prefixes, URLs) replaced by its masked
/// form ([`redact_location`]), then any remaining URL user info masked
/// ([`redact_urls`]): for messages built from values that may carry credentials.
pub(crate) fn redact_values(text: &str, values: &[&str]) -> String {
    let mut out = text.to_owned();
    for v in values {
        if v.contains('@') {
            let masked = redact_location(v);
            if masked != *v {
                out = out.replace(*v, &masked);
            }
        }
    }
    redact_urls(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_is_masked_in_urls_and_locations() {
        assert_eq!(
            redact_urls("a \"https://u:pw@h:5000/p\" and http://tok@h2 and ftp://h3/x@y"),
            "a \"https://u:***@h:5000/p\" and http://***@h2 and ftp://h3/x@y"
        );
        assert_eq!(redact_urls("no url, a@b"), "no url, a@b");
        assert_eq!(
            redact_location("u:pw@host:5000/path"),
            "u:***@host:5000/path"
        );
        assert_eq!(redact_location("tok@host"), "***@host");
        assert_eq!(redact_location("*.example.com@x"), "*.example.com@x");
        assert_eq!(redact_location("https://u:pw@host"), "https://u:***@host");
        let digest = format!("sha256:{}", "a".repeat(64));
        let reference = format!("example.com/app@{digest}");
        assert_eq!(redact_location(&reference), reference);
        let reference = format!("app@{digest}");
        assert_eq!(redact_location(&reference), reference);
        assert_eq!(
            redact_location(&format!("u:pw@host@{digest}")),
            format!("u:***@host@{digest}")
        );
        assert_eq!(
            redact_values("x \"u:pw@h/p/r:1\" y", &["u:pw@h/p"]),
            "x \"u:***@h/p/r:1\" y"
        );
    }
}
