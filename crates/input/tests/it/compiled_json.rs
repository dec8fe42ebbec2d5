//! A compiled build read as the worker reads it: Go's encoding/json decoding the text
//! into go-vela/server v0.28.8's `pipeline.Build` (`compiler/types/pipeline/build.go`,
//! `container.go`, `stage.go`, `secret.go`, `ruleset.go`, `ulimit.go`, `deployment.go`,
//! `metadata.go`; `compiler/types/raw/map.go`). Every expected value below is what Go
//! 1.19's `json.Unmarshal` gave for the same text into structs of those shapes and json
//! tags (a probe program kept out of this tree).

use pullcheck_input::{ImageUse, InputError, PullPolicy, Refusal, read_build_read, read_pipeline};

fn build(text: &str) -> Vec<ImageUse> {
    match read_build_read("build.json", text) {
        Ok(read) => read.uses,
        Err(e) => panic!("should read: {e}"),
    }
}

fn refused(text: &str) -> InputError {
    match read_build_read("build.json", text) {
        Ok(read) => panic!(
            "encoding/json refuses this, but it was read: {:?}",
            read.uses
        ),
        Err(e) => e,
    }
}

fn images(uses: &[ImageUse]) -> Vec<(&str, &str, PullPolicy)> {
    uses.iter()
        .map(|u| (u.origin.name.as_str(), u.image.as_str(), u.policy))
        .collect()
}

/// Go's `UnmarshalTypeError`s below the top level: list items, nested structs, a map's
/// values, the build's own fields; the message is encoding/json's (innermost struct,
/// then the JSON names from the top), the field our path with indices and keys.
#[test]
fn type_errors_anywhere_in_the_build_are_encoding_json_s() {
    for (text, field, expected, found, message) in [
        (
            r#"{"steps":[{"name":"a","pull":5}]}"#,
            "steps[0].pull",
            "string",
            "number",
            "json: cannot unmarshal number into Go struct field Container.steps.pull of type string",
        ),
        (
            r#"{"stages":[{"steps":[{"pull":true}]}]}"#,
            "stages[0].steps[0].pull",
            "string",
            "bool",
            "json: cannot unmarshal bool into Go struct field Container.stages.steps.pull of type string",
        ),
        (
            r#"{"steps":["x"]}"#,
            "steps[0]",
            "pipeline.Container",
            "string",
            "json: cannot unmarshal string into Go struct field Build.steps of type pipeline.Container",
        ),
        (
            r#"{"stages":[{"steps":[5]}]}"#,
            "stages[0].steps[0]",
            "pipeline.Container",
            "number",
            "json: cannot unmarshal number into Go struct field Stage.stages.steps of type pipeline.Container",
        ),
        (
            r#"{"steps":"x"}"#,
            "steps",
            "pipeline.ContainerSlice",
            "string",
            "json: cannot unmarshal string into Go struct field Build.steps of type pipeline.ContainerSlice",
        ),
        (
            r#"{"steps":[{"ruleset":{"if":{"branch":5}}}]}"#,
            "steps[0].ruleset.if.branch",
            "pipeline.Ruletype",
            "number",
            "json: cannot unmarshal number into Go struct field Rules.steps.ruleset.if.branch of type pipeline.Ruletype",
        ),
        (
            r#"{"steps":[{"ulimits":[{"soft":"1"}]}]}"#,
            "steps[0].ulimits[0].soft",
            "int64",
            "string",
            "json: cannot unmarshal string into Go struct field Ulimit.steps.ulimits.soft of type int64",
        ),
        (
            r#"{"secrets":[{"origin":"x"}]}"#,
            "secrets[0].origin",
            "pipeline.Container",
            "string",
            "json: cannot unmarshal string into Go struct field Secret.secrets.origin of type pipeline.Container",
        ),
        (
            r#"{"secrets":[{"origin":{"environment":{"A":true}}}]}"#,
            "secrets[0].origin.environment.A",
            "string",
            "bool",
            "json: cannot unmarshal bool into Go struct field Container.secrets.origin.environment of type string",
        ),
        (
            r#"{"metadata":{"auto_cancel":"x"}}"#,
            "metadata.auto_cancel",
            "pipeline.CancelOptions",
            "string",
            "json: cannot unmarshal string into Go struct field Metadata.metadata.auto_cancel of type pipeline.CancelOptions",
        ),
        (
            r#"{"deployment":{"parameters":{"a.b":{"min":"x"}}}}"#,
            "deployment.parameters.a.b.min",
            "int",
            "string",
            "json: cannot unmarshal string into Go struct field Parameter.deployment.parameters.min of type int",
        ),
        (
            r#"{"deployment":{"parameters":{"a":5}}}"#,
            "deployment.parameters.a",
            "pipeline.Parameter",
            "number",
            "json: cannot unmarshal number into Go struct field Deployment.deployment.parameters of type pipeline.Parameter",
        ),
        (
            // The first in the text, though decoding goes on.
            r#"{"steps":[{"number":1.5,"pull":1}]}"#,
            "steps[0].number",
            "int32",
            "number 1.5",
            "json: cannot unmarshal number 1.5 into Go struct field Container.steps.number of type int32",
        ),
        (
            // Key case does not matter, and the message names the field's JSON name.
            r#"{"Steps":[{"PULL":5}]}"#,
            "steps[0].pull",
            "string",
            "number",
            "json: cannot unmarshal number into Go struct field Container.steps.pull of type string",
        ),
    ] {
        let e = refused(text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::WrongType {
                field: field.into(),
                expected,
                found: found.into(),
                value: None,
                json: true,
            }),
            "{text}"
        );
        assert_eq!(
            e.message,
            format!("Vela refuses this pipeline: {message} (at {field})"),
            "{text}"
        );
    }
}

/// `raw.StringSliceMap.UnmarshalJSON`, the build's own `environment`: its error stops
/// the decoding and wins over an earlier type error; `null` is refused too.
#[test]
fn the_build_environment_is_decoded_by_its_own_unmarshaler() {
    for text in [
        r#"{"environment":{"A":1}}"#,
        r#"{"environment":["A=1",null]}"#,
        r#"{"environment":["A"]}"#,
        r#"{"steps":[{"pull":1}], "environment":null}"#,
    ] {
        let e = refused(text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::StringSliceMap {
                field: "environment".into()
            }),
            "{text}"
        );
    }
    for text in [
        r#"{"environment":"A=1","steps":[{"name":"a","image":"alpine"}]}"#,
        r#"{"environment":["A=1","B="],"steps":[{"name":"a","image":"alpine"}]}"#,
        r#"{"environment":{"A":"1","B":null},"steps":[{"name":"a","image":"alpine"}]}"#,
    ] {
        assert_eq!(build(text).len(), 1, "{text}");
    }
}

/// encoding/json fills a field from a key equal to its JSON name without regard to case
/// (Unicode simple folding: `ſ` is an `s`, the Kelvin sign a `k`).
#[test]
fn keys_match_fields_without_regard_to_case() {
    let uses = build(
        r#"{"ID":"b","STEPS":[{"Name":"a","IMAGE":"alpine:3.19","Pull":"always"}],
            "Services":[{"nAmE":"db","Image":"postgres:16"}],
            "ſtages":[{"Name":"s","Steps":[{"name":"t","image":"busybox","pull":"never"}]}],
            "Secrets":[{"name":"v","Origin":{"name":"vault","image":"vault:1","environment":{"A":"1"}}}]}"#,
    );
    assert_eq!(
        images(&uses),
        [
            ("db", "postgres:16", PullPolicy::NotPresent),
            ("t", "busybox", PullPolicy::Never),
            ("a", "alpine:3.19", PullPolicy::Always),
            ("vault", "vault:1", PullPolicy::NotPresent),
        ]
    );
    assert_eq!(uses[1].origin.stage.as_deref(), Some("s"));
    // An exact match is not preferred over an earlier key: each fills the field in turn,
    // so the last wins (`{"Image":"a","image":"b","IMAGE":"c"}` is image `c`).
    let uses = build(r#"{"steps":[{"name":"x","Image":"a","image":"b","IMAGE":"c"}]}"#);
    assert_eq!(images(&uses), [("x", "c", PullPolicy::NotPresent)]);
    // A key in a map (a container's `environment`) is its own.
    let uses = build(
        r#"{"steps":[{"name":"x","image":"${v}:${V}","environment":{"v":"lower","V":"upper"}}]}"#,
    );
    assert_eq!(uses[0].pulled(), "lower:upper");
}

/// A key written twice is decoded twice (encoding/json refuses no duplicate): the last
/// wins, and a struct, a map or a slice's elements are decoded into, not replaced.
#[test]
fn duplicate_keys_are_decoded_in_turn_and_the_last_wins() {
    for (text, want) in [
        (
            r#"{"steps":[{"name":"s","image":"a","image":"b"}]}"#,
            vec![("s", "b")],
        ),
        // The second `steps` decodes into the first's element: its image stays.
        (
            r#"{"steps":[{"name":"a","image":"x"}],"steps":[{"name":"b"}]}"#,
            vec![("b", "x")],
        ),
        // Elements are reused up to the longest earlier length ...
        (
            r#"{"steps":[{"name":"a","image":"x"},{"name":"c","image":"y"}],"steps":[{"name":"b"}],"steps":[{},{}]}"#,
            vec![("b", "x"), ("c", "y")],
        ),
        // ... but an empty array starts afresh.
        (
            r#"{"steps":[{"name":"a","image":"x"},{"name":"c","image":"y"}],"steps":[],"steps":[{"name":"b","image":"z"}]}"#,
            vec![("b", "z")],
        ),
    ] {
        let uses = build(text);
        let got: Vec<(&str, &str)> = uses
            .iter()
            .map(|u| (u.origin.name.as_str(), u.image.as_str()))
            .collect();
        assert_eq!(got, want, "{text}");
    }
    // A map is decoded into: both variables are set.
    let uses = build(
        r#"{"steps":[{"name":"a","image":"${A}-${B}","environment":{"A":"1"}}],"steps":[{"environment":{"B":"2"}}]}"#,
    );
    assert_eq!(uses[0].pulled(), "1-2");
    // Through `check FILE` too (a JSON text with a top-level `id`).
    let uses = read_pipeline(
        "build.json",
        r#"{"id":"b","steps":[],"steps":[{"name":"a","image":"alpine"}]}"#,
    )
    .expect("reads");
    assert_eq!(uses.len(), 1);
}

/// A compiled build must be JSON as Go's scanner reads it: YAML's flow syntax (unquoted
/// keys, single quotes, a trailing comma, comments) is refused with encoding/json's
/// `SyntaxError` message, at the line and column of the byte its offset names.
#[test]
fn a_compiled_build_that_is_not_json_is_a_syntax_error_at_its_place() {
    for (text, message, at) in [
        (
            "{id: b, steps: [{name: a, image: alpine}]}",
            "invalid character 'i' looking for beginning of object key string",
            (1, 2),
        ),
        (
            "{\"id\": \"b\",\n \"steps\": [],\n}",
            "invalid character '}' looking for beginning of object key string",
            (3, 1),
        ),
        (
            "{'id': 'b'}",
            r"invalid character '\'' looking for beginning of object key string",
            (1, 2),
        ),
        (
            "id: b\nsteps: []\n",
            "invalid character 'i' looking for beginning of value",
            (1, 1),
        ),
        (
            "{\"id\": \"b\"} # build",
            "invalid character '#' after top-level value",
            (1, 13),
        ),
        (
            "{\"a\":tru}",
            "invalid character '}' in literal true (expecting 'e')",
            (1, 9),
        ),
        (
            "{\"a\":-}",
            "invalid character '}' in numeric literal",
            (1, 7),
        ),
        (
            "{\"a\":1.}",
            "invalid character '}' after decimal point in numeric literal",
            (1, 8),
        ),
        (
            "{\"a\":1e}",
            "invalid character '}' in exponent of numeric literal",
            (1, 8),
        ),
        (
            "{\"a\":\"\\x\"}",
            "invalid character 'x' in string escape code",
            (1, 8),
        ),
        (
            "{\"a\":\"\\u12g4\"}",
            "invalid character 'g' in \\u hexadecimal character escape",
            (1, 11),
        ),
        (
            "{\"a\" 1}",
            "invalid character '1' after object key",
            (1, 6),
        ),
        (
            "{\"a\":1 \"b\":2}",
            "invalid character '\"' after object key:value pair",
            (1, 8),
        ),
        ("[1 2]", "invalid character '2' after array element", (1, 4)),
        (
            "{\"a\":01}",
            "invalid character '1' after object key:value pair",
            (1, 7),
        ),
        (
            "\u{feff}{}",
            "invalid character 'ï' looking for beginning of value",
            (1, 1),
        ),
        ("{\"steps\": [", "unexpected end of JSON input", (1, 12)),
        ("", "unexpected end of JSON input", (1, 1)),
    ] {
        let e = refused(text);
        assert_eq!(e.refusal, None, "{text}");
        assert_eq!(
            (
                e.message
                    .strip_prefix(
                        "not valid JSON (a compiled build is read as Go's encoding/json reads it): "
                    )
                    .unwrap_or(&e.message),
                e.line.zip(e.column)
            ),
            (message, Some(at)),
            "{text}"
        );
    }
    // Detected by its `id`, a JSON-looking text in YAML's flow syntax is refused too.
    let e = read_pipeline("build.json", "{\"id\": \"b\", steps: []}").unwrap_err();
    assert_eq!((e.line, e.column), (Some(1), Some(13)), "{e}");
    // A lone surrogate escape is U+FFFD, not an error.
    let uses = build(r#"{"steps":[{"name":"a","image":"alpine\ud83d"}]}"#);
    assert_eq!(uses[0].image, "alpine\u{fffd}");
}
