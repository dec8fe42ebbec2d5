//! A second, independent implementation of upstream's `Parse` and
//! `ParseNormalizedNamed`, built on the `regex` crate from the grammar in
//! `reference.go`'s package comment and `regexp.go`'s definitions. It is a
//! test oracle only: slow, and written to be obviously like upstream rather
//! than fast. Shared by the property tests and the fuzz target.

#![allow(dead_code)]

use std::sync::OnceLock;

use regex::Regex;

/// Upstream's outcome: the parts, or the kind of error (by our kind names).
pub type Outcome = Result<(String, String, Option<String>, Option<String>), &'static str>;

struct Patterns {
    reference: Regex,
    anchored_name: Regex,
    identifier: Regex,
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        let alnum = "[a-z0-9]+";
        let sep = "(?:[._]|__|[-]+)";
        let component = format!("{alnum}(?:{sep}{alnum})*");
        let remote = format!("{component}(?:/{component})*");
        let label = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
        let host = format!(r"(?:{label}(?:\.{label})*|\[(?:[a-fA-F0-9:]+)\])");
        let domain = format!("{host}(?::[0-9]+)?");
        let name = format!("(?:{domain}/)?{remote}");
        let tag = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}";
        let digest = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}";
        let build = |p: String| {
            regex::RegexBuilder::new(&p)
                .size_limit(1 << 26)
                .build()
                .expect("oracle pattern")
        };
        Patterns {
            reference: build(format!("^({name})(?::({tag}))?(?:@({digest}))?$")),
            anchored_name: build(format!("^(?:({domain})/)?({remote})$")),
            identifier: build("^[a-f0-9]{64}$".to_owned()),
        }
    })
}

/// Go's `strings.ToLower` (simple case mapping, one character each).
fn go_to_lower(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\u{130}' {
                'i'
            } else {
                c.to_lowercase().next().unwrap_or(c)
            }
        })
        .collect()
}

fn digest_ok(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else {
        return false;
    };
    let want = match alg {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == want
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Upstream `Parse`.
pub fn parse(s: &str) -> Outcome {
    if s.is_empty() {
        return Err("empty");
    }
    let p = patterns();
    let Some(caps) = p.reference.captures(s) else {
        let lower = go_to_lower(s);
        if lower != s && p.reference.is_match(&lower) {
            return Err("uppercase");
        }
        return Err("invalid_format");
    };
    let name = caps.get(1).map_or("", |m| m.as_str());
    let (domain, path) = match p.anchored_name.captures(name) {
        Some(n) => (
            n.get(1).map_or("", |m| m.as_str()),
            n.get(2).map_or("", |m| m.as_str()),
        ),
        None => ("", name),
    };
    if path.len() > 255 {
        return Err("name_too_long");
    }
    let digest = caps.get(3).map(|m| m.as_str().to_owned());
    if digest.as_deref().is_some_and(|d| !digest_ok(d)) {
        return Err("digest_invalid");
    }
    Ok((
        domain.to_owned(),
        path.to_owned(),
        caps.get(2).map(|m| m.as_str().to_owned()),
        digest,
    ))
}

/// Upstream `ParseNormalizedNamed`, with `empty` for an empty input.
pub fn parse_normalized(s: &str) -> Outcome {
    if s.is_empty() {
        return Err("empty");
    }
    if patterns().identifier.is_match(s) {
        return Err("hex64");
    }
    let (domain, remainder): (String, String) = match s.find('/') {
        None => ("docker.io".into(), format!("library/{s}")),
        Some(i) => {
            let (first, rest) = (&s[..i], &s[i + 1..]);
            let (d, r) = if first == "localhost"
                || first.contains('.')
                || first.contains(':')
                || go_to_lower(first) != first
            {
                (first.to_owned(), rest.to_owned())
            } else {
                ("docker.io".to_owned(), s.to_owned())
            };
            // `index.docker.io` has a dot, so it was taken as a domain above.
            let d = if d == "index.docker.io" {
                "docker.io".to_owned()
            } else {
                d
            };
            if d == "docker.io" && !r.contains('/') {
                (d, format!("library/{r}"))
            } else {
                (d, r)
            }
        }
    };
    let remote = match remainder.find(':') {
        Some(i) => &remainder[..i],
        None => remainder.as_str(),
    };
    if go_to_lower(remote) != remote {
        return Err("uppercase");
    }
    parse(&format!("{domain}/{remainder}"))
}
