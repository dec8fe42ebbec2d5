//! The held-out corpus (`tests/corpus/`): real `.vela.yml` files from public repositories,
//! none written here and none from go-vela/server's testdata, each read as Vela's compiler
//! (go-vela/server v0.28.8, `internal/yaml.go` `ParseYAML`, `compiler/native/validate.go`,
//! `expand.go`, `compiler/types/raw`) reads it. One row per file: every image pullcheck must
//! report (container kind, stage, name, image, pull policy as Vela normalises it, the line
//! and column of the `image:` where it is used, and whether it is checked or a template
//! step), or the refusal and its place. `tests/corpus/SOURCES` gives each file's
//! repository, commit and licence; the three under Apache-2.0 are stored and always read,
//! the others only from `$PULLCHECK_VELA_CORPUS/<owner>/<repo>/.vela.yml` when that
//! directory is given (`scripts/fetch-vela-corpus.sh` fills it), else they are skipped and
//! counted in a `SKIPPED:` line.
//!
//! Where pullcheck and the compiled build differ on purpose (so not in the rows):
//! - The compiler adds the `init` step (`#init`, not an image) and, unless
//!   `metadata.clone: false`, the `clone` step with the server's `--clone-image`
//!   (`cmd/vela-server/flags.go`, default `target/vela-git-slim:v0.14.0@sha256:592b…`): a
//!   server setting, not in the file, so source gives neither; a compiled build has both.
//! - The compiler purges steps whose ruleset does not match the build (`PurgeRulesets`);
//!   source has no build, so every step is listed (the union over builds), as the Docker
//!   runtime would pull each kept one.
//! - Lines and columns are pullcheck's (Vela reports none).
//!
//! No image in these files uses `${VAR}`, so none has a substitution outcome here.

use std::path::{Path, PathBuf};

use pullcheck_input::{
    ContainerKind as K, DecodeFailure, Disposition, PullPolicy as P, Refusal, Skip, read_pipeline,
};

/// What one image use must be.
#[derive(Debug, PartialEq, Eq)]
struct Use {
    kind: K,
    stage: Option<String>,
    name: String,
    image: String,
    policy: P,
    line: usize,
    column: usize,
    outcome: Outcome,
}

#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Checked under its policy.
    Check,
    /// A template step: not checked, the template named.
    Template(String),
}

#[allow(non_snake_case)]
fn Template(name: &str) -> Outcome {
    Outcome::Template(name.to_owned())
}
use Outcome::Check;

#[allow(clippy::too_many_arguments)]
fn u(
    kind: K,
    stage: Option<&str>,
    name: &str,
    image: &str,
    policy: P,
    line: usize,
    column: usize,
    outcome: Outcome,
) -> Use {
    Use {
        kind,
        stage: stage.map(str::to_owned),
        name: name.to_owned(),
        image: image.to_owned(),
        policy,
        line,
        column,
        outcome,
    }
}

/// What Vela's compiler gives for one file.
#[derive(Debug)]
enum Expect {
    /// Compiled: these uses, in pullcheck's order (services, stage steps, steps, origins).
    Uses(Vec<Use>),
    /// Refused, at (line, column).
    Refused(Refusal, (usize, usize)),
    /// Refused, for the file as a whole (the refusal's place is not asserted: the file is
    /// not stored here).
    RefusedFile(Refusal),
}
use Expect::{Refused, RefusedFile, Uses};

#[rustfmt::skip]
fn expected() -> Vec<(&'static str, Expect)> {
    vec![
        // `pull: always`; `commands: env` is a scalar, which `raw.StringSlice` takes.
        (
            "Adityad92/vela-nodejs-app",
            Uses(vec![
                u(K::Step, None, "sample bash plugin", "adicop49/vela-sample:bash", P::Always, 18, 12, Check),
                u(K::Step, None, "plugin-to-upload-s3", "adicop49/vela-s3-upload-plugin:1-final", P::Always, 25, 12, Check),
            ]),
        ),
        // A template step with `templates:` declared (`type: github`): its images come from the template, which is not expanded here.
        (
            "AlexCue987/kollektions-matcher",
            Uses(vec![
                u(K::Step, None, "template", "", P::NotPresent, 9, 5, Template("template-name")),
            ]),
        ),
        // Only `version:`: `ValidateYAML` says "no stages, steps or templates provided" (compiler/native/validate.go). pullcheck refuses it the same way.
        ("bacrossland/sonic-utilities", RefusedFile(Refusal::NothingToRun)),
        // `golang` without a tag, `pull: always`.
        (
            "davidvader/heyvela",
            Uses(vec![
                u(K::Step, None, "echo", "golang", P::Always, 4, 12, Check),
            ]),
        ),
        // Stages; `success_failure` in two stages is two names (`success_failure_success_failure`, `success_failure_2_success_failure`), as `ValidatePipeline` keys stage steps.
        (
            "go-vela/pkg-executor",
            Uses(vec![
                u(K::Step, Some("success"), "success_before", "alpine:latest", P::NotPresent, 6, 16, Check),
                u(K::Step, Some("success"), "empty", "alpine:latest", P::NotPresent, 13, 16, Check),
                u(K::Step, Some("success_failure"), "success_failure", "alpine:latest", P::NotPresent, 20, 16, Check),
                u(K::Step, Some("failure_before"), "failure_before", "alpine:latest", P::NotPresent, 29, 16, Check),
                u(K::Step, Some("echo"), "echo", "alpine:latest", P::NotPresent, 39, 16, Check),
                u(K::Step, Some("after"), "success_after", "alpine:latest", P::NotPresent, 50, 16, Check),
                u(K::Step, Some("after"), "failure", "alpine:latest", P::NotPresent, 57, 16, Check),
                u(K::Step, Some("failure_master"), "failure_master", "alpine:latest", P::NotPresent, 67, 16, Check),
                u(K::Step, Some("success_failure_2"), "success_failure", "alpine:latest", P::NotPresent, 79, 16, Check),
            ]),
        ),
        // go-vela/server's own CI pipeline (not its testdata): a plugin step with `pull: always`.
        (
            "go-vela/server",
            Uses(vec![
                u(K::Step, None, "go build", "golang:1.16", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "docker", "docker.target.com/vela-plugins/docker:v0.5.1-1", P::Always, 13, 12, Check),
            ]),
        ),
        // `metadata.render_inline: true` with `templates:` only: valid (`ValidateYAML` counts templates); the images come from the templates, which are not expanded here, so none is read.
        (
            "go-vela/template-poc",
            Uses(vec![
            ]),
        ),
        // `- echo foo:` is a mapping in `commands`: `raw.StringSlice.UnmarshalYAML` fails ("unable to unmarshal into StringSlice"), so `ParseYAML` refuses the file. pullcheck read it before this corpus (fixed: compiler.rs `string_slices`).
        (
            "go-vela/vela-tutorials",
            Refused(Refusal::Decode { field: "steps[0].commands[0]".into(), failure: DecodeFailure::StringSlice }, (7, 9)),
        ),
        // A service beside steps; `metadata.template: false`.
        (
            "Harshit10/scan-demo",
            Uses(vec![
                u(K::Service, None, "docker", "docker.io/library/docker:29-dind", P::NotPresent, 35, 12, Check),
                u(K::Step, None, "build", "eclipse-temurin:25-jdk-jammy", P::Always, 8, 12, Check),
                u(K::Step, None, "unit-test", "eclipse-temurin:25-jdk-jammy", P::NotPresent, 14, 12, Check),
                u(K::Step, None, "integration-test", "docker.io/library/docker:29-dind", P::NotPresent, 19, 12, Check),
                u(K::Step, None, "docker-build", "docker.io/library/docker:29-cli", P::NotPresent, 27, 12, Check),
            ]),
        ),
        // Plugin steps with `parameters:` only; `${VELA_...}` only in parameters, not in images.
        (
            "JayCeeJr/scws",
            Uses(vec![
                u(K::Step, None, "build-docker", "docker-utilities.binrepo.cglcloud.in/enablementtools/docker-plugin:3-stable", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "captain-deploy-dev", "docker-utilities.binrepo.cglcloud.in/captain:1-stable", P::NotPresent, 15, 12, Check),
            ]),
        ),
        // `plugins/docker` without a tag, `pull: always`.
        (
            "jgroeneveld/test-service",
            Uses(vec![
                u(K::Step, None, "build and push", "plugins/docker", P::Always, 5, 12, Check),
            ]),
        ),
        // A Drone pipeline named .vela.yml: no `version:`, but decoding fails first, on `DOCKER_REPO: {from_secret: ...}` (`raw.StringSliceMap`), so that is Vela's refusal.
        (
            "kernel528/alpine-docker",
            Refused(Refusal::Environment { variable: Some("DOCKER_REPO".into()), found: "mapping".into() }, (19, 9)),
        ),
        // `name: echo ` (a trailing space, dropped by YAML).
        (
            "kneal/vela-test",
            Uses(vec![
                u(K::Step, None, "echo", "alpine", P::NotPresent, 4, 12, Check),
            ]),
        ),
        // Stages with `needs:` as a list and as a scalar (`raw.StringSlice`), rulesets with `if`/`operator`/`matcher`.
        (
            "mesarikaya/tech-health-back-end",
            Uses(vec![
                u(K::Step, Some("build"), "mvn-artifactory-package", "maven:3.9.0-amazoncorretto-17", P::NotPresent, 10, 16, Check),
                u(K::Step, Some("build"), "build-dev", "docker-utilities.binrepo.somedomain.in/enablementtools/docker-plugin:3-stable", P::NotPresent, 28, 16, Check),
                u(K::Step, Some("build"), "build-stage", "docker-utilities.binrepo.somedomain.in/enablementtools/docker-plugin:3-stable", P::NotPresent, 42, 16, Check),
                u(K::Step, Some("build"), "build-prod", "docker-utilities.binrepo.somedomain.in/enablementtools/docker-plugin:3-stable", P::NotPresent, 56, 16, Check),
                u(K::Step, Some("scan"), "code-scan-veracode-policy-scan", "openjdk:8", P::NotPresent, 74, 16, Check),
                u(K::Step, Some("deploy-dev"), "techhealth-be-deploy-dev", "docker-utilities.binrepo.somedomain.in/captain:1-stable", P::NotPresent, 99, 16, Check),
                u(K::Step, Some("deploy-stage"), "techhealth-be-deploy-stage", "docker-utilities.binrepo.somedomain.in/captain:1-stable", P::NotPresent, 116, 16, Check),
                u(K::Step, Some("deploy-prod"), "techhealth-be-deploy-prod", "docker-utilities.binrepo.somedomain.in/captain:1-stable", P::NotPresent, 135, 16, Check),
            ]),
        ),
        // `alpine:latest`, `pull: always`.
        (
            "nesbitjd/vela-test",
            Uses(vec![
                u(K::Step, None, "hello world", "alpine:latest", P::Always, 5, 12, Check),
            ]),
        ),
        // One plugin step.
        (
            "noahspannbauer/strapi",
            Uses(vec![
                u(K::Step, None, "publish strapi", "target/vela-docker:v0.9.0", P::Always, 5, 12, Check),
            ]),
        ),
        // A template step beside a plugin step with `pull: true` (always).
        (
            "plyr4/skelly",
            Uses(vec![
                u(K::Step, None, "go", "", P::NotPresent, 8, 5, Template("go")),
                u(K::Step, None, "dev_publish", "docker.target.com/vela-plugins/docker:v0.5.0-1", P::Always, 17, 12, Check),
            ]),
        ),
        // A template step and a plugin step with `pull: true`.
        (
            "target/native_memory_allocator",
            Uses(vec![
                u(K::Step, None, "build-release", "", P::NotPresent, 30, 5, Template("build-release")),
                u(K::Step, None, "check-pr-code-coverage", "docker.target.com/search/pull-request-code-coverage", P::Always, 37, 12, Check),
            ]),
        ),
        // Merge keys (`<<: *build`): a step's own `image:` and the merged one; list environments; top-level keys Vela does not know (the anchors' holders), which its decoder ignores.
        (
            "target/pull-request-code-coverage",
            Uses(vec![
                u(K::Step, None, "build-push", "golang:1.13", P::NotPresent, 34, 12, Check),
                u(K::Step, None, "check-format-on-pr", "golang:1.13", P::NotPresent, 43, 12, Check),
                u(K::Step, None, "check-lint-on-pr", "golangci/golangci-lint", P::Always, 51, 12, Check),
                u(K::Step, None, "build-on-pr", "golang:1.13", P::NotPresent, 60, 9, Check),
                u(K::Step, None, "check-pr-code-coverage", "alpine:latest", P::NotPresent, 66, 9, Check),
                u(K::Step, None, "docker-pull-request", "docker.target.com/vela-plugins/docker:v0.2.3-1", P::NotPresent, 72, 12, Check),
                u(K::Step, None, "docker-push", "docker.target.com/vela-plugins/docker:v0.2.3-1", P::NotPresent, 89, 12, Check),
            ]),
        ),
        // A template step only.
        (
            "target/token-manager-for-salesforce",
            Uses(vec![
                u(K::Step, None, "template", "", P::NotPresent, 9, 5, Template("template")),
            ]),
        ),
        // `version: 1` (a number: `ParseYAML` reads the node's text, and only `legacy` is refused).
        (
            "target/woozie",
            Uses(vec![
                u(K::Step, None, "build", "silex/emacs:27", P::NotPresent, 6, 12, Check),
            ]),
        ),
        // `version: "1.0"`.
        (
            "tmapes/asphyxia-docker",
            Uses(vec![
                u(K::Step, None, "build image dry run", "target/vela-kaniko:v0.8.0", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "build image", "target/vela-kaniko:v0.8.0", P::NotPresent, 16, 12, Check),
            ]),
        ),
        // `version: "1.0"`; tag and digest.
        (
            "tmapes/axe-snmp",
            Uses(vec![
                u(K::Step, None, "build image", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 15, 12, Check),
            ]),
        ),
        // `ruleset: {unless: ...}`; tag and digest.
        (
            "tmapes/jre-dumb-init",
            Uses(vec![
                u(K::Step, None, "build image dry run", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 9, 12, Check),
                u(K::Step, None, "build snapshot image", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 20, 12, Check),
                u(K::Step, None, "build release image", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 33, 12, Check),
            ]),
        ),
        // `version: "1.0"`.
        (
            "tmapes/pihole-influx-exporter",
            Uses(vec![
                u(K::Step, None, "build image dry run", "target/vela-kaniko:v0.13.0", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "build image snapshot", "target/vela-kaniko:v0.13.0", P::NotPresent, 17, 12, Check),
                u(K::Step, None, "build image", "target/vela-kaniko:v0.13.0", P::NotPresent, 29, 12, Check),
            ]),
        ),
        // Tag and digest.
        (
            "tmapes/pihole-influx-exporter-go",
            Uses(vec![
                u(K::Step, None, "build", "golang:1.23.4-alpine@sha256:04ec5618ca64098b8325e064aa1de2d3efbbd022a3ac5554d49d5ece99d41ad5", P::NotPresent, 15, 12, Check),
                u(K::Step, None, "snapshot-build-docker", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 24, 12, Check),
                u(K::Step, None, "release-build-docker", "target/vela-kaniko:v0.18.0@sha256:e8a34dc03399a6f126d301568811484e4d52eacb85049244866161934ee4bd60", P::NotPresent, 36, 12, Check),
            ]),
        ),
        // A registry with a path; `:latest` under the default `not_present`.
        (
            "tmapes/synology-snmp",
            Uses(vec![
                u(K::Step, None, "build image dry run", "docker.mapes.info/target/vela-kaniko:latest", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "build image", "docker.mapes.info/target/vela-kaniko:latest", P::NotPresent, 16, 12, Check),
            ]),
        ),
        // An explicit `pull: not_present`.
        (
            "tmapes/the-weekend-bot",
            Uses(vec![
                u(K::Step, None, "build", "eclipse-temurin:17.0.11_9-jdk-alpine@sha256:2be4813fc9cecaa6054abc518b2ed75a8d4c6db449abb2f16a03f5ed81e4a01f", P::NotPresent, 10, 12, Check),
                u(K::Step, None, "build image dry run", "target/vela-kaniko:v0.17.0@sha256:56d8499175eb5a1b5342a86f706b87bff89878d2e5a5d835dcb9ffaa21836d19", P::NotPresent, 16, 12, Check),
                u(K::Step, None, "build snapshot image", "target/vela-kaniko:v0.17.0@sha256:56d8499175eb5a1b5342a86f706b87bff89878d2e5a5d835dcb9ffaa21836d19", P::NotPresent, 28, 12, Check),
                u(K::Step, None, "build tag image", "target/vela-kaniko:v0.17.0@sha256:56d8499175eb5a1b5342a86f706b87bff89878d2e5a5d835dcb9ffaa21836d19", P::NotPresent, 41, 12, Check),
            ]),
        ),
        // Every step `pull: always`.
        (
            "varaha-edge/varaha-cache",
            Uses(vec![
                u(K::Step, None, "fmt", "rust:1.87-slim", P::Always, 21, 12, Check),
                u(K::Step, None, "clippy", "rust:1.87-slim", P::Always, 28, 12, Check),
                u(K::Step, None, "test", "rust:1.87-slim", P::Always, 35, 12, Check),
                u(K::Step, None, "build", "rust:1.87-slim", P::Always, 41, 12, Check),
                u(K::Step, None, "docker-build-push", "target/vela-kaniko:latest", P::Always, 47, 12, Check),
                u(K::Step, None, "docker-build-push-rv-agent", "target/vela-kaniko:latest", P::Always, 63, 12, Check),
            ]),
        ),
        // `ruleset` before `image` in a step.
        (
            "vishalcargill/goodfork",
            Uses(vec![
                u(K::Step, None, "docker build", "docker-utilities.binrepo.cglcloud.in/enablementtools/docker-plugin:3-stable", P::NotPresent, 11, 12, Check),
                u(K::Step, None, "build-goodfork-app", "node:20-alpine", P::NotPresent, 23, 12, Check),
                u(K::Step, None, "captain-deploy-goodfork-dev", "docker-utilities.binrepo.cglcloud.in/captain:1-stable", P::NotPresent, 38, 12, Check),
            ]),
        ),
        // One-space indentation.
        (
            "wass3r/vela-pub-test",
            Uses(vec![
                u(K::Step, None, "test", "alpine:3.12", P::NotPresent, 4, 11, Check),
                u(K::Step, None, "fake log", "golang:1.17", P::NotPresent, 9, 11, Check),
            ]),
        ),
        // Services with `entrypoint:` lists, `pull: always` everywhere.
        (
            "zapplebee/nyx-auth",
            Uses(vec![
                u(K::Service, None, "nyx-auth", "oven/bun:1.3.5", P::Always, 21, 12, Check),
                u(K::Service, None, "test-app", "node:20-alpine", P::Always, 36, 12, Check),
                u(K::Step, None, "wait-for-services", "alpine:latest", P::Always, 52, 12, Check),
                u(K::Step, None, "cypress", "cypress/included:latest", P::Always, 62, 12, Check),
                u(K::Step, None, "publish-push", "target/vela-docker:latest", P::Always, 75, 12, Check),
                u(K::Step, None, "publish-tag", "target/vela-docker:latest", P::Always, 89, 12, Check),
            ]),
        ),
        // `$VELA_...` only in commands.
        (
            "zapplebee/velatest",
            Uses(vec![
                u(K::Step, None, "hello", "alpine", P::NotPresent, 5, 12, Check),
                u(K::Step, None, "env", "alpine", P::NotPresent, 12, 12, Check),
                u(K::Step, None, "publish", "target/vela-docker:latest", P::Always, 20, 12, Check),
            ]),
        ),
    ]
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// `(repository, path, stored)` of each line of SOURCES.
fn sources() -> Vec<(String, String, bool)> {
    let text = std::fs::read_to_string(corpus_dir().join("SOURCES")).expect("SOURCES");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            assert_eq!(fields.len(), 5, "SOURCES line {l:?}");
            assert_eq!(fields[2].len(), 40, "a commit: {l:?}");
            (
                fields[0].to_owned(),
                fields[1].to_owned(),
                fields[4] == "yes",
            )
        })
        .collect()
}

fn actual(u: &pullcheck_input::ImageUse) -> Use {
    Use {
        kind: u.origin.kind,
        stage: u.origin.stage.clone(),
        name: u.origin.name.clone(),
        image: u.image.clone(),
        policy: u.policy,
        line: u.origin.line.unwrap_or(0),
        column: u.origin.column.unwrap_or(0),
        outcome: match &u.disposition {
            Disposition::Check => Check,
            Disposition::Skip(Skip::Template { name }) => Outcome::Template(name.clone()),
            other => panic!(
                "{}: not an outcome of this corpus: {other:?}",
                u.origin.name
            ),
        },
    }
}

#[test]
fn the_held_out_corpus_reads_as_velas_compiler_reads_it() {
    let sources = sources();
    let expected = expected();
    assert!(expected.len() >= 25, "at least 25 files");
    let listed: Vec<&str> = sources.iter().map(|(r, _, _)| r.as_str()).collect();
    let tabled: Vec<&str> = expected.iter().map(|(r, _)| *r).collect();
    assert_eq!(
        listed, tabled,
        "SOURCES and the table list the same files, in one order"
    );
    let outside = std::env::var_os("PULLCHECK_VELA_CORPUS").map(PathBuf::from);
    let (mut read, mut skipped) = (0, Vec::new());
    for ((repo, path, stored), (_, expect)) in sources.iter().zip(expected) {
        let file = if *stored {
            corpus_dir().join(repo).join(path)
        } else {
            match &outside {
                Some(dir) => dir.join(repo).join(path),
                None => {
                    skipped.push(repo.clone());
                    continue;
                }
            }
        };
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        read += 1;
        let got = read_pipeline(".vela.yml", &text);
        match (expect, got) {
            (Uses(want), Ok(uses)) => {
                let got: Vec<Use> = uses.iter().map(actual).collect();
                assert_eq!(got, want, "{repo}");
            }
            (Refused(want, at), Err(e)) => {
                assert_eq!(e.refusal.as_deref(), Some(&want), "{repo}: {e}");
                assert_eq!((e.line, e.column), (Some(at.0), Some(at.1)), "{repo}: {e}");
            }
            (RefusedFile(want), Err(e)) => {
                assert_eq!(e.refusal.as_deref(), Some(&want), "{repo}: {e}");
            }
            (want, got) => panic!("{repo}: Vela gives {want:?}, pullcheck {got:?}"),
        }
    }
    assert!(read >= 3, "the stored files are always read");
    if !skipped.is_empty() {
        println!(
            "SKIPPED: {} corpus files not stored here (no licence known to allow it); set \
             PULLCHECK_VELA_CORPUS (scripts/fetch-vela-corpus.sh) to read them: {}",
            skipped.len(),
            skipped.join(", ")
        );
    }
}
