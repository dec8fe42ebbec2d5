//! URLs and hosts as the runtimes' and the kubelet's Go code reads them: the one copy of
//! Go's `net/url.Parse` in pullcheck ([`parse`]: scheme, host, path), Go's
//! `net.SplitHostPort` as the kubelet keyring uses it ([`split_host_port`]), the user info
//! of a URL-like key hidden for display ([`redact_userinfo`]), Go's `path.Clean`, and the
//! host a registry domain is reached at. The mirror parsers here and
//! `pullcheck-credentials`' keyring, pull secrets and credential provider configuration
//! all split URLs with it.
//!
//! Go's parser is lenient in ways a WHATWG URL parser is not: the host keeps its case,
//! `*` is allowed in it, and there is no IDNA. It is strict in others: a control
//! character anywhere before `#`, a malformed `%` escape, a non-numeric port or a
//! character such as a space, `{`, `|` or `^` in the host are errors.
//!
//! **Why the keyring does not use `pullcheck_reference::RegistryHost`**, the one home
//! of host and port splitting everywhere else (reference domains, mirror and endpoint
//! hosts, the loopback rule): a keyring key is whatever a pull secret or `config.json`
//! holds (`*.docker.io`, `Quay.IO:443`, `user:pw@host`, a path), not a domain the
//! reference grammar has checked, and the kubelet's `splitURL` splits it with
//! `net.SplitHostPort`, taking the whole host as the name when that fails. It fails on
//! a bracketed host without a port, so the key `[::1]` has the name `[::1]` (brackets
//! kept) and no port, where `RegistryHost` has `::1`. Which keys match an image depends
//! on these quirks, so [`parse`] and [`split_host_port`] stay Go's.

use std::borrow::Cow;

/// The host serving Docker Hub's API; `docker.io` references are pulled from it by
/// every runtime here (containers/image `dockerRegistry`, containerd's default host,
/// moby's `DefaultV2Registry`).
pub const DOCKER_HUB_API_HOST: &str = "registry-1.docker.io";

/// The host a registry domain is reached at: `docker.io` → `registry-1.docker.io`.
pub(crate) fn api_host(domain: &str) -> &str {
    if domain == "docker.io" {
        DOCKER_HUB_API_HOST
    } else {
        domain
    }
}

/// Go's `path.Clean` for slash paths: `.` and `..` resolved, runs of `/` collapsed, no
/// trailing `/`, and `.` for an empty result.
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// [`parse`] for the mirror parsers: the error names the URL as written (quoted), as
/// their messages did; callers redact it.
pub(crate) fn parse_url(s: &str) -> Result<GoUrl, String> {
    parse(s).map_err(|why| format!("{s:?}: {why}"))
}

/// A key as it may be shown: the user info of a URL-like key (`https://user:PW@host`)
/// becomes `user:***@` (or `***@` without a `:`), so that a password or token written
/// into a key never reaches a source record, warning or error. Matching keeps using
/// the key as written.
///
/// The user info is what Go's `url.Parse` takes for it (up to the last `@` before the
/// first `/`, `?` or `#` after `scheme://`), the same for a key without a scheme (the
/// keyring adds `https://`, Docker's `ConvertToHostname` cuts there too). A key Go
/// cannot parse (`https://u:p/w@host`, a `/` in the password) has everything before
/// its last `@` hidden.
pub fn redact_userinfo(key: &str) -> Cow<'_, str> {
    if !key.contains('@') {
        return Cow::Borrowed(key);
    }
    let start = match key.find("://") {
        Some(i) if matches!(split_scheme(key), Ok(Some((scheme, _))) if scheme.len() == i) => i + 3,
        _ => usize::from(key.starts_with("//")) * 2,
    };
    let rest = &key[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let (at, shown) = match authority.rfind('@') {
        Some(at) => {
            let shown = match authority[..at].split_once(':') {
                Some((user, _)) if !user.is_empty() => format!("{user}:***"),
                _ => "***".to_string(),
            };
            (at, shown)
        }
        None => {
            let parses = if start >= 3 {
                parse(key).is_ok()
            } else {
                parse(&format!("https://{}", &key[start..])).is_ok()
            };
            match rest.rfind('@') {
                Some(at) if !parses => (at, "***".to_string()),
                _ => return Cow::Borrowed(key),
            }
        }
    };
    Cow::Owned(format!("{}{shown}@{}", &key[..start], &rest[at + 1..]))
}

/// The parts of a URL, as Go's `url.Parse` gives them, that pullcheck uses: the
/// query, fragment, user info and an opaque part are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoUrl {
    /// `Scheme`, lower-cased; empty for a relative reference.
    pub scheme: String,
    /// `Host`: `host[:port]`, percent-decoded, case kept, user info removed; empty
    /// without `//`.
    pub host: String,
    /// `Path`: percent-decoded; empty for an opaque URL (`https:foo`).
    pub path: String,
}

/// Parses a URL as Go's `url.Parse` does (scheme, host and path; a string without a
/// scheme is a relative reference, all path).
///
/// # Errors
/// A short reason for Go's error, without the URL: an invalid control character, a
/// missing protocol scheme (a leading `:`), a colon in the first segment of a relative
/// path, an invalid escape, userinfo, host character or port.
pub fn parse(raw: &str) -> Result<GoUrl, &'static str> {
    // The fragment is cut first; control characters are only checked before it.
    let (rest, fragment) = match raw.find('#') {
        Some(i) => (&raw[..i], Some(&raw[i + 1..])),
        None => (raw, None),
    };
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("invalid control character in URL");
    }
    let (scheme, rest) = match split_scheme(rest)? {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        // No scheme: a relative reference (the keyring always adds one).
        None => (String::new(), rest),
    };
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(before, _)| before)
    };
    let (host, path) = match rest.strip_prefix("//") {
        Some(after) => match after.find('/') {
            Some(i) => (parse_authority(&after[..i])?, &after[i..]),
            None => (parse_authority(after)?, ""),
        },
        // A rooted path, or a relative one without a scheme: no host.
        None if rest.starts_with('/') || scheme.is_empty() => {
            if scheme.is_empty() && rest.split('/').next().is_some_and(|s| s.contains(':')) {
                return Err("first path segment in URL cannot contain colon");
            }
            (String::new(), rest)
        }
        // Opaque (`https:foo`): no host, no path.
        None => (String::new(), ""),
    };
    let path = unescape(path, Mode::Path)?;
    if let Some(fragment) = fragment {
        unescape(fragment, Mode::Fragment)?;
    }
    Ok(GoUrl { scheme, host, path })
}

/// `scheme:` at the start of `raw`, as Go's `getScheme`: letters, then letters, digits,
/// `+`, `-` or `.`, then `:`. `Ok(None)` when `raw` does not start with a scheme.
fn split_scheme(raw: &str) -> Result<Option<(&str, &str)>, &'static str> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme"),
            ':' => return Ok(Some((&raw[..i], &raw[i + 1..]))),
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// `[userinfo@]host[:port]` → the decoded host, as Go's `parseAuthority`.
fn parse_authority(authority: &str) -> Result<String, &'static str> {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host)?;
    if let Some(userinfo) = userinfo {
        let valid = userinfo.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '-' | '.'
                        | '_'
                        | ':'
                        | '~'
                        | '!'
                        | '$'
                        | '&'
                        | '\''
                        | '('
                        | ')'
                        | '*'
                        | '+'
                        | ','
                        | ';'
                        | '='
                        | '%'
                        | '@'
                )
        });
        if !valid {
            return Err("invalid userinfo");
        }
        unescape(userinfo, Mode::UserInfo)?;
    }
    Ok(host)
}

/// The host with an optional port, validated and decoded as Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, &'static str> {
    if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host");
        };
        if !valid_optional_port(&host[close + 1..]) {
            return Err("invalid port after host");
        }
        if let Some(zone) = host[..close].find("%25") {
            let mut out = unescape(&host[..zone], Mode::Host)?;
            out.push_str(&unescape(&host[zone..close], Mode::Zone)?);
            out.push_str(&unescape(&host[close..], Mode::Host)?);
            return Ok(out);
        }
    } else if let Some(colon) = host.rfind(':')
        && !valid_optional_port(&host[colon..])
    {
        return Err("invalid port after host");
    }
    unescape(host, Mode::Host)
}

/// `""` or `:` followed by digits only.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Host,
    Zone,
    Path,
    UserInfo,
    Fragment,
}

/// Characters Go accepts unescaped in a host (and zone): alphanumerics, the unreserved
/// marks and the sub-delimiters, plus `:`, `[`, `]`, `<`, `>` and `"`.
fn host_char_ok(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Go's `unescape`: checks every `%XY`, applies the host rules, and decodes. Decoded
/// bytes that are not UTF-8 are replaced (Go keeps them as raw bytes).
fn unescape(s: &str, mode: Mode) -> Result<String, &'static str> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            ) else {
                return Err("invalid URL escape");
            };
            let is_pct25 = &bytes[i..i + 3] == b"%25";
            let value = hi << 4 | lo;
            match mode {
                // In a host, escapes are only for non-ASCII bytes (and `%25`).
                Mode::Host if hi < 8 && !is_pct25 => return Err("invalid URL escape in host"),
                Mode::Zone if !is_pct25 && value != b' ' && !host_char_ok(value) => {
                    return Err("invalid URL escape in zone");
                }
                _ => {}
            }
            out.push(value);
            i += 3;
            continue;
        }
        if matches!(mode, Mode::Host | Mode::Zone) && b < 0x80 && !host_char_ok(b) {
            return Err("invalid character in host name");
        }
        out.push(b);
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `net.SplitHostPort` as the kubelet uses it: `(host, port)`, brackets of an IPv6
/// literal removed; on any error (`[::1]` without a port, two colons without brackets)
/// the whole input is the name and the port is empty.
pub fn split_host_port(hostport: &str) -> (&str, &str) {
    try_split_host_port(hostport).unwrap_or((hostport, ""))
}

fn try_split_host_port(hostport: &str) -> Option<(&str, &str)> {
    let last = hostport.rfind(':')?;
    let (host, inner_from, inner_to) = if hostport.starts_with('[') {
        let end = hostport.find(']')?;
        if end + 1 != last {
            // Nothing after `]`, or something other than the last `:`.
            return None;
        }
        (&hostport[1..end], 1, end + 1)
    } else {
        let host = &hostport[..last];
        if host.contains(':') {
            return None;
        }
        (host, 0, 0)
    };
    if hostport[inner_from..].contains('[') || hostport[inner_to..].contains(']') {
        return None;
    }
    Some((host, &hostport[last + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> (String, String) {
        let u = parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
        (u.host, u.path)
    }

    #[test]
    fn hosts_and_paths_as_go_parses_them() {
        let cases = [
            ("https://quay.io", "quay.io", ""),
            ("https://quay.io/", "quay.io", "/"),
            ("https://Quay.IO:443/v2/a%2Fb", "Quay.IO:443", "/v2/a/b"),
            ("https://*.docker.io/path:1111", "*.docker.io", "/path:1111"),
            ("https://user:pw@host.io/x?q=1#frag", "host.io", "/x"),
            ("https://[::1]:5000/app", "[::1]:5000", "/app"),
            ("https://host?", "host", ""),
            ("http://h/a?b?c", "h", "/a"),
            ("https://host:/p", "host:", "/p"),
            ("https://", "", ""),
            ("https://https://x", "https:", "//x"),
        ];
        for (raw, host, path) in cases {
            assert_eq!(ok(raw), (host.to_string(), path.to_string()), "{raw}");
        }
    }

    #[test]
    fn what_go_rejects() {
        for raw in [
            "https://host:port/",
            "https://ho st/",
            "https://ho|st/",
            "https://host/%zz",
            "https://host/%4",
            "https://h%41/",
            "https://[::1/",
            "https://host/\u{7f}",
            "https://host/\n",
            "https://us er@host/",
            "https://host/#%",
        ] {
            assert!(parse(raw).is_err(), "{raw:?} should fail");
        }
        // A control character after `#` is not checked.
        assert!(parse("https://host/#\n").is_ok());
    }

    #[test]
    fn user_info_is_redacted_for_display() {
        let cases = [
            ("https://user:PW@host", "https://user:***@host"),
            ("https://user:PW@host/v1/", "https://user:***@host/v1/"),
            (
                "http://user:PW@host:5000/org",
                "http://user:***@host:5000/org",
            ),
            ("https://TOKEN@host", "https://***@host"),
            ("https://:PW@host", "https://***@host"),
            ("https://user:P@W@host", "https://user:***@host"),
            ("user:PW@host/org", "user:***@host/org"),
            ("//user:PW@host", "//user:***@host"),
            ("https://user:P/W@host", "https://***@host"),
            ("https://user:P?W@host", "https://***@host"),
            ("https://user:P#W@host", "https://***@host"),
            ("HTTPS://user:PW@host", "HTTPS://user:***@host"),
            // Nothing to hide.
            ("https://index.docker.io/v1/", "https://index.docker.io/v1/"),
            ("quay.io/org", "quay.io/org"),
            ("https://host/path@x", "https://host/path@x"),
            ("host/a:b@c", "host/a:b@c"),
            ("", ""),
        ];
        for (key, shown) in cases {
            assert_eq!(redact_userinfo(key), shown, "{key}");
            assert!(
                !redact_userinfo(key).contains('W') || !key.contains('W'),
                "{key}"
            );
        }
    }

    #[test]
    fn split_host_port_like_go() {
        let cases = [
            ("host", ("host", "")),
            ("host:80", ("host", "80")),
            ("host:", ("host", "")),
            ("[::1]:5000", ("::1", "5000")),
            ("[::1]", ("[::1]", "")),
            ("a:b:c", ("a:b:c", "")),
            ("[a]b:1", ("[a]b:1", "")),
            ("a]:1", ("a]:1", "")),
        ];
        for (input, want) in cases {
            assert_eq!(split_host_port(input), want, "{input}");
        }
    }

    #[test]
    fn path_clean_matches_go() {
        // Values from Go's path.Clean documentation and tests.
        for (i, o) in [
            ("", "."),
            ("/", "/"),
            ("//v2", "/v2"),
            ("/us", "/us"),
            ("/a/b/../c/./d/", "/a/c/d"),
            ("a/../..", ".."),
            ("/../a", "/a"),
            ("abc//def", "abc/def"),
        ] {
            assert_eq!(path_clean(i), o, "{i}");
        }
    }

    #[test]
    fn url_split_follows_go() {
        let u = parse_url("https://mirror-bak.registry/us").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str(), u.path.as_str()),
            ("https", "mirror-bak.registry", "/us")
        );
        let u = parse_url("http://user:pw@[::1]:5000/p?x=1#f").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("[::1]:5000", "/p"));
        let u = parse_url("httpbin.org").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str(), u.path.as_str()),
            ("", "", "httpbin.org")
        );
        assert!(parse_url("https://h:abc").is_err());
        assert!(parse_url("https://h/%zz").is_err());
        assert!(parse_url(":nope").is_err());
        assert!(parse_url("https://h/\u{1}").is_err());
        // Opaque: a scheme without `//` or `/` has neither host nor path.
        let u = parse("https:foo").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str()), ("", ""));
        // Go refuses a relative path whose first segment holds a colon.
        assert_eq!(
            parse("1a:b/c"),
            Err("first path segment in URL cannot contain colon")
        );
    }
}
