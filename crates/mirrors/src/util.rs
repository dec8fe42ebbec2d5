//! Small helpers shared by the parsers: positions, host names, Go's `path.Clean`,
//! Go's lenient URL split, and Go duration syntax.

use std::net::IpAddr;
use std::path::Path;

use crate::MirrorError;

/// The host serving Docker Hub's API; `docker.io` references are pulled from it by
/// every runtime here (containers/image `dockerRegistry`, containerd's default host,
/// moby's `DefaultV2Registry`).
pub const DOCKER_HUB_API_HOST: &str = "registry-1.docker.io";

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut end = offset;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit_once('\n')
        .map_or(before, |(_, l)| l)
        .chars()
        .count()
        + 1;
    (line, col)
}

/// A TOML error as `line L, column C: message`.
pub(crate) fn toml_error(file: &str, text: &str, err: &toml::de::Error) -> MirrorError {
    let message = match err.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            format!("line {line}, column {col}: {}", err.message())
        }
        None => err.message().to_owned(),
    };
    MirrorError::Syntax {
        file: file.to_owned(),
        message,
    }
}

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

/// Reads a UTF-8 file, mapping failures to [`MirrorError::Read`].
pub(crate) fn read_text(path: &Path) -> Result<String, MirrorError> {
    pullcheck_files::read_to_string(path).map_err(|e| MirrorError::read(path, &e))
}

/// The host a registry domain is reached at: `docker.io` → `registry-1.docker.io`.
pub(crate) fn api_host(domain: &str) -> &str {
    if domain == "docker.io" {
        DOCKER_HUB_API_HOST
    } else {
        domain
    }
}

/// Splits `host[:port]`, `[v6]:port` or a bare IPv6 address into host and port, as
/// Go's `net.SplitHostPort` does when it succeeds (and the whole string as the host
/// when it does not).
pub(crate) fn split_host_port(hostport: &str) -> (&str, &str) {
    if let Some(rest) = hostport.strip_prefix('[') {
        if let Some((h, after)) = rest.split_once(']') {
            return (h, after.strip_prefix(':').unwrap_or(""));
        }
        return (hostport, "");
    }
    match hostport.rsplit_once(':') {
        // More than one colon without brackets: a bare IPv6 address, no port.
        Some((h, _)) if h.contains(':') => (hostport, ""),
        Some((h, p)) => (h, p),
        None => (hostport, ""),
    }
}

/// `localhost` or a loopback IP literal, port ignored (containerd `docker.IsLocalhost`).
pub(crate) fn is_localhost(hostport: &str) -> bool {
    let (host, _) = split_host_port(hostport);
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
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

/// The parts of a URL that containerd uses from Go's `url.Parse`: scheme, host (with
/// port, without user info) and path. The query and fragment are dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlParts {
    pub scheme: String,
    pub host: String,
    pub path: String,
}

/// Splits `s` as Go's `url.Parse` would, rejecting what it rejects that matters here:
/// control characters, a leading `:`, bad `%` escapes and a non-numeric port. A string
/// without a scheme is all path (Go does the same).
pub(crate) fn parse_url(s: &str) -> Result<UrlParts, String> {
    if s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f) {
        return Err(format!("{s:?}: invalid control character in URL"));
    }
    let no_frag = s.split_once('#').map_or(s, |(a, _)| a);
    check_escapes(no_frag)?;
    let (scheme, rest) = split_scheme(no_frag)?;
    let rest = rest.split_once('?').map_or(rest, |(a, _)| a);
    let (host, path) = match rest.strip_prefix("//") {
        Some(auth_and_path) => {
            let end = auth_and_path.find('/').unwrap_or(auth_and_path.len());
            let (authority, path) = auth_and_path.split_at(end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            check_port(s, host)?;
            (host.to_owned(), path.to_owned())
        }
        // `scheme:opaque` (no `/` after the colon): no host and no path.
        None if !scheme.is_empty() && !rest.starts_with('/') => (String::new(), String::new()),
        None => (String::new(), rest.to_owned()),
    };
    Ok(UrlParts {
        scheme: scheme.to_ascii_lowercase(),
        host,
        path,
    })
}

fn split_scheme(s: &str) -> Result<(&str, &str), String> {
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err(format!("{s:?}: missing protocol scheme")),
            ':' => return Ok((&s[..i], &s[i + 1..])),
            _ => return Ok(("", s)),
        }
    }
    Ok(("", s))
}

fn check_escapes(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let ok =
                b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
            if !ok {
                return Err(format!("{s:?}: invalid URL escape"));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    Ok(())
}

fn check_port(url: &str, host: &str) -> Result<(), String> {
    let after_bracket = host.rfind(']').map_or(host, |i| &host[i + 1..]);
    if let Some(idx) = after_bracket.rfind(':') {
        let port = &after_bracket[idx + 1..];
        if !port.bytes().all(|c| c.is_ascii_digit()) {
            return Err(format!(
                "{url:?}: invalid port {:?} after host",
                &after_bracket[idx..]
            ));
        }
    }
    Ok(())
}

/// Whether `s` is a Go `time.ParseDuration` string: an optional sign, then one or more
/// decimal numbers each with a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), or
/// `0`.
pub(crate) fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[num_end..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn go_durations() {
        for ok in ["3s", "0", "1h30m", "1.5h", "-2ms", "10µs", "300ns"] {
            assert!(is_go_duration(ok), "{ok}");
        }
        for bad in ["", "3", "s", "3 s", "1..2s", "3d", "."] {
            assert!(!is_go_duration(bad), "{bad}");
        }
    }

    #[test]
    fn host_port_split_and_localhost() {
        assert_eq!(split_host_port("localhost:5000"), ("localhost", "5000"));
        assert_eq!(split_host_port("[::1]:5000"), ("::1", "5000"));
        assert_eq!(split_host_port("::1"), ("::1", ""));
        assert!(is_localhost("127.0.0.254:5000"));
        assert!(is_localhost("[::1]:5000"));
        assert!(is_localhost("::1"));
        assert!(!is_localhost("example.com"));
    }

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

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("a\nbé c", 5), (2, 3));
        assert_eq!(line_col("abc", 99), (1, 4));
    }
}
