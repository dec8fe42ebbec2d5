//! `Parse` and `ParseNormalizedNamed` of `distribution/reference`, and the
//! familiar form (`FamiliarName`).

use crate::error::ReferenceError;
use crate::{
    DEFAULT_DOMAIN, LEGACY_DEFAULT_DOMAIN, OFFICIAL_REPO_PREFIX, Reference, digest, grammar,
};

/// Whether Go's `strings.ToLower(s) != s`: some character has a (simple)
/// lowercase mapping other than itself. Go maps per character, Unicode-wide.
pub(crate) fn has_upper(s: &str) -> bool {
    s.chars().any(|c| {
        let mut lower = c.to_lowercase();
        !(lower.next() == Some(c) && lower.next().is_none())
    })
}

/// Go's `strings.ToLower(s)`, but only when the result can still match the
/// (ASCII-only) grammar: `None` when a character would lower to anything
/// other than ASCII. Besides `A`-`Z`, two characters lower to ASCII in
/// Unicode's simple case mapping: U+212A KELVIN SIGN (`k`) and U+0130
/// LATIN CAPITAL LETTER I WITH DOT ABOVE (`i`).
fn go_lower_ascii(s: &str) -> Option<String> {
    s.chars()
        .map(|c| match c {
            '\u{212A}' => Some('k'),
            '\u{130}' => Some('i'),
            c if c.is_ascii() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The name part of `s` (before the tag and digest), for messages.
fn name_part(s: &str) -> &str {
    let left = s.split_once('@').map_or(s, |(left, _)| left);
    grammar::split_tag(left).0
}

/// Upstream's `Parse`: the grammar, then the path length, then the digest.
pub(crate) fn parse(s: &str) -> Result<Reference, ReferenceError> {
    parse_as(s, s)
}

/// [`parse`] of `s`, with grammar errors described in terms of `written`,
/// the text the user wrote (which `s` adds a default domain or `library/` to).
fn parse_as(s: &str, written: &str) -> Result<Reference, ReferenceError> {
    if s.is_empty() {
        return Err(ReferenceError::empty());
    }
    let Some(m) = grammar::match_reference(s) else {
        let lowered_matches = go_lower_ascii(s)
            .is_some_and(|lower| lower != s && grammar::match_reference(&lower).is_some());
        return Err(if lowered_matches {
            ReferenceError::uppercase(name_part(written))
        } else {
            ReferenceError::invalid_format(written)
        });
    };
    if m.path.len() > crate::REPOSITORY_NAME_MAX_LEN {
        return Err(ReferenceError::too_long(m.path));
    }
    if let Some(d) = m.digest {
        digest::validate(d).map_err(|problem| ReferenceError::digest(d, &problem))?;
    }
    Ok(Reference::from_parts(m.domain, m.path, m.tag, m.digest))
}

/// Upstream's `splitDockerDomain`: the domain, the remainder (path, tag and
/// digest), and whether `library/` was added to the remainder.
fn split_docker_domain(s: &str) -> (&str, String, bool) {
    let Some((maybe_domain, rest)) = s.split_once('/') else {
        return (DEFAULT_DOMAIN, format!("{OFFICIAL_REPO_PREFIX}{s}"), true);
    };
    let (domain, remainder) = if maybe_domain == "localhost" {
        (maybe_domain, rest)
    } else if maybe_domain == LEGACY_DEFAULT_DOMAIN {
        (DEFAULT_DOMAIN, rest)
    } else if maybe_domain.contains(['.', ':']) || has_upper(maybe_domain) {
        (maybe_domain, rest)
    } else {
        (DEFAULT_DOMAIN, s)
    };
    if domain == DEFAULT_DOMAIN && !remainder.contains('/') {
        (domain, format!("{OFFICIAL_REPO_PREFIX}{remainder}"), true)
    } else {
        (domain, remainder.to_owned(), false)
    }
}

/// Upstream's `ParseNormalizedNamed`, except that an empty input is
/// [`crate::ReferenceErrorKind::Empty`] (upstream reports it as an invalid
/// format, having already turned it into `docker.io/library/`).
pub(crate) fn parse_normalized(s: &str) -> Result<Reference, ReferenceError> {
    if s.is_empty() {
        return Err(ReferenceError::empty());
    }
    if grammar::is_identifier(s) {
        return Err(ReferenceError::hex64(s));
    }
    let (domain, remainder, added_prefix) = split_docker_domain(s);
    // Upstream checks everything before the first `:` of the remainder,
    // which can include an `@digest` when there is no tag.
    let remote = remainder
        .split_once(':')
        .map_or(remainder.as_str(), |(r, _)| r);
    if has_upper(remote) {
        let written = if added_prefix {
            remote.strip_prefix(OFFICIAL_REPO_PREFIX).unwrap_or(remote)
        } else {
            remote
        };
        return Err(ReferenceError::uppercase(written));
    }
    parse_as(&format!("{domain}/{remainder}"), s)
}

/// Upstream's `familiarizeName`: drop `docker.io/`, and `library/` when
/// what follows it has no `/`.
pub(crate) fn familiar_name(domain: &str, path: &str) -> String {
    if domain != DEFAULT_DOMAIN {
        return crate::join_name(domain, path);
    }
    match path.strip_prefix(OFFICIAL_REPO_PREFIX) {
        Some(rest) if !rest.contains('/') => rest.to_owned(),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_lowercase() {
        assert!(has_upper("A"));
        assert!(has_upper("É"));
        assert!(has_upper("\u{212A}"));
        assert!(has_upper("\u{1C5}")); // a title-case letter lowers too
        assert!(!has_upper("aé1_"));
        assert_eq!(
            go_lower_ascii("AbC\u{212A}\u{130}").as_deref(),
            Some("abcki")
        );
        assert_eq!(go_lower_ascii("É"), None);
    }

    #[test]
    fn docker_domain_split() {
        assert_eq!(
            split_docker_domain("ubuntu"),
            ("docker.io", "library/ubuntu".into(), true)
        );
        assert_eq!(
            split_docker_domain("a/b"),
            ("docker.io", "a/b".into(), false)
        );
        assert_eq!(
            split_docker_domain("index.docker.io/b"),
            ("docker.io", "library/b".into(), true)
        );
        assert_eq!(
            split_docker_domain("localhost/b"),
            ("localhost", "b".into(), false)
        );
        assert_eq!(split_docker_domain("A/b"), ("A", "b".into(), false));
        assert_eq!(split_docker_domain("a:1/b"), ("a:1", "b".into(), false));
    }
}
