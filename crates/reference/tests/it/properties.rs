//! Property tests: round trips through `canonical()` and `familiar()`,
//! agreement with an independent regex-based implementation of upstream
//! (`oracle`), and no panics on any input.

use crate::oracle;

use proptest::prelude::*;
use pullcheck_reference::{Reference, grammar};

const HEX: &str = "0123456789abcdef";

fn hex(len: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(HEX.as_bytes().to_vec()), len)
        .prop_map(|bytes| bytes.into_iter().map(char::from).collect())
}

fn component() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,6}((\\.|_|__|-{1,3})[a-z0-9]{1,6}){0,2}"
}

fn domain() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("docker.io".to_owned())),
        Just(Some("index.docker.io".to_owned())),
        Just(Some("localhost".to_owned())),
        Just(Some("localhost:5000".to_owned())),
        Just(Some("[::1]:5000".to_owned())),
        Just(Some("[2001:db8::1]".to_owned())),
        Just(Some("127.0.0.1:8080".to_owned())),
        Just(Some("Registry.Example.COM".to_owned())),
        Just(Some("Upper".to_owned())),
        Just(Some("foo_bar.com".to_owned())),
        "[a-z0-9]{1,5}(-[a-z0-9]{1,4})?\\.[a-z]{2,4}(:[0-9]{1,5})?".prop_map(Some),
    ]
}

fn digest() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => Just(None),
        1 => hex(64).prop_map(|h| Some(format!("sha256:{h}"))),
        1 => hex(96).prop_map(|h| Some(format!("sha384:{h}"))),
        1 => hex(128).prop_map(|h| Some(format!("sha512:{h}"))),
    ]
}

/// Strings built to be valid references most of the time.
fn reference_like() -> impl Strategy<Value = String> {
    (
        domain(),
        proptest::collection::vec(component(), 1..4),
        proptest::option::of("[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}"),
        digest(),
    )
        .prop_map(|(domain, path, tag, digest)| {
            let mut s = domain.map(|d| format!("{d}/")).unwrap_or_default();
            s.push_str(&path.join("/"));
            if let Some(tag) = tag {
                s.push(':');
                s.push_str(&tag);
            }
            if let Some(digest) = digest {
                s.push('@');
                s.push_str(&digest);
            }
            s
        })
}

/// Strings made of the pieces that matter to the grammar, valid or not.
fn fragments() -> impl Strategy<Value = String> {
    let pieces = vec![
        "docker.io",
        "index.docker.io",
        "localhost",
        "library",
        "a",
        "b0",
        "A",
        "Foo",
        "_",
        "__",
        "___",
        ".",
        "..",
        "-",
        "--",
        ":",
        "::",
        "/",
        "//",
        "@",
        "sha256:",
        "sha384:",
        "sha512:",
        "SHA256:",
        "md5:",
        "[",
        "]",
        "[::1]",
        "fe80::1%eth0",
        "5000",
        "http",
        "latest",
        "\u{212A}",
        "\u{130}",
        "é",
        "É",
        "ß",
        " ",
        "\n",
        "$",
        "~",
        "+",
        "0123456789abcdef0123456789abcdef",
        "0123456789ABCDEF0123456789ABCDEF",
    ];
    proptest::collection::vec(proptest::sample::select(pieces), 0..12).prop_map(|v| v.concat())
}

fn assert_same_as_oracle(input: &str) -> Result<(), TestCaseError> {
    let ours = Reference::parse_normalized(input).map(|r| {
        (
            r.domain().to_owned(),
            r.path().to_owned(),
            r.tag().map(str::to_owned),
            r.digest().map(str::to_owned),
        )
    });
    let ours = ours.map_err(|e| e.kind().as_str());
    prop_assert_eq!(
        ours,
        oracle::parse_normalized(input),
        "normalized {:?}",
        input
    );
    let ours = Reference::parse(input).map(|r| {
        (
            r.domain().to_owned(),
            r.path().to_owned(),
            r.tag().map(str::to_owned),
            r.digest().map(str::to_owned),
        )
    });
    let ours = ours.map_err(|e| e.kind().as_str());
    prop_assert_eq!(ours, oracle::parse(input), "parse {:?}", input);
    Ok(())
}

/// Whether upstream's familiar form of `r` is known not to parse back to
/// `r`: a Docker Hub path whose first component reads as a domain, or an
/// official image named by a 64-hex string.
fn familiar_is_ambiguous(r: &Reference) -> bool {
    if !r.is_docker_hub() {
        return false;
    }
    let name = r.familiar();
    let name = name.split(['@', ':']).next().unwrap_or_default();
    let first = name.split('/').next().unwrap_or_default();
    grammar::is_identifier(name)
        || (name.contains('/') && (first == "localhost" || first.contains('.')))
}

fn check_round_trips(r: &Reference) -> Result<(), TestCaseError> {
    let canonical = r.canonical();
    let expected = r.tag_name_only();
    prop_assert_eq!(
        Reference::parse_normalized(&canonical).ok(),
        Some(expected.clone()),
        "{}",
        canonical
    );
    prop_assert_eq!(
        Reference::parse(&canonical).ok(),
        Some(expected),
        "{}",
        canonical
    );
    prop_assert_eq!(Reference::parse(&r.upstream_string()).ok(), Some(r.clone()));
    if !familiar_is_ambiguous(r) {
        let familiar = r.familiar();
        prop_assert_eq!(
            Reference::parse_normalized(&familiar).ok(),
            Some(r.clone()),
            "{}",
            familiar
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn canonical_and_familiar_round_trip(input in reference_like()) {
        if let Ok(r) = Reference::parse_normalized(&input) {
            check_round_trips(&r)?;
        }
    }

    #[test]
    fn reference_like_agrees_with_oracle(input in reference_like()) {
        assert_same_as_oracle(&input)?;
    }

    #[test]
    fn fragments_agree_with_oracle(input in fragments()) {
        assert_same_as_oracle(&input)?;
        if let Ok(r) = Reference::parse_normalized(&input) {
            check_round_trips(&r)?;
        }
    }

    #[test]
    fn any_string_agrees_with_oracle_and_never_panics(input in any::<String>()) {
        assert_same_as_oracle(&input)?;
        if let Err(e) = Reference::parse_normalized(&input) {
            prop_assert!(!e.message().is_empty());
        }
    }

    #[test]
    fn ascii_soup_agrees_with_oracle(input in "[a-zA-Z0-9._:/@\\[\\]-]{0,48}") {
        assert_same_as_oracle(&input)?;
    }
}

#[test]
fn most_reference_like_inputs_parse() {
    // Guard against a generator that only ever makes errors.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = reference_like();
    let ok = (0..500)
        .filter(|_| {
            let s = strategy.new_tree(&mut runner).unwrap().current();
            Reference::parse_normalized(&s).is_ok()
        })
        .count();
    assert!(ok > 250, "only {ok} of 500 parsed");
}

#[test]
fn huge_inputs_are_handled() {
    for input in [
        "a".repeat(1 << 20),
        format!("{}/a", "a.".repeat(1 << 18)),
        format!("a:{}", "t".repeat(1 << 20)),
        format!("a@sha256:{}", "f".repeat(1 << 20)),
        "/".repeat(1 << 20),
        "é".repeat(1 << 18),
        "[".repeat(1 << 18),
    ] {
        let err = Reference::parse_normalized(&input).unwrap_err();
        assert!(err.message().len() < 1000, "{}", err.message().len());
    }
}
