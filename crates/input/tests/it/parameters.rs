//! A step's `parameters:` as the `PARAMETER_*` variables go-vela/server v0.28.8 makes of
//! them (`compiler/native/environment.go` lines 119–130 for steps, 214–225 for secret
//! origins: `"PARAMETER_" + strings.ToUpper(k)` for each key of the Go map, in Go's
//! random map order).

use pullcheck_input::{Disposition, ImageUse, ValueSource, read_pipeline};

fn read(text: &str) -> Vec<ImageUse> {
    read_pipeline(".vela.yml", text).expect("reads")
}

fn sources(u: &ImageUse) -> Vec<(&str, &ValueSource)> {
    match &u.disposition {
        Disposition::Unresolved(m) => m
            .variables
            .iter()
            .map(|v| (v.name.as_str(), &v.source))
            .collect(),
        other => panic!("expected unresolved, got {other:?} for {u:?}"),
    }
}

/// `{Foo: 1, foo: 2}` makes `PARAMETER_FOO` twice; Go ranges over the map in a random
/// order, so the image's value differs from build to build: unresolved, naming both keys.
#[test]
fn parameters_that_differ_only_in_case_make_the_variable_unresolved() {
    let uses = read(
        "version: '1'\nsteps:\n  - name: a\n    image: \"x:${PARAMETER_FOO}\"\n    parameters:\n      Foo: 1\n      foo: 2\n",
    );
    assert_eq!(
        sources(&uses[0]),
        [(
            "PARAMETER_FOO",
            &ValueSource::ParameterCase {
                keys: vec!["Foo".into(), "foo".into()]
            }
        )]
    );
    // A secret origin's parameters, the same way (`EnvironmentSecrets`).
    let uses = read(
        "version: '1'\nsecrets:\n  - name: s\n    origin:\n      name: o\n      image: \"v:${PARAMETER_K}\"\n      parameters: {k: a, K: b}\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
    );
    let origin = uses.iter().find(|u| u.origin.name == "o").expect("origin");
    assert!(
        matches!(
            sources(origin)[..],
            [("PARAMETER_K", ValueSource::ParameterCase { .. })]
        ),
        "{origin:?}"
    );
    // The same value under both keys is the same whatever the order; a null is skipped
    // (`if v == nil { continue }`).
    let uses = read(
        "version: '1'\nsteps:\n  - name: a\n    image: \"x:${PARAMETER_FOO}\"\n    parameters:\n      Foo: 1\n      foo: 1\n      FOO: ~\n",
    );
    assert_eq!(uses[0].substituted.as_deref(), Some("x:1"));
    // `strings.ToUpper` maps each character alone: `ß` has no one-character upper case
    // and stays (Go 1.19: `PARAMETER_STRAßE`), so `straße` and `STRASSE` do not meet.
    let uses = read(
        "version: '1'\nsteps:\n  - name: a\n    image: \"x:${PARAMETER_STRAßE}-${PARAMETER_STRASSE}\"\n    parameters:\n      straße: 1\n      STRASSE: 2\n",
    );
    assert_eq!(uses[0].substituted.as_deref(), Some("x:1-2"));
}
