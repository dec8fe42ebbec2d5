//! The reference grammar of `distribution/reference` (its `regexp.go`), as
//! hand-written matchers.
//!
//! Every function here is a pure, linear-time scan over ASCII bytes: no
//! backtracking, no recursion, no allocation, and no panics on any input
//! (non-ASCII text simply does not match).
//!
//! ```text
//! reference        := name [ ":" tag ] [ "@" digest ]
//! name             := [ domain "/" ] remote-name
//! domain           := host [ ":" port ]
//! host             := domain-name | "[" ipv6-chars "]"
//! domain-name      := domain-label ( "." domain-label )*
//! domain-label     := [a-zA-Z0-9] | [a-zA-Z0-9] [a-zA-Z0-9-]* [a-zA-Z0-9]
//! ipv6-chars       := [a-fA-F0-9:]+
//! port             := [0-9]+
//! remote-name      := path-component ( "/" path-component )*
//! path-component   := [a-z0-9]+ ( separator [a-z0-9]+ )*
//! separator        := "." | "_" | "__" | "-"+
//! tag              := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//! digest           := algorithm ":" [0-9a-fA-F]{32,}
//! algorithm        := alg-part ( [-_+.] alg-part )*
//! alg-part         := [A-Za-z] [A-Za-z0-9]*
//! identifier       := [a-f0-9]{64}
//! ```
//!
//! Upstream matches a whole reference with one anchored regular expression
//! and then splits the name with a second one. Because a tag can hold
//! neither `/` nor `:`, and nothing but the digest can follow `@`, the split
//! is unique, and [`match_reference`] finds it directly: the digest is what
//! follows the first `@`, and the tag is what follows the last `:` when no
//! `/` comes after that `:`.

/// The longest tag the grammar allows, in characters.
pub const TAG_MAX_LEN: usize = 128;

/// The fewest hex digits the grammar's digest pattern accepts (before the
/// algorithm-specific length check of `go-digest`).
pub const DIGEST_HEX_MIN_LEN: usize = 32;

/// A reference split into its parts by the grammar alone (upstream's
/// `ReferenceRegexp` followed by `anchoredNameRegexp`): nothing is
/// normalised, and the digest is only known to match the digest *pattern*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReferenceMatch<'a> {
    /// The domain (`host[:port]`), or `""` when the name has none.
    pub domain: &'a str,
    /// The remote name (path) without the domain.
    pub path: &'a str,
    /// The tag after `:`, if any.
    pub tag: Option<&'a str>,
    /// The digest after `@`, if any.
    pub digest: Option<&'a str>,
}

/// Why a path component does not match `path-component`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ComponentProblem<'a> {
    /// The component is empty (two `/` in a row, or a `/` at an end).
    Empty,
    /// A character outside `[a-z0-9._-]`.
    Char(char),
    /// The component starts or ends with a separator.
    Edge,
    /// A run of separator characters that is not `.`, `_`, `__` or `-`+.
    Separator(&'a str),
}

/// Why a string does not match `domain` (`host[:port]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DomainProblem<'a> {
    /// `[` without a closing `]`.
    Ipv6Unclosed,
    /// `[]`.
    Ipv6Empty,
    /// A character inside the brackets that is neither hex nor `:`.
    Ipv6Char(char),
    /// Text after `]` that is not `:port`.
    AfterBracket(&'a str),
    /// `:` with nothing after it.
    PortEmpty,
    /// A port that is not all decimal digits.
    PortNotDigits(&'a str),
    /// An empty label (`a..b`, a leading or trailing `.`, or nothing at all).
    LabelEmpty,
    /// A character outside `[a-zA-Z0-9-]` in a label.
    LabelChar(char),
    /// A label that starts or ends with `-`.
    LabelEdge(&'a str),
}

/// Why a string does not match `tag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TagProblem {
    /// Nothing after the `:`.
    Empty,
    /// More than [`TAG_MAX_LEN`] characters (the count is given).
    TooLong(usize),
    /// The first character is not `[A-Za-z0-9_]`.
    First(char),
    /// A character outside `[A-Za-z0-9_.-]`.
    Char(char),
}

/// Why a string does not match the grammar's digest pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DigestPatternProblem<'a> {
    /// No `:` between algorithm and hex.
    NoColon,
    /// The algorithm part is malformed (given).
    Algorithm(&'a str),
    /// A character in the hex part that is not a hex digit.
    HexChar(char),
    /// Fewer than [`DIGEST_HEX_MIN_LEN`] hex digits (the count is given).
    HexShort(usize),
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[A-Za-z0-9_]`: Go's `\w`.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(crate) fn check_path_component(s: &str) -> Result<(), ComponentProblem<'_>> {
    let bytes = s.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return Err(ComponentProblem::Empty);
    };
    if let Some(c) = s
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ComponentProblem::Char(c));
    }
    if !is_lower_alnum(first) || !is_lower_alnum(last) {
        return Err(ComponentProblem::Edge);
    }
    // Every byte is ASCII here, so any byte index is a char boundary.
    let mut i = 0;
    while i < bytes.len() {
        if is_lower_alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !is_lower_alnum(bytes[i]) {
            i += 1;
        }
        let sep = s.get(start..i).unwrap_or_default();
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|b| b == b'-');
        if !ok {
            return Err(ComponentProblem::Separator(sep));
        }
    }
    Ok(())
}

/// Whether `s` is one `path-component`: lowercase letters and digits, joined
/// by `.`, `_`, `__` or one or more `-`.
pub fn is_path_component(s: &str) -> bool {
    check_path_component(s).is_ok()
}

/// Whether `s` is a `remote-name`: one or more path components joined by `/`.
pub fn is_remote_name(s: &str) -> bool {
    s.split('/').all(is_path_component)
}

fn check_label(label: &str) -> Result<(), DomainProblem<'_>> {
    let bytes = label.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return Err(DomainProblem::LabelEmpty);
    };
    if let Some(c) = label
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || c == '-'))
    {
        return Err(DomainProblem::LabelChar(c));
    }
    if first == b'-' || last == b'-' {
        return Err(DomainProblem::LabelEdge(label));
    }
    Ok(())
}

fn check_port(port: &str) -> Result<(), DomainProblem<'_>> {
    if port.is_empty() {
        Err(DomainProblem::PortEmpty)
    } else if port.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(DomainProblem::PortNotDigits(port))
    }
}

pub(crate) fn check_domain(s: &str) -> Result<(), DomainProblem<'_>> {
    if let Some(after_open) = s.strip_prefix('[') {
        // The IPv6 characters cannot include `]`, so the first `]` closes.
        let Some((inner, rest)) = after_open.split_once(']') else {
            return Err(DomainProblem::Ipv6Unclosed);
        };
        if inner.is_empty() {
            return Err(DomainProblem::Ipv6Empty);
        }
        if let Some(c) = inner
            .chars()
            .find(|&c| !(c.is_ascii_hexdigit() || c == ':'))
        {
            return Err(DomainProblem::Ipv6Char(c));
        }
        if rest.is_empty() {
            return Ok(());
        }
        return match rest.strip_prefix(':') {
            Some(port) => check_port(port),
            None => Err(DomainProblem::AfterBracket(rest)),
        };
    }
    // A domain name holds no `:`, so the first `:` starts the port.
    let (host, port) = match s.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (s, None),
    };
    for label in host.split('.') {
        check_label(label)?;
    }
    match port {
        Some(port) => check_port(port),
        None => Ok(()),
    }
}

/// Whether `s` is a `domain`: a host name of letters (either case), digits
/// and inner `-`, or a bracketed IPv6 address of hex digits and `:`, then an
/// optional `:port` of decimal digits. No address or port range check is
/// made (upstream makes none either): `[fd00123123123]:75050` matches.
pub fn is_domain(s: &str) -> bool {
    check_domain(s).is_ok()
}

pub(crate) fn check_tag(s: &str) -> Result<(), TagProblem> {
    let Some(&first) = s.as_bytes().first() else {
        return Err(TagProblem::Empty);
    };
    if let Some(c) = s
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(TagProblem::Char(c));
    }
    if !is_word(first) {
        return Err(TagProblem::First(char::from(first)));
    }
    if s.len() > TAG_MAX_LEN {
        return Err(TagProblem::TooLong(s.len()));
    }
    Ok(())
}

/// Whether `s` is a `tag`: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
pub fn is_tag(s: &str) -> bool {
    check_tag(s).is_ok()
}

fn is_algorithm(s: &str) -> bool {
    // alg-part ( [-_+.] alg-part )*, alg-part = [A-Za-z][A-Za-z0-9]*
    let mut expect_letter = true;
    for b in s.bytes() {
        if expect_letter {
            if !b.is_ascii_alphabetic() {
                return false;
            }
            expect_letter = false;
        } else if matches!(b, b'-' | b'_' | b'+' | b'.') {
            expect_letter = true;
        } else if !b.is_ascii_alphanumeric() {
            return false;
        }
    }
    !expect_letter
}

pub(crate) fn check_digest_pattern(s: &str) -> Result<(), DigestPatternProblem<'_>> {
    // The algorithm holds no `:`, so the first `:` ends it.
    let Some((algorithm, hex)) = s.split_once(':') else {
        return Err(DigestPatternProblem::NoColon);
    };
    if !is_algorithm(algorithm) {
        return Err(DigestPatternProblem::Algorithm(algorithm));
    }
    if let Some(c) = hex.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(DigestPatternProblem::HexChar(c));
    }
    if hex.len() < DIGEST_HEX_MIN_LEN {
        return Err(DigestPatternProblem::HexShort(hex.len()));
    }
    Ok(())
}

/// Whether `s` matches the grammar's digest pattern: `algorithm:hex` with at
/// least 32 hex digits of either case. This is only the shape: whether the
/// algorithm is registered and the hex is right is checked by
/// [`crate::Reference::parse`] as `go-digest` does.
pub fn is_digest_pattern(s: &str) -> bool {
    check_digest_pattern(s).is_ok()
}

/// Whether `s` is exactly 64 lowercase hex characters: what upstream calls
/// an identifier (an image ID), which `ParseNormalizedNamed` refuses.
pub fn is_identifier(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Splits `left` (a reference without its `@digest`) into name and tag: the
/// tag is what follows the last `:`, unless a `/` comes after that `:`.
pub(crate) fn split_tag(left: &str) -> (&str, Option<&str>) {
    match left.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (left, None),
    }
}

/// Splits a name into domain and path as upstream's `anchoredNameRegexp`
/// does: the first component is the domain when it is a valid
/// [`is_domain`] and the rest is a valid remote name; otherwise the whole
/// name must be a remote name and the domain is `""`.
///
/// So `foo_bar.com/app` gives `("", "foo_bar.com/app")`: `_` is not allowed
/// in a host name, but `foo_bar.com` is a valid path component.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    if let Some((first, rest)) = name.split_once('/')
        && is_domain(first)
        && is_remote_name(rest)
    {
        return Some((first, rest));
    }
    if is_remote_name(name) {
        Some(("", name))
    } else {
        None
    }
}

/// Matches `s` against the whole reference grammar (upstream's
/// `ReferenceRegexp`) and splits the name (`anchoredNameRegexp`).
/// Returns `None` when `s` does not match. No length limit, no digest
/// algorithm check, no normalisation.
pub fn match_reference(s: &str) -> Option<ReferenceMatch<'_>> {
    let (left, digest) = match s.split_once('@') {
        Some((left, digest)) => (left, Some(digest)),
        None => (s, None),
    };
    if let Some(digest) = digest {
        check_digest_pattern(digest).ok()?;
    }
    let (name, tag) = split_tag(left);
    if let Some(tag) = tag {
        check_tag(tag).ok()?;
    }
    let (domain, path) = split_name(name)?;
    Some(ReferenceMatch {
        domain,
        path,
        tag,
        digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators() {
        for ok in ["a", "a.b", "a_b", "a__b", "a-b", "a---b", "a.b_c__d-e"] {
            assert!(is_path_component(ok), "{ok}");
        }
        for bad in [
            "", ".a", "a.", "a..b", "a___b", "a_.b", "a-.b", "a.-b", "A", "a b",
        ] {
            assert!(!is_path_component(bad), "{bad}");
        }
    }

    #[test]
    fn algorithms() {
        for ok in ["sha256", "a", "a+b", "sha256+b64u", "A.b-c_d"] {
            assert!(is_algorithm(ok), "{ok}");
        }
        for bad in ["", "1a", "a+", "+a", "a++b", "a+1", "a:b"] {
            assert!(!is_algorithm(bad), "{bad}");
        }
    }

    #[test]
    fn tag_split() {
        assert_eq!(split_tag("a:5000/b"), ("a:5000/b", None));
        assert_eq!(split_tag("a:5000/b:t"), ("a:5000/b", Some("t")));
        assert_eq!(split_tag("localhost:8080"), ("localhost", Some("8080")));
        assert_eq!(split_tag("a:"), ("a", Some("")));
    }

    #[test]
    fn non_ascii_never_matches() {
        for s in [
            "é",
            "a/é",
            "é.com/a",
            "a:é",
            "a@sha256:é",
            "[é]/a",
            "\u{212A}/a",
        ] {
            assert!(match_reference(s).is_none(), "{s}");
        }
    }
}
