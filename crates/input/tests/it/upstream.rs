//! Upstream Vela test data (go-vela/server and go-vela/worker `testdata/`), read in place from
//! `../shared/upstream-testdata/vela/` beside the repository. The project does not ship
//! these files; its own fixtures (tests/fixtures/) carry the core assertions. The tests are
//! `#[ignore]`d: scripts/test.sh runs them when the directory exists and prints a
//! `SKIPPED:` line when it does not; run without the files, they fail.
//! Values below are upstream's, cited by file.

use std::path::{Path, PathBuf};

use pullcheck_input::{ContainerKind, Disposition, PullPolicy, Refusal, read_pipeline_file};

/// The upstream files' directory; fails the test when it is absent.
fn upstream_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/upstream-testdata/vela");
    assert!(
        dir.is_dir(),
        "{} is missing: this test needs ../shared/upstream-testdata",
        dir.display()
    );
    dir
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("readable dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Files that are not whole pipelines, and why reading them is an error.
const NOT_PIPELINES: &[(&str, &str)] = &[
    // Fragments for upstream's type unit tests: a bare list of secrets or steps, or a bare
    // mapping of stages.
    (
        "server/compiler/types/yaml/testdata/secret.yml",
        "top level is a list",
    ),
    (
        "server/compiler/types/yaml/testdata/step.yml",
        "top level is a list",
    ),
    (
        "server/compiler/types/yaml/testdata/stage.yml",
        "none of `version`",
    ),
    // A Go template, not YAML until rendered.
    (
        "server/compiler/native/testdata/gradle.yml",
        "not valid YAML",
    ),
    // Kubernetes PipelinePodsTemplate objects.
    (
        "worker/runtime/kubernetes/testdata/pipeline-pods-template",
        "",
    ),
    // The `yaml.Build` decoding fixture: its last secret has an origin without a name,
    // which the compiler's `ValidateYAML` refuses.
    (
        "server/compiler/types/yaml/testdata/build.yml",
        "no name provided for secret origin",
    ),
];

#[test]
#[ignore = "needs ../shared/upstream-testdata (run by scripts/test.sh)"]
fn every_upstream_file_reads_or_is_refused_with_a_reason() {
    let dir = upstream_dir();
    let all = files(&dir);
    assert!(all.len() >= 20, "found only {} files", all.len());
    for path in all {
        let rel = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let result = read_pipeline_file(&path);
        match NOT_PIPELINES.iter().find(|(p, _)| rel.starts_with(p)) {
            Some((_, why)) => {
                let e = result.expect_err(&rel);
                assert!(e.message.contains(why), "{rel}: {e}");
                assert!(e.line.is_some(), "{rel}: {e}");
            }
            None => {
                let uses = result.unwrap_or_else(|e| panic!("{rel}: {e}"));
                assert!(!uses.is_empty(), "{rel}: no images");
                for u in &uses {
                    assert!(
                        u.origin.line.is_some() && u.origin.column.is_some(),
                        "{rel}"
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs ../shared/upstream-testdata (run by scripts/test.sh)"]
fn upstream_values() {
    let dir = upstream_dir();
    let read = |rel: &str| read_pipeline_file(&dir.join(rel)).unwrap();

    // server/schema/testdata/pipeline/fail/invalid_pull.yml: `pull: sometimes` at 7:11.
    let uses = read("server/schema/testdata/pipeline/fail/invalid_pull.yml");
    assert_eq!(uses.len(), 1);
    match &uses[0].disposition {
        Disposition::UnknownPolicy { written, problems } => {
            assert_eq!(written, "sometimes");
            let at = problems[0].at.clone().expect("positioned");
            assert_eq!((at.line, at.column), (Some(7), Some(11)), "{problems:?}");
        }
        other => panic!("{other:?}"),
    }

    // server/compiler/types/yaml/testdata/build_anchor_stage.yml: three stages whose steps
    // merge `*stage-anchor`; the image is written once, at 11:10, and used at each step's
    // `<<: *stage-anchor` (19:13, 32:13, 46:13).
    let uses = read("server/compiler/types/yaml/testdata/build_anchor_stage.yml");
    type Row<'a> = (
        Option<&'a str>,
        &'a str,
        PullPolicy,
        Option<usize>,
        Option<usize>,
    );
    let got: Vec<Row> = uses
        .iter()
        .map(|u| {
            (
                u.origin.stage.as_deref(),
                u.image.as_str(),
                u.policy,
                u.origin.line,
                u.origin.column,
            )
        })
        .collect();
    let want = |stage, line| {
        (
            Some(stage),
            "openjdk:latest",
            PullPolicy::Always,
            Some(line),
            Some(13),
        )
    };
    assert_eq!(
        got,
        [
            want("dependencies", 19),
            want("test", 32),
            want("build", 46)
        ]
    );

    // server/compiler/types/yaml/testdata/build.yml: one service, five steps, and an
    // origin without a name (`pull: always`) at 140:7, which Vela refuses.
    let e =
        read_pipeline_file(&dir.join("server/compiler/types/yaml/testdata/build.yml")).unwrap_err();
    assert_eq!(
        e.refusal.as_deref(),
        Some(&Refusal::NoName {
            container: ContainerKind::Secret
        })
    );
    assert_eq!((e.line, e.column), (Some(140), Some(7)));

    // worker/executor/linux/testdata/build/secrets/basic.yml: origin `vault`, `pull: true`.
    let uses = read("worker/executor/linux/testdata/build/secrets/basic.yml");
    assert_eq!(uses[1].origin.kind, ContainerKind::Secret);
    assert_eq!(uses[1].origin.name, "vault");
    assert_eq!(uses[1].image, "vault:latest");
    assert_eq!(uses[1].policy, PullPolicy::Always);

    // worker/runtime/testdata/large.yml: many steps.
    let uses = read("worker/runtime/testdata/large.yml");
    assert_eq!(uses.len(), 100);
}
