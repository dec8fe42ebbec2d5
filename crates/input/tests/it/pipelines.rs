//! Pipeline reading, on this crate's own fixtures (tests/fixtures/).

use std::path::{Path, PathBuf};

use pullcheck_input::{
    ContainerKind, DecodeFailure, Disposition, ImageUse, InputError, PullPolicy, Refusal, Skip,
    VELA_PULL_VALUES, read_pipeline, read_pipeline_file,
};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).expect("fixture exists")
}

fn read(name: &str) -> Vec<ImageUse> {
    read_pipeline(name, &fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn at(u: &ImageUse) -> (usize, usize) {
    (
        u.origin.line.expect("has a line"),
        u.origin.column.expect("has a column"),
    )
}

/// Line and column (1-based, characters) of the first occurrence of `needle`.
fn locate(text: &str, needle: &str) -> (usize, usize) {
    let byte = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not in text"));
    let before = &text[..byte];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..byte].chars().count() + 1)
}

/// Kind, name, image, policy and position of one use.
type Row<'a> = (ContainerKind, &'a str, &'a str, PullPolicy, (usize, usize));
/// Stage, name, image, policy and position of one stage step.
type StageRow<'a> = (
    Option<&'a str>,
    &'a str,
    &'a str,
    PullPolicy,
    (usize, usize),
);

fn row(u: &ImageUse) -> Row<'_> {
    (
        u.origin.kind,
        u.origin.name.as_str(),
        u.image.as_str(),
        u.policy,
        at(u),
    )
}

fn invalid(u: &ImageUse) -> String {
    match &u.disposition {
        Disposition::Invalid(problems) | Disposition::UnknownPolicy { problems, .. } => {
            pullcheck_input::Problem::join(problems)
        }
        other => panic!("{} should be invalid, is {other:?}", u.origin.name),
    }
}

fn skipped(u: &ImageUse) -> &Skip {
    match &u.disposition {
        Disposition::Skip(reason) => reason,
        other => panic!("{} should be skipped, is {other:?}", u.origin.name),
    }
}

fn error(text: &str) -> InputError {
    match read_pipeline("bad.yml", text) {
        Ok(uses) => panic!("should not read: {uses:?}"),
        Err(e) => e,
    }
}

#[test]
fn steps_with_every_pull_spelling() {
    use PullPolicy::*;
    let uses = read("steps.yml");
    let got: Vec<(&str, &str, PullPolicy, (usize, usize))> = uses
        .iter()
        .map(|u| (u.origin.name.as_str(), u.image.as_str(), u.policy, at(u)))
        .collect();
    assert_eq!(
        got,
        [
            ("install", "golang:1.22", Always, (6, 12)),
            ("test", "golang:1.22-alpine", Always, (10, 12)),
            ("lint", "ghcr.io/example/lint:v2", NotPresent, (14, 12)),
            (
                "build",
                "registry.example.com:5000/team/build:v1",
                Always,
                (18, 12)
            ),
            ("package", "alpine", NotPresent, (22, 12)),
            ("publish", "plugins/docker:18.09", OnStart, (26, 12)),
            ("notify", "localhost/notify", Never, (30, 12)),
            ("no-pull", "busybox", NotPresent, (34, 12)),
            ("empty-pull", "busybox:1.36", NotPresent, (37, 12)),
            ("null-pull", "busybox:1.37", NotPresent, (41, 12)),
            ("nameless", "nameless:1", NotPresent, (44, 12)),
        ]
    );
    for u in &uses {
        assert_eq!(u.disposition, Disposition::Check, "{}", u.origin.name);
        assert_eq!(u.origin.kind, ContainerKind::Step);
        assert_eq!(u.origin.stage, None);
        assert_eq!(u.origin.file.as_deref(), Some("steps.yml"));
    }
}

#[test]
fn stage_steps_keep_file_order_and_name_their_stage() {
    use PullPolicy::*;
    let uses = read("stages.yml");
    let got: Vec<StageRow> = uses
        .iter()
        .map(|u| {
            (
                u.origin.stage.as_deref(),
                u.origin.name.as_str(),
                u.image.as_str(),
                u.policy,
                at(u),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("zeta"), "first", "alpine:3.20", Always, (8, 16)),
            (Some("alpha"), "second", "golang:1.22", NotPresent, (16, 16)),
            (Some("alpha"), "third", "node:22", OnStart, (19, 16)),
            (Some("mid"), "fourth", "python:3.12", Never, (28, 16)),
        ]
    );
    assert!(uses.iter().all(|u| u.origin.kind == ContainerKind::Step));
}

#[test]
fn services_come_before_steps() {
    let uses = read("services.yml");
    let got: Vec<(ContainerKind, &str, PullPolicy, (usize, usize))> = uses
        .iter()
        .map(|u| (u.origin.kind, u.origin.name.as_str(), u.policy, at(u)))
        .collect();
    assert_eq!(
        got,
        [
            (
                ContainerKind::Service,
                "postgres",
                PullPolicy::NotPresent,
                (5, 12)
            ),
            (
                ContainerKind::Service,
                "redis",
                PullPolicy::Always,
                (10, 12)
            ),
            (ContainerKind::Step, "test", PullPolicy::Always, (15, 12)),
        ]
    );
}

#[test]
fn secret_origins_use_origin_pull() {
    let uses = read("secrets.yml");
    let got: Vec<Row> = uses.iter().map(row).collect();
    assert_eq!(
        got,
        [
            (
                ContainerKind::Step,
                "test",
                "alpine:3.20",
                PullPolicy::NotPresent,
                (5, 12)
            ),
            (
                ContainerKind::Secret,
                "vault",
                "target/secret-vault:v1",
                PullPolicy::Always,
                (21, 14)
            ),
            (
                ContainerKind::Secret,
                "aws",
                "target/secret-aws:v2",
                PullPolicy::OnStart,
                (30, 14)
            ),
            (
                ContainerKind::Secret,
                "vault-again",
                "target/secret-vault:v1",
                PullPolicy::NotPresent,
                (36, 14),
            ),
        ]
    );
    assert!(uses.iter().all(|u| u.disposition == Disposition::Check));
}

#[test]
fn anchors_aliases_and_merge_keys() {
    use PullPolicy::*;
    let uses = read("anchors.yml");
    let got: Vec<Row> = uses.iter().map(row).collect();
    // Every use is where the step uses the image, not where it is written (5:12 for `*go`,
    // 10:27, 13:12): at the alias that brings it in (`<<: *go`, the `*go` of
    // `<<: [ *env, *go ]`, `image: *node-image`, `- *whole-step`).
    assert_eq!(
        got,
        [
            (
                ContainerKind::Service,
                "db",
                "postgres:16",
                Always,
                (51, 12)
            ),
            (
                ContainerKind::Step,
                "merged",
                "golang:1.22",
                Always,
                (19, 9)
            ),
            (
                ContainerKind::Step,
                "overridden",
                "golang:1.22",
                OnStart,
                (23, 9)
            ),
            (
                ContainerKind::Step,
                "list-merge",
                "golang:1.22",
                Always,
                (28, 17)
            ),
            (
                ContainerKind::Step,
                "repeated-merge-keys",
                "golang:1.22",
                Always,
                (33, 9)
            ),
            (
                ContainerKind::Step,
                "scalar-alias",
                "node:22-alpine",
                Always,
                (37, 12)
            ),
            (ContainerKind::Step, "whole", "ruby:3.3", Never, (41, 5)),
            (
                ContainerKind::Step,
                "pull-before-merge",
                "golang:1.22",
                NotPresent,
                (45, 9)
            ),
        ]
    );
    assert!(uses.iter().all(|u| u.disposition == Disposition::Check));
}

#[test]
fn an_aliased_image_is_at_the_alias_not_the_anchor() {
    let text = r#"version: "1"
steps:
  - name: a
    image: &img alpine:3.19
    commands: ["true"]
  - name: b
    image: *img
    commands: ["true"]
"#;
    let uses = read_pipeline("alias.yml", text).unwrap();
    assert_eq!(uses.len(), 2);
    // Step a: the anchored value's content, as for any anchored scalar.
    assert_eq!(uses[0].origin.name, "a");
    assert_eq!(uses[0].image, "alpine:3.19");
    assert_eq!(at(&uses[0]), (4, 17));
    assert_eq!(at(&uses[0]), locate(text, "alpine:3.19"));
    // Step b: the `*img` it writes, not the anchor it names.
    assert_eq!(uses[1].origin.name, "b");
    assert_eq!(uses[1].image, "alpine:3.19");
    assert_eq!(at(&uses[1]), (7, 12));
    assert_eq!(at(&uses[1]), locate(text, "*img"));
    assert!(uses.iter().all(|u| u.disposition == Disposition::Check));
}

#[test]
fn aliased_steps_and_step_lists_are_at_the_alias() {
    let text = r#"version: "1"
x-common: &common
  - name: shared
    image: golang:1.22
    pull: sometimes
    commands: [ make ]
stages:
  one:
    steps: *common
  two:
    steps:
      - &stepa
        name: first
        image: node:22
        commands: [ make ]
  three:
    steps:
      - *stepa
"#;
    let uses = read_pipeline("alias.yml", text).unwrap();
    let rows: Vec<StageRow> = uses
        .iter()
        .map(|u| {
            (
                u.origin.stage.as_deref(),
                u.origin.name.as_str(),
                u.image.as_str(),
                u.policy,
                at(u),
            )
        })
        .collect();
    let not_present = PullPolicy::NotPresent;
    assert_eq!(
        rows,
        [
            // A whole list of steps used through an alias: at `steps: *common`.
            (Some("one"), "shared", "golang:1.22", not_present, (9, 12)),
            // The anchor's own step, then the `- *stepa` that repeats it.
            (Some("two"), "first", "node:22", not_present, (14, 16)),
            (Some("three"), "first", "node:22", not_present, (18, 9)),
        ]
    );
    // A problem inside aliased content: at the use, naming where it is written.
    assert_eq!(
        invalid(&uses[0]),
        format!(
            "alias.yml:9:12 (written at 5:11): unknown pull value \"sometimes\" for step \
             `shared`; allowed values: {VELA_PULL_VALUES}"
        )
    );
    assert_eq!(uses[1].disposition, Disposition::Check);
    assert_eq!(uses[2].disposition, Disposition::Check);
    // A file-level error about aliased content: at the alias too.
    let err = read_pipeline(
        "alias.yml",
        "version: \"1\"\nx: &s [a]\nstages:\n  one: *s\n",
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "alias.yml:4:8: Vela refuses this pipeline: unable to unmarshal yaml: cannot unmarshal !!seq into yaml.Stage (at stages.one) (written at 2:4)"
    );
}

#[test]
fn an_invalid_image_reached_through_an_alias_is_reported_at_the_alias() {
    let text = r#"version: "1"
x-registry: &registry {host: example.com}
x-bare: &bare
  name: bare
  pull: always
steps:
  - name: mapping-image
    image: *registry
  - *bare
  - name: merged
    <<: *bare
"#;
    // `image: *registry` is a mapping: the use and the message are at `*registry`.
    // Vela's decoder refuses the file there (Step.Image is a string).
    let one = text.replace("  - *bare\n  - name: merged\n    <<: *bare\n", "");
    let e = read_pipeline("bad.yml", &one).unwrap_err();
    assert_eq!((e.line, e.column), (Some(8), Some(12)));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::WrongType {
            field: "steps[0].image".into(),
            expected: "string",
            found: "!!map".into(),
            value: None,
            json: false,
        })
    );
    // A step that is an alias of a mapping without `image`: Vela refuses the file, and
    // the refusal is at the alias.
    let two = text.replace("  - name: mapping-image\n    image: *registry\n", "");
    let e = read_pipeline("bad.yml", &two).unwrap_err();
    assert_eq!((e.line, e.column), (Some(7), Some(5)));
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoImage {
            container: ContainerKind::Step,
            name: "bare".into(),
            template: None
        })
    );
    assert_eq!(
        e.to_string(),
        "bad.yml:7:5: Vela refuses this pipeline: no image provided for step bare (written \
         at 3:9)"
    );
}

#[test]
fn invalid_pull_values_are_reported_at_the_value_and_kept() {
    let uses = read("invalid.yml");
    let names: Vec<&str> = uses.iter().map(|u| u.origin.name.as_str()).collect();
    assert_eq!(names, ["both", "unknown", "capitalised", "yes"]);
    // Every one is invalid; an invalid pull falls back to not_present.
    for u in &uses {
        invalid(u);
        assert_eq!(u.policy, PullPolicy::NotPresent, "{}", u.origin.name);
    }

    // `sometimes` is the value of upstream's schema test
    // (server/schema/testdata/pipeline/fail/invalid_pull.yml), there before the image too.
    let unknown = &uses[1];
    assert_eq!(unknown.image, "alpine");
    assert_eq!(at(unknown), (11, 12));
    assert!(
        matches!(&unknown.disposition, Disposition::UnknownPolicy { written, .. } if written == "sometimes"),
        "{unknown:?}"
    );
    let message = invalid(unknown);
    assert!(message.starts_with("invalid.yml:10:11: "), "{message}");
    assert!(message.contains("\"sometimes\""), "{message}");
    for allowed in ["always", "not_present", "on_start", "never"] {
        assert!(message.contains(allowed), "{message}");
    }

    // Kubernetes' spelling is not Vela's.
    assert!(invalid(&uses[2]).starts_with("invalid.yml:15:11: "));
    assert!(invalid(&uses[2]).contains("\"Always\""));
    // YAML 1.1's `yes` is text to Vela, and not a pull value.
    assert!(invalid(&uses[3]).starts_with("invalid.yml:19:11: "));
    // (A pull or image that is a list or mapping refuses the file:
    // refusals::an_image_that_is_a_list_refuses_the_file,
    // refusals::container_and_metadata_fields_of_the_wrong_type.)

    // Two problems in one container: both named, each at its place (a service, which
    // only the worker substitutes: in a step the compiler's panic refuses the file,
    // refusals::a_negative_substring_length_panics_the_compiler).
    let both = invalid(&uses[0]);
    assert!(both.contains("invalid.yml:5:12: "), "{both}");
    assert!(both.contains("invalid.yml:6:11: "), "{both}");
    assert!(both.contains("\"often\""), "{both}");
    // (A step that is a string or null refuses the file:
    // refusals::a_null_or_non_mapping_container_item_refuses_the_file.)
}

#[test]
fn template_steps_are_skipped_with_their_template_name() {
    let uses = read("templates.yml");
    assert_eq!(uses.len(), 2);

    let build = &uses[0];
    assert_eq!(build.origin.name, "build");
    assert_eq!(build.image, "");
    assert_eq!(at(build), (9, 5));
    assert_eq!(
        skipped(build),
        &Skip::Template {
            name: "go_build".into()
        }
    );

    assert_eq!(uses[1].disposition, Disposition::Check);
    assert_eq!(uses[1].image, "golang:1.22");
    // A `template:` that is a scalar is refused by Vela's decoder (`StepTemplate` is a
    // struct): refusals::typed_fields_of_the_wrong_type_are_yaml_v3_type_errors.
}

#[test]
fn a_template_step_with_an_image_keeps_it_but_is_skipped() {
    let text = "version: '1'\ntemplates: [{name: tpl, source: x.yml, type: file}]\nsteps:\n  - name: t\n    image: alpine\n    pull: bogus\n    template:\n      name: tpl\n";
    let uses = read_pipeline("t.yml", text).unwrap();
    assert_eq!(uses[0].image, "alpine");
    assert_eq!(skipped(&uses[0]), &Skip::Template { name: "tpl".into() });
    // Without `templates:`, the server does not expand it (`ExpandSteps` returns at
    // once): the step runs its own image.
    let text =
        "version: '1'\nsteps:\n  - name: t\n    image: alpine\n    template:\n      name: tpl\n";
    let uses = read_pipeline("t.yml", text).unwrap();
    assert_eq!(uses[0].disposition, Disposition::Check);
}

#[test]
fn compiled_build_json_with_init_stage_and_secret_origin() {
    use PullPolicy::*;
    let text = fixture("compiled.json");
    let uses = read("compiled.json");
    let got: Vec<(ContainerKind, Option<&str>, &str, &str, PullPolicy)> = uses
        .iter()
        .map(|u| {
            (
                u.origin.kind,
                u.origin.stage.as_deref(),
                u.origin.name.as_str(),
                u.image.as_str(),
                u.policy,
            )
        })
        .collect();
    let clone = "target/vela-git-slim:v0.12.0@sha256:\
                 3f1f8b9d0e4c5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b";
    assert_eq!(
        got,
        [
            (
                ContainerKind::Service,
                None,
                "postgres",
                "postgres:16",
                NotPresent
            ),
            (
                ContainerKind::Step,
                Some("init"),
                "init",
                "#init",
                NotPresent
            ),
            (
                ContainerKind::Step,
                Some("clone"),
                "clone",
                clone,
                NotPresent
            ),
            (
                ContainerKind::Step,
                Some("test"),
                "test",
                "golang:1.22",
                Always
            ),
            (
                ContainerKind::Step,
                Some("test"),
                "lint",
                "golangci/golangci-lint:v1.59",
                NotPresent
            ),
            (
                ContainerKind::Secret,
                None,
                "vault",
                "target/secret-vault:v1",
                Always
            ),
        ]
    );
    // JSON gets positions from the YAML parser: the opening quote of the image value.
    for u in &uses {
        assert_eq!(
            at(u),
            locate(&text, &format!("\"{}\"", u.image)),
            "{}",
            u.origin.name
        );
    }
    assert!(skipped(&uses[1]) == &Skip::Init);
    assert_eq!(uses[2].disposition, Disposition::Check);
    assert_eq!(uses[3].disposition, Disposition::Check);
    // Compiled pull values are validated too. The problem has no position: a compiled
    // build is a machine's encoding, which no Vela user wrote; the message names the
    // container (the origin keeps its line and column as data, above).
    let message = invalid(&uses[4]);
    assert_eq!(
        message,
        format!(
            "unknown pull value \"sometimes\" for step `lint`; allowed values: {VELA_PULL_VALUES}"
        )
    );
    let Disposition::UnknownPolicy { problems, .. } = &uses[4].disposition else {
        panic!("{:?}", uses[4].disposition);
    };
    assert_eq!(problems[0].at, None);
    assert_eq!(uses[5].disposition, Disposition::Check);
}

#[test]
fn compiled_build_json_indented_with_tabs() {
    let text = fixture("compiled_steps_tabs.json");
    let uses = read("compiled_steps_tabs.json");
    let got: Vec<(&str, &str, PullPolicy)> = uses
        .iter()
        .map(|u| (u.origin.name.as_str(), u.image.as_str(), u.policy))
        .collect();
    assert_eq!(
        got,
        [
            ("init", "#init", PullPolicy::NotPresent),
            (
                "clone",
                "target/vela-git-slim:v0.12.0",
                PullPolicy::NotPresent
            ),
            ("echo", "alpine:3.20", PullPolicy::OnStart),
        ]
    );
    assert!(skipped(&uses[0]) == &Skip::Init);
    assert_eq!(at(&uses[1]), locate(&text, "\"target/vela-git-slim"));
    assert_eq!(at(&uses[2]), (7, locate(&text, "\"alpine:3.20\"").1));
}

#[test]
fn compiled_build_as_yaml() {
    // The CLI prints compiled pipelines as YAML: same keys, stages as a list.
    let text = "\
id: octocat_hello-world_3
version: \"1\"
stages:
  - name: init
    steps:
      - id: __0_init_init
        image: '#init'
        name: init
        pull: not_present
  - name: test
    steps:
      - id: __0_test_test
        image: golang:1.22
        name: test
        pull: on_start
";
    let uses = read_pipeline("compiled.yml", text).unwrap();
    assert_eq!(uses.len(), 2);
    assert!(skipped(&uses[0]) == &Skip::Init);
    assert_eq!(uses[1].origin.stage.as_deref(), Some("test"));
    assert_eq!(
        (uses[1].policy, at(&uses[1])),
        (PullPolicy::OnStart, (13, 16))
    );
}

#[test]
fn json_the_yaml_parser_refuses_is_read() {
    // A surrogate pair escape (as Python's json.dumps writes an emoji) is valid JSON, but
    // YAML's `\u` escapes cannot spell surrogates; a compiled build is read by our
    // encoding/json, with positions.
    let text = r#"{"id": "x", "metadata": {"note": "\ud83d\ude80"},
      "steps": [{"name": "s", "image": "alpine", "pull": "always"}]}"#;
    let uses = read_pipeline("emoji.json", text).unwrap();
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].image, "alpine");
    assert_eq!(uses[0].policy, PullPolicy::Always);
    assert_eq!(
        (uses[0].origin.line, uses[0].origin.column),
        (Some(2), Some(40))
    );

    let text = r#"{"id": "\ud83d\ude80", "steps": [{"pull": "bad"}]}"#;
    let uses = read_pipeline("emoji.json", text).unwrap();
    // A compiled build's problems have no position (it is a machine's encoding): the
    // message names the container.
    assert!(
        invalid(&uses[0]).starts_with("step `steps[0]` has neither `image` nor `template`; "),
        "{:?}",
        uses[0]
    );
}

#[test]
fn read_pipeline_file_names_the_path() {
    let path = fixture_path("services.yml");
    let uses = read_pipeline_file(&path).unwrap();
    assert_eq!(uses.len(), 3);
    assert_eq!(uses[0].origin.file, Some(path.display().to_string()));

    let missing = fixture_path("does-not-exist.yml");
    let err = read_pipeline_file(&missing).unwrap_err();
    assert_eq!(err.file, Some(missing.display().to_string()));
    assert!(err.message.starts_with("cannot read"), "{err}");
}

#[test]
fn files_that_are_not_pipelines_are_errors() {
    let e = error("");
    assert!(e.message.starts_with("empty"), "{e}");
    let e = error("# nothing here\n");
    assert!(e.message.starts_with("empty"), "{e}");

    // A list at the top level: e.g. a bare list of steps.
    let e = error("- name: a\n  image: alpine\n");
    assert!(e.message.contains("top level is a list"), "{e}");
    assert_eq!((e.line, e.column), (Some(1), Some(1)));

    let e = error("just text\n");
    assert!(e.message.contains("top level is a string"), "{e}");

    let e = error("apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\n");
    assert!(
        e.message.contains("Kubernetes PipelinePodsTemplate object"),
        "{e}"
    );

    // A mapping of stages alone, without the pipeline around it.
    let e = error("build:\n  steps:\n    - image: alpine\n");
    assert!(e.message.contains("none of `version`"), "{e}");
    assert_eq!(e.file.as_deref(), Some("bad.yml"));
}

#[test]
fn wrong_shapes_of_pipeline_sections_are_errors_at_their_place() {
    // yaml.v3's type error (`[]*yaml.Step`), refused at the value.
    let e = error("version: '1'\nsteps:\n  name: a\n");
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::WrongType { field, expected: "[]*yaml.Step", found, .. }) if field == "steps" && found == "!!map"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (Some(3), Some(3)));

    // `StageSlice.UnmarshalYAML`'s own error (`stage.go` line 59).
    let e = error("version: '1'\nstages: 3\n");
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::Decode { field, failure: DecodeFailure::StageMap }) if field == "stages"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (Some(2), Some(9)));

    // yaml.v3's type errors, refused (`decode.go` `terror`).
    for (text, want_field, want_type) in [
        (
            "version: '1'\nstages:\n  build: [ a ]\n",
            "stages.build",
            "yaml.Stage",
        ),
        (
            "version: '1'\nstages:\n  build:\n    steps: nope\n",
            "stages.build.steps",
            "[]*yaml.Step",
        ),
        (
            "version: '1'\nservices: {}\n",
            "services",
            "[]*yaml.Service",
        ),
    ] {
        let e = error(text);
        assert!(
            matches!(e.refusal.as_deref(), Some(Refusal::WrongType { field, expected, .. }) if field == want_field && *expected == want_type),
            "{e}"
        );
    }

    let e = error("version: '1'\nsteps:\n  - name: a\n    <<: 3\n");
    assert!(e.message.contains("merge key"), "{e}");
    assert_eq!((e.line, e.column), (Some(4), Some(9)));
}

#[test]
fn empty_sections_and_null_stages_are_fine() {
    let uses = read_pipeline(
        "e.yml",
        "version: '1'\nsteps:\nservices: []\nstages:\n  empty:\n  nosteps: {}\nsecrets: ~\n",
    )
    .unwrap();
    assert!(uses.is_empty());
}

#[test]
fn syntax_errors_have_a_position() {
    let e = error("version: '1'\nsteps:\n  - name: a\n    image: [alpine\n");
    assert_eq!(e.file.as_deref(), Some("bad.yml"));
    assert!(e.line.is_some() && e.column.is_some(), "{e:?}");
    assert!(e.message.starts_with("not valid YAML"), "{e}");
    assert!(e.to_string().starts_with("bad.yml:"), "{e}");

    // JSON is reported as JSON, with serde_json's position.
    let e = error("{\n  \"id\": \"x\",\n  \"steps\": [\n}\n");
    assert!(e.message.starts_with("not valid JSON"), "{e}");
    assert_eq!(e.line, Some(4));

    // Go template syntax left in a file, as in upstream's template test data.
    let e = error("steps:\n  - name: a\n    image: {{ .image }}\n    {{ .pull_policy }}\n");
    assert!(e.line.is_some(), "{e:?}");
}

#[test]
fn only_the_first_document_is_read() {
    let text = "---\nversion: '1'\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n---\nsteps:\n  - image: other\n";
    let uses = read_pipeline("multi.yml", text).unwrap();
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].image, "alpine");
}

#[test]
fn unknown_keys_and_a_byte_order_mark_are_ignored() {
    let text = "\u{feff}version: '1'\nfuture_key: { a: [1, 2] }\nsteps:\n  - name: a\n    image: alpine\n    whatever: true\n    commands: [x]\n";
    let uses = read_pipeline("bom.yml", text).unwrap();
    assert_eq!(uses.len(), 1);
    assert_eq!(at(&uses[0]), (5, 12));
}

#[test]
fn crlf_line_endings_count_lines_the_same() {
    let text = "version: '1'\r\nsteps:\r\n  - name: a\r\n    image: alpine\r\n    pull: bogus\r\n    commands: [x]\r\n";
    let uses = read_pipeline("crlf.yml", text).unwrap();
    assert_eq!(at(&uses[0]), (4, 12));
    assert!(invalid(&uses[0]).starts_with("crlf.yml:5:11: "));
}

#[test]
fn alias_bombs_end_quickly() {
    // Steps that alias a list of lists of lists: shared, never expanded.
    let mut text = String::from("version: '1'\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..30 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("steps: *a29\n");
    let start = std::time::Instant::now();
    // A step that is a list is go-yaml's type error, found at the first one.
    let e = read_pipeline("bomb.yml", &text).unwrap_err();
    assert!(
        matches!(e.refusal.as_deref(), Some(Refusal::WrongType { field, found, .. }) if field == "steps[0]" && found == "!!seq"),
        "{e}"
    );

    // Merge keys that double at each level: refused by the lookup budget.
    let mut text = String::from("version: '1'\nm0: &m0 {k0: v}\n");
    for i in 1..64 {
        let p = i - 1;
        text.push_str(&format!("m{i}: &m{i} {{<<: [*m{p}, *m{p}], k{i}: v}}\n"));
    }
    text.push_str("steps:\n  - *m63\n");
    let e = read_pipeline("bomb.yml", &text).unwrap_err();
    assert!(e.message.contains("alias bomb"), "{e}");
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
}

#[test]
fn many_steps_are_all_read() {
    let mut text = String::from("version: '1'\nsteps:\n");
    for i in 0..5000 {
        text.push_str(&format!(
            "  - name: s{i}\n    image: alpine:3.{}\n    pull: true\n    commands: [x]\n",
            i % 20
        ));
    }
    let uses = read_pipeline("many.yml", &text).unwrap();
    assert_eq!(uses.len(), 5000);
    assert_eq!(at(&uses[4999]), (2 + 4999 * 4 + 2, 12));
}

#[test]
fn no_prefix_of_any_fixture_panics() {
    // Every truncation of every fixture: a cheap, deterministic cousin of the fuzz target.
    for name in [
        "steps.yml",
        "stages.yml",
        "services.yml",
        "secrets.yml",
        "anchors.yml",
        "invalid.yml",
        "templates.yml",
        "compiled.json",
        "compiled_steps_tabs.json",
    ] {
        let text = fixture(name);
        for (i, _) in text.char_indices() {
            let _ = read_pipeline(name, &text[..i]);
        }
    }
}

#[test]
fn a_key_written_twice_is_an_error_naming_both_places() {
    // go-yaml v3's `uniqueKeys` type error ("mapping key \"steps\" already defined at line
    // 2", checked with go-yaml v3.0.4 and go-vela/server v0.28.8's types), in every
    // mapping it decodes, at the second key.
    let dup = |e: &InputError| match e.refusal.as_deref() {
        Some(Refusal::DuplicateKey {
            field,
            key,
            first_line,
            environment,
        }) => (
            field.clone(),
            key.clone(),
            *first_line,
            *environment,
            (e.line, e.column),
        ),
        other => panic!("not a duplicate key: {other:?} ({e})"),
    };
    // Top level: the second `steps` would silently replace the first.
    let e = error("version: '1'\nsteps:\n  - image: a\nservices: []\nsteps:\n  - image: b\n");
    assert_eq!(
        dup(&e),
        (
            "".into(),
            "steps".into(),
            Some(2),
            false,
            (Some(5), Some(1))
        )
    );
    assert_eq!(
        e.to_string(),
        "bad.yml:5:1: Vela refuses this pipeline: unable to unmarshal yaml: mapping key \
         \"steps\" already defined at line 2"
    );
    // In one step.
    let e = error("steps:\n  - name: s\n    image: a\n    pull: true\n    image: b\n");
    assert_eq!(
        dup(&e),
        (
            "steps[0]".into(),
            "image".into(),
            Some(3),
            false,
            (Some(5), Some(5))
        )
    );
    // Quoted and plain spellings of one key, and flow mappings.
    let e = error("steps:\n  - \"image\": a\n    image: b\n");
    assert_eq!((e.line, e.column), (Some(3), Some(5)), "{e}");
    let e = error("steps: [{image: a, name: n, image: b}]\n");
    assert_eq!(dup(&e).4, (Some(1), Some(29)));
    // `StageSlice` reads the stages' mapping itself: two stages of one name.
    let e = error("stages:\n  a:\n    steps: []\n  a:\n    steps: []\n");
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::DuplicateStage { name: "a".into() })
    );
    assert_eq!((e.line, e.column), (Some(4), Some(3)), "{e}");
    // `raw.StringSliceMap` returns its `map[string]string` try's error as its own.
    let e = error("version: '1'\nenvironment: {A: 1, A: 2}\nsteps: []\n");
    assert_eq!(
        dup(&e),
        (
            "environment".into(),
            "A".into(),
            Some(2),
            true,
            (Some(2), Some(21))
        )
    );
    // Where go-yaml v3 decodes nothing (a key `yaml.Build` or `yaml.Step` has not), a
    // repeated key is read, as Vela reads it.
    let steps = "steps:\n  - {name: a, image: alpine, commands: [x], foo: {x: 1, x: 2}}\n";
    let uses = read_pipeline(
        "bad.yml",
        &format!("version: '1'\nfoo: {{x: 1, x: 2}}\n{steps}"),
    )
    .expect("Vela reads it");
    assert_eq!(uses[0].image, "alpine");
    // Source in JSON (no top-level `id`), through the JSON fallback of the YAML parser.
    let e = error(r#"{"version": "\ud83d\ude80", "steps": [], "steps": []}"#);
    assert!(e.message.contains("duplicate key \"steps\""), "{e}");
    assert_eq!(e.file.as_deref(), Some("bad.yml"));
    // A compiled build is encoding/json's, which takes the last
    // (`compiled_json::duplicate_keys_are_decoded_in_turn_and_the_last_wins`).
}

#[test]
fn merge_keys_are_not_duplicates() {
    // Several `<<` in one mapping (upstream test data has them); explicit keys win over
    // merged ones, and a key both merged and written is not a duplicate.
    let text = "\
version: '1'
x: &x {pull: always, image: merged}
y: &y {name: from-y, image: other}
steps:
  - <<: *x
    <<: *y
    image: alpine
    commands: [x]
";
    let uses = read_pipeline("m.yml", text).unwrap();
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].image, "alpine");
    assert_eq!(uses[0].policy, PullPolicy::Always);
    assert_eq!(uses[0].origin.name, "from-y");
    assert_eq!(at(&uses[0]), (7, 12));
}

#[test]
fn later_documents_are_named_in_warnings() {
    use pullcheck_input::read_pipeline_with_warnings;
    let text = "---\nversion: '1'\nsteps:\n  - {name: a, image: alpine, commands: [x]}\n---\nsteps:\n  - image: other\n";
    let (uses, warnings) = read_pipeline_with_warnings("multi.yml", text).unwrap();
    assert_eq!(uses.len(), 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("multi.yml:5: YAML document 2 is not read"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("first document"), "{warnings:?}");
    // read_pipeline is unchanged: the same uses, no error.
    assert_eq!(read_pipeline("multi.yml", text).unwrap(), uses);

    // Every ignored document is named; an ignored document's syntax error is not an
    // error (upstream never parses it), but the document is still named.
    let text = "version: '1'\nsteps: [{name: a, image: b, commands: [c]}]\n---\na: 1\n---\n- x\n--- [unclosed\n";
    let (_, warnings) = read_pipeline_with_warnings("m.yml", text).unwrap();
    let lines: Vec<&str> = warnings
        .iter()
        .map(|w| w.split(": ").next().unwrap())
        .collect();
    assert_eq!(lines, ["m.yml:3", "m.yml:5", "m.yml:7"], "{warnings:?}");

    // Empty later documents (a trailing `---`, only comments) hide nothing.
    for text in [
        "version: '1'\nsteps: [{name: a, image: b, commands: [c]}]\n",
        "version: '1'\nsteps: [{name: a, image: b, commands: [c]}]\n---\n",
        "version: '1'\nsteps: [{name: a, image: b, commands: [c]}]\n---\n# nothing here\n",
        "version: '1'\nsteps: [{name: a, image: b, commands: [c]}]\n...\n",
    ] {
        let (_, warnings) = read_pipeline_with_warnings("m.yml", text).unwrap();
        assert!(warnings.is_empty(), "{text:?}: {warnings:?}");
    }
    // Errors are still errors.
    let e = read_pipeline_with_warnings("m.yml", "a: [\n").unwrap_err();
    assert_eq!(e.file.as_deref(), Some("m.yml"));
}
