//! Prints the endpoints a node's runtime would ask for each image.
//!
//! ```sh
//! cargo run -p pullcheck-mirrors --example resolve -- --node-config crio alpine quay.io/org/app:1
//! cargo run -p pullcheck-mirrors --example resolve -- --hosts-dir /etc/containerd/certs.d alpine
//! cargo run -p pullcheck-mirrors --example resolve -- --registries-conf ./registries.conf alpine
//! cargo run -p pullcheck-mirrors --example resolve -- --docker-daemon-config ./daemon.json alpine
//! ```
//!
//! `--root DIR` reads a node profile's files under `DIR` instead of `/`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pullcheck_mirrors::{MirrorConfig, MirrorError, NodeProfile, Resolution};
use pullcheck_reference::Reference;

fn config(args: &mut Vec<String>) -> Result<MirrorConfig, MirrorError> {
    let mut take = |flag: &str| -> Option<String> {
        let i = args.iter().position(|a| a == flag)?;
        args.remove(i);
        (i < args.len()).then(|| args.remove(i))
    };
    let root = take("--root").map(PathBuf::from);
    if let Some(p) = take("--node-config") {
        return MirrorConfig::from_node_profile(p.parse::<NodeProfile>()?, root.as_deref());
    }
    if let Some(p) = take("--registries-conf") {
        return MirrorConfig::load_registries_conf(Path::new(&p));
    }
    if let Some(p) = take("--hosts-dir") {
        return MirrorConfig::load_hosts_dir(Path::new(&p));
    }
    if let Some(p) = take("--docker-daemon-config") {
        return MirrorConfig::load_docker_daemon(Path::new(&p));
    }
    Ok(MirrorConfig::none())
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let config = match config(&mut args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", config.describe());
    for w in config.warnings() {
        println!("note: {w}");
    }
    for image in &args {
        let reference = match Reference::parse_normalized(image) {
            Ok(r) => r,
            Err(e) => {
                println!("\n{image}: {}", e.message());
                continue;
            }
        };
        println!("\n{}", reference.canonical());
        match config.resolve(&reference) {
            Resolution::Endpoints(endpoints) => {
                for (i, e) in endpoints.iter().enumerate() {
                    let mut flags = Vec::new();
                    if e.is_mirror {
                        flags.push("mirror");
                    }
                    if e.http_fallback {
                        flags.push("http fallback");
                    }
                    if e.skip_verify {
                        flags.push("tls unverified");
                    }
                    println!("  {}. {} [{}]", i + 1, e.manifest_url(), flags.join(", "));
                    println!("     rule: {}", e.rule);
                    if let Some(b) = &e.blocked {
                        println!("     blocked: {b}");
                    }
                    println!("     credentials: {}", e.credentials.rule);
                }
            }
            Resolution::Blocked { rule } => println!("  blocked: {rule}"),
            Resolution::Unresolvable { rule, reason } => {
                println!("  fails: {reason}\n     rule: {rule}")
            }
        }
    }
    ExitCode::SUCCESS
}
