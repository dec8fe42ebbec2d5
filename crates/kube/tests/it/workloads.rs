//! Kubernetes workload manifests as input.

use std::path::{Path, PathBuf};

use pullcheck_input::{
    ContainerKind, ContainerList, Disposition, ImageUse, PodContainer, Problem, PullPolicy,
};
use pullcheck_kube::{
    Manifests, Subject, Workload, is_kubernetes_manifest, read_manifests, read_manifests_file,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(text: &str) -> Manifests {
    read_manifests("m.yaml", text).expect("manifests")
}

/// (name, image, policy, line, column) of each use.
fn summary(w: &Workload) -> Vec<(String, String, PullPolicy, usize, usize)> {
    w.images
        .iter()
        .map(|u| {
            (
                u.origin.name.clone(),
                u.image.clone(),
                u.policy,
                u.origin.line.unwrap_or(0),
                u.origin.column.unwrap_or(0),
            )
        })
        .collect()
}

fn row(
    name: &str,
    image: &str,
    policy: PullPolicy,
    line: usize,
    column: usize,
) -> (String, String, PullPolicy, usize, usize) {
    (name.to_owned(), image.to_owned(), policy, line, column)
}

#[test]
fn every_workload_kind_in_one_multi_document_file() {
    use PullPolicy::{Always, Never, NotPresent};
    let path = fixture("workloads.yaml");
    let m = read_manifests_file(&path).expect("manifests");
    let file = path.display().to_string();
    let kinds: Vec<_> = m.workloads.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "Pod",
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "ReplicaSet",
            "Job",
            "CronJob"
        ]
    );

    let pod = &m.workloads[0];
    assert_eq!(pod.namespace.as_deref(), Some("tools"));
    assert_eq!(
        pod.pull_secrets.service_account_name.as_deref(),
        Some("debugger")
    );
    assert_eq!(pod.pull_secrets.namespace.as_deref(), Some("tools"));
    assert_eq!((pod.line, pod.column), (2, 1));
    assert_eq!(
        summary(pod),
        [
            row(
                "Pod/debug container shell",
                "busybox:1.36",
                NotPresent,
                11,
                14
            ),
            row(
                "Pod/debug ephemeralContainer probe",
                "nicolaka/netshoot",
                Never,
                14,
                14
            ),
        ]
    );

    let web = &m.workloads[1];
    assert_eq!(web.pull_secrets.image_pull_secrets, ["registry-creds"]);
    assert_eq!(web.pull_secrets.service_account_name, None);
    assert_eq!(
        web.pull_secrets.subject,
        Subject::Workload {
            kind: "Deployment".into(),
            name: "web".into(),
            file: file.clone()
        }
    );
    // Containers first, then init containers, then ephemeral ones.
    assert_eq!(
        summary(web),
        [
            row(
                "Deployment/web container app",
                "registry.example.com/team/web",
                Always,
                33,
                18
            ),
            row(
                "Deployment/web container proxy",
                "envoyproxy/envoy:v1.31-latest",
                NotPresent,
                35,
                18
            ),
            row(
                "Deployment/web initContainer migrate",
                "registry.example.com/team/migrate:v3",
                Always,
                29,
                18
            ),
        ]
    );

    assert_eq!(summary(&m.workloads[2])[0].2, NotPresent, "tag and digest");
    assert_eq!(summary(&m.workloads[3])[0].2, NotPresent, "digest only");
    assert_eq!(
        m.workloads[3].pull_secrets.service_account_name.as_deref(),
        Some("node-agent"),
        "the deprecated serviceAccount alias"
    );
    assert_eq!(
        summary(&m.workloads[4])[0].2,
        NotPresent,
        "written policy wins over :latest"
    );
    assert_eq!(m.workloads[5].name, "report-*");
    assert_eq!(
        summary(&m.workloads[5])[0].0,
        "Job/report-* container report"
    );
    let backup = &m.workloads[6];
    assert_eq!(backup.pull_secrets.image_pull_secrets, ["backup-creds"]);
    assert_eq!(
        summary(backup),
        [row(
            "CronJob/backup container backup",
            "ghcr.io/acme/backup:latest",
            Always,
            98,
            22
        )]
    );

    for u in m.images() {
        assert_eq!(u.origin.kind, ContainerKind::Container);
        assert_eq!(u.origin.file.as_deref(), Some(file.as_str()));
        assert_eq!(u.origin.stage, None);
        assert_eq!(u.disposition, Disposition::Check);
    }
    assert_eq!(m.images().len(), 10);
    assert_eq!(m.pull_secrets().len(), 7);

    assert_eq!(m.skipped.len(), 1);
    assert_eq!(m.skipped[0].kind.as_deref(), Some("Service"));
    assert_eq!(m.skipped[0].name.as_deref(), Some("web"));
    assert_eq!(m.skipped[0].line, 100);
}

#[test]
fn a_v1_list_is_read_item_by_item() {
    let m = read_manifests_file(&fixture("list.yaml")).expect("manifests");
    let names: Vec<_> = m.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(m.workloads[0].namespace.as_deref(), Some("a"));
    assert_eq!(m.workloads[0].images[0].policy, PullPolicy::NotPresent);
    assert_eq!(m.workloads[1].images[0].policy, PullPolicy::Always);
    assert_eq!(m.workloads[1].images[0].origin.line, Some(17));
    assert_eq!(m.skipped.len(), 1);
    assert_eq!(m.skipped[0].kind.as_deref(), Some("ConfigMap"));

    // A typed list (`kubectl get pods -o yaml` on some versions) and an empty one.
    let m = read(
        "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{name: c, image: a:1}]}\n",
    );
    assert_eq!(m.workloads.len(), 1);
    let m = read("apiVersion: v1\nkind: List\nitems: []\n");
    assert!(m.workloads.is_empty());
}

#[test]
fn defaulting_table_through_manifests() {
    let digest = "sha256:".to_owned() + &"c".repeat(64);
    let cases = [
        ("alpine", PullPolicy::Always),
        ("alpine:latest", PullPolicy::Always),
        ("docker.io/library/alpine", PullPolicy::Always),
        ("alpine:3.20", PullPolicy::NotPresent),
        ("myregistry.local:5000/alpine", PullPolicy::Always),
        ("myregistry.local:5000/alpine:3", PullPolicy::NotPresent),
        (&*format!("alpine@{digest}"), PullPolicy::NotPresent),
        (&*format!("alpine:3@{digest}"), PullPolicy::NotPresent),
        (&*format!("alpine:latest@{digest}"), PullPolicy::Always),
    ];
    let containers: String = cases
        .iter()
        .enumerate()
        .map(|(i, (image, _))| format!("    - name: c{i}\n      image: \"{image}\"\n"))
        .collect();
    let m = read(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n{containers}"
    ));
    for ((image, want), got) in cases.iter().zip(&m.workloads[0].images) {
        assert_eq!(got.image, *image);
        assert_eq!(got.policy, *want, "{image}");
    }
    // Each written policy maps; an empty one is the same as none.
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: a, image: x:1, imagePullPolicy: Always}
  - {name: b, image: x, imagePullPolicy: IfNotPresent}
  - {name: c, image: x, imagePullPolicy: Never}
  - {name: d, image: x, imagePullPolicy: ''}
",
    );
    let policies: Vec<_> = m.workloads[0].images.iter().map(|u| u.policy).collect();
    assert_eq!(
        policies,
        [
            PullPolicy::Always,
            PullPolicy::NotPresent,
            PullPolicy::Never,
            PullPolicy::Always
        ]
    );
}

#[test]
fn container_problems_are_invalid_uses_with_positions() {
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: bad-policy
    image: nginx:1
    imagePullPolicy: always
  - name: no-image
  - just-a-string
  - name: map-image
    image: {repo: x}
",
    );
    let uses: &[ImageUse] = &m.workloads[0].images;
    assert_eq!(uses.len(), 4);
    let invalid = |u: &ImageUse| match &u.disposition {
        Disposition::Invalid(problems) | Disposition::UnknownPolicy { problems, .. } => {
            Problem::join(problems)
        }
        other => panic!("expected invalid, got {other:?}"),
    };
    // Each problem's position is data, apart from its words.
    let problem = |u: &ImageUse| match &u.disposition {
        Disposition::Invalid(problems) | Disposition::UnknownPolicy { problems, .. } => {
            let p = &problems[0];
            let at = p.at.as_ref().expect("positioned");
            (at.file.clone(), at.line, at.column, p.message.clone())
        }
        other => panic!("expected invalid, got {other:?}"),
    };
    assert!(
        matches!(&uses[0].disposition, Disposition::UnknownPolicy { written, .. } if written == "always"),
        "{:?}",
        uses[0].disposition
    );
    assert_eq!(
        problem(&uses[0]),
        (
            "m.yaml".to_owned(),
            Some(8),
            Some(22),
            "unsupported imagePullPolicy \"always\": must be Always, IfNotPresent or Never"
                .to_owned()
        )
    );
    assert_eq!(uses[0].image, "nginx:1");
    assert_eq!(
        (uses[0].origin.line, uses[0].origin.column),
        (Some(7), Some(12))
    );
    assert_eq!(
        problem(&uses[1]),
        ("m.yaml".to_owned(), Some(9), Some(5), "no image".to_owned())
    );
    assert_eq!(invalid(&uses[1]), "m.yaml:9:5: no image");
    assert_eq!(uses[1].origin.name, "Pod/p container no-image");
    // The origin says owner, list and container apart too.
    assert_eq!(
        uses[1].origin.pod,
        Some(PodContainer {
            owner: "Pod/p".into(),
            list: ContainerList::Containers,
            name: "no-image".into()
        })
    );
    assert!(
        invalid(&uses[2]).contains("containers[2] must be a mapping"),
        "{}",
        invalid(&uses[2])
    );
    assert_eq!(uses[2].origin.name, "Pod/p container containers[2]");
    assert!(invalid(&uses[3]).contains("image must be a string, found a mapping"));
}

#[test]
fn shape_errors_in_a_workload_are_file_errors_with_positions() {
    let e = read_manifests(
        "m.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers: {name: app}\n",
    )
    .expect_err("containers must be a list");
    assert_eq!((e.line, e.column), (Some(7), Some(19)));
    assert!(
        e.message
            .contains("Deployment/web: containers must be a list"),
        "{}",
        e.message
    );

    let e = read_manifests("m.yaml", "apiVersion: v1\nkind: Pod\nspec: [1]\n").expect_err("spec");
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("must be a mapping"), "{}", e.message);

    let e = read_manifests(
        "m.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  imagePullSecrets: regcred\n",
    )
    .expect_err("secrets");
    assert!(
        e.message.contains("imagePullSecrets must be a list"),
        "{}",
        e.message
    );

    let e = read_manifests(
        "m.yaml",
        "apiVersion: v1\nkind: Pod\nspec: {containers: [\n",
    )
    .expect_err("yaml");
    assert!(e.message.starts_with("not valid YAML"), "{}", e.message);
    assert!(e.line.is_some());
}

#[test]
fn what_is_not_a_workload_is_skipped_with_a_reason() {
    let m = read(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
         - a list\n---\n\
         metadata: {name: untyped}\n---\n\
         apiVersion: argoproj.io/v1alpha1\nkind: Deployment\nmetadata: {name: custom}\n---\n\
         apiVersion: go-vela.github.io/v1alpha1\nkind: PipelinePodsTemplate\nmetadata: {name: t}\n---\n",
    );
    assert!(m.workloads.is_empty());
    let reasons: Vec<_> = m.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "holds no pod template",
            "not a Kubernetes object: a list, so nothing in it is read",
            "not a Kubernetes object: no apiVersion and kind, so nothing in it is read",
            "argoproj.io/v1alpha1 is not a core workload API group",
            "holds no pod template",
        ]
    );
    assert_eq!(m.skipped[3].line, 9);
}

#[test]
fn pods_without_containers_and_unnamed_objects() {
    let m = read(
        "apiVersion: batch/v1\nkind: Job\nspec: {}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: empty}\n",
    );
    assert_eq!(m.workloads.len(), 2);
    assert_eq!(m.workloads[0].name, "document 1");
    assert!(m.workloads[0].images.is_empty());
    assert!(m.workloads[1].images.is_empty());
}

#[test]
fn anchors_and_merge_keys_in_manifests() {
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - &base
    name: a
    image: &img registry.example.com/app:1
    imagePullPolicy: Always
  - <<: *base
    name: b
  - name: c
    image: *img
",
    );
    let uses = &m.workloads[0].images;
    assert_eq!(uses.len(), 3);
    assert_eq!(uses[1].origin.name, "Pod/p container b");
    assert_eq!(uses[1].policy, PullPolicy::Always);
    // The anchor's own image is where it is written; a merged or aliased value is where the
    // container uses it: at `*base` in `- <<: *base`, at `*img` in `image: *img`.
    assert_eq!(
        (uses[0].origin.line, uses[0].origin.column),
        (Some(8), Some(17))
    );
    assert_eq!(
        (uses[1].origin.line, uses[1].origin.column),
        (Some(10), Some(9))
    );
    assert_eq!(uses[2].image, "registry.example.com/app:1");
    assert_eq!(uses[2].policy, PullPolicy::NotPresent);
    assert_eq!(
        (uses[2].origin.line, uses[2].origin.column),
        (Some(13), Some(12))
    );
}

#[test]
fn aliased_images_and_containers_are_at_the_alias() {
    let m = read(
        "apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: one}
  spec:
    template:
      spec:
        containers: &containers
        - name: app
          image: &app registry.example.com/app:1
        - &sidecar
          name: sidecar
          image: registry.example.com/sidecar:2
          imagePullPolicy: Sometimes
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: two}
  spec:
    template:
      spec:
        containers: *containers
        initContainers:
        - name: init
          image: *app
        - *sidecar
",
    );
    assert_eq!(m.workloads.len(), 2);
    let at = |u: &ImageUse| (u.origin.line.unwrap(), u.origin.column.unwrap());
    let one = &m.workloads[0].images;
    let two = &m.workloads[1].images;
    // The first Deployment is where the containers are written.
    assert_eq!(one[0].origin.name, "Deployment/one container app");
    assert_eq!(at(&one[0]), (12, 23));
    assert_eq!(at(&one[1]), (15, 18));
    // The second uses them through `containers: *containers`: every one of its containers
    // is there, not in the first Deployment.
    assert_eq!(two[0].origin.name, "Deployment/two container app");
    assert_eq!(two[0].image, "registry.example.com/app:1");
    assert_eq!(at(&two[0]), (23, 21));
    assert_eq!(at(&two[1]), (23, 21));
    // `image: *app` is at the `*app`; a container written `- *sidecar` at the `*sidecar`.
    assert_eq!(two[2].origin.name, "Deployment/two initContainer init");
    assert_eq!(two[2].image, "registry.example.com/app:1");
    assert_eq!(at(&two[2]), (26, 18));
    assert_eq!(two[3].origin.name, "Deployment/two initContainer sidecar");
    assert_eq!(at(&two[3]), (27, 11));
    // An invalid value inside an aliased container: at the use, naming where it is written.
    assert_eq!(
        invalid_message(&one[1]),
        "m.yaml:16:28: unsupported imagePullPolicy \"Sometimes\": must be Always, IfNotPresent \
         or Never"
    );
    assert_eq!(
        invalid_message(&two[1]),
        "m.yaml:23:21 (written at 16:28): unsupported imagePullPolicy \"Sometimes\": must be \
         Always, IfNotPresent or Never"
    );
    assert_eq!(
        invalid_message(&two[3]),
        "m.yaml:27:11 (written at 16:28): unsupported imagePullPolicy \"Sometimes\": must be \
         Always, IfNotPresent or Never"
    );
}

#[test]
fn an_invalid_image_through_an_alias_is_at_the_alias() {
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
x-registry: &registry {host: example.com}
spec:
  containers:
  - name: a
    image: *registry
",
    );
    let u = &m.workloads[0].images[0];
    assert_eq!((u.origin.line, u.origin.column), (Some(8), Some(12)));
    assert_eq!(
        invalid_message(u),
        "m.yaml:8:12 (written at 4:13): image must be a string, found a mapping"
    );
    // A pod spec of the wrong shape, through an alias: the error is at the alias.
    let e = read_manifests(
        "m.yaml",
        "apiVersion: v1\nkind: Pod\nx: &m {a: 1}\nspec:\n  containers: *m\n",
    )
    .expect_err("containers as a mapping");
    assert_eq!(
        e.to_string(),
        "m.yaml:5:15: Pod/document 1: containers must be a list, found a mapping (written at 3:4)"
    );
}

#[test]
fn routing_detects_manifests_but_not_pipelines() {
    let text = std::fs::read_to_string(fixture("workloads.yaml")).expect("read");
    assert!(is_kubernetes_manifest(&text));
    let text = std::fs::read_to_string(fixture("template-full.yaml")).expect("read");
    assert!(
        is_kubernetes_manifest(&text),
        "a template is a manifest too (no workload)"
    );
    assert!(!is_kubernetes_manifest(
        "version: \"1\"\nsteps:\n  - name: test\n    image: golang:1.22\n"
    ));
    assert!(!is_kubernetes_manifest(
        r#"{"id": "step_org_repo_1_init", "version": "1", "steps": []}"#
    ));
    assert!(is_kubernetes_manifest(
        r#"{"apiVersion": "v1", "kind": "Pod"}"#
    ));
}

#[test]
fn hostile_manifests_end_in_bounded_time() {
    // An alias bomb of containers: each level lists the previous one ten times. Aliases
    // are shared, so reading stays small; the uses are one per written container entry.
    let mut text = String::from("x0: &a0 {name: c, image: \"i:1\"}\n");
    for i in 1..6 {
        let refs = vec![format!("*a{}", i - 1); 3].join(", ");
        text.push_str(&format!("x{i}: &a{i} [{refs}]\n"));
    }
    text.push_str("---\napiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: x}]}\n");
    let m = read(&text);
    assert_eq!(m.workloads.len(), 1);
    assert_eq!(m.skipped.len(), 1);
}

fn invalid_message(u: &ImageUse) -> String {
    match &u.disposition {
        Disposition::Invalid(problems) | Disposition::UnknownPolicy { problems, .. } => {
            Problem::join(problems)
        }
        other => panic!("{} should be invalid, is {other:?}", u.origin.name),
    }
}

#[test]
fn a_key_written_twice_is_an_error_naming_both_places() {
    // `image` twice in one container: the first image would silently disappear.
    let e = read_manifests(
        "d.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: one:1\n    image: two:2\n",
    )
    .expect_err("duplicate image");
    assert_eq!(
        e.to_string(),
        "d.yaml:8:5: duplicate key \"image\" (first at 7:5)"
    );
    // In a later document, and at the top level of an object.
    let e = read_manifests(
        "d.yaml",
        "apiVersion: v1\nkind: ConfigMap\n---\napiVersion: apps/v1\nkind: Deployment\nspec: {}\nspec:\n  template: {}\n",
    )
    .expect_err("duplicate spec");
    assert_eq!(
        e.to_string(),
        "d.yaml:7:1: duplicate key \"spec\" (first at 6:1)"
    );
    // Merge keys are not duplicates: several `<<`, and an explicit key over a merged one.
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
x: &x {imagePullPolicy: Never, image: merged:1}
y: &y {name: from-y}
spec:
  containers:
  - <<: *x
    <<: *y
    image: own:1
",
    );
    let u = &m.workloads[0].images[0];
    assert_eq!(
        (u.image.as_str(), u.policy, u.origin.name.as_str()),
        ("own:1", PullPolicy::Never, "Pod/p container from-y")
    );
    // Routing is not fooled by a duplicate: the manifest reader reports it.
    assert!(is_kubernetes_manifest(
        "apiVersion: v1\nkind: Pod\nkind: Pod\n"
    ));
}

#[test]
fn documents_that_are_not_kubernetes_objects_are_skipped_with_file_and_line() {
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: a:1}]}
---
version: \"1\"
steps:
  - name: s
    image: golang:1.22
---
foo: bar
---
- a
- b
---
apiVersion: v1
kind: Service
metadata: {name: svc}
",
    );
    assert_eq!(m.workloads.len(), 1);
    let skipped: Vec<_> = m
        .skipped
        .iter()
        .map(|s| (s.file.as_str(), s.line, s.column, s.may_hide_images))
        .collect();
    assert_eq!(
        skipped,
        [
            ("m.yaml", 6, 1, true),
            ("m.yaml", 11, 1, true),
            ("m.yaml", 13, 1, true),
            ("m.yaml", 16, 1, false),
        ]
    );
    assert!(
        m.skipped[0].reason.contains("looks like a Vela pipeline"),
        "{}",
        m.skipped[0].reason
    );
    assert!(m.skipped[1].reason.contains("no apiVersion and kind"));
    assert!(m.skipped[2].reason.contains("a list"));
    // What a caller shows: one warning per object that may hide images.
    let warnings = m.warnings();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].starts_with("m.yaml:6:1: not a Kubernetes object"),
        "{warnings:?}"
    );
    assert!(warnings[2].starts_with("m.yaml:13:1: "), "{warnings:?}");
    assert_eq!(
        m.skipped[3].to_string(),
        "m.yaml:16:1: Service \"svc\": holds no pod template"
    );
}

#[test]
fn unsupported_kinds_with_a_pod_template_say_their_images_are_not_checked() {
    let m = read(
        "apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: app, image: nginx:1}]
---
apiVersion: example.com/v1
kind: ScheduledThing
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: app, image: busybox}]
---
apiVersion: example.com/v1
kind: PodLike
metadata: {name: pl}
spec:
  containers: [{name: app, image: busybox}]
---
apiVersion: go-vela.github.io/v1alpha1
kind: PipelinePodsTemplate
metadata: {name: t}
spec:
  template:
    spec:
      nodeSelector: {a: b}
",
    );
    assert!(m.workloads.is_empty());
    let reasons: Vec<_> = m.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "kind Rollout (argoproj.io/v1alpha1) is not read: its pod template's images are not checked",
            "kind ScheduledThing (example.com/v1) is not read: its pod template's images are not checked",
            "kind PodLike (example.com/v1) is not read: the images of its spec.containers are not checked",
            "holds no pod template",
        ]
    );
    let hide: Vec<_> = m.skipped.iter().map(|s| s.may_hide_images).collect();
    assert_eq!(hide, [true, true, true, false]);
    assert_eq!(m.warnings().len(), 3);
    assert!(
        m.warnings()[0].starts_with("m.yaml:1:1: Rollout \"web\": kind Rollout"),
        "{:?}",
        m.warnings()
    );
}

#[test]
fn a_misspelt_containers_key_is_an_invalid_use_not_an_empty_pod() {
    let m = read(
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      nodeSelector: {a: b}
      containres:
      - name: app
        image: nginx:1
",
    );
    let uses = &m.workloads[0].images;
    assert_eq!(uses.len(), 1, "{uses:?}");
    assert_eq!(uses[0].image, "");
    assert_eq!(
        invalid_message(&uses[0]),
        "m.yaml:7:7: Deployment/web: pod spec has no `containers` (unknown key `containres`?)"
    );
    assert_eq!(
        (uses[0].origin.line, uses[0].origin.column),
        (Some(7), Some(7))
    );
    assert_eq!(uses[0].origin.name, "Deployment/web pod spec");

    // A misspelt level on the way to the pod spec.
    let m = read(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  tempalte:\n    spec:\n      containers: [{name: app, image: nginx:1}]\n",
    );
    let uses = &m.workloads[0].images;
    assert_eq!(uses.len(), 1, "{uses:?}");
    assert_eq!(
        invalid_message(&uses[0]),
        "m.yaml:5:3: Deployment/web: spec has no `template` (unknown key `tempalte`?), so its pod spec is not read"
    );

    // A misspelt container list next to `containers`, and a misspelt `image`.
    let m = read(
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: app
    imgae: nginx:1
  initContainres:
  - name: init
    image: busybox
",
    );
    let uses = &m.workloads[0].images;
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert_eq!(
        invalid_message(&uses[0]),
        "m.yaml:6:5: no image (unknown key `imgae`?)"
    );
    assert_eq!(
        invalid_message(&uses[1]),
        "m.yaml:8:3: Pod/p: pod spec has unknown key `initContainres` (a misspelt `initContainers`?): its containers are not read"
    );

    // Partial objects with only known keys (kustomize patches) stay empty pods.
    let m = read(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      nodeSelector: {a: b}\n",
    );
    assert!(m.workloads[0].images.is_empty());
}

/// A YAML error in a later document of a manifest file: the file is still recognised
/// as Kubernetes manifests, so that the error reported is the YAML one, at its place
/// (found by a reviewer: it was called "not a pipeline").
#[test]
fn a_yaml_error_in_a_later_document_is_reported_as_such() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  \
                - name: c\n    image: [unclosed\n";
    assert!(is_kubernetes_manifest(text));
    let err = read_manifests("k.yml", text).expect_err("bad YAML");
    let shown = err.to_string();
    assert!(shown.starts_with("k.yml:"), "{shown}");
    assert!(!shown.contains("not a pipeline"), "{shown}");
    // A leading marker starts the first document; a pipeline stays a pipeline.
    assert!(is_kubernetes_manifest(
        "---\napiVersion: v1\nkind: Pod\n---\nkind: [\n"
    ));
    assert!(!is_kubernetes_manifest(
        "version: \"1\"\nsteps: [\n---\nkind: x\n"
    ));
}

/// Image volumes (`volumes[].image`, core/v1 `ImageVolumeSource`, Kubernetes 1.31+) of a
/// Pod and of each pod template, after the containers: kind `volume`, list `volumes`,
/// at the `reference`, with `pullPolicy` defaulted as core/v1 `SetDefaults_Volume` does
/// (`parsers.ParseImageName`'s tag `latest`, which no tag and no digest also gives, →
/// Always; anything else → IfNotPresent).
#[test]
fn image_volumes_of_pods_and_pod_templates() {
    use PullPolicy::{Always, Never, NotPresent};
    let digest = "sha256:".to_owned() + &"d".repeat(64);
    let m = read(&format!(
        "\
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
  - {{name: app, image: team/app:v1}}
  volumes:
  - name: scratch
    emptyDir: {{}}
  - name: models
    image: {{reference: team/models}}
  - name: latest
    image: {{reference: team/models:latest}}
  - name: tagged
    image: {{reference: team/models:v2}}
  - name: pinned
    image: {{reference: \"team/models@{digest}\"}}
  - name: never
    image: {{reference: team/models, pullPolicy: Never}}
  - name: if-not-present
    image: {{reference: team/models:latest, pullPolicy: IfNotPresent}}
  - name: always
    image: {{reference: team/models:v2, pullPolicy: Always}}
  - name: empty-policy
    image: {{reference: team/models:v2, pullPolicy: ''}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d}}
spec:
  template:
    spec:
      containers: [{{name: app, image: team/app:v1}}]
      volumes: [{{name: data, image: {{reference: team/data:v1}}}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: c}}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{{name: app, image: team/app:v1}}]
          volumes:
          - name: data
            image:
              reference: team/data
              pullPolicy: IfNotPresent
"
    ));
    let kinds: Vec<_> = m.workloads.iter().map(|w| w.kind.as_str()).collect();
    assert_eq!(kinds, ["Pod", "Deployment", "CronJob"]);
    let pinned = format!("team/models@{digest}");
    assert_eq!(
        summary(&m.workloads[0]),
        [
            row("Pod/p container app", "team/app:v1", NotPresent, 6, 24),
            row("Pod/p volume models", "team/models", Always, 11, 24),
            row("Pod/p volume latest", "team/models:latest", Always, 13, 24),
            row("Pod/p volume tagged", "team/models:v2", NotPresent, 15, 24),
            row("Pod/p volume pinned", &pinned, NotPresent, 17, 24),
            row("Pod/p volume never", "team/models", Never, 19, 24),
            row(
                "Pod/p volume if-not-present",
                "team/models:latest",
                NotPresent,
                21,
                24
            ),
            row("Pod/p volume always", "team/models:v2", Always, 23, 24),
            row(
                "Pod/p volume empty-policy",
                "team/models:v2",
                NotPresent,
                25,
                24
            ),
        ]
    );
    for u in &m.workloads[0].images[1..] {
        assert_eq!(u.origin.kind, ContainerKind::Volume, "{u:?}");
        assert_eq!(u.disposition, Disposition::Check, "{u:?}");
        let pod = u.origin.pod.as_ref().expect("pod fields");
        assert_eq!(pod.owner, "Pod/p");
        assert_eq!(pod.list, ContainerList::Volumes);
        assert_eq!(format!("Pod/p volume {}", pod.name), u.origin.name);
    }
    assert_eq!(
        summary(&m.workloads[1])[1],
        row(
            "Deployment/d volume data",
            "team/data:v1",
            NotPresent,
            34,
            49
        )
    );
    assert_eq!(
        summary(&m.workloads[2])[1],
        row("CronJob/c volume data", "team/data", NotPresent, 48, 26)
    );
    assert_eq!(m.workloads[2].images[1].origin.kind, ContainerKind::Volume);
}

/// An image volume without a `reference` (the API's validation: `reference` is
/// required, `Required value`; in a Pod always, in a pod template since kubernetes PR
/// 135989, before which the template was stored and every Pod made from it refused), or
/// with a `pullPolicy` that is not one of the three (`Unsupported value`), is a use with
/// the problem at its place, never a dropped one.
#[test]
fn an_image_volume_without_reference_or_with_a_bad_policy_is_invalid_there() {
    let m = read(
        "\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: app, image: team/app:v1}]
  volumes:
  - name: none
    image: {}
  - name: empty
    image: {reference: ''}
  - name: odd
    image: {reference: team/models:v1, pullPolicy: always}
",
    );
    let volumes = &m.workloads[0].images[1..];
    assert_eq!(volumes.len(), 3, "{volumes:?}");
    match &volumes[0].disposition {
        Disposition::Invalid(problems) => {
            assert_eq!(problems.len(), 1);
            assert_eq!(
                problems[0].at.as_ref().map(|at| (at.line, at.column)),
                Some((Some(8), Some(12)))
            );
            assert_eq!(problems[0].message, "no image.reference");
        }
        other => panic!("{other:?}"),
    }
    match &volumes[1].disposition {
        Disposition::Invalid(problems) => {
            assert_eq!(
                problems[0].at.as_ref().map(|at| (at.line, at.column)),
                Some((Some(10), Some(24)))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(volumes[1].image, "");
    match &volumes[2].disposition {
        Disposition::UnknownPolicy { written, problems } => {
            assert_eq!(written, "always");
            assert_eq!(problems.len(), 1);
            assert_eq!(problems[0].at.as_ref().and_then(|at| at.line), Some(12));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(volumes[2].image, "team/models:v1");
}

/// Every workload kind with a pod template reads its template's image volumes, kind
/// `volume`, after the containers; an empty `reference` in a template is invalid too.
#[test]
fn image_volumes_of_every_pod_template_kind() {
    for (api, kind, path) in [
        ("apps/v1", "StatefulSet", "spec.template.spec"),
        ("apps/v1", "DaemonSet", "spec.template.spec"),
        ("apps/v1", "ReplicaSet", "spec.template.spec"),
        ("batch/v1", "Job", "spec.template.spec"),
        ("v1", "ReplicationController", "spec.template.spec"),
        ("v1", "PodTemplate", "template.spec"),
    ] {
        let mut text = format!("apiVersion: {api}\nkind: {kind}\nmetadata: {{name: w}}\n");
        let mut indent = String::new();
        for level in path.split('.') {
            text += &format!("{indent}{level}:\n");
            indent += "  ";
        }
        text += &format!(
            "{indent}containers: [{{name: app, image: team/app:v1}}]\n\
             {indent}volumes:\n\
             {indent}- {{name: data, image: {{reference: team/data:v3, pullPolicy: Always}}}}\n\
             {indent}- {{name: none, image: {{reference: ''}}}}\n"
        );
        let m = read(&text);
        let images = &m.workloads[0].images;
        assert_eq!(images.len(), 3, "{kind}: {images:?}");
        assert_eq!(images[1].origin.kind, ContainerKind::Volume, "{kind}");
        assert_eq!(images[1].origin.name, format!("{kind}/w volume data"));
        assert_eq!(
            (images[1].image.as_str(), images[1].policy),
            ("team/data:v3", PullPolicy::Always),
            "{kind}"
        );
        assert_eq!(images[1].disposition, Disposition::Check, "{kind}");
        assert!(
            matches!(&images[2].disposition, Disposition::Invalid(p) if p.len() == 1),
            "{kind}: {:?}",
            images[2]
        );
    }
}
