//! `pullcheck explain --format json` with each mirror configuration flag: the endpoints
//! in the order the runtime asks them, each with its rule. No request is sent, so the
//! hosts need not exist.

use std::path::Path;
use std::process::Command;

use crate::util::temp_dir;
use serde_json::Value;

/// Runs `pullcheck explain REF --format json ARGS…` in `dir` with no credentials from
/// the environment, and returns the one JSON object it prints.
fn explain(reference: &str, args: &[&str], dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .arg("explain")
        .arg(reference)
        .args(["--format", "json"])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("KUBECONFIG")
        .output()
        .expect("run pullcheck");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// The `(url, rule, insecure, mirror)` of each endpoint, in order.
fn endpoints(json: &Value) -> Vec<(String, String, bool, bool)> {
    json["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| {
            (
                e["url"].as_str().unwrap().to_string(),
                e["rule"].as_str().unwrap().to_string(),
                e["insecure"].as_bool().unwrap(),
                e["mirror"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn registries_conf_mirrors_then_the_primary() {
    let dir = temp_dir("crio");
    let conf = dir.join("registries.conf");
    std::fs::write(
        &conf,
        "[[registry]]\n\
         prefix = \"registry.example.com/team\"\n\
         location = \"registry.example.com/team\"\n\
         \n\
         [[registry.mirror]]\n\
         location = \"mirror-a.example.com:5000/cache/team\"\n\
         insecure = true\n\
         \n\
         [[registry.mirror]]\n\
         location = \"mirror-b.example.com/team\"\n\
         pull-from-mirror = \"digest-only\"\n",
    )
    .unwrap();
    let conf_arg = conf.to_str().unwrap();

    let json = explain(
        "registry.example.com/team/app:v1",
        &["--registries-conf", conf_arg],
        &dir,
    );
    let list = endpoints(&json);
    // digest-only: mirror-b is left out for a tag.
    assert_eq!(list.len(), 2, "{json}");
    assert_eq!(list[0].0, "https://mirror-a.example.com:5000/v2/");
    assert!(list[0].1.contains(conf_arg), "{}", list[0].1);
    assert!(list[0].1.contains("mirror 1"), "{}", list[0].1);
    assert!(list[0].2, "insecure = true");
    assert!(list[0].3);
    assert_eq!(json["endpoints"][0]["repository"], "cache/team/app");
    assert_eq!(list[1].0, "https://registry.example.com/v2/");
    assert!(list[1].1.contains("(primary)"), "{}", list[1].1);
    assert!(!list[1].2);
    assert!(!list[1].3);
    assert!(json["refused"].is_null());

    // With a digest, both mirrors, in file order, then the primary.
    let digest = format!("sha256:{}", "a".repeat(64));
    let json = explain(
        &format!("registry.example.com/team/app@{digest}"),
        &["--registries-conf", conf_arg],
        &dir,
    );
    let urls: Vec<String> = endpoints(&json).into_iter().map(|e| e.0).collect();
    assert_eq!(
        urls,
        [
            "https://mirror-a.example.com:5000/v2/",
            "https://mirror-b.example.com/v2/",
            "https://registry.example.com/v2/",
        ]
    );
}

#[test]
fn hosts_dir_hosts_then_the_server() {
    let dir = temp_dir("containerd");
    let host_dir = dir.join("certs.d/registry.example.com");
    std::fs::create_dir_all(&host_dir).unwrap();
    std::fs::write(
        host_dir.join("hosts.toml"),
        "server = \"https://registry.example.com\"\n\
         \n\
         [host.\"http://mirror.example.com:5000\"]\n\
         capabilities = [\"pull\", \"resolve\"]\n",
    )
    .unwrap();
    let json = explain(
        "registry.example.com/team/app:v1",
        &["--hosts-dir", dir.join("certs.d").to_str().unwrap()],
        &dir,
    );
    let list = endpoints(&json);
    assert_eq!(list.len(), 2, "{json}");
    assert_eq!(list[0].0, "http://mirror.example.com:5000/v2/");
    assert!(
        list[0]
            .1
            .contains("[host.\"http://mirror.example.com:5000\"]"),
        "{}",
        list[0].1
    );
    assert!(list[0].2, "plain HTTP is insecure");
    assert!(list[0].3);
    assert_eq!(list[1].0, "https://registry.example.com/v2/");
    assert!(list[1].1.contains("server"), "{}", list[1].1);
    assert!(!list[1].2);
}

#[test]
fn docker_daemon_mirrors_docker_hub_only() {
    let dir = temp_dir("docker");
    let daemon = dir.join("daemon.json");
    std::fs::write(
        &daemon,
        r#"{"registry-mirrors": ["https://mirror.example.com"]}"#,
    )
    .unwrap();
    let daemon_arg = daemon.to_str().unwrap();

    let json = explain("alpine:3.20", &["--docker-daemon-config", daemon_arg], &dir);
    let list = endpoints(&json);
    assert_eq!(list.len(), 2, "{json}");
    assert_eq!(list[0].0, "https://mirror.example.com/v2/");
    assert!(list[0].1.contains("registry-mirrors[0]"), "{}", list[0].1);
    assert!(list[0].3);
    assert_eq!(list[1].0, "https://registry-1.docker.io/v2/");

    let json = explain(
        "registry.example.com/team/app:v1",
        &["--docker-daemon-config", daemon_arg],
        &dir,
    );
    let list = endpoints(&json);
    assert_eq!(list.len(), 1, "{json}");
    assert_eq!(list[0].0, "https://registry.example.com/v2/");
    assert!(list[0].1.contains("not Docker Hub"), "{}", list[0].1);
}
