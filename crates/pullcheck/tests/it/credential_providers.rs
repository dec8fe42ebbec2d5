//! The kubelet's credential provider plugins end to end: fake plugins from the testkit
//! (shell scripts speaking the exec protocol) in front of a real token registry,
//! through `Checker::check_sets`. Each plugin's runs are counted from its `.calls`
//! file: once per cache key and duration, as the kubelet runs it.

#![cfg(unix)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pullcheck::credentials::{
    CredentialProviders, Keyring, NodeCredentials, ProviderError, ProviderFailure, ProviderOptions,
    PullSecret,
};
use pullcheck::report::{ImageReport, Reason, Report, Status};
use pullcheck::resolve::Resolver;
use pullcheck::{Checker, CheckerOptions};
use pullcheck_testkit::credential_provider::{FakePlugin, calls, config, write_plugin};
use pullcheck_testkit::kube::{DockerAuth, dockerconfigjson};
use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenAuth, TokenPolicy, User};

use crate::util::{check_one_set, image, temp_dir};

/// The password only the plugins hand out: in no report.
const CANARY: &str = "plugin-canary-5e1d9a";

/// User `ci` (the plugins' credential) pulls everything, `reader` only `open/app`,
/// anonymous only `open/app`.
async fn registry() -> Registry {
    let policy = TokenPolicy::new(vec![
        User::new("ci", CANARY),
        User::new("reader", "reader-password-19").pulling(Repos::only(["open/app"])),
    ])
    .anonymous(Repos::only(["open/app"]));
    let registry = Registry::builder()
        .auth(Auth::Token(policy))
        .start()
        .await
        .expect("registry");
    for repository in ["team/app", "team/tool", "open/app", "env/app", "plain/app"] {
        registry
            .push(repository, "v1", ImageKind::OciManifest)
            .await
            .expect("push");
    }
    registry
}

/// Node credentials with the plugins of `config_text` in `bin`.
fn node(bin: &Path, config_text: &str, timeout: Duration) -> NodeCredentials {
    let file = bin.join("config.json");
    std::fs::write(&file, config_text).expect("write config");
    let providers = CredentialProviders::load(&ProviderOptions {
        config: file,
        bin_dir: bin.to_path_buf(),
        timeout,
    })
    .expect("provider config");
    NodeCredentials::empty().with_providers(Arc::new(providers))
}

async fn check(checker: &Checker, images: &[String], pull_secrets: Keyring) -> Report {
    check_one_set(checker, images, pull_secrets).await
}

/// `i` is present, found with the credentials of provider `source`, and no provider
/// failed for it.
fn assert_found_by(i: &ImageReport, source: &str) {
    assert_eq!(
        (i.status, i.reason),
        (Status::Present, Reason::Found),
        "{}",
        i.detail
    );
    assert_eq!(
        i.credential.as_ref().map(|c| c.source.as_str()),
        Some(source)
    );
    assert!(i.provider_failures.is_empty(), "{:?}", i.provider_failures);
}

fn assert_no_canary(report: &Report) {
    let (json, text) = (report.to_json(), report.to_json());
    assert!(!json.contains(CANARY) && !text.contains(CANARY), "{json}");
    assert!(!format!("{report:?}").contains(CANARY));
}

#[tokio::test]
async fn each_cache_key_type_unlocks_the_registry_once_per_key_and_duration() {
    let registry = registry().await;
    let host = registry.host();
    // (cacheKeyType, cacheDuration, defaultCacheDuration, runs over two checks of two
    // images of one registry).
    let cases = [
        ("Image", Some("1h"), "0", 2),
        ("Registry", Some("1h"), "0", 1),
        ("Global", Some("1h"), "0", 1),
        // No cacheDuration: the default applies.
        ("Registry", None, "1h", 1),
        // 0: nothing is kept; the two images of one check still share one run.
        ("Registry", Some("0"), "1h", 2),
        ("Global", None, "0", 2),
    ];
    for (key_type, duration, default, runs) in cases {
        let bin = temp_dir("providers");
        let name = "fake-provider";
        write_plugin(
            &bin,
            name,
            &FakePlugin::answer(key_type, duration, host, "ci", CANARY),
        );
        let pattern = format!("{host}/team");
        let node = node(
            &bin,
            &config(&[(name, &[pattern.as_str()], default, &[])]),
            Duration::from_secs(30),
        );
        let checker =
            Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
        let images = [
            format!("{host}/team/app:v1"),
            format!("{host}/team/tool:v1"),
        ];
        for _ in 0..2 {
            let report = check(&checker, &images, Keyring::new()).await;
            for reference in &images {
                let i = image(&report, reference);
                assert_eq!(i.status, Status::Present, "{key_type}: {}", i.detail);
                let credential = i.credential.as_ref().expect("a credential");
                assert_eq!(credential.source, "credential provider fake-provider");
                assert_eq!(credential.key, host);
                assert_eq!(credential.username.as_deref(), Some("ci"));
            }
            assert_no_canary(&report);
        }
        let ran = calls(&bin, name);
        assert_eq!(
            ran.len(),
            runs,
            "{key_type} {duration:?} {default}: {ran:?}"
        );
        // The kubelet passes the repository without tag.
        assert!(
            ran.iter()
                .all(|i| *i == format!("{host}/team/app") || *i == format!("{host}/team/tool")),
            "{ran:?}"
        );
    }
}

#[tokio::test]
async fn a_failing_hanging_or_garbage_plugin_is_reported_on_its_images_only() {
    let registry = registry().await;
    let host = registry.host();
    let bin = temp_dir("providers");
    write_plugin(&bin, "fails", &FakePlugin::Fail);
    write_plugin(&bin, "hangs", &FakePlugin::Hang);
    write_plugin(&bin, "garbage", &FakePlugin::Garbage);
    write_plugin(
        &bin,
        "needs-env",
        &FakePlugin::NeedsEnv {
            name: "FAKE_REGION".into(),
            value: "loopback-1".into(),
            then: Box::new(FakePlugin::answer("Image", Some("1h"), host, "ci", CANARY)),
        },
    );
    let [fails, hangs, garbage, env] =
        ["team/app", "team/tool", "open/app", "env/app"].map(|r| format!("{host}/{r}"));
    let [plain] = [format!("{host}/plain/app:v1")];
    let text = config(&[
        ("fails", &[fails.as_str()], "1h", &[]),
        ("hangs", &[hangs.as_str()], "1h", &[]),
        ("garbage", &[garbage.as_str()], "1h", &[]),
        (
            "needs-env",
            &[env.as_str()],
            "1h",
            &[("FAKE_REGION", "loopback-1")],
        ),
    ]);
    let node = node(&bin, &text, Duration::from_secs(2));
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
    let images = [
        format!("{fails}:v1"),
        format!("{hangs}:v1"),
        format!("{garbage}:v1"),
        format!("{env}:v1"),
        plain.clone(),
    ];
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        check(&checker, &images, Keyring::new()),
    )
    .await
    .expect("the hanging plugin is killed at its timeout");

    let failed = |reference: &str| {
        let i = image(&report, reference);
        (i.status, i.reason, i.provider_failures.clone())
    };
    let error = |provider: &str, failure: ProviderFailure| {
        vec![ProviderError {
            provider: provider.into(),
            failure,
        }]
    };
    // Without the plugin's credential the pull is anonymous, which `team/*` refuses.
    assert_eq!(
        failed(&images[0]),
        (
            Status::NoAccess,
            Reason::CredentialProviderFailed,
            error("fails", ProviderFailure::Exited { code: Some(1) })
        )
    );
    assert_eq!(
        failed(&images[1]),
        (
            Status::NoAccess,
            Reason::CredentialProviderFailed,
            error("hangs", ProviderFailure::TimedOut { after_ms: 2000 })
        )
    );
    // Anonymous may pull `open/app`: the other credentials (none here: anonymous) are
    // still tried, so the image is found and the failure is listed beside it.
    assert_eq!(
        failed(&images[2]),
        (
            Status::Present,
            Reason::Found,
            error("garbage", ProviderFailure::BadResponse)
        )
    );
    // The config's env reached the plugin.
    assert_found_by(image(&report, &images[3]), "credential provider needs-env");
    // No provider matches `plain/app`: anonymous, refused, and no provider is blamed.
    let i = image(&report, &plain);
    assert_eq!(
        (i.status, i.reason),
        (Status::NoAccess, Reason::UnauthorizedAnonymous)
    );
    assert!(i.provider_failures.is_empty());
    for name in ["fails", "hangs", "garbage", "needs-env"] {
        assert_eq!(calls(&bin, name).len(), 1, "{name}");
    }
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    let row = json["images"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["reference"] == images[1].as_str()))
        .expect("row");
    assert_eq!(row["reason"], "credential_provider_failed");
    assert_eq!(
        row["provider_failures"],
        serde_json::json!([{"provider": "hangs", "kind": "timed_out", "after_ms": 2000}])
    );
    assert_no_canary(&report);
}

#[tokio::test]
async fn pull_secrets_come_first_then_the_plugin() {
    let registry = registry().await;
    let host = registry.host();
    let bin = temp_dir("providers");
    write_plugin(
        &bin,
        "cloud",
        &FakePlugin::answer("Registry", Some("1h"), host, "ci", CANARY),
    );
    let node = node(
        &bin,
        &config(&[("cloud", &[host], "1h", &[])]),
        Duration::from_secs(30),
    );
    // A pull secret that authenticates but may not pull `team/app`.
    let manifest = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: reader}}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{}'\n",
        dockerconfigjson(&[DockerAuth::new(host, "reader", "reader-password-19")])
    );
    let secrets = PullSecret::parse_manifests("secrets.yaml", &manifest).expect("secret");
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
    let app = format!("{host}/team/app:v1");

    let report = check(
        &checker,
        std::slice::from_ref(&app),
        Keyring::from_pull_secrets(&secrets),
    )
    .await;

    let i = image(&report, &app);
    assert_found_by(i, "credential provider cloud");
    let sources: Vec<Option<String>> = i
        .attempts
        .iter()
        .map(|a| a.credential.as_ref().map(|c| c.source.clone()))
        .collect();
    assert_eq!(
        sources,
        [
            Some("pull secret reader (secrets.yaml)".to_owned()),
            Some("credential provider cloud".to_owned())
        ]
    );
    let auths: Vec<TokenAuth> = registry
        .token_server()
        .expect("token mode")
        .requests()
        .into_iter()
        .map(|r| r.auth)
        .collect();
    assert_eq!(
        auths,
        [
            TokenAuth::User("reader".into()),
            TokenAuth::User("ci".into())
        ]
    );
    assert_eq!(calls(&bin, "cloud"), [format!("{host}/team/app")]);
    assert_no_canary(&report);
}

/// A hanging plugin holds up only the images it matches: the image it does not match
/// is asked at once and found, and the matched one, cut off at the deadline, names the
/// plugin that timed out (not a docker credential helper).
#[tokio::test]
async fn a_hanging_plugin_holds_up_only_its_own_images() {
    let registry = registry().await;
    let host = registry.host();
    let bin = temp_dir("providers");
    write_plugin(&bin, "hangs", &FakePlugin::Hang);
    let matched = format!("{host}/team/tool");
    // The plugin's own timeout is far away: the check's deadline cuts it short.
    let node = node(
        &bin,
        &config(&[("hangs", &[matched.as_str()], "1h", &[])]),
        Duration::from_secs(600),
    );
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
    let images = [format!("{matched}:v1"), format!("{host}/open/app:v1")];
    let set = pullcheck::ImageSet {
        uses: images
            .iter()
            .map(|i| pullcheck::input::parse_image_arg(i).expect("image"))
            .collect(),
        pull_secrets: Keyring::new(),
        warnings: Vec::new(),
    };
    let options = pullcheck::CheckOptions {
        deadline: Duration::from_secs(3),
        ..pullcheck::CheckOptions::default()
    };
    let report = tokio::time::timeout(
        Duration::from_secs(20),
        checker.check_sets(vec![set], &options),
    )
    .await
    .expect("the deadline ends the check");

    let open = image(&report, &images[1]);
    assert_eq!(
        (open.status, open.reason),
        (Status::Present, Reason::Found),
        "{}",
        open.detail
    );
    assert!(open.provider_failures.is_empty());
    let hung = image(&report, &images[0]);
    assert_eq!(
        (hung.status, hung.reason),
        (Status::Unreachable, Reason::CredentialProviderFailed),
        "{}",
        hung.detail
    );
    let failures: Vec<(&str, &str)> = hung
        .provider_failures
        .iter()
        .map(|f| (f.provider.as_str(), f.failure.kind()))
        .collect();
    assert_eq!(failures, [("hangs", "timed_out")]);
    assert_eq!(calls(&bin, "hangs"), [matched]);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    let row = json["images"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["reference"] == images[0].as_str()))
        .expect("row");
    assert_eq!(row["reason"], "credential_provider_failed");
    assert_eq!(row["provider_failures"][0]["provider"], "hangs");
    assert_eq!(row["provider_failures"][0]["kind"], "timed_out");
}

/// A definite answer got with a working plugin's credential keeps its reason; the
/// plugin that failed before it is listed beside it.
#[tokio::test]
async fn an_answer_with_a_working_credential_keeps_its_reason() {
    let registry = registry().await;
    let host = registry.host();
    let bin = temp_dir("providers");
    write_plugin(&bin, "exit1", &FakePlugin::Fail);
    write_plugin(
        &bin,
        "good",
        &FakePlugin::answer("Registry", Some("1h"), host, "ci", CANARY),
    );
    let node = node(
        &bin,
        &config(&[("exit1", &[host], "1h", &[]), ("good", &[host], "1h", &[])]),
        Duration::from_secs(30),
    );
    let checker =
        Checker::new(CheckerOptions::default(), Resolver::default(), node).expect("checker");
    let missing = format!("{host}/team/app:no-such-tag");
    let report = check(&checker, std::slice::from_ref(&missing), Keyring::new()).await;

    let i = image(&report, &missing);
    assert_eq!(
        (i.status, i.reason),
        (Status::Missing, Reason::TagNotFound),
        "{}",
        i.detail
    );
    assert_eq!(
        i.credential.as_ref().map(|c| c.source.as_str()),
        Some("credential provider good")
    );
    assert_eq!(
        i.provider_failures,
        [ProviderError {
            provider: "exit1".into(),
            failure: ProviderFailure::Exited { code: Some(1) },
        }]
    );
    assert_no_canary(&report);
}
