//! Fuzzes `Reference::parse_normalized` and `Reference::parse`.
//!
//! Checks, for every input that is valid UTF-8:
//! - no panic, whatever the input;
//! - the outcome (parts, or error kind) equals the regex-based oracle's,
//!   an independent implementation of upstream's `Parse` and
//!   `ParseNormalizedNamed`;
//! - a successful parse's `canonical()` parses back (normalised and not) to
//!   the same reference with the implicit `latest` tag, and its
//!   `upstream_string()` parses back to the same reference;
//! - `familiar()` parses back to the same reference, except in the known
//!   upstream cases where the familiar form means something else;
//! - every error has a non-empty message of bounded length.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pullcheck_reference::{Reference, grammar};

#[path = "../../tests/oracle/mod.rs"]
mod oracle;

fn parts(r: &Result<Reference, pullcheck_reference::ReferenceError>) -> oracle::Outcome {
    match r {
        Ok(r) => Ok((
            r.domain().to_owned(),
            r.path().to_owned(),
            r.tag().map(str::to_owned),
            r.digest().map(str::to_owned),
        )),
        Err(e) => Err(e.kind().as_str()),
    }
}

fn familiar_is_ambiguous(r: &Reference) -> bool {
    if !r.is_docker_hub() {
        return false;
    }
    let familiar = r.familiar();
    let name = familiar.split(['@', ':']).next().unwrap_or_default();
    let first = name.split('/').next().unwrap_or_default();
    grammar::is_identifier(name)
        || (name.contains('/') && (first == "localhost" || first.contains('.')))
}

fn check(input: &str) {
    let normalized = Reference::parse_normalized(input);
    let plain = Reference::parse(input);
    assert_eq!(
        parts(&normalized),
        oracle::parse_normalized(input),
        "normalized {input:?}"
    );
    assert_eq!(parts(&plain), oracle::parse(input), "parse {input:?}");

    for (result, is_normalized) in [(&normalized, true), (&plain, false)] {
        match result {
            Ok(r) => {
                let canonical = r.canonical();
                let expected = r.tag_name_only();
                assert_eq!(
                    Reference::parse(&canonical).as_ref().ok(),
                    Some(&expected),
                    "{canonical:?}"
                );
                assert_eq!(
                    Reference::parse(&r.upstream_string()).as_ref().ok(),
                    Some(r)
                );
                // `parse` keeps names like `a/b` (domain `a`) that the
                // normalised parser reads as Docker Hub paths.
                if is_normalized {
                    assert_eq!(
                        Reference::parse_normalized(&canonical).as_ref().ok(),
                        Some(&expected),
                        "{canonical:?}"
                    );
                }
            }
            Err(e) => {
                assert!(!e.message().is_empty());
                assert!(e.message().len() < 1024, "{}", e.message().len());
            }
        }
    }
    if let Ok(r) = &normalized {
        if !familiar_is_ambiguous(r) {
            let familiar = r.familiar();
            assert_eq!(
                Reference::parse_normalized(&familiar).as_ref().ok(),
                Some(r),
                "{familiar:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(input) = std::str::from_utf8(data) {
        check(input);
    }
});
