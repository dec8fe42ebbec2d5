//! Fuzzes the containerd hosts.toml parser and containerd resolution over what it
//! parses.
//!
//! Checks: no panic on any input; a parsed file ends with the top-level (server) entry;
//! the same text as the `docker.io`, `localhost:5000` and `_default` host directories
//! resolves every reference without panicking, to a non-empty endpoint list or
//! `Unresolvable`.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullcheck_mirrors::MirrorConfig;
use pullcheck_mirrors::hosts_toml::{HostsDir, parse_hosts_file};

#[path = "check.rs"]
mod check;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_hosts_file(text, Path::new("/etc/containerd/certs.d/docker.io")) {
        Ok(hosts) => {
            let last = hosts.last().expect("the top-level entry is always there");
            assert!(last.origin.starts_with("server") || last.origin.starts_with("top level"));
        }
        Err(e) => assert!(!e.is_empty()),
    }
    let mut dir = HostsDir::new("/etc/containerd/certs.d");
    for name in ["docker.io", "localhost_5000_", "_default"] {
        dir.insert_hosts_toml(name, text);
    }
    let refs = check::references(&check::quoted(text));
    check::resolve_all(&MirrorConfig::from_hosts_dir(dir), &refs);
});
