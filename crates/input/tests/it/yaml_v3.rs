//! go.yaml.in/yaml/v3 v3.0.4's own rules where go-vela/server v0.28.8 decodes a
//! pipeline (`internal/yaml.go` `ParseYAML` into `compiler/types/yaml.Build`): explicit
//! tags, numbers past their ranges, timestamps, and the shape errors of its decoders.
//!
//! Every expected value was taken from the real code: `ParseYAML` built with Go 1.19
//! against go-yaml v3.0.4 (`git archive v3.0.4` of github.com/yaml/go-yaml) and the
//! types of go-vela/server v0.28.8's `compiler/types/yaml` and `compiler/types/raw`
//! (their type declarations and `UnmarshalYAML` methods, copied unchanged), each text
//! below given to it as a file.

use pullcheck_input::{DecodeFailure, Refusal, read_pipeline};

use crate::refusals::{at, refused};

/// The images read from `text`, which Vela decodes.
fn images(text: &str) -> Vec<String> {
    match read_pipeline(".vela.yml", text) {
        Ok(uses) => uses.into_iter().map(|u| u.image).collect(),
        Err(e) => panic!("Vela decodes this, but it was refused: {e}"),
    }
}

/// The step with `fields` is refused with go-yaml v3's type error for `field`.
fn assert_wrong_type(fields: &str, field: &str, expected: &str, found: &str, value: Option<&str>) {
    let e = refused(&step(fields));
    match e.refusal.as_deref() {
        Some(Refusal::WrongType {
            field: f,
            expected: x,
            found: t,
            value: v,
            json: false,
        }) => assert_eq!(
            (f.as_str(), *x, t.as_str(), v.as_deref()),
            (field, expected, found, value),
            "{fields}"
        ),
        other => panic!("not a type error: {other:?} ({fields})"),
    }
}

fn step(fields: &str) -> String {
    format!("version: \"1\"\nsteps:\n  - name: a\n{fields}")
}

/// A core tag its text is not of stops go-yaml v3 where it decodes the scalar
/// (`resolve.go` line 151, `failf`: "yaml: cannot decode !!str `alpine` as a !!int",
/// which Vela wraps in "unable to unmarshal yaml: "); the refusal is at the scalar.
#[test]
fn a_core_tag_the_text_is_not_of_stops_the_decoding() {
    for (fields, field, found, value, tag, line_col) in [
        (
            "    image: !!int alpine\n    commands: [x]\n",
            "steps[0].image",
            "!!str",
            "alpine",
            "!!int",
            (4, 18),
        ),
        (
            "    image: alpine\n    detach: !!bool yes\n    commands: [x]\n",
            "steps[0].detach",
            "!!str",
            "yes",
            "!!bool",
            (5, 20),
        ),
        (
            "    image: !!null x\n    commands: [x]\n",
            "steps[0].image",
            "!!str",
            "x",
            "!!null",
            (4, 19),
        ),
        (
            "    image: !!timestamp 5\n    commands: [x]\n",
            "steps[0].image",
            "!!int",
            "5",
            "!!timestamp",
            (4, 24),
        ),
        // Under any tag but `!!timestamp` a date is no timestamp.
        (
            "    image: !!int 2015-01-01\n    commands: [x]\n",
            "steps[0].image",
            "!!str",
            "2015-01-01",
            "!!int",
            (4, 18),
        ),
        // Inside a parameter (decoded into `interface {}`), and in a key, which a
        // struct decodes into a `string` before it looks it up.
        (
            "    image: alpine\n    parameters: {x: !!int x}\n",
            "steps[0].parameters",
            "!!str",
            "x",
            "!!int",
            (5, 27),
        ),
        (
            "    image: alpine\n    commands: [x]\n    !!int foo: x\n",
            "steps[0]",
            "!!str",
            "foo",
            "!!int",
            (6, 11),
        ),
    ] {
        let e = refused(&step(fields));
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::Decode {
                field: field.into(),
                failure: DecodeFailure::Tag {
                    found: found.into(),
                    text: value.into(),
                    tag: tag.into(),
                },
            }),
            "{fields}"
        );
        assert_eq!(at(&e), line_col, "{fields}");
        assert!(
            e.message.starts_with(&format!(
                "Vela refuses this pipeline: unable to unmarshal yaml: yaml: cannot decode \
                 {found} `{value}` as a {tag}"
            )),
            "{e}"
        );
    }
    // Where go-yaml v3 does not decode it (a key `yaml.Step` has not), a tag is not
    // looked at.
    assert_eq!(
        images(&step(
            "    image: alpine\n    commands: [x]\n    whatever: !!int x\n"
        )),
        ["alpine"]
    );
    // Inside a `raw.StringSlice`, whose `UnmarshalYAML` gets the failure as an error and
    // returns its own.
    let e = refused(&step("    image: alpine\n    commands: [!!bool x]\n"));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::Decode {
            field: "steps[0].commands[0]".into(),
            failure: DecodeFailure::StringSlice,
        })
    );
}

/// A string field takes any scalar's text (`decode.go` `scalar`, `reflect.String`): a
/// tag of the right kind or of none go-yaml v3 knows is fine; `!!binary` is the bytes
/// its base64 decodes to (or "yaml: !!binary value contains invalid base64 data").
#[test]
fn tags_a_string_field_takes_and_binary_is_decoded() {
    for (fields, image) in [
        ("    image: !foo alpine\n    commands: [x]\n", "alpine"),
        ("    image: !!int 5\n    commands: [x]\n", "5"),
        ("    image: !!str alpine\n    commands: [x]\n", "alpine"),
        (
            "    image: !!timestamp 2015-01-01\n    commands: [x]\n",
            "2015-01-01",
        ),
        (
            "    image: !!binary YWxwaW5l\n    commands: [x]\n",
            "alpine",
        ),
        (
            "    image: !!binary \"YWxw\\naW5l\"\n    commands: [x]\n",
            "alpine",
        ),
        (
            "    image: alpine\n    commands: !!binary ZWNobw==\n",
            "alpine",
        ),
        // `!foo yes` is `yes`, which a `bool` takes as YAML 1.1's true; a `!!float` a
        // float, which an `int64` takes.
        (
            "    image: alpine\n    detach: !foo yes\n    commands: [x]\n",
            "alpine",
        ),
        (
            "    image: alpine\n    commands: [x]\n    ulimits: [{name: n, soft: !!float 5}]\n",
            "alpine",
        ),
        // A step mapping with a tag of its own is a step.
        (
            "    image: alpine\n    commands: [x]\n  - !foo {name: b, image: busybox, commands: [x]}\n",
            "alpine",
        ),
    ] {
        assert_eq!(images(&step(fields))[0], image, "{fields}");
    }
    let e = refused(&step("    image: !!binary \"@@\"\n    commands: [x]\n"));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::Decode {
            field: "steps[0].image".into(),
            failure: DecodeFailure::Base64,
        })
    );
    assert_eq!(at(&e), (4, 21));
}

/// go-yaml v3's `terror` names the node's own tag: `!foo` for `!foo [a]`, with its
/// (empty) value quoted; `!foo true` is a string, which a `bool` refuses.
#[test]
fn a_type_error_names_the_tag_written() {
    for (fields, field, expected, found, value) in [
        (
            "    image: !foo [a]\n    commands: [x]\n",
            "steps[0].image",
            "string",
            "!foo",
            Some("``"),
        ),
        (
            "    image: !foo {a: b}\n    commands: [x]\n",
            "steps[0].image",
            "string",
            "!foo",
            Some("``"),
        ),
        (
            "    image: alpine\n    detach: !foo true\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!foo",
            Some("`true`"),
        ),
        (
            "    image: alpine\n    detach: !!int 5\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!!int",
            Some("`5`"),
        ),
        (
            "    image: alpine\n    detach: !!seq [a]\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!!seq",
            None,
        ),
    ] {
        assert_wrong_type(fields, field, expected, found, value);
    }
}

/// A merge key is a `<<` that is plain and untagged (or `!`), or any `<<` tagged
/// `!!merge`, quoted or not (`decode.go` `isMerge`); `!!str <<` is a plain key.
#[test]
fn merge_keys_as_is_merge_spells_them() {
    let anchor = "x: &d {image: alpine, commands: [x]}\n";
    for merge in ["!!merge <<", "!!merge \"<<\"", "! <<"] {
        let text = format!("version: \"1\"\n{anchor}steps:\n  - name: a\n    {merge}: *d\n");
        assert_eq!(images(&text), ["alpine"], "{merge}");
    }
    // `!!str <<` merges nothing: the step has no image of its own, and Vela refuses it.
    let text = format!("version: \"1\"\n{anchor}steps:\n  - name: a\n    !!str <<: *d\n");
    assert!(matches!(
        refused(&text).refusal.as_deref(),
        Some(Refusal::NoImage { .. } | Refusal::NoCommands { .. })
    ));
}

/// Past int64 and uint64 an integer is a `!!float`, past f64 a float a `!!str`
/// (`resolve.go` `resolve`); a date that Go's `time.Parse` refuses is a `!!str`.
#[test]
fn numbers_and_dates_resolve_as_yaml_v3_resolves_them() {
    for (fields, field, expected, found, value) in [
        (
            "    image: alpine\n    commands: [x]\n    ulimits: [{name: n, soft: 99999999999999999999}]\n",
            "steps[0].ulimits[0].soft",
            "int64",
            "!!float",
            "`9999999...`",
        ),
        (
            "    image: alpine\n    detach: 1e400\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!!str",
            "`1e400`",
        ),
        (
            "    image: alpine\n    detach: 2015-02-30\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!!str",
            "`2015-02-30`",
        ),
        (
            "    image: alpine\n    detach: 2001-12-14 21:59:43.10 -5\n    commands: [x]\n",
            "steps[0].detach",
            "bool",
            "!!str",
            "`2001-12...`",
        ),
    ] {
        assert_wrong_type(fields, field, expected, found, Some(value));
    }
}

/// `ParseYAML`'s first `yaml.Unmarshal` fails on a `%YAML` directive other than 1.1
/// (go-yaml v3 `parserc.go` line 1211: "found incompatible YAML document", for 1.2 as
/// for 1.3), at the directive.
#[test]
fn a_yaml_directive_other_than_1_1_is_refused() {
    let body = "---\nversion: \"1\"\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n";
    for (major, minor) in [(1, 3), (1, 2), (2, 0)] {
        let e = refused(&format!("# c\n%YAML {major}.{minor}\n{body}"));
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::Decode {
                field: String::new(),
                failure: DecodeFailure::YamlVersion { major, minor },
            })
        );
        assert_eq!(at(&e), (2, 1));
        assert!(
            e.message.starts_with(
                "Vela refuses this pipeline: unable to unmarshal pipeline version yaml: yaml: \
                 found incompatible YAML document"
            ),
            "{e}"
        );
    }
    assert_eq!(images(&format!("%YAML 1.1\n{body}")), ["alpine"]);
}

/// `ParseYAML` takes the version from the node after the first scalar `version` among
/// the root's keys and values, as its `Value`: an alias's name, not what it names; a
/// merged `version:` is not looked at (`internal/yaml.go` lines 36–43). Only then does
/// it refuse `legacy`.
#[test]
fn the_legacy_version_is_found_as_parse_yaml_finds_it() {
    let steps = "steps:\n  - {name: a, image: alpine, commands: [x]}\n";
    for head in [
        "x: &l legacy\nversion: *l\n",
        "a: version\nversion: legacy\n",
        "<<: {version: legacy}\n",
    ] {
        assert_eq!(images(&format!("{head}{steps}")), ["alpine"], "{head}");
    }
    let e = refused(&format!("x: &legacy \"1\"\nversion: *legacy\n{steps}"));
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::LegacyVersion));
    assert_eq!(at(&e), (2, 10));
}

/// `StageSlice.UnmarshalYAML` (`stage.go` line 59) refuses `stages:` that is not a
/// mapping, in its own words, and stops the decoding.
#[test]
fn stages_that_are_not_a_mapping_are_refused_in_stage_slice_s_words() {
    for stages in ["x", "5", "[a]"] {
        let e = refused(&format!("version: \"1\"\nstages: {stages}\n"));
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::Decode {
                field: "stages".into(),
                failure: DecodeFailure::StageMap,
            }),
            "{stages}"
        );
        assert_eq!(at(&e), (2, 9));
        assert!(
            e.message.starts_with(
                "Vela refuses this pipeline: unable to unmarshal yaml: invalid yaml: expected \
                 map node for stage"
            ),
            "{e}"
        );
    }
}

/// A key that is a list or a mapping, in a mapping decoded into a struct or a
/// `map[string]...`, is decoded into a `string` first: a type error at the key.
#[test]
fn a_key_that_is_no_scalar_is_a_type_error() {
    for (fields, field, line_col) in [
        (
            "    image: alpine\n    commands: [x]\n    ? [k]\n    : v\n",
            "steps[0]",
            (6, 7),
        ),
        (
            "    image: alpine\n    parameters: {[k]: v}\n",
            "steps[0].parameters",
            (5, 18),
        ),
    ] {
        assert_wrong_type(fields, field, "string", "!!seq", None);
        assert_eq!(at(&refused(&step(fields))), line_col, "{fields}");
    }
}

/// A null template decodes (a nil `*yaml.Template`), and `mapFromTemplates`
/// (`compiler/native/expand.go` line 442), which every compile calls, dereferences it:
/// the compiler panics (HTTP 500), whatever the other templates.
#[test]
fn a_null_template_panics_the_compiler() {
    let steps = "steps:\n  - {name: a, image: alpine, commands: [x]}\n";
    for (templates, field, line_col) in [
        ("templates: [~]\n", "templates[0]", (2, 13)),
        (
            "templates:\n  - {name: t, source: s, type: github}\n  -\n",
            "templates[1]",
            (4, 4),
        ),
    ] {
        let e = refused(&format!("version: \"1\"\n{templates}{steps}"));
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::NullTemplate {
                field: field.into()
            }),
            "{templates}"
        );
        assert_eq!(at(&e), line_col, "{templates}");
        assert!(
            e.message
                .starts_with("Vela's compiler fails on this pipeline: "),
            "{e}"
        );
    }
}

/// go-yaml v3's `mapping` refuses a repeated key only when both keys have the same
/// `Kind` and `Value` (decode.go lines 769–780): an alias `*k` (an `AliasNode` whose
/// `Value` is `k`) and the scalar its anchor holds, or `!!binary VEFH` (`Value` `VEFH`)
/// and `TAG`, are not repeated there, and a map keeps the last. Go printed no error for
/// `m: {foo: 1, *k : 2}` (with `&k foo`) nor for `m: {foo: 1, !!binary Zm9v: 2}`, and
/// `map[foo:2]` for both; `'foo'` after `foo` is "line 3: mapping key \"foo\" already
/// defined at line 2".
#[test]
fn keys_of_another_kind_or_value_are_no_duplicates_and_the_last_wins() {
    let alias = "version: \"1\"\nx: &k TAG\nsteps:\n  - name: a\n    image: alpine:${TAG}\n    \
                 commands: [x]\n    environment:\n      TAG: one\n      *k : two\n";
    let uses = read_pipeline(".vela.yml", alias).expect("Vela decodes it");
    assert_eq!(uses[0].substituted.as_deref(), Some("alpine:two"));
    let binary = "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:${TAG}\n    \
                  commands: [x]\n    environment:\n      TAG: one\n      !!binary VEFH: two\n";
    let uses = read_pipeline(".vela.yml", binary).expect("Vela decodes it");
    assert_eq!(uses[0].substituted.as_deref(), Some("alpine:two"));
    // The same Kind and Value whatever the quoting or tag: still refused.
    let e = refused(&step(
        "    image: a\n    commands: [x]\n    parameters: {foo: 1, 'foo': 2}\n",
    ));
    match e.refusal.as_deref() {
        Some(Refusal::DuplicateKey {
            key, first_line, ..
        }) => {
            assert_eq!((key.as_str(), *first_line), ("foo", Some(6)));
        }
        other => panic!("not a duplicate key: {other:?}"),
    }
}

/// `mappingStruct` refuses a second key that decodes to a field already set (decode.go
/// line 924). Go printed, for `a: &a image` and a step `{image: x, *a : y}` written on
/// lines 3–4: "yaml: unmarshal errors:\n  line 4: field image already set in type
/// yaml.Step", and the same at line 3 for `image: x` then `!!binary aW1hZ2U=: y`.
#[test]
fn a_field_set_through_two_keys_is_refused_at_the_second() {
    let field_set_twice = |text: &str| {
        let e = refused(text);
        match e.refusal.as_deref() {
            Some(Refusal::FieldSetTwice { field, key, go }) => {
                (field.clone(), key.clone(), *go, at(&e).0)
            }
            other => panic!("not a field set twice: {other:?} ({e})"),
        }
    };
    let alias = "version: \"1\"\na: &a image\nsteps:\n  - name: s\n    commands: [x]\n    \
                 image: x\n    *a : y\n";
    assert_eq!(
        field_set_twice(alias),
        ("steps[0]".into(), "image".into(), "yaml.Step", 7)
    );
    let binary = step("    commands: [x]\n    image: x\n    !!binary aW1hZ2U=: y\n");
    assert_eq!(
        field_set_twice(&binary),
        ("steps[0]".into(), "image".into(), "yaml.Step", 6)
    );
}
