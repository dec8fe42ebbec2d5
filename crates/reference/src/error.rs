//! The error type, and the messages that name the offending part of the input.

use std::fmt;

use crate::digest::DigestProblem;
use crate::grammar::{self, ComponentProblem, DigestPatternProblem, DomainProblem, TagProblem};

/// Why a reference did not parse.
///
/// The kind follows the upstream error that `ParseNormalizedNamed` (or
/// `Parse`) returns for the same input; the names in brackets are upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceErrorKind {
    /// The input is empty (`ErrNameEmpty`).
    Empty,
    /// The input does not match the grammar (`ErrReferenceInvalidFormat`,
    /// `ErrTagInvalidFormat`). This includes a digest with fewer than 32 hex
    /// digits, which the grammar itself rejects.
    InvalidFormat,
    /// The repository path has upper case (`ErrNameContainsUppercase`, and
    /// `ParseNormalizedNamed`'s "repository name (…) must be lowercase").
    Uppercase,
    /// The repository path is longer than 255 characters (`ErrNameTooLong`).
    NameTooLong,
    /// The input is a bare 64-character lowercase hex string: an image ID,
    /// not a reference ("cannot specify 64-byte hexadecimal strings").
    Hex64,
    /// The digest matched the grammar but `go-digest` rejects it: an
    /// unregistered algorithm, the wrong length, or hex that is not
    /// lowercase (`ErrDigestInvalidFormat`, `ErrDigestInvalidLength`,
    /// `digest.ErrDigestUnsupported`).
    DigestInvalid,
}

impl ReferenceErrorKind {
    /// The snake_case name used in JSON output, e.g. `invalid_format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::InvalidFormat => "invalid_format",
            Self::Uppercase => "uppercase",
            Self::NameTooLong => "name_too_long",
            Self::Hex64 => "hex64",
            Self::DigestInvalid => "digest_invalid",
        }
    }
}

impl fmt::Display for ReferenceErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference that did not parse: the kind and a message naming the
/// offending part of the input.
///
/// Messages start with upstream's wording for the same error (for example
/// `invalid reference format`, `repository name must be lowercase`) and then
/// quote the part at fault. Quoted parts longer than 80 characters are cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceError {
    kind: ReferenceErrorKind,
    message: String,
}

impl ReferenceError {
    pub(crate) fn new(kind: ReferenceErrorKind, message: String) -> Self {
        Self { kind, message }
    }

    /// The rule that was broken.
    pub fn kind(&self) -> ReferenceErrorKind {
        self.kind
    }

    /// A human message naming the offending part of the input.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn empty() -> Self {
        Self::new(
            ReferenceErrorKind::Empty,
            "repository name must have at least one component: the reference is empty".into(),
        )
    }

    pub(crate) fn hex64(input: &str) -> Self {
        Self::new(
            ReferenceErrorKind::Hex64,
            format!(
                "invalid repository name {}: cannot specify 64-byte hexadecimal strings \
                 (that is an image ID, not a reference)",
                quote(input)
            ),
        )
    }

    pub(crate) fn uppercase(part: &str) -> Self {
        let mut message = format!("repository name must be lowercase: {}", quote(part));
        if part.contains('@') {
            message.push_str(" (a digest algorithm is lowercase too, e.g. sha256)");
        }
        Self::new(ReferenceErrorKind::Uppercase, message)
    }

    /// A string that is not the grammar's `domain` (`host[:port]`).
    pub(crate) fn domain(domain: &str, problem: DomainProblem<'_>) -> Self {
        Self::new(
            ReferenceErrorKind::InvalidFormat,
            format!(
                "invalid reference format: {}",
                domain_problem(domain, "", problem)
            ),
        )
    }

    pub(crate) fn too_long(path: &str) -> Self {
        Self::new(
            ReferenceErrorKind::NameTooLong,
            format!(
                "repository name must not be more than {} characters: path {} has {}",
                crate::REPOSITORY_NAME_MAX_LEN,
                quote(path),
                path.chars().count()
            ),
        )
    }

    pub(crate) fn digest(digest: &str, problem: &DigestProblem<'_>) -> Self {
        let d = quote(digest);
        let message = match *problem {
            DigestProblem::Unsupported(algorithm) => format!(
                "unsupported digest algorithm {} in digest {d} (registered: sha256, sha384, sha512)",
                quote(algorithm)
            ),
            DigestProblem::BadAlgorithm(algorithm) => format!(
                "invalid checksum digest format: algorithm {} of digest {d} is not a \
                 registered one (sha256, sha384, sha512; lowercase)",
                quote(algorithm)
            ),
            DigestProblem::Length {
                algorithm,
                want,
                got,
            } => format!(
                "invalid checksum digest length: digest {d} has {got} hex digits, \
                 {algorithm} needs {want}"
            ),
            DigestProblem::NotLowerHex { algorithm, bad } => format!(
                "invalid checksum digest format: digest {d} has {}, but {algorithm} hex \
                 must be lowercase 0-9a-f",
                quote_char(bad)
            ),
            DigestProblem::Shape => {
                format!("invalid checksum digest format: digest {d} is not algorithm:hex")
            }
        };
        Self::new(ReferenceErrorKind::DigestInvalid, message)
    }

    /// An `InvalidFormat` error for `text` (the string matched against the
    /// grammar), with the first part found at fault.
    pub(crate) fn invalid_format(text: &str) -> Self {
        let detail = find_problem(text)
            .unwrap_or_else(|| format!("{} does not match name[:tag][@digest]", quote(text)));
        Self::new(
            ReferenceErrorKind::InvalidFormat,
            format!("invalid reference format: {detail}"),
        )
    }
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReferenceError {}

/// The most bytes of escaped text a quoted part shows.
const QUOTE_MAX_BYTES: usize = 96;

/// `"text"` with Rust string escapes, cut after [`QUOTE_MAX_BYTES`] bytes of
/// escaped text (so control characters cannot blow the message up).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for (shown, c) in s.chars().enumerate() {
        if out.len() > QUOTE_MAX_BYTES {
            let total = shown + s.chars().skip(shown).count();
            out.push_str(&format!("\"… ({total} characters in all)"));
            return out;
        }
        if c == '\'' {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out.push('"');
    out
}

fn quote_char(c: char) -> String {
    format!("{c:?}")
}

/// Finds the part of `text` that breaks the grammar, in reading order:
/// the digest, the tag, then the name's components.
fn find_problem(text: &str) -> Option<String> {
    let (left, digest) = match text.split_once('@') {
        Some((left, digest)) => (left, Some(digest)),
        None => (text, None),
    };
    if let Some(problem) = digest.and_then(digest_problem) {
        return Some(problem);
    }
    let (name, tag) = grammar::split_tag(left);
    if let Some(tag) = tag
        && let Err(problem) = grammar::check_tag(tag)
    {
        return Some(tag_problem(tag, problem));
    }
    if name.is_empty() {
        return Some(format!(
            "{} has no repository name before its tag or digest",
            quote(text)
        ));
    }
    let Some((first, rest)) = name.split_once('/') else {
        return grammar::check_path_component(name)
            .err()
            .map(|p| component_problem(name, name, p));
    };
    let first_is_component = grammar::is_path_component(first);
    if looks_like_domain(first)
        && !first_is_component
        && let Err(problem) = grammar::check_domain(first)
    {
        return Some(domain_problem(first, rest, problem));
    }
    for component in rest.split('/') {
        if let Err(problem) = grammar::check_path_component(component) {
            return Some(component_problem(name, component, problem));
        }
    }
    if !grammar::is_domain(first)
        && let Err(problem) = grammar::check_path_component(first)
    {
        return Some(component_problem(name, first, problem));
    }
    None
}

fn looks_like_domain(first: &str) -> bool {
    first == "localhost"
        || first.contains(['.', ':', '[', ']'])
        || first.chars().any(|c| c.is_ascii_uppercase())
}

fn digest_problem(digest: &str) -> Option<String> {
    if digest.is_empty() {
        return Some("\"@\" is not followed by a digest".into());
    }
    if digest.contains('@') {
        return Some(format!(
            "digest {} holds a second \"@\"; only one digest is allowed",
            quote(digest)
        ));
    }
    let d = quote(digest);
    let problem = grammar::check_digest_pattern(digest).err()?;
    Some(match problem {
        DigestPatternProblem::NoColon => {
            format!("digest {d} must be algorithm:hex (e.g. sha256:<64 hex digits>)")
        }
        DigestPatternProblem::Algorithm(algorithm) => format!(
            "digest algorithm {} in {d} must be letters and digits, starting with a letter",
            quote(algorithm)
        ),
        DigestPatternProblem::HexChar(c) => {
            format!("digest {d} has {}, which is not a hex digit", quote_char(c))
        }
        DigestPatternProblem::HexShort(n) => format!(
            "digest {d} has only {n} hex digits; at least {} are needed",
            grammar::DIGEST_HEX_MIN_LEN
        ),
    })
}

fn tag_problem(tag: &str, problem: TagProblem) -> String {
    let t = quote(tag);
    match problem {
        TagProblem::Empty => "\":\" is not followed by a tag".into(),
        TagProblem::TooLong(n) => format!(
            "tag {t} has {n} characters; at most {} are allowed",
            grammar::TAG_MAX_LEN
        ),
        TagProblem::First(c) => format!(
            "tag {t} starts with {}; a tag starts with a letter, digit or \"_\"",
            quote_char(c)
        ),
        TagProblem::Char(c) => {
            let mut message = format!(
                "tag {t} has {}; a tag holds only letters, digits, \"_\", \".\" and \"-\"",
                quote_char(c)
            );
            if c == ']' {
                message
                    .push_str(" (a registry host must be followed by \"/\" and a repository path)");
            }
            message
        }
    }
}

fn component_problem(name: &str, component: &str, problem: ComponentProblem<'_>) -> String {
    let c = quote(component);
    match problem {
        ComponentProblem::Empty => format!(
            "repository name {} has an empty path component (\"//\", or \"/\" at an end)",
            quote(name)
        ),
        ComponentProblem::Char(ch) => {
            let mut message = format!(
                "path component {c} has {}; a path holds only a-z, 0-9 and the separators \
                 \".\", \"_\", \"__\" and \"-\"",
                quote_char(ch)
            );
            if ch == '[' || ch == ']' {
                message
                    .push_str(" (a registry host must be followed by \"/\" and a repository path)");
            }
            message
        }
        ComponentProblem::Edge => {
            format!("path component {c} must start and end with a lowercase letter or digit")
        }
        ComponentProblem::Separator(sep) => format!(
            "path component {c} has the separator {}; allowed are \".\", \"_\", \"__\" \
             or one or more \"-\"",
            quote(sep)
        ),
    }
}

fn domain_problem(domain: &str, rest: &str, problem: DomainProblem<'_>) -> String {
    let d = quote(domain);
    let mut message = match problem {
        DomainProblem::Ipv6Unclosed => format!("domain {d} opens \"[\" but does not close it"),
        DomainProblem::Ipv6Empty => format!("domain {d} has an empty IPv6 address"),
        DomainProblem::Ipv6Char(c) => format!(
            "IPv6 host in domain {d} has {}; only hex digits and \":\" are allowed \
             (no zone, no embedded IPv4)",
            quote_char(c)
        ),
        DomainProblem::AfterBracket(after) => format!(
            "domain {d} has {} after \"]\"; only \":port\" may follow",
            quote(after)
        ),
        DomainProblem::PortEmpty => format!("domain {d} has \":\" but no port after it"),
        DomainProblem::PortNotDigits(port) => {
            format!("port {} of domain {d} must be decimal digits", quote(port))
        }
        DomainProblem::LabelEmpty => format!("domain {d} has an empty label"),
        DomainProblem::LabelChar(c) => format!(
            "domain {d} has {}; a host name holds only letters, digits, \"-\" and \".\"",
            quote_char(c)
        ),
        DomainProblem::LabelEdge(label) => format!(
            "label {} of domain {d} must start and end with a letter or digit",
            quote(label)
        ),
    };
    if domain.ends_with(':') && rest.starts_with('/') {
        message.push_str(" (a reference takes no URL scheme such as \"https://\")");
    } else if matches!(problem, DomainProblem::PortNotDigits(_)) && domain.matches(':').count() > 1
    {
        message.push_str(" (an IPv6 host needs [brackets])");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_cuts_long_text() {
        let long = "a".repeat(300);
        let q = quote(&long);
        assert!(q.len() < 140, "{q}");
        assert!(q.contains("300 characters"), "{q}");
        let control = "\u{10}".repeat(300);
        assert!(quote(&control).len() < 150, "{}", quote(&control));
        assert_eq!(quote("it's"), "\"it's\"");
        assert_eq!(quote("é\"x"), "\"é\\\"x\"");
    }
}
