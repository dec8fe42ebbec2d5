//! Generated mirror configurations of a size no node has: the check ends (a watchdog
//! kills the run and fails the test if it does not) with a report, or with an error
//! naming the file when it is over `pullcheck_mirrors::MAX_CONFIG_BYTES`. No timing is
//! asserted; before the fix these runs took minutes (a pairwise conflict check over
//! every `[[registry]]` and a line counted from the file's start for each, and
//! `toml_edit` recovering from each repeated table header).
//! Loopback registries of the testkit only.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pullcheck::mirrors::MAX_CONFIG_BYTES;
use pullcheck_testkit::{ImageKind, Registry};
use serde_json::Value;

use crate::util::temp_dir;

/// Far above what each run needs now (a second or two in a debug build), below what
/// the quadratic runs took on the same machine (46 s for the 11,774 entries of one
/// location; over 60 s for the others).
const WATCHDOG: Duration = Duration::from_secs(20);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs pullcheck with `args` in `dir`, killed after [`WATCHDOG`] (then the test fails).
fn pullcheck(args: &[&str], dir: &Path) -> Run {
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullcheck"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env_remove("PULLCHECK_LOG")
        .env_remove("DOCKER_CONFIG")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run pullcheck");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > WATCHDOG {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("pullcheck {args:?} did not end within {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
    }
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", run.stdout, run.stderr))
}

#[tokio::test]
async fn many_registries_conf_entries_of_one_location_are_checked() {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let dir = temp_dir("big-registries-conf");
    let conf = dir.join("registries.conf");
    // Entries that share one location: every one is in the same conflict group.
    let mut text = String::new();
    let mut n = 0;
    loop {
        let entry = format!(
            "[[registry]]\nprefix = \"{h}/p{n}\"\nlocation = \"{h}\"\ninsecure = true\n",
            h = registry.host()
        );
        if (text.len() + entry.len()) as u64 > MAX_CONFIG_BYTES {
            break;
        }
        text.push_str(&entry);
        n += 1;
    }
    assert!(n > 10_000, "{n} entries");
    std::fs::write(&conf, &text).unwrap();
    let present = format!("{}/p{}/app:v1", registry.host(), n - 1);
    let missing = format!("{}/p0/app:v2", registry.host());
    let run = pullcheck(
        &[
            "check",
            "--registries-conf",
            conf.to_str().unwrap(),
            "--image",
            &present,
            "--image",
            &missing,
            "--format",
            "json",
            "--deadline",
            "30s",
        ],
        &dir,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let report = json(&run);
    let images = report["images"].as_array().unwrap();
    assert_eq!(images.len(), 2);
    let by_ref = |r: &str| images.iter().find(|i| i["reference"] == r).unwrap();
    assert_eq!(by_ref(&present)["status"], "present");
    assert_eq!(by_ref(&missing)["status"], "missing");
    assert_eq!(by_ref(&missing)["reason"], "tag_not_found");
}

#[test]
fn a_registries_conf_over_the_limit_is_refused_naming_the_file() {
    let dir = temp_dir("huge-registries-conf");
    let conf = dir.join("registries.conf");
    // 100,000 entries, about 9 MB.
    let mut text = String::new();
    for i in 0..100_000 {
        writeln!(
            text,
            "[[registry]]\nprefix = \"reg{i}.example.com/ns/app\"\nlocation = \"mirror{i}.example.com/app\"\n"
        )
        .unwrap();
    }
    std::fs::write(&conf, &text).unwrap();
    assert_refused(&dir, "--registries-conf", &conf, &conf);
}

#[tokio::test]
async fn a_hosts_toml_of_repeated_host_tables_is_ignored_as_containerd_ignores_it() {
    let registry = Registry::anonymous().await.unwrap();
    registry
        .push("app", "v1", ImageKind::OciManifest)
        .await
        .unwrap();
    let dir = temp_dir("big-hosts-toml");
    let hosts = dir.join("hosts");
    let host_dir = hosts.join(registry.host());
    std::fs::create_dir_all(&host_dir).unwrap();
    // 30,000 host tables, then each header once more: a TOML error ("duplicate key") at
    // the first repeat, line 30,002, so containerd ignores the file and asks the
    // default host, the registry itself.
    let unique = 30_000;
    let mut text = String::from("server = \"http://127.0.0.1:9\"\n");
    for i in 0..2 * unique {
        writeln!(text, "[host.\"h{}\"]", i % unique).unwrap();
    }
    assert!(text.len() as u64 <= MAX_CONFIG_BYTES);
    let file = host_dir.join("hosts.toml");
    std::fs::write(&file, &text).unwrap();
    let image = format!("{}/app:v1", registry.host());
    let run = pullcheck(
        &[
            "check",
            "--hosts-dir",
            hosts.to_str().unwrap(),
            "--image",
            &image,
            "--format",
            "json",
            "--deadline",
            "30s",
        ],
        &dir,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = json(&run);
    assert_eq!(report["images"][0]["status"], "present");
    assert_eq!(report["images"][0]["registry"], registry.host());
    let ignored = format!(
        "containerd ignores {}: line {}, column 7: duplicate key",
        file.display(),
        unique + 2
    );
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(&ignored)),
        "{warnings:?}"
    );
}

#[test]
fn a_hosts_toml_over_the_limit_is_refused_naming_the_file() {
    let dir = temp_dir("huge-hosts-toml");
    let hosts = dir.join("hosts");
    let host_dir = hosts.join("127.0.0.1:9");
    std::fs::create_dir_all(&host_dir).unwrap();
    // 200,000 host tables, about 9 MB.
    let mut text = String::from("server = \"http://127.0.0.1:9\"\n");
    for i in 0..200_000 {
        writeln!(
            text,
            "[host.\"http://m{i}.invalid:5000\"]\ncapabilities = [\"pull\"]"
        )
        .unwrap();
    }
    let file = host_dir.join("hosts.toml");
    std::fs::write(&file, &text).unwrap();
    assert_refused(&dir, "--hosts-dir", &hosts, &file);
}

/// `check OPTION VALUE` on an image exits 2 with nothing on stdout and one error line
/// naming the option and `file`, over the limit.
fn assert_refused(dir: &Path, option: &str, value: &Path, file: &Path) {
    let run = pullcheck(
        &[
            "check",
            option,
            value.to_str().unwrap(),
            "--image",
            "127.0.0.1:9/app:1",
            "--deadline",
            "5s",
        ],
        dir,
    );
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "pullcheck: error: {option} {}: larger than {} KiB, the limit of a mirror configuration file",
            file.display(),
            MAX_CONFIG_BYTES >> 10
        )
    );
}
