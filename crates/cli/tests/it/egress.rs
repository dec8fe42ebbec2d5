//! `--allow-registry` and `--deny-registry` on the command line: a bad pattern is a usage
//! error naming the option and the pattern; a denied registry is `blocked` with its
//! `egress` object, and its listener gets no connection.

use std::process::Command;

use serde_json::Value;

use crate::util::temp_dir;

#[test]
fn a_bad_pattern_names_the_option_and_a_denied_registry_gets_no_connection() {
    let dir = temp_dir("egress");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pullcheck"))
            .args(args)
            .current_dir(&*dir)
            .env("HOME", &*dir)
            .env("NO_COLOR", "1")
            .env_remove("DOCKER_CONFIG")
            .output()
            .expect("run pullcheck")
    };
    let bad = run(&[
        "check",
        "--deny-registry",
        "reg*.example.com",
        "--image",
        "127.0.0.1:9/a:1",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(
        stderr.lines().next(),
        Some(
            "error: invalid value 'reg*.example.com' for '--deny-registry <PATTERN>': \
             \"reg*\": '*' must be a whole label, as in *.example.com"
        ),
        "{stderr}"
    );

    // A listener nobody may connect to: after the run, nothing waits to be accepted.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let host = listener.local_addr().expect("addr").to_string();
    let image = format!("{host}/team/app:v1");
    let out = run(&[
        "check",
        "--format",
        "json",
        "--deny-registry",
        "127.0.0.0/8",
        "--allow-registry",
        "127.0.0.1",
        "--image",
        &image,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = &report["images"][0];
    assert_eq!(row["status"], "blocked", "{report}");
    assert_eq!(row["reason"], "egress_denied", "{report}");
    assert_eq!(
        row["egress"]["rule"],
        serde_json::json!({"kind": "deny", "pattern": "127.0.0.0/8", "default": false}),
        "deny wins over allow: {report}"
    );
    assert_eq!(row["egress"]["matched"]["address"], "127.0.0.1", "{report}");
    let pending = listener.accept();
    assert!(
        matches!(&pending, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a connection reached the denied listener: {pending:?}"
    );
}
