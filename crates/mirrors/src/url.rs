//! URLs and hosts as the runtimes' Go code reads them: Go's lenient `url.Parse` split
//! (scheme, host, path), Go's `path.Clean`, and the host a registry domain is reached at.

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
}
