//! Where a node's containerd release would decide differently from the release pullcheck
//! models, the report says so as data (`version_warnings`: kind, runtime, file, host,
//! the releases modelled and differing) and, worded, among its `warnings`, in JSON and
//! text: a `hosts.toml` with only `server =`, and an answer over HTTPS or over plain HTTP
//! from containerd's default host of a loopback registry. Loopback registries of the
//! testkit only.

use std::path::Path;
use std::process::{Command, Output};

use pullcheck_testkit::runtime::make_tls_files;
use pullcheck_testkit::{ImageKind, Registry};
use serde_json::{Value, json};

use crate::util::temp_dir;

fn pullcheck(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env_remove("PULLCHECK_LOG")
        .env_remove("DOCKER_CONFIG")
        .output()
        .expect("run pullcheck")
}

fn json_report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The text report's `warning:` lines.
fn warning_lines(out: &Output) -> usize {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .count()
}

#[tokio::test]
async fn a_hosts_toml_with_only_a_server_is_a_version_warning_with_its_facts() {
    let image_registry = Registry::anonymous().await.unwrap();
    let server = Registry::anonymous().await.unwrap();
    server
        .push("app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let dir = temp_dir("version-hosts-toml");
    let hosts = dir.join("hosts");
    let host_dir = hosts.join(image_registry.host());
    std::fs::create_dir_all(&host_dir).unwrap();
    let file = host_dir.join("hosts.toml");
    std::fs::write(&file, format!("server = \"http://{}\"\n", server.host())).unwrap();
    let image = format!("{}/app:v1", image_registry.host());
    let hosts_arg = hosts.to_string_lossy().into_owned();
    let args = ["check", "--hosts-dir", &hosts_arg, "--image", &image];

    let out = pullcheck(&[&args[..], &["--format", "json"]].concat(), &dir);
    assert_eq!(out.status.code(), Some(0));
    let report = json_report(&out);
    assert_eq!(report["images"][0]["status"], "present");
    assert_eq!(report["images"][0]["registry"], server.host());
    assert_eq!(
        report["version_warnings"],
        json!([{
            "kind": "hosts_toml_without_host_table",
            "runtime": "containerd",
            "file": file.to_string_lossy(),
            "host": server.host(),
            "modelled": [{"first": "1.7.32", "last": null}],
            "differing": [
                {"first": "1.6.0", "last": "1.6.39"},
                {"first": "1.7.0", "last": "1.7.31"}
            ],
        }])
    );
    // Worded once among the warnings, in JSON and in text.
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(1));
    let out = pullcheck(&args, &dir);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(warning_lines(&out), 1);

    // With a [host] table every release reads the file alike: no warning.
    std::fs::write(
        &file,
        format!(
            "server = \"http://{0}\"\n[host.\"http://{0}\"]\n",
            server.host()
        ),
    )
    .unwrap();
    let out = pullcheck(&[&args[..], &["--format", "json"]].concat(), &dir);
    let report = json_report(&out);
    assert_eq!(report["images"][0]["status"], "present");
    assert_eq!(report["version_warnings"], json!([]));
    assert_eq!(report["warnings"], json!([]));
}

#[tokio::test]
async fn a_loopback_default_host_is_a_version_warning_over_tls_and_over_plain_http() {
    let dir = temp_dir("version-loopback");
    let files = make_tls_files(&dir).expect("TLS files");
    let tls = Registry::builder().tls(files).start().await.unwrap();
    tls.push("app", "v1", ImageKind::OciManifest).await.unwrap();
    let plain = Registry::anonymous().await.unwrap();
    plain
        .push("app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let hosts = dir.join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    let hosts_arg = hosts.to_string_lossy().into_owned();
    let tls_image = format!("{}/app:v1", tls.host());
    let plain_image = format!("{}/app:v1", plain.host());
    let args = [
        "check",
        "--hosts-dir",
        &hosts_arg,
        "--image",
        &tls_image,
        "--image",
        &plain_image,
    ];

    let out = pullcheck(&[&args[..], &["--format", "json"]].concat(), &dir);
    assert_eq!(out.status.code(), Some(0));
    let report = json_report(&out);
    assert_eq!(report["images"][0]["status"], "present");
    assert_eq!(report["images"][1]["status"], "present");
    // The registry that answered over HTTPS (1.6.9-1.6.24 and 1.7.0-1.7.6 ask plain
    // HTTP only), and the one that answered over plain HTTP (1.6.0-1.6.8 ask verified
    // HTTPS only).
    let plain_warning = json!({
        "kind": "loopback_default_host_over_plain_http",
        "runtime": "containerd",
        "file": hosts.to_string_lossy(),
        "host": plain.host(),
        "modelled": [{"first": "1.6.9", "last": null}],
        "differing": [{"first": "1.6.0", "last": "1.6.8"}],
    });
    let warnings = report["version_warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.contains(&plain_warning), "{warnings:?}");
    assert!(
        warnings.contains(&json!({
            "kind": "loopback_default_host_over_tls",
            "runtime": "containerd",
            "file": hosts.to_string_lossy(),
            "host": tls.host(),
            "modelled": [
                {"first": "1.6.25", "last": "1.6.39"},
                {"first": "1.7.7", "last": null}
            ],
            "differing": [
                {"first": "1.6.9", "last": "1.6.24"},
                {"first": "1.7.0", "last": "1.7.6"}
            ],
        })),
        "{warnings:?}"
    );
    assert_eq!(report["warnings"].as_array().map(Vec::len), Some(2));
    let out = pullcheck(&args, &dir);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(warning_lines(&out), 2);

    // Without a mirror configuration (Docker's rule) there is no containerd release to
    // differ from.
    let out = pullcheck(
        &[
            "check",
            "--format",
            "json",
            "--image",
            &tls_image,
            "--image",
            &plain_image,
        ],
        &dir,
    );
    let report = json_report(&out);
    assert_eq!(report["version_warnings"], json!([]));
}
