//! `--image-credential-provider-config` and `--image-credential-provider-bin-dir` on the
//! binary: `check` finds an image only a plugin unlocks and names the provider,
//! `explain` shows the provider and its `matchImages` entry, a bad config is an error
//! naming the option and the field (`check`, `explain`, `serve`), and the plugin's
//! password is in no output or log, at `PULLCHECK_LOG=trace`.

#![cfg(unix)]

use crate::util::text;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::temp_dir;
use pullcheck_testkit::credential_provider::{FakePlugin, calls, config, write_plugin};
use pullcheck_testkit::{Auth, ImageKind, Registry, TokenPolicy, User};

const CANARY: &str = "provider-canary-c41b";

fn pullcheck(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("PULLCHECK_LOG", "trace")
        .env("HOME", dir)
        .env_remove("DOCKER_CONFIG")
        .env_remove("KUBECONFIG")
        .output()
        .expect("run pullcheck")
}

#[tokio::test]
async fn check_and_explain_use_the_plugin_and_never_show_its_password() {
    let registry = Registry::builder()
        .auth(Auth::Token(TokenPolicy::new(vec![User::new("ci", CANARY)])))
        .start()
        .await
        .expect("registry");
    registry
        .push("team/app", "v1", ImageKind::OciManifest)
        .await
        .expect("push");
    let host = registry.host();
    let dir = temp_dir("cli-providers");
    write_plugin(
        &dir,
        "cloud-credential-provider",
        &FakePlugin::answer("Registry", Some("1h"), host, "ci", CANARY),
    );
    let pattern = format!("{host}/team");
    std::fs::write(
        dir.join("providers.json"),
        config(&[("cloud-credential-provider", &[pattern.as_str()], "12h", &[])]),
    )
    .expect("config");
    let flags = [
        "--image-credential-provider-config",
        "providers.json",
        "--image-credential-provider-bin-dir",
        ".",
    ];
    let image = format!("{host}/team/app:v1");

    let mut args = vec![
        "check",
        "--image",
        image.as_str(),
        "--format",
        "json",
        "-vvv",
    ];
    args.extend(flags);
    let out = pullcheck(&args, &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!shown.contains(CANARY), "{shown}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let row = &report["images"][0];
    assert_eq!(row["status"], "present");
    assert_eq!(
        row["credential"]["source"],
        "credential provider cloud-credential-provider"
    );
    assert_eq!(
        calls(&dir, "cloud-credential-provider"),
        [format!("{host}/team/app")]
    );

    let mut args = vec!["explain", image.as_str(), "--format", "json"];
    args.extend(flags);
    let out = pullcheck(&args, &dir);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let explained: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("JSON explanation");
    let steps: Vec<&serde_json::Value> = explained["credentials"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(steps.len(), 1, "{explained}");
    assert_eq!(steps[0]["kind"], "credential_provider");
    assert_eq!(
        steps[0]["source"],
        "credential provider cloud-credential-provider (providers.json)"
    );
    assert_eq!(steps[0]["key"], format!("matchImages[{pattern:?}]"));
    // explain runs nothing.
    assert_eq!(calls(&dir, "cloud-credential-provider").len(), 1);
    assert!(!shown.contains(CANARY), "{shown}");
}

#[test]
fn a_bad_config_names_the_option_and_the_field() {
    let dir = temp_dir("cli-providers-bad");
    std::fs::create_dir(dir.join("bin")).expect("bin dir");
    std::fs::write(
        dir.join("bad.yaml"),
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: p\n  matchImages: []\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  defaultCacheDuration: 1h\n",
    )
    .expect("config");
    let flags = [
        "--image-credential-provider-config",
        "bad.yaml",
        "--image-credential-provider-bin-dir",
        "bin",
    ];
    for command in [
        vec!["check", "--image", "127.0.0.1:9/a:v1"],
        vec!["explain", "127.0.0.1:9/a:v1"],
        vec!["serve", "--listen", "127.0.0.1:0"],
    ] {
        let mut args = command.clone();
        args.extend(flags);
        let out = pullcheck(&args, &dir);
        let shown = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {shown}");
        assert!(
            shown.starts_with(
                "pullcheck: error: --image-credential-provider-config bad.yaml: invalid CredentialProviderConfig: providers[0].matchImages: Required value"
            ),
            "{command:?}: {shown}"
        );
    }
    // A config without its bin directory is refused by the parser, naming the flag.
    let out = pullcheck(&["explain", "127.0.0.1:9/a", flags[0], flags[1]], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--image-credential-provider-bin-dir"));
}
