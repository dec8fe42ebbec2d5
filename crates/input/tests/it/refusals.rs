//! What Vela's compiler refuses (go-vela/server v0.28.8 `compiler/native/validate.go`,
//! `compile.go`, `expand.go`, `internal/yaml.go`, `compiler/types/raw/map.go`): the
//! file is an error carrying its [`Refusal`] at the position of what is refused, and no
//! image of it is read. Texts follow go-vela/server's `compiler/native/testdata/` where
//! a file there covers the case (named in each test).

use pullcheck_input::{
    ContainerKind, DecodeFailure, Disposition, InputError, Refusal, read_pipeline,
};

pub(crate) fn refused(text: &str) -> InputError {
    match read_pipeline(".vela.yml", text) {
        Ok(uses) => panic!("Vela refuses this, but it was read: {uses:?}"),
        Err(e) => {
            assert!(e.refusal.is_some(), "not a refusal: {e}");
            e
        }
    }
}

pub(crate) fn at(e: &InputError) -> (usize, usize) {
    (e.line.expect("a line"), e.column.expect("a column"))
}

#[test]
fn no_version_and_legacy_version() {
    // compiler/native/testdata/environment.yml has no `version:` (and nothing to run).
    let e = refused(
        "---\nenvironment:\n  FOO: \"Hello, foo!\"\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
    );
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::NoVersion));
    assert_eq!(at(&e), (2, 1));
    assert_eq!(
        e.to_string(),
        ".vela.yml:2:1: Vela refuses this pipeline: no \"version:\" YAML property provided"
    );
    let e = refused("version: legacy\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n");
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::LegacyVersion));
    assert_eq!(at(&e), (1, 10));
}

#[test]
fn stages_and_steps_together_and_nothing_to_run() {
    // compiler/native/testdata/steps_and_stages.yml, with a version: `steps:` after
    // `stages:`.
    let text = "\
version: \"1\"
stages:
  dependencies:
    steps:
      - name: install
        commands: [ ./gradlew downloadDependencies ]
        image: openjdk:latest
        pull: true
steps:
  - name: test
    commands: [ ./gradlew check ]
    image: openjdk:latest
    pull: true
";
    let e = refused(text);
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::StagesAndSteps));
    assert_eq!(at(&e), (10, 3));
    assert_eq!(
        e.to_string(),
        ".vela.yml:10:3: Vela refuses this pipeline: stages and steps provided (a pipeline \
         has either `stages:` or `steps:`)"
    );
    // `steps:` first: the later one, `stages:`, is where it is refused.
    let steps_first = "version: '1'\nsteps:\n  - {name: a, image: alpine, commands: [x]}\nstages:\n  s:\n    steps:\n      - {name: b, image: alpine, commands: [x]}\n";
    let e = refused(steps_first);
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::StagesAndSteps));
    assert_eq!(at(&e), (5, 3));
    // An empty `steps:` beside stages is no steps (`len(p.Steps) > 0`).
    let empty_steps = "version: '1'\nsteps: []\nstages:\n  s:\n    steps:\n      - {name: b, image: alpine, commands: [x]}\n";
    assert_eq!(read_pipeline(".vela.yml", empty_steps).unwrap().len(), 1);

    // Services alone do not count (`len(p.Stages) == 0 && len(p.Steps) == 0`).
    let e = refused("version: '1'\nservices:\n  - {name: db, image: postgres:16}\n");
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::NothingToRun));
    assert_eq!(
        e.to_string(),
        ".vela.yml:1:1: Vela refuses this pipeline: no stages, steps or templates provided"
    );
    let e = refused("version: '1'\nsteps: []\n");
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::NothingToRun));
    assert_eq!(at(&e), (1, 1));
    let e = refused("version: '1'\nstages: {}\n");
    assert_eq!(e.refusal.as_deref(), Some(&Refusal::NothingToRun));
    // Templates alone are something to run (compiler/native/testdata/template_name_inline.yml
    // is one with `render_inline`), and so is render_inline with nothing at all.
    let uses = read_pipeline(
        ".vela.yml",
        "version: '1'\nmetadata:\n  render_inline: true\ntemplates:\n  - name: inline_templatename\n    source: github.example.com/github/octocat/template_name_template.yml\n    type: github\n",
    )
    .unwrap();
    assert!(uses.is_empty());
    let uses = read_pipeline(
        ".vela.yml",
        "version: '1'\ntemplates:\n  - {name: t, source: github.example.com/foo/bar/t.yml, type: github}\n",
    )
    .unwrap();
    assert!(uses.is_empty());
    let uses = read_pipeline(
        ".vela.yml",
        "version: '1'\nmetadata:\n  render_inline: true\n",
    )
    .unwrap();
    assert!(uses.is_empty());
}

#[test]
fn a_name_defined_twice_as_validate_pipeline_counts_it() {
    // compiler/native/testdata/steps_name_conflict.yml: `build` twice.
    let text = "\
version: \"1\"

steps:
  - name: build
    image: alpine
    commands:
      - echo \"Building...\"
  - name: test
    image: alpine
    commands:
      - echo \"Testing...\"
  - name: build
    image: alpine
    commands:
      - echo \"Building...again?\"
";
    let e = refused(text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::DuplicateName {
            container: ContainerKind::Step,
            name: "build".into(),
            stage: None,
            first: Some((4, 11)),
        })
    );
    assert_eq!(at(&e), (12, 11));
    assert_eq!(
        e.to_string(),
        ".vela.yml:12:11: Vela refuses this pipeline: step `build` is already defined (first \
         at 4:11)"
    );
    // steps_name_conflict_purged.yml: the second has `ruleset: {event: pull_request}`,
    // so a push build purges it and compiles; pullcheck warns instead of refusing.
    let purged = text.replace(
        "  - name: build\n    image: alpine\n    commands:\n      - echo \"Building...again?\"",
        "  - name: build\n    image: alpine\n    ruleset:\n      event: pull_request\n    commands:\n      - echo \"Building...again?\"",
    );
    let (uses, warnings) =
        pullcheck_input::read_pipeline_with_warnings(".vela.yml", &purged).unwrap();
    assert_eq!(uses.len(), 3);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with(".vela.yml:12:11: "), "{warnings:?}");
    // A ruleset of `status` rules only is not evaluated at compile time: kept.
    let status = text.replace(
        "  - name: build\n    image: alpine\n    commands:\n      - echo \"Building...again?\"",
        "  - name: build\n    image: alpine\n    ruleset:\n      status: [ failure ]\n    commands:\n      - echo \"Building...again?\"",
    );
    assert!(refused(&status).refusal.is_some());
}

#[test]
fn stage_steps_are_keyed_stage_underscore_name() {
    // compiler/native/testdata/stages_name_conflict.yml: `three_word_key` + `build` and
    // `three` + `word_key_build` are both `three_word_key_build`.
    let text = "\
version: \"1\"

stages:
  three_word_key:
    steps:
      - name: build
        image: alpine
        commands:
          - echo \"Building...\"
  three:
    steps:
      - name: word_key_build
        image: alpine
        commands:
          - echo \"Building...\"
";
    let e = refused(text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::DuplicateName {
            container: ContainerKind::Step,
            name: "word_key_build".into(),
            stage: Some("three".into()),
            first: Some((6, 15)),
        })
    );
    assert_eq!(at(&e), (12, 15));
    // The same step name in two stages is fine.
    let ok = text.replace("word_key_build", "build");
    assert_eq!(read_pipeline(".vela.yml", &ok).unwrap().len(), 2);
    // Services are counted on their own (validate_test.go `Services_NameCollision`).
    let e = refused(
        "version: '1'\nservices:\n  - {name: foo, image: postgres}\n  - {name: foo, image: kafka}\nsteps:\n  - {name: foo, image: alpine, commands: [x]}\n",
    );
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::DuplicateName { container: ContainerKind::Service, name, .. }) if name == "foo"),
        "{e}"
    );
    assert_eq!(at(&e), (4, 12));
}

#[test]
fn containers_without_name_image_or_anything_to_do() {
    // validate_test.go `SecretOrigin_NoName`: an origin with an image and no name.
    let e = refused(
        "version: '1'\nsteps:\n  - {name: a, image: alpine, commands: [x]}\nsecrets:\n  - origin:\n      image: target/vela-vault:latest\n      pull: always\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoName {
            container: ContainerKind::Secret
        })
    );
    assert_eq!(at(&e), (6, 7));
    // validate_test.go `Steps_NoCommands`.
    let e = refused("version: '1'\nsteps:\n  - name: foo\n    image: alpine\n    pull: always\n");
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoCommands { step: "foo".into() })
    );
    assert_eq!(at(&e), (3, 5));
    assert_eq!(
        e.to_string(),
        ".vela.yml:3:5: Vela refuses this pipeline: no commands, environment, parameters, \
         secrets or template provided for step foo"
    );
    // Empty ones count as none (`len(...) == 0`), and so does `detach: false`; a stage's
    // steps are checked too.
    for nothing in [
        "commands: []",
        "commands: ~",
        "commands:",
        "secrets: ~",
        "environment: {}",
        "parameters: {}",
        "secrets: []",
        // go-yaml v3.0.4 drops a null item from a `[]string` (decode.go:749-759), so
        // these lists are empty (checked with Vela's ParseYAML).
        "commands: [~]",
        "secrets: [~]",
        "environment: [~]",
        "detach: false",
    ] {
        let text =
            format!("version: '1'\nsteps:\n  - name: foo\n    image: alpine\n    {nothing}\n");
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::NoCommands { step: "foo".into() }),
            "{nothing}"
        );
    }
    let e = refused(
        "version: '1'\nstages:\n  build:\n    steps:\n      - {name: a, image: alpine, commands: [x]}\n      - {name: b, image: alpine}\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoCommands { step: "b".into() })
    );
    assert_eq!(at(&e), (6, 9));
    // Any one of commands, environment, parameters, secrets or `detach: true` is enough;
    // `raw.StringSlice` makes a lone string, even `""`, a one-item list.
    for extra in [
        "commands: [make]",
        "commands: \"\"",
        "commands: ''",
        "secrets: \"\"",
        "environment: {A: b}",
        "environment: [A=b]",
        "parameters: {a: b}",
        "secrets: [ s ]",
        "detach: true",
    ] {
        let text = format!("version: '1'\nsteps:\n  - name: foo\n    image: alpine\n    {extra}\n");
        let uses = read_pipeline(".vela.yml", &text).unwrap();
        assert_eq!(uses.len(), 1, "{extra}");
        assert_eq!(uses[0].disposition, Disposition::Check, "{extra}");
    }
    // `clone` and `init` (`constants.CloneName`, `constants.InitName`) need none, in
    // steps and in stages; no other name is exempt.
    let clone = "version: '1'\nsteps:\n  - name: clone\n    image: target/vela-git:v0.4.0\n";
    assert_eq!(read_pipeline(".vela.yml", clone).unwrap().len(), 1);
    let init = "version: '1'\nstages:\n  first:\n    steps:\n      - {name: init, image: alpine}\n      - {name: clone, image: target/vela-git:v0.4.0}\n";
    assert_eq!(read_pipeline(".vela.yml", init).unwrap().len(), 2);
    let e = refused("version: '1'\nsteps:\n  - {name: cloned, image: target/vela-git:v0.4.0}\n");
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoCommands {
            step: "cloned".into()
        })
    );
    // A template step has its template (`len(step.Template.Name) == 0` is false).
    let templated = "version: '1'\ntemplates:\n  - {name: go, source: github.example.com/foo/bar/go.yml, type: github}\nsteps:\n  - {name: build, image: golang:1.22, template: {name: go}}\n";
    assert!(read_pipeline(".vela.yml", templated).is_ok());
    // A service needs nothing to do.
    let service = "version: '1'\nservices:\n  - {name: db, image: postgres:16}\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n";
    assert_eq!(read_pipeline(".vela.yml", service).unwrap().len(), 2);
    // A service without an image.
    let e = refused(
        "version: '1'\nservices:\n  - name: db\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoImage {
            container: ContainerKind::Service,
            name: "db".into(),
            template: None
        })
    );
}

#[test]
fn templates_that_cannot_be_expanded() {
    // Without `templates:`, `ExpandSteps` does nothing, and the step has no image.
    let e = refused("version: '1'\nsteps:\n  - name: lint\n    template:\n      name: golangci\n");
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoImage {
            container: ContainerKind::Step,
            name: "lint".into(),
            template: Some("golangci".into())
        })
    );
    assert_eq!(at(&e), (3, 5));
    // A template `templates:` does not declare.
    let e = refused(
        "version: '1'\ntemplates:\n  - {name: gradle, source: github.example.com/foo/bar/template.yml, type: github}\nsteps:\n  - name: sample\n    template:\n      name: maven\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::MissingTemplate {
            template: "maven".into(),
            step: "sample".into()
        })
    );
    assert_eq!(at(&e), (7, 13));
    // compiler/native/testdata/invalid_type.yml: `gradle` twice, the last of `type: bla`.
    let text = "\
version: \"1\"

metadata:
  os: linux

templates:
  - name: gradle
    source: github.example.com/foo/bar/template.yml
    type: github
  - name: gradle
    source: github.example.com/foo/bar/template.yml
    type: bla

steps:
  - name: sample
    template:
      name: gradle
      vars:
        image: openjdk:latest
  - name: docker
    image: plugins/docker:18.09
    parameters:
      registry: index.docker.io
    pull: true
";
    let e = refused(text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::UnsupportedTemplateType {
            template: "gradle".into(),
            template_type: "bla".into()
        })
    );
    assert_eq!(at(&e), (12, 11));
    // The first definition alone is fine: the template step is skipped, the other checked.
    let ok = text.replace(
        "  - name: gradle\n    source: github.example.com/foo/bar/template.yml\n    type: bla\n",
        "",
    );
    let uses = read_pipeline(".vela.yml", &ok).unwrap();
    assert!(matches!(uses[0].disposition, Disposition::Skip(_)));
    assert_eq!(uses[1].disposition, Disposition::Check);
    // render_inline with a step that names a template (validate_test.go
    // `RenderInLineStepTemplate`).
    let e = refused(
        "version: '1'\nmetadata:\n  render_inline: true\ntemplates:\n  - {name: golang, source: github.example.com/github/octocat/golang_inline_steps.yml, type: github}\nsteps:\n  - name: build\n    template:\n      name: golang\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::RenderInlineTemplateStep {
            step: "build".into(),
            stage: None
        })
    );
}

#[test]
fn environment_values_vela_cannot_decode() {
    let base = "version: '1'\nsteps:\n  - name: a\n    image: alpine\n    commands: [x]\n";
    // A mapping's value that is a mapping, and one that is a list.
    let e = refused(&format!(
        "{base}    environment:\n      NESTED: {{ a: b }}\n"
    ));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::Environment {
            variable: Some("NESTED".into()),
            found: "mapping".into()
        })
    );
    assert_eq!(at(&e), (7, 15));
    let e = refused(&format!("{base}    environment:\n      LIST: [ a, b ]\n"));
    assert_eq!(at(&e), (7, 13));
    // A list item without `=`, in the pipeline's own environment.
    let e = refused(&format!(
        "environment:\n  - GRADLE_USER_HOME=.gradle\n  - GRADLE_OPTS\n{base}"
    ));
    assert!(
        matches!(
            e.refusal.as_deref(),
            Some(Refusal::Environment { variable: None, .. })
        ),
        "{e}"
    );
    assert_eq!(at(&e), (3, 5));
    assert!(
        e.to_string()
            .contains("unable to unmarshal into StringSliceMap"),
        "{e}"
    );
    // Scalars of any type are strings to go-yaml.
    let uses = read_pipeline(
        ".vela.yml",
        &format!("{base}    environment:\n      N: 1\n      B: true\n      E:\n"),
    )
    .unwrap();
    assert_eq!(uses.len(), 1);
}

#[test]
fn a_compiled_build_field_of_the_wrong_json_type() {
    let text = r#"{
  "id": "octocat_hello-world_1",
  "steps": [
    { "id": "step_a", "name": "a", "image": 5, "environment": {} }
  ]
}"#;
    let e = read_pipeline("build.json", text).unwrap_err();
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::WrongType {
            field: "steps[0].image".into(),
            expected: "string",
            found: "number".into(),
            value: None,
            json: true
        })
    );
    assert_eq!(at(&e), (4, 45));
    let e = read_pipeline(
        "build.json",
        r#"{"id": "x", "steps": [{"name": "a", "image": "alpine", "environment": {"N": 1}}]}"#,
    )
    .unwrap_err();
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::WrongType { field, .. }) if field == "steps[0].environment.N"),
        "{e}"
    );
    // The CLI's YAML form of a build is read as go-yaml reads it: a number is a string.
    let uses = read_pipeline("build.yml", "id: x\nsteps:\n  - {name: a, image: 5}\n").unwrap();
    assert_eq!(uses[0].image, "5");
}

#[test]
fn a_string_slice_with_a_mapping_in_it_is_refused_as_the_decoder_refuses_it() {
    // go-vela/vela-tutorials' .vela.yml (the held-out corpus): `- echo foo:` is a mapping,
    // and `raw.StringSlice` takes only a string or a list of strings.
    let e = refused(
        "version: \"1\"\nsteps:\n  - name: invalid\n    image: alpine:latest\n    commands:\n      - echo foo:\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::Decode {
            field: "steps[0].commands[0]".into(),
            failure: DecodeFailure::StringSlice,
        })
    );
    assert_eq!(at(&e), (6, 9));
    // A service's entrypoint that is a mapping, and a stage's `needs` with a list in it.
    let e = refused(
        "version: \"1\"\nservices:\n  - name: db\n    image: postgres:16\n    entrypoint: {sh: -c}\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
    );
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::Decode { field, failure: DecodeFailure::StringSlice }) if field == "services[0].entrypoint"),
        "{e}"
    );
    assert_eq!(at(&e), (5, 17));
    let e = refused(
        "version: \"1\"\nstages:\n  test:\n    needs: [[build]]\n    steps:\n      - {name: a, image: alpine, commands: [x]}\n",
    );
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::Decode { field, failure: DecodeFailure::StringSlice }) if field == "stages.test.needs[0]"),
        "{e}"
    );
    // A scalar and a list of scalars (numbers and nulls too) are what it takes.
    let uses = read_pipeline(
        ".vela.yml",
        "version: \"1\"\nsteps:\n  - {name: a, image: alpine, commands: make, entrypoint: [sh, 1, ~]}\n",
    )
    .expect("read");
    assert_eq!(uses.len(), 1);
}

#[test]
fn a_stage_that_needs_itself() {
    // validate.go `validateYAMLStages`: the stage's name is its `name:`, else its key.
    for (text, name, line) in [
        (
            "version: \"1\"\nstages:\n  s:\n    needs: [s]\n    steps:\n      - {name: a, image: alpine:3.19, commands: [echo]}\n",
            "s",
            4,
        ),
        (
            "version: \"1\"\nstages:\n  one:\n    name: x\n    needs: x\n    steps:\n      - {name: a, image: alpine:3.19, commands: [echo]}\n",
            "x",
            5,
        ),
    ] {
        let e = refused(text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::StageNeedsItself { name: name.into() })
        );
        assert_eq!(at(&e).0, line);
    }
    // Needing another stage is fine.
    let ok = "version: \"1\"\nstages:\n  a:\n    steps:\n      - {name: a, image: alpine:3.19, commands: [echo]}\n  b:\n    needs: [a]\n    steps:\n      - {name: b, image: alpine:3.19, commands: [echo]}\n";
    assert_eq!(read_pipeline(".vela.yml", ok).expect("reads").len(), 2);
}

#[test]
fn two_steps_reporting_as_one_name() {
    // validate.go `validatePipelineContainers`.
    let text = "version: \"1\"\nsteps:\n  - {name: a, image: alpine:3.19, commands: [echo], report_as: x}\n  - {name: b, image: alpine:3.18, commands: [echo], report_as: x}\n";
    let e = refused(text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::DuplicateReportAs {
            report_as: "x".into(),
            step: "b".into(),
            targeted_by: "a".into()
        })
    );
    assert_eq!(at(&e).0, 4);
    let ok = "version: \"1\"\nsteps:\n  - {name: a, image: alpine:3.19, commands: [echo], report_as: x}\n  - {name: b, image: alpine:3.18, commands: [echo], report_as: y}\n";
    assert_eq!(read_pipeline(".vela.yml", ok).expect("reads").len(), 2);
}

#[test]
fn a_template_format_vela_does_not_render() {
    // expand.go `mergeTemplate`: go, golang, starlark or none.
    let text = |format: &str| {
        format!(
            "version: \"1\"\ntemplates:\n  - name: go\n    source: github.com/x/y/go.yml\n    type: github\n    format: {format}\nsteps:\n  - name: a\n    template:\n      name: go\n  - {{name: b, image: alpine:3.18, commands: [echo]}}\n"
        )
    };
    let e = refused(&text("jsonnet"));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::UnsupportedTemplateFormat {
            template: "go".into(),
            template_format: "jsonnet".into()
        })
    );
    assert_eq!(at(&e), (6, 13));
    for format in ["go", "golang", "starlark"] {
        let uses = read_pipeline(".vela.yml", &text(format)).expect(format);
        assert_eq!(uses.len(), 2, "{format}");
    }
}

#[test]
fn fields_of_the_wrong_type_outside_containers_refuse_the_file() {
    // internal/yaml.go decodes the whole file into yaml.Build (go.yaml.in/yaml/v3): a
    // field of the wrong type fails it, at the value.
    let step = "steps:\n  - {name: a, image: alpine:3.19, commands: [echo]}\n";
    // Vela's words are go.yaml.in/yaml/v3's type errors (`decode.go` `terror`): the tag,
    // the value, the Go type.
    for (extra, field, expected, found, value, line, column) in [
        (
            "secrets: [x]\n",
            "secrets[0]",
            "yaml.Secret",
            "!!str",
            Some("`x`"),
            4,
            11,
        ),
        (
            "secrets: [{name: a, origin: [x]}]\n",
            "secrets[0].origin",
            "yaml.Origin",
            "!!seq",
            None,
            4,
            29,
        ),
        (
            "metadata: [x]\n",
            "metadata",
            "yaml.Metadata",
            "!!seq",
            None,
            4,
            11,
        ),
        (
            "worker: [x]\n",
            "worker",
            "yaml.Worker",
            "!!seq",
            None,
            4,
            9,
        ),
        (
            "worker: {flavor: [x]}\n",
            "worker.flavor",
            "string",
            "!!seq",
            None,
            4,
            18,
        ),
        (
            "metadata: {render_inline: \"true\"}\n",
            "metadata.render_inline",
            "bool",
            "!!str",
            Some("`true`"),
            4,
            27,
        ),
        (
            "metadata: {template: 1}\n",
            "metadata.template",
            "bool",
            "!!int",
            Some("`1`"),
            4,
            22,
        ),
        (
            "secrets: {a: b}\n",
            "secrets",
            "[]*yaml.Secret",
            "!!map",
            None,
            4,
            10,
        ),
    ] {
        let text = format!("version: \"1\"\n{step}{extra}");
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::WrongType {
                field: field.into(),
                expected,
                found: found.into(),
                value: value.map(str::to_owned),
                json: false,
            }),
            "{extra}"
        );
        assert_eq!(at(&e), (line, column), "{extra}");
    }
    // yaml.v3 takes YAML 1.1's words into a typed bool, quoted or not: `yes` is true.
    for yes in ["yes", "\"yes\"", "On", "true"] {
        let text = format!("version: \"1\"\nmetadata: {{render_inline: {yes}}}\n{step}");
        assert_eq!(
            read_pipeline(".vela.yml", &text).expect("reads").len(),
            1,
            "{yes}"
        );
    }
}

/// `n` steps, each `extra` (a YAML fragment, `{i}` its number) added, in a stage
/// `s1` and then `s2` when `stages` (half each), else under `steps:`.
fn many_steps(n: usize, extra: &str, stages: bool) -> String {
    let step = |i: usize, indent: &str| {
        format!(
            "{indent}- name: s{i}\n{indent}  image: alpine:3.19\n{indent}  commands: [echo]\n{}",
            extra
                .replace("{i}", &i.to_string())
                .lines()
                .map(|l| format!("{indent}  {l}\n"))
                .collect::<String>()
        )
    };
    let mut text = String::from("version: \"1\"\n");
    if stages {
        text.push_str("stages:\n  s1:\n    steps:\n");
        for i in 1..=n / 2 {
            text.push_str(&step(i, "      "));
        }
        text.push_str("  s2:\n    steps:\n");
        for i in n / 2 + 1..=n {
            text.push_str(&step(i, "      "));
        }
    } else {
        text.push_str("steps:\n");
        for i in 1..=n {
            text.push_str(&step(i, "  "));
        }
    }
    text
}

/// The line of the `n`th occurrence of `needle` in `text`, from 1.
fn line_of(text: &str, needle: &str, n: usize) -> usize {
    let mut seen = 0;
    for (i, line) in text.lines().enumerate() {
        if line.contains(needle) {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    panic!("no {n}th {needle:?}")
}

#[test]
fn more_than_ten_report_as_steps() {
    // validate.go `validatePipelineContainers`: `reportCount > constants.ReportStepStatusLimit`
    // (10, constants/limit.go), over `steps:`, and over all stages' steps together.
    for stages in [false, true] {
        let text = many_steps(11, "report_as: r{i}", stages);
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::ReportAsLimit {
                step: "s11".into(),
                stage: stages.then(|| "s2".into()),
                limit: 10,
            }),
            "stages: {stages}"
        );
        assert_eq!(at(&e).0, line_of(&text, "report_as:", 11));
        assert_eq!(
            read_pipeline(".vela.yml", &many_steps(10, "report_as: r{i}", stages))
                .expect("ten")
                .len(),
            10
        );
    }
    // A step that some builds skip is not counted (the purge decides).
    let text = many_steps(11, "report_as: r{i}", false).replace(
        "  report_as: r11\n",
        "  report_as: r11\n    ruleset: {branch: main}\n",
    );
    assert_eq!(read_pipeline(".vela.yml", &text).expect("reads").len(), 11);
    // `clone` and `init` are not counted.
    let text = many_steps(11, "report_as: r{i}", false).replace("name: s1\n", "name: clone\n");
    assert_eq!(read_pipeline(".vela.yml", &text).expect("reads").len(), 11);
}

#[test]
fn git_token_limits() {
    // validate.go `validatePipelineContainers`: `GitTokenRepoLimit` and
    // `GitTokenRequestLimit` (both 10, constants/limit.go).
    let repos = |n: usize| {
        (0..n)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = many_steps(
        1,
        &format!("git:\n  token:\n    repositories: [{}]", repos(11)),
        false,
    );
    let e = refused(&text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::GitTokenRepositories {
            step: "s1".into(),
            stage: None,
            limit: 10,
            counted: 11,
        })
    );
    assert_eq!(at(&e), (line_of(&text, "repositories:", 1), 23));
    let ten = many_steps(
        1,
        &format!("git:\n  token:\n    repositories: [{}]", repos(10)),
        false,
    );
    assert_eq!(
        read_pipeline(".vela.yml", &ten)
            .expect("ten repositories")
            .len(),
        1
    );

    let one = "git:\n  token:\n    repositories: [a]";
    for stages in [false, true] {
        let text = many_steps(11, one, stages);
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::GitTokenLimit {
                step: "s11".into(),
                stage: stages.then(|| "s2".into()),
                limit: 10,
            })
        );
        assert_eq!(at(&e).0, line_of(&text, "repositories:", 11));
        assert_eq!(
            read_pipeline(".vela.yml", &many_steps(10, one, stages))
                .expect("ten")
                .len(),
            10
        );
    }
    // Permissions alone are no token request (`len(ctn.Git.Token.Repositories) > 0`).
    let text = many_steps(
        11,
        "git:\n  token:\n    permissions: {contents: read}",
        false,
    );
    assert_eq!(read_pipeline(".vela.yml", &text).expect("reads").len(), 11);
}

#[test]
fn a_step_envsubst_cannot_parse_anywhere_in_it() {
    use pullcheck_input::envsubst::SubstError;
    // compiler/native/substitute.go `SubstituteSteps`: `envsubst.Eval` over the whole
    // step as YAML. The forms and errors are drone/envsubst v1.0.3's (parse/parse.go;
    // the accepted ones are values of its eval_test.go `TestExpand`), as its `Eval`
    // answers them.
    let table: &[(&str, Option<SubstError>)] = &[
        ("echo ${FOO-bar}", Some(SubstError::MissingClosingBrace)),
        ("echo ${FOO", Some(SubstError::MissingClosingBrace)),
        ("echo ${ARR[@]}", Some(SubstError::MissingClosingBrace)),
        ("echo ${FOO?x}", Some(SubstError::MissingClosingBrace)),
        ("echo ${FOO+x}", Some(SubstError::MissingClosingBrace)),
        ("echo ${FOO }", Some(SubstError::MissingClosingBrace)),
        ("echo ${}", Some(SubstError::VariableName)),
        ("echo ${ FOO}", Some(SubstError::VariableName)),
        ("echo ${-a}", Some(SubstError::VariableName)),
        ("echo ${#}", Some(SubstError::BadSubstitution)),
        ("echo ${FOO:}", Some(SubstError::FuncSubstitution)),
        ("echo ${FOO#}", Some(SubstError::FuncSubstitution)),
        ("echo ${FOO:-${BAR}", Some(SubstError::FuncSubstitution)),
        ("echo ${var:=xyz}", None),
        ("echo ${var=xyz}", None),
        ("echo ${FOO:-bar} ${FOO:?bar} ${FOO:+bar}", None),
        ("echo ${#var01} ${var01^} ${var01^^} ${var01,,}", None),
        ("echo ${path_name:11} ${path_name:11:5}", None),
        ("echo ${FOO/a/b} ${FOO##*/} ${FOO%%.*}", None),
        ("echo ${FOO:-${BAR}}", None),
        ("echo $FOO $$ $${FOO}", None),
        ("echo ${FOO:1x} ${FOO:1:x}", None),
    ];
    for (form, error) in table {
        let text = format!(
            "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    commands:\n      - {form}\n  - name: b\n    image: alpine:3.18\n    commands: [echo]\n"
        );
        match (read_pipeline(".vela.yml", &text), error) {
            (Ok(uses), None) => assert_eq!(uses.len(), 2, "{form}"),
            (Err(e), Some(error)) => {
                assert_eq!(
                    e.refusal.as_deref(),
                    Some(&Refusal::Substitution {
                        step: "a".into(),
                        stage: None,
                        error: *error,
                    }),
                    "{form}"
                );
                // At the `${` that does not parse: `      - echo ${`.
                let column = 9 + form.find("${").expect("an expression");
                assert_eq!(at(&e), (6, column), "{form}");
            }
            (got, want) => panic!("{form}: {got:?}, expected {want:?}"),
        }
    }

    // Anywhere in the step: image, environment, parameters, a stage step; the
    // pipeline's environment when steps get it.
    let cases = [
        (
            "version: '1'\nsteps:\n  - name: a\n    image: alpine:${FOO-v1}\n    commands: [echo]\n",
            (4, 19),
        ),
        (
            "version: '1'\nsteps:\n  - name: a\n    image: alpine:3.19\n    environment: {X: '${X'}\n    commands: [echo]\n",
            (5, 22),
        ),
        (
            "version: '1'\nsteps:\n  - name: a\n    image: alpine:3.19\n    parameters:\n      list: [a, '${}']\n",
            (6, 17),
        ),
        (
            "version: '1'\nstages:\n  t:\n    steps:\n      - name: a\n        image: alpine:3.19\n        commands: [\"${A[0]}\"]\n",
            (7, 20),
        ),
        (
            "version: '1'\nenvironment:\n  G: ${G-x}\nsteps:\n  - name: a\n    image: alpine:3.19\n    commands: [echo]\n",
            (3, 6),
        ),
    ];
    for (text, want) in cases {
        let e = refused(text);
        assert!(
            matches!(e.refusal.as_deref(), Some(Refusal::Substitution { step, .. }) if step == "a"),
            "{text}: {e}"
        );
        assert_eq!(at(&e), want, "{text}");
    }

    // Not substituted by the compiler: services, secret origins, unknown keys, the
    // pipeline's environment when `metadata.environment` keeps it from steps.
    let read = [
        "version: '1'\nservices:\n  - name: s\n    image: alpine:3.19\n    commands: [\"echo ${FOO-bar}\"]\nsteps:\n  - {name: a, image: alpine:3.18, commands: [echo]}\n",
        "version: '1'\nsecrets:\n  - origin:\n      name: o\n      image: alpine:3.19\n      parameters: {x: '${X-y}'}\nsteps:\n  - {name: a, image: alpine:3.18, commands: [echo]}\n",
        "version: '1'\nsteps:\n  - {name: a, image: alpine:3.18, commands: [echo], notes: '${X-y}'}\n",
        "version: '1'\nmetadata:\n  environment: [services]\nenvironment: {G: '${G-x}'}\nsteps:\n  - {name: a, image: alpine:3.18, commands: [echo]}\n",
    ];
    for text in read {
        assert!(read_pipeline(".vela.yml", text).is_ok(), "{text}");
    }
}

#[test]
fn an_image_that_is_a_list_refuses_the_file() {
    // Step.Image is a string: yaml.v3 refuses `image: [alpine]`, in steps, stage steps,
    // services and secret origins alike.
    for (text, field, line) in [
        (
            "version: \"1\"\nsteps:\n  - name: a\n    image: [alpine]\n    commands: [x]\n",
            "steps[0].image",
            4,
        ),
        (
            "version: \"1\"\nstages:\n  s:\n    steps:\n      - {name: a, image: {a: b}, commands: [x]}\n",
            "stages.s.steps[0].image",
            5,
        ),
        (
            "version: \"1\"\nservices:\n  - {name: db, image: [postgres]}\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
            "services[0].image",
            3,
        ),
    ] {
        let e = refused(text);
        let Some(Refusal::WrongType {
            field: got,
            expected,
            json,
            ..
        }) = e.refusal.as_deref()
        else {
            panic!("{e:?}");
        };
        assert_eq!((got.as_str(), *expected, *json), (field, "string", false));
        assert_eq!(at(&e).0, line);
    }
}

#[test]
fn a_substituted_value_that_changes_the_step_yaml() {
    // substitute.go `SubstituteSteps` substitutes the step's YAML text (yaml.v3 writes
    // `image: R/app:${TAG}` plain) and decodes it again.
    let text = |tag: &str, image: &str| {
        format!(
            "version: \"1\"\nsteps:\n  - name: a\n    image: {image}\n    environment:\n      TAG: {tag:?}\n    commands: [echo]\n"
        )
    };
    // ` #` starts a comment: the image is `alpine:v1`.
    let uses = read_pipeline(".vela.yml", &text("v1 #c", "alpine:${TAG}")).expect("reads");
    assert_eq!(uses[0].substituted.as_deref(), Some("alpine:v1"));
    assert_eq!(uses[0].disposition, Disposition::Check);
    // Trailing blanks go too.
    let uses = read_pipeline(".vela.yml", &text("v1  ", "alpine:${TAG}")).expect("reads");
    assert_eq!(uses[0].substituted.as_deref(), Some("alpine:v1"));
    // `: ` makes a mapping where a string was: the decode fails.
    for (tag, image) in [
        ("v1: x", "alpine:${TAG}"),
        ("v1:", "alpine:${TAG}"),
        ("[alpine]", "${TAG}"),
        ("*x", "${TAG}"),
        ("'alpine", "${TAG}"),
    ] {
        let e = refused(&text(tag, image));
        assert!(
            matches!(
                e.refusal.as_deref(),
                Some(Refusal::SubstitutedStep { step, field, .. }) if step == "a" && field == "image"
            ),
            "{tag}: {e}"
        );
        assert_eq!(at(&e), (4, 12), "{tag}");
    }
    // A `#` with no blank before it, and `:` followed by a non-blank, stay.
    let uses = read_pipeline(".vela.yml", &text("v1#c", "alpine:${TAG}")).expect("reads");
    assert_eq!(uses[0].substituted.as_deref(), Some("alpine:v1#c"));
    let uses = read_pipeline(".vela.yml", &text("3.19", "${TAG:-x}:${TAG}")).expect("reads");
    assert_eq!(uses[0].substituted.as_deref(), Some("3.19:3.19"));
}

#[test]
fn a_null_or_non_mapping_container_item_refuses_the_file() {
    // StepSlice/ServiceSlice.UnmarshalYAML: "invalid step with nil content found";
    // SecretSlice.UnmarshalYAML dereferences a nil secret. Each at the item.
    let ok = "  - {name: a, image: alpine, commands: [x]}\n";
    for (text, container, field, line_col) in [
        (
            format!("version: '1'\nsteps:\n{ok}  -\n"),
            ContainerKind::Step,
            "steps[1]",
            (4, 4),
        ),
        (
            format!("version: '1'\nservices:\n  - ~\nsteps:\n{ok}"),
            ContainerKind::Service,
            "services[0]",
            (3, 5),
        ),
        (
            format!("version: '1'\nstages:\n  s:\n    steps:\n      - ~\n    {ok}"),
            ContainerKind::Step,
            "stages.s.steps[0]",
            (5, 9),
        ),
        (
            format!("version: '1'\nsecrets: [~]\nsteps:\n{ok}"),
            ContainerKind::Secret,
            "secrets[0]",
            (2, 11),
        ),
    ] {
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::NullItem {
                container,
                field: field.into()
            }),
            "{text}"
        );
        assert_eq!(at(&e), line_col, "{text}");
    }
    // A step or service that is not a mapping is go-yaml's type error.
    for (text, field, line_col) in [
        ("version: '1'\nsteps: [x]\n".to_owned(), "steps[0]", (2, 9)),
        (
            format!("version: '1'\nservices:\n  - [db]\nsteps:\n{ok}"),
            "services[0]",
            (3, 5),
        ),
        (
            "version: '1'\nstages:\n  s:\n    steps: [x, {name: a, image: alpine, commands: [x]}]\n"
                .to_owned(),
            "stages.s.steps[0]",
            (4, 13),
        ),
    ] {
        let e = refused(&text);
        assert!(
            matches!(e.refusal.as_deref(), Some(Refusal::WrongType { field: f, expected, .. }) if f == field && expected.starts_with("yaml.")),
            "{text}: {e}"
        );
        assert_eq!(at(&e), line_col, "{text}");
    }
}

#[test]
fn an_empty_stage_name_is_the_stage_s_key() {
    // stage.go `StageSlice.UnmarshalYAML`: `if len(stage.Name) == 0` the key is the name,
    // so `name: ""` is as no `name:` at all.
    let e = refused(
        "version: \"1\"\nstages:\n  build:\n    name: \"\"\n    needs: [build]\n    steps:\n      - {name: a, image: alpine:3.19, commands: [echo]}\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::StageNeedsItself {
            name: "build".into()
        })
    );
    assert_eq!(at(&e).0, 5);
    // Two stages with `name: ""` are two stages (their keys), each the origin's stage,
    // and a step name in each is counted once per stage.
    let text = "version: \"1\"\nstages:\n  one:\n    name: \"\"\n    steps:\n      - {name: a, image: alpine:3.19, commands: [echo]}\n  two:\n    name: \"\"\n    steps:\n      - {name: a, image: alpine:3.18, commands: [echo]}\n";
    let uses = read_pipeline(".vela.yml", text).expect("reads");
    let stages: Vec<Option<&str>> = uses.iter().map(|u| u.origin.stage.as_deref()).collect();
    assert_eq!(stages, [Some("one"), Some("two")]);
    assert!(uses.iter().all(|u| u.disposition == Disposition::Check));
}

#[test]
fn names_and_report_as_with_a_variable_are_not_compared_as_written() {
    // compile.go substitutes each step (`SubstituteSteps`, name and report_as included)
    // before validate.go compares names and `report_as`: one anchored step per `GOOS` is
    // two steps, `build-linux` and `build-darwin` (a third review's dn04 and dn03).
    let matrix = "version: \"1\"\nx-build: &build\n  name: build-${GOOS}\n  image: alpine:3.19\n  \
                  commands: [go build ./...]\nsteps:\n  - <<: *build\n    environment: {GOOS: linux}\n  \
                  - <<: *build\n    environment: {GOOS: darwin}\n";
    let uses = read_pipeline(".vela.yml", matrix).expect("Vela accepts it");
    assert_eq!(uses.len(), 2);
    assert!(uses.iter().all(|u| u.disposition == Disposition::Check));
    let report_as = "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    \
                     report_as: check-${GOOS}\n    environment: {GOOS: linux}\n    commands: [echo]\n  \
                     - name: b\n    image: alpine:3.20\n    report_as: check-${GOOS}\n    \
                     environment: {GOOS: darwin}\n    commands: [echo]\n";
    assert_eq!(
        read_pipeline(".vela.yml", report_as)
            .expect("Vela accepts it")
            .len(),
        2
    );
    // Written the same without a variable: still refused.
    let e = refused(&matrix.replace("build-${GOOS}", "build"));
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::DuplicateName { .. })),
        "{e}"
    );
    // The reverse: names that substitute to one name are refused, as Vela compares
    // them after substituting with each step's environment.
    let e = refused(&matrix.replace("GOOS: darwin", "GOOS: linux"));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::DuplicateName {
            container: ContainerKind::Step,
            name: "build-linux".into(),
            stage: None,
            first: Some((7, 9)),
        })
    );
    // At the second's `<<: *build`, where its name is used (written at 3:9).
    assert_eq!(at(&e), (9, 9));
    // A name written as another substitutes to: `build-linux` and `build-${GOOS}`.
    let e = refused(
        "version: \"1\"\nsteps:\n  - {name: build-linux, image: alpine, commands: [x]}\n  \
         - {name: \"build-${GOOS}\", image: alpine, commands: [x], environment: {GOOS: linux}}\n",
    );
    assert_eq!(at(&e), (4, 12));
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::DuplicateName { name, .. }) if name == "build-linux"),
        "{e}"
    );
    // report_as too.
    let e = refused(&report_as.replace("GOOS: darwin", "GOOS: linux"));
    assert!(
        matches!(
            e.refusal.as_deref(),
            Some(Refusal::DuplicateReportAs { report_as, step, targeted_by })
                if report_as == "check-linux" && step == "b" && targeted_by == "a"
        ),
        "{e}"
    );
    // A `${` the compiler leaves in both names: an unknown variable stays `${NOWHERE}`,
    // a server variable has one value for every step (and wins over the step's own):
    // still equal, so refused, at the second's name (issue 24, D4).
    for (variable, name) in [
        ("${NOWHERE}", "build-${NOWHERE}"),
        ("${VELA_BUILD_NUMBER}", "build-${VELA_BUILD_NUMBER}"),
        ("$${GOOS}", "build-${GOOS}"),
    ] {
        let e = refused(&matrix.replace("${GOOS}", variable));
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::DuplicateName {
                container: ContainerKind::Step,
                name: name.into(),
                stage: None,
                first: Some((7, 9)),
            }),
            "{variable}"
        );
        assert_eq!(at(&e), (9, 9), "{variable}");
    }
    let e = refused(&report_as.replace("${GOOS}", "${VELA_BUILD_NUMBER}"));
    assert!(
        matches!(
            e.refusal.as_deref(),
            Some(Refusal::DuplicateReportAs { report_as, step, targeted_by })
                if report_as == "check-${VELA_BUILD_NUMBER}" && step == "b" && targeted_by == "a"
        ),
        "{e}"
    );
    assert_eq!(at(&e), (10, 16));
}

#[test]
fn container_and_metadata_fields_of_the_wrong_type() {
    // go-vela/server v0.28.8 `compiler/types/yaml/metadata.go` (lines 14–26): `clone` a
    // `*bool`, `auto_cancel` a `*CancelOptions` of `*bool`s; `step.go` (lines 22–42):
    // `pull`, `user`, `report_as` strings, `detach`, `privileged` bools; yaml.v3 refuses
    // the file at the value.
    let step = "steps:\n  - name: a\n    image: alpine:3.19\n    commands: [echo]\n";
    for (head, extra, field, expected, at_) in [
        (
            "metadata:\n  clone: \"maybe\"\n",
            "",
            "metadata.clone",
            "bool",
            (3, 10),
        ),
        (
            "metadata:\n  clone: [true]\n",
            "",
            "metadata.clone",
            "bool",
            (3, 10),
        ),
        (
            "metadata:\n  auto_cancel: true\n",
            "",
            "metadata.auto_cancel",
            "yaml.CancelOptions",
            (3, 16),
        ),
        (
            "metadata:\n  auto_cancel:\n    running: maybe\n",
            "",
            "metadata.auto_cancel.running",
            "bool",
            (4, 14),
        ),
        (
            "metadata:\n  auto_cancel: {pending: 1, default_branch: true}\n",
            "",
            "metadata.auto_cancel.pending",
            "bool",
            (3, 26),
        ),
        (
            "",
            "    pull: [always]\n",
            "steps[0].pull",
            "string",
            (6, 11),
        ),
        (
            "",
            "    pull: {when: always}\n",
            "steps[0].pull",
            "string",
            (6, 11),
        ),
        (
            "",
            "    privileged: \"true\"\n",
            "steps[0].privileged",
            "bool",
            (6, 17),
        ),
        ("", "    detach: 1\n", "steps[0].detach", "bool", (6, 13)),
        ("", "    user: [root]\n", "steps[0].user", "string", (6, 11)),
    ] {
        let text = format!("version: \"1\"\n{head}{step}{extra}");
        let e = refused(&text);
        let Some(Refusal::WrongType {
            field: got,
            expected: want,
            json,
            ..
        }) = e.refusal.as_deref()
        else {
            panic!("{text}: {e:?}");
        };
        assert_eq!(
            (got.as_str(), *want, *json),
            (field, expected, false),
            "{text}"
        );
        assert_eq!(at(&e), at_, "{text}");
    }
    // What yaml.v3 takes into a bool: YAML 1.1's words too; a service has no `detach`.
    for ok in [
        "version: \"1\"\nmetadata:\n  clone: no\n  auto_cancel: {running: yes, pending: false}\nsteps:\n  - {name: a, image: alpine, commands: [x], detach: on, privileged: False}\n",
        "version: \"1\"\nservices:\n  - {name: s, image: alpine, detach: maybe}\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n",
    ] {
        assert!(read_pipeline(".vela.yml", ok).is_ok(), "{ok}");
    }
}

#[test]
fn an_expression_split_over_two_commands_parses_as_in_the_whole_step() {
    use pullcheck_input::envsubst::SubstError;
    // substitute.go `SubstituteSteps` runs envsubst over the whole step's YAML: `${A:-`
    // opened in one command and closed in the next is one default, and parses.
    let text = "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    commands:\n      - echo ${A:-x\n      - y}\n";
    let uses = read_pipeline(".vela.yml", text).expect("Vela compiles it");
    assert_eq!(uses[0].disposition, Disposition::Check);
    // Never closed anywhere in the step: refused at the `${`.
    let e = refused(&text.replace("y}", "y"));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::Substitution {
            step: "a".into(),
            stage: None,
            error: SubstError::FuncSubstitution,
        })
    );
    assert_eq!(at(&e), (6, 14));
}

#[test]
fn pullcheck_s_own_substitution_limits_are_not_vela_s() {
    use pullcheck_input::envsubst::{MAX_DEPTH, SubstError};
    let deep = "${a=".repeat(MAX_DEPTH + 1) + &"}".repeat(MAX_DEPTH + 1);
    let text = format!(
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    commands:\n      - echo {deep}\n"
    );
    let e = refused(&text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::SubstitutionLimit {
            step: "a".into(),
            stage: None,
            error: SubstError::TooDeep,
        })
    );
    assert_eq!(at(&e), (6, 14));
    assert!(
        e.message
            .starts_with("pullcheck does not read this pipeline: "),
        "{e}"
    );
    let json = serde_json::to_value(e.refusal.as_deref().expect("refusal")).expect("json");
    assert_eq!(json["kind"], "substitution_limit");
    assert_eq!(json["error"], "too_deep");

    // A trim of a value over MAX_TRIM characters is its own bound, named as such
    // (rev24 review, D8: the message named two limits at once).
    let long = "y".repeat(pullcheck_input::envsubst::MAX_TRIM + 1);
    let text = format!(
        "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    environment: {{A: {long}}}\n    commands:\n      - echo ${{A#x}}\n"
    );
    let e = refused(&text);
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::SubstitutionLimit {
            step: "a".into(),
            stage: None,
            error: SubstError::TrimTooLong,
        })
    );
    let json = serde_json::to_value(e.refusal.as_deref().expect("refusal")).expect("json");
    assert_eq!(json["error"], "trim_too_long");
}

#[test]
fn a_negative_substring_length_panics_the_compiler() {
    // drone/envsubst v1.0.3 `funcs.go` `toSubstr` slices `s[pos:pos+length]`: a
    // negative length panics, known or unknown variable alike (the compiler gives an
    // unknown one as `${VAR}`).
    for (env, field, line) in [
        ("", "commands", 6),
        ("    environment: {VAR: abc}\n", "commands", 6),
    ] {
        let text = format!(
            "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    commands:\n      - echo ${{VAR:0:-1}}\n{env}"
        );
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::SubstringPanic {
                step: "a".into(),
                stage: None,
                field: field.into(),
            }),
            "{text}"
        );
        assert_eq!(at(&e).0, line);
        assert!(
            e.message
                .starts_with("Vela's compiler fails on this pipeline: "),
            "{e}"
        );
    }
    // In the image of a stage step too.
    let e = refused(
        "version: \"1\"\nstages:\n  s:\n    steps:\n      - name: b\n        image: alpine:${TAG:1:-2}\n        commands: [x]\n",
    );
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::SubstringPanic {
            step: "b".into(),
            stage: Some("s".into()),
            field: "image".into(),
        })
    );
    assert_eq!(at(&e), (6, 16));
    // A non-negative length does not panic.
    assert!(
        read_pipeline(
            ".vela.yml",
            "version: \"1\"\nsteps:\n  - {name: a, image: alpine, commands: [\"echo ${VAR:0:1}\"]}\n"
        )
        .is_ok()
    );
}

#[test]
fn a_double_quoted_command_a_value_breaks() {
    // yaml.v3 writes a multi-line command with a space before a line break
    // double-quoted (go.yaml.in/yaml/v3 v3.0.4 emitterc.go 1414–1428, 1066–1069); the
    // compiler substitutes a value into that text and decodes it again
    // (substitute.go lines 63–72). A value with a line break is inserted Go-quoted,
    // with its own `"`: the scalar ends there and the step no longer decodes.
    let text = |command: &str, value: &str| {
        format!(
            "version: \"1\"\nsteps:\n  - name: a\n    image: alpine:3.19\n    environment:\n      CERT: {value:?}\n    commands:\n      - {command:?}\n"
        )
    };
    for (command, value) in [
        ("echo \nprintf '%s' ${CERT}", "line1\nline2"),
        ("echo ${CERT} \nx", "say \"hi\""),
        ("echo ${CERT}\nx ", "C:\\dir"),
    ] {
        let e = refused(&text(command, value));
        assert!(
            matches!(
                e.refusal.as_deref(),
                Some(Refusal::SubstitutedStep { step, field, .. })
                    if step == "a" && field == "commands"
            ),
            "{command:?}: {e}"
        );
        assert_eq!(at(&e).0, 8, "{command:?}");
    }
    // Written as a literal block (no space before a line break), or a value with none
    // of `"`, `\` and line breaks: it decodes.
    for (command, value) in [
        ("echo\nprintf '%s' ${CERT}", "line1\nline2"),
        ("echo ${CERT} \nx", "plain"),
        ("echo ${CERT}\nx ", "C:\\n"),
    ] {
        assert!(
            read_pipeline(".vela.yml", &text(command, value)).is_ok(),
            "{command:?} {value:?}"
        );
    }
}

/// The typed fields of go-vela/server v0.28.8's `compiler/types/yaml`, decoded by
/// go.yaml.in/yaml/v3 v3.0.4: a value of the wrong type is its type error, with the
/// resolved tag, the value as `terror` quotes it and the Go type (`decode.go` lines
/// 350–363). Each row's words were checked against go-yaml v3.0.4 itself, built here
/// with copies of the Vela types involved (Go 1.19, standard library only).
#[test]
fn typed_fields_of_the_wrong_type_are_yaml_v3_type_errors() {
    let step = "steps:\n  - name: a\n    image: alpine:3.19\n    commands: [echo]\n";
    for (extra, field, expected, found, value, line_col) in [
        (
            "    parameters: 5\n",
            "steps[0].parameters",
            "map[string]interface {}",
            "!!int",
            Some("`5`"),
            (6, 17),
        ),
        (
            "    parameters: [a]\n",
            "steps[0].parameters",
            "map[string]interface {}",
            "!!seq",
            None,
            (6, 17),
        ),
        (
            "    git: x\n",
            "steps[0].git",
            "yaml.Git",
            "!!str",
            Some("`x`"),
            (6, 10),
        ),
        (
            "    git: .5\n",
            "steps[0].git",
            "yaml.Git",
            "!!float",
            Some("`.5`"),
            (6, 10),
        ),
        (
            "    git: {token: {repositories: x}}\n",
            "steps[0].git.token.repositories",
            "[]string",
            "!!str",
            Some("`x`"),
            (6, 33),
        ),
        (
            "    git: {token: {permissions: {a: [b]}}}\n",
            "steps[0].git.token.permissions.a",
            "string",
            "!!seq",
            None,
            (6, 36),
        ),
        (
            "    artifacts: x\n",
            "steps[0].artifacts",
            "yaml.Artifacts",
            "!!str",
            Some("`x`"),
            (6, 16),
        ),
        (
            "    artifacts: 1_000\n",
            "steps[0].artifacts",
            "yaml.Artifacts",
            "!!int",
            Some("`1_000`"),
            (6, 16),
        ),
        (
            "    template: 5\n",
            "steps[0].template",
            "yaml.StepTemplate",
            "!!int",
            Some("`5`"),
            (6, 15),
        ),
        (
            "    template: 12345678901\n",
            "steps[0].template",
            "yaml.StepTemplate",
            "!!int",
            Some("`1234567...`"),
            (6, 15),
        ),
        (
            "    detach: 2015-02-24\n",
            "steps[0].detach",
            "bool",
            "!!timestamp",
            Some("`2015-02-24`"),
            (6, 13),
        ),
        (
            "    detach: 09\n",
            "steps[0].detach",
            "bool",
            "!!float",
            Some("`09`"),
            (6, 13),
        ),
        (
            "    ulimits: [{name: n, soft: \"a\"}]\n",
            "steps[0].ulimits[0].soft",
            "int64",
            "!!str",
            Some("`a`"),
            (6, 31),
        ),
        (
            "    ruleset: {eval: [a], continue: maybe}\n",
            "steps[0].ruleset.eval",
            "string",
            "!!seq",
            None,
            (6, 21),
        ),
        (
            "    ruleset: {continue: maybe}\n",
            "steps[0].ruleset.continue",
            "bool",
            "!!str",
            Some("`maybe`"),
            (6, 25),
        ),
        (
            "    ruleset: {if: {eval: {a: b}}}\n",
            "steps[0].ruleset.if.eval",
            "string",
            "!!map",
            None,
            (6, 26),
        ),
    ] {
        let text = format!("version: \"1\"\n{step}{extra}");
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::WrongType {
                field: field.into(),
                expected,
                found: found.into(),
                value: value.map(str::to_owned),
                json: false,
            }),
            "{text}"
        );
        assert_eq!(at(&e), line_col, "{text}");
    }
    // A ruleset that is a scalar: the anonymous struct of `Rules.UnmarshalYAML`.
    let e = refused(&format!("version: \"1\"\n{step}    ruleset: x\n"));
    let Some(Refusal::WrongType {
        expected, found, ..
    }) = e.refusal.as_deref()
    else {
        panic!("{e:?}");
    };
    assert!(
        expected.starts_with("struct { Branch raw.StringSlice; "),
        "{expected}"
    );
    assert_eq!(found, "!!str");
    // Outside steps: a stage's `independent`, a template's `vars`, a deployment parameter.
    let stage = "version: \"1\"\nstages:\n  build:\n    independent: maybe\n    steps:\n      - {name: a, image: alpine, commands: [x]}\n";
    assert!(
        matches!(refused(stage).refusal.as_deref(), Some(Refusal::WrongType { field, expected: "bool", found, .. }) if field == "stages.build.independent" && found == "!!str"),
    );
    let tpl = format!(
        "version: \"1\"\ntemplates: [{{name: t, source: x, type: file, vars: [a]}}]\n{step}"
    );
    assert!(
        matches!(refused(&tpl).refusal.as_deref(), Some(Refusal::WrongType { field, expected: "map[string]interface {}", .. }) if field == "templates[0].vars"),
    );
    let dep = format!("version: \"1\"\n{step}deployment:\n  parameters:\n    region: {{min: x}}\n");
    assert!(
        matches!(refused(&dep).refusal.as_deref(), Some(Refusal::WrongType { field, expected: "int", .. }) if field == "deployment.parameters.region.min"),
    );
    // `yes`, `on`, a float into an int64 (truncated), a null: all taken.
    let ok = format!(
        "version: \"1\"\n{step}    detach: yes\n    ulimits: [{{name: n, soft: 1, hard: 1.5}}]\n    parameters: ~\n"
    );
    assert!(read_pipeline(".vela.yml", &ok).is_ok());
}

/// The errors of Vela's own `UnmarshalYAML` methods stop yaml.v3 at once, and are the
/// only error reported, even after a type error (checked against go-yaml v3.0.4:
/// `parameters: 5` then `ulimits: [nofile]` gives only the ulimit's error).
#[test]
fn a_custom_decoder_error_stops_the_decoding_and_wins() {
    let step = "steps:\n  - name: a\n    image: alpine:3.19\n    commands: [echo]\n";
    for (extra, field, failure) in [
        (
            "    ulimits: [nofile]\n",
            "steps[0].ulimits",
            DecodeFailure::UlimitEquals {
                ulimit: "nofile".into(),
            },
        ),
        (
            "    parameters: 5\n    ulimits: [nofile]\n",
            "steps[0].ulimits",
            DecodeFailure::UlimitEquals {
                ulimit: "nofile".into(),
            },
        ),
        (
            "    ulimits: nofile=1:2:3\n",
            "steps[0].ulimits",
            DecodeFailure::UlimitColons {
                ulimit: "nofile=1:2:3".into(),
            },
        ),
        (
            "    ulimits: nofile=x\n",
            "steps[0].ulimits",
            DecodeFailure::ParseInt {
                text: "x".into(),
                out_of_range: false,
            },
        ),
        (
            "    ulimits: nofile=99999999999999999999\n",
            "steps[0].ulimits",
            DecodeFailure::ParseInt {
                text: "99999999999999999999".into(),
                out_of_range: true,
            },
        ),
        (
            "    volumes: [a:b:c:d]\n",
            "steps[0].volumes",
            DecodeFailure::VolumeColons {
                volume: "a:b:c:d".into(),
            },
        ),
        (
            "    secrets: [{source: a}]\n",
            "steps[0].secrets[0]",
            DecodeFailure::NoSecretSourceOrTarget,
        ),
        (
            "    secrets: {a: b}\n",
            "steps[0].secrets",
            DecodeFailure::StepSecretSlice,
        ),
        (
            "    artifacts: {paths: {a: b}}\n",
            "steps[0].artifacts.paths",
            DecodeFailure::StringSlice,
        ),
    ] {
        let text = format!("version: \"1\"\n{step}{extra}");
        let e = refused(&text);
        assert_eq!(
            e.refusal.as_deref(),
            Some(&Refusal::Decode {
                field: field.into(),
                failure
            }),
            "{text}"
        );
    }
    // Vela's words (ulimit.go line 61).
    let e = refused(&format!("version: \"1\"\n{step}    ulimits: [nofile]\n"));
    assert_eq!(
        e.to_string(),
        ".vela.yml:6:15: Vela refuses this pipeline: unable to unmarshal yaml: ulimit nofile \
         must contain 1 `=` (equal) (at steps[0].ulimits)"
    );
    assert_eq!(
        refused(&format!("version: \"1\"\n{step}    parameters: 5\n")).to_string(),
        ".vela.yml:6:17: Vela refuses this pipeline: unable to unmarshal yaml: cannot \
         unmarshal !!int `5` into map[string]interface {} (at steps[0].parameters)"
    );
}

/// The JSON of the two decoder refusals, as the service's `refusal` carries them.
#[test]
fn decoder_refusals_serialize_with_their_facts() {
    let step = "steps:\n  - name: a\n    image: alpine:3.19\n    commands: [echo]\n";
    let e = refused(&format!("version: \"1\"\n{step}    parameters: 5\n"));
    assert_eq!(
        serde_json::to_value(e.refusal.as_deref().expect("refusal")).expect("json"),
        serde_json::json!({"kind": "wrong_type", "field": "steps[0].parameters",
            "expected": "map[string]interface {}", "found": "!!int", "value": "`5`",
            "json": false})
    );
    let e = refused(&format!("version: \"1\"\n{step}    ulimits: nofile=x\n"));
    assert_eq!(
        serde_json::to_value(e.refusal.as_deref().expect("refusal")).expect("json"),
        serde_json::json!({"kind": "decode", "field": "steps[0].ulimits",
            "failure": {"error": "parse_int", "text": "x", "out_of_range": false}})
    );
}

/// A compiled build's typed fields, as Go's encoding/json decodes `pipeline.Build`
/// (go-vela/server v0.28.8 `compiler/types/pipeline/container.go` lines 34–59,
/// `stage.go`, `build.go`). Each row's words were checked with Go 1.19's encoding/json
/// on structs of those field types.
#[test]
fn a_compiled_build_field_is_refused_as_encoding_json_refuses_it() {
    let build = |step: &str| {
        format!(r#"{{"id": "b", "steps": [{{"name": "a", "image": "alpine", {step}}}]}}"#)
    };
    for (text, field, expected, found) in [
        (
            build(r#""detach": "yes""#),
            "steps[0].detach",
            "bool",
            "string",
        ),
        (
            build(r#""privileged": 1"#),
            "steps[0].privileged",
            "bool",
            "number",
        ),
        (
            build(r#""number": "1""#),
            "steps[0].number",
            "int32",
            "string",
        ),
        (
            build(r#""number": 1.5"#),
            "steps[0].number",
            "int32",
            "number 1.5",
        ),
        (
            build(r#""number": 2147483648"#),
            "steps[0].number",
            "int32",
            "number 2147483648",
        ),
        (
            build(r#""commands": "make""#),
            "steps[0].commands",
            "[]string",
            "string",
        ),
        (
            build(r#""commands": [1]"#),
            "steps[0].commands[0]",
            "string",
            "number",
        ),
        (
            build(r#""entrypoint": {"a": 1}"#),
            "steps[0].entrypoint",
            "[]string",
            "object",
        ),
        (
            build(r#""directory": true"#),
            "steps[0].directory",
            "string",
            "bool",
        ),
        (
            build(r#""ruleset": "x""#),
            "steps[0].ruleset",
            "pipeline.Ruleset",
            "string",
        ),
        (
            build(r#""ulimits": "x""#),
            "steps[0].ulimits",
            "pipeline.UlimitSlice",
            "string",
        ),
        (
            build(r#""git": 5"#),
            "steps[0].git",
            "pipeline.Git",
            "number",
        ),
        (
            r#"{"id": "b", "token_exp": "1"}"#.to_owned(),
            "token_exp",
            "int64",
            "string",
        ),
        (
            r#"{"id": "b", "stages": [{"name": "s", "independent": "x", "steps": []}]}"#.to_owned(),
            "stages[0].independent",
            "bool",
            "string",
        ),
    ] {
        let e = read_pipeline("build.json", &text).expect_err(&text);
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
    }
    // encoding/json's words.
    let e = read_pipeline("build.json", &build(r#""detach": "yes""#)).unwrap_err();
    assert_eq!(
        e.message,
        "Vela refuses this pipeline: json: cannot unmarshal string into Go struct field \
         Container.steps.detach of type bool (at steps[0].detach)"
    );
    let text = r#"{"id": "b", "stages": [{"name": "s", "steps": [{"name": "a", "image": "alpine", "environment": {"N": 1}}]}]}"#;
    let e = read_pipeline("build.json", text).unwrap_err();
    assert!(
        e.message
            .contains("Go struct field Container.stages.steps.environment of type string"),
        "{e}"
    );
    // null decodes into anything; `true`, an int32, a list of strings are taken.
    let ok = build(r#""detach": true, "privileged": null, "number": 3, "commands": ["a", null]"#);
    assert_eq!(read_pipeline("build.json", &ok).expect("decodes").len(), 1);
}

/// Keys that `pipeline.Build` and `pipeline.Container` do not have are dropped by
/// encoding/json: whatever they hold (an image, a list of steps, a value of any type)
/// is never read, checked or refused.
#[test]
fn unknown_keys_of_a_compiled_build_are_not_walked() {
    let text = r#"{"id": "b",
        "extra": {"steps": [{"name": "x", "image": 5}], "image": "evil:1"},
        "steps": [{"name": "a", "image": "alpine:3.19",
                   "unknown": {"image": "hidden:1", "steps": [{"image": "deeper:1"}], "detach": "x"},
                   "Labels": [1, {"image": "no:1"}]}]}"#;
    let uses = read_pipeline("build.json", text).expect("reads");
    let images: Vec<&str> = uses.iter().map(|u| u.image.as_str()).collect();
    assert_eq!(images, ["alpine:3.19"]);
}

/// A null item of a list of strings is dropped, as go-yaml v3.0.4's `sequence()` keeps
/// only the items that decode and `null()` does not decode into a `string`
/// (decode.go:554-563, 749-759): Vela's ParseYAML accepts each of these, with the
/// other items only (`ulimits` `nofile=1`, `environment` `A=1`, `volumes` `/a:/b`).
#[test]
fn null_items_of_string_lists_are_dropped_as_yaml_v3_drops_them() {
    let base = "version: '1'\nsteps:\n  - name: a\n    image: alpine\n    commands: [x]\n";
    for extra in [
        "ulimits: [nofile=1, ~]",
        "environment: [A=1, ~]",
        "volumes: [/a:/b, ~]",
        "secrets: [foo, ~]",
        "commands: [echo, ~]",
        "entrypoint: [sh, ~]",
    ] {
        let text = if extra.starts_with("commands") {
            format!("version: '1'\nsteps:\n  - name: a\n    image: alpine\n    {extra}\n")
        } else {
            format!("{base}    {extra}\n")
        };
        let uses = read_pipeline(".vela.yml", &text).unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert_eq!(uses[0].disposition, Disposition::Check, "{extra}");
    }
    // The pipeline's own environment list too.
    let text = format!("environment: [A=1, ~]\n{base}");
    assert!(read_pipeline(".vela.yml", &text).is_ok());
}
