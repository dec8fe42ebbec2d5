//! Error kinds and messages: every message names the part of the input at
//! fault, after upstream's wording for the same error.

use pullcheck_reference::{Reference, ReferenceErrorKind as Kind};

const FF64: &str = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

fn check(input: &str, kind: Kind, parts: &[&str]) {
    let err = Reference::parse_normalized(input).expect_err(input);
    assert_eq!(err.kind(), kind, "{input}: {}", err.message());
    for part in parts {
        assert!(
            err.message().contains(part),
            "{input}: {:?} lacks {part:?}",
            err.message()
        );
    }
    assert_eq!(err.to_string(), err.message());
}

#[test]
fn each_kind_names_its_part() {
    check("", Kind::Empty, &["at least one component", "empty"]);
    check(
        &"1a".repeat(32),
        Kind::Hex64,
        &["cannot specify 64-byte hexadecimal strings", "\"1a1a"],
    );
    check(
        "docker/Docker",
        Kind::Uppercase,
        &["repository name must be lowercase", "\"docker/Docker\""],
    );
    check(
        "Uppercase:tag",
        Kind::Uppercase,
        &["repository name must be lowercase", "\"Uppercase\""],
    );
    check("docker.io/Foo/bar:tag", Kind::Uppercase, &["\"Foo/bar\""]);
    check(
        &format!("example.com/{}", "a".repeat(256)),
        Kind::NameTooLong,
        &["not be more than 255 characters", "\"aaaa", "has 256"],
    );
    check(
        &"b".repeat(248),
        Kind::NameTooLong,
        &["\"library/bbb", "has 256"],
    );
    check(
        "repo@sha256:ffffffffffffffffffffffffffffffffff",
        Kind::DigestInvalid,
        &[
            "digest length",
            "\"sha256:ffff",
            "34 hex digits",
            "needs 64",
        ],
    );
    check(
        &format!("repo@md5:{FF64}"),
        Kind::DigestInvalid,
        &["unsupported digest algorithm", "\"md5\""],
    );
    check(
        &format!("repo@sha256:{}", FF64.to_uppercase()),
        Kind::DigestInvalid,
        &["digest format", "'F'", "lowercase"],
    );
    check(
        &format!("repo@sha512:{FF64}"),
        Kind::DigestInvalid,
        &["\"sha512:ffff", "64 hex digits", "sha512 needs 128"],
    );
}

#[test]
fn invalid_format_names_the_part() {
    let cases: &[(&str, &[&str])] = &[
        (
            "https://github.com/docker/docker",
            &["\"https:\"", "URL scheme"],
        ),
        ("-docker", &["path component \"-docker\"", "start and end"]),
        (
            "docker///docker",
            &["\"docker///docker\"", "empty path component"],
        ),
        ("dock_.er/docker", &["domain \"dock_.er\"", "'_'"]),
        (
            "a/dock_.er",
            &["path component \"dock_.er\"", "separator \"_.\""],
        ),
        ("a/b$c", &["path component \"b$c\"", "'$'"]),
        ("app:invalid~tag", &["tag \"invalid~tag\"", "'~'"]),
        ("app:-tag", &["tag \"-tag\"", "starts with '-'"]),
        ("app:", &["\":\" is not followed by a tag"]),
        ("app@", &["\"@\" is not followed by a digest"]),
        (
            "app@sha256:badbadbadbad",
            &["digest \"sha256:badbadbadbad\"", "only 12 hex digits"],
        ),
        ("app@nocolon", &["digest \"nocolon\"", "algorithm:hex"]),
        (
            "app@1sha:ffffffffffffffffffffffffffffffff",
            &["digest algorithm \"1sha\""],
        ),
        ("app@sha256:xyz", &["digest \"sha256:xyz\"", "'x'"]),
        ("a@b@c", &["second \"@\""]),
        (":justtag", &["\":justtag\" has no repository name"]),
        ("[fc00::1]", &["tag \"1]\"", "must be followed by \"/\""]),
        (
            "[fc00::1]:5000",
            &["path component \"[fc00::1]\"", "must be followed by \"/\""],
        ),
        ("fc00::1:5000/debian", &["port \":1:5000\"", "brackets"]),
        (
            "[fe80::1%eth0]:5000/debian",
            &["\"[fe80::1%eth0]:5000\"", "'%'"],
        ),
        ("[::1/app", &["domain \"[::1\"", "does not close"]),
        ("[]:5000/app", &["empty IPv6 address"]),
        ("[::1]x/app", &["\"x\" after \"]\""]),
        ("localhost:http/name", &["port \"http\""]),
        (
            "foo_bar.com:8080/app",
            &["domain \"foo_bar.com:8080\"", "'_'"],
        ),
        ("ab-.com/app", &["label \"ab-\""]),
        ("a.b:/app", &["\"a.b:\" has \":\" but no port"]),
        ("é/app", &["'é'"]),
    ];
    for (input, parts) in cases {
        check(input, Kind::InvalidFormat, parts);
    }
}

#[test]
fn upstream_kind_choices() {
    // A digest shorter than 32 hex digits fails the grammar, not go-digest.
    check("app@sha256:abc", Kind::InvalidFormat, &[]);
    // Upstream checks the text before the first ':' for upper case, which
    // takes in the algorithm of a digest when there is no tag.
    check(
        &format!("app@SHA256:{FF64}"),
        Kind::Uppercase,
        &["\"app@SHA256\""],
    );
    // With a tag, the same digest reaches go-digest, which rejects it.
    check(
        &format!("app:v1@SHA256:{FF64}"),
        Kind::DigestInvalid,
        &["\"SHA256\""],
    );
    // Upstream lower-cases the whole string when the grammar fails; the
    // Kelvin sign and a dotted capital I lower to ASCII, so they count as
    // upper case in a domain.
    check("a.\u{212A}/app", Kind::Uppercase, &[]);
    check("a.\u{130}/app", Kind::Uppercase, &[]);
    // Non-ASCII upper case in the path is upper case.
    check("foo/Éa", Kind::Uppercase, &[]);
    // Non-ASCII lower case is just an invalid format.
    check("foo/éa", Kind::InvalidFormat, &["'é'"]);
}

#[test]
fn long_parts_are_cut_in_messages() {
    let input = format!("foo/{}$", "a".repeat(10_000));
    let err = Reference::parse_normalized(&input).unwrap_err();
    assert!(err.message().len() < 400, "{}", err.message());
    assert!(
        err.message().contains("10001 characters in all"),
        "{}",
        err.message()
    );
}

#[test]
fn kind_names() {
    let all = [
        (Kind::Empty, "empty"),
        (Kind::InvalidFormat, "invalid_format"),
        (Kind::Uppercase, "uppercase"),
        (Kind::NameTooLong, "name_too_long"),
        (Kind::Hex64, "hex64"),
        (Kind::DigestInvalid, "digest_invalid"),
    ];
    for (kind, name) in all {
        assert_eq!(kind.as_str(), name);
        assert_eq!(kind.to_string(), name);
    }
}

/// Found by fuzzing: control characters are escaped as `\u{10}`, six bytes
/// each, so the cut must count escaped bytes, not characters.
#[test]
fn escaped_control_characters_are_cut_too() {
    let input = format!("@{}~WW`~+:", "\u{10}".repeat(84));
    let err = Reference::parse_normalized(&input).unwrap_err();
    // Upstream's check of the text before the first ':' sees the `W`s.
    assert_eq!(err.kind(), Kind::Uppercase);
    assert!(err.message().len() < 600, "{}", err.message().len());
    let err = Reference::parse_normalized(&input.to_lowercase()).unwrap_err();
    assert_eq!(err.kind(), Kind::InvalidFormat);
    assert!(err.message().len() < 600, "{}", err.message().len());
}
