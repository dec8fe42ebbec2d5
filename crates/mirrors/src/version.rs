//! Where a node's runtime release decides differently from the rules pullcheck models,
//! as data: [`VersionWarning`] names the rule, the file and host it is about, the
//! releases pullcheck follows and the releases that differ. The front ends word it.
//!
//! Both cases are containerd's `remotes/docker/config/hosts.go` (checked at the tags
//! named on each variant):
//! - a `hosts.toml` with `server =` and no `[host]` table: `getSortedHosts` returns
//!   "invalid `host` tree" (v1.6.20 lines 497–501, v1.7.31 line 534), `loadHostDir`
//!   then ignores the file (v1.6.20 lines 279–284) and the default host (the image's own
//!   registry) is asked; v1.7.32 (commit 24007441d) and 2.x accept the file and ask the
//!   server;
//! - the default host of a loopback registry (no host directory or no `server`):
//!   v1.6.0–v1.6.8 have no loopback rule there and give it `https` with verification
//!   (v1.6.8 lines 98–109: `https` unless the caller sets a default scheme, and the CRI
//!   plugin sets none when `config_path` is set, pkg/cri/server/image_pull.go v1.6.8
//!   lines 335–352), so a plain-HTTP loopback registry fails; v1.6.9 added the rule
//!   (`docker.IsLocalhost`, v1.6.9 lines 102–111);
//!   v1.6.9–v1.6.24 and v1.7.0–v1.7.6 give it the `http` scheme and nothing else
//!   (v1.6.20 lines 102–109), so a TLS registry answers 400 to plain HTTP; v1.6.25
//!   (lines 104–119, 254–260) and v1.7.7 on try HTTPS without verification, then HTTP.

use std::path::{Path, PathBuf};

use serde::ser::{Serialize, SerializeStruct, Serializer};

/// A run of releases, both ends included; `last: None` is "and every later release"
/// (2.x included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Releases {
    /// The first release, e.g. `1.7.32`.
    pub first: &'static str,
    /// The last release, e.g. `1.7.31`; `None` for no end.
    pub last: Option<&'static str>,
}

const fn releases(first: &'static str, last: Option<&'static str>) -> Releases {
    Releases { first, last }
}

/// Which version-dependent rule a [`VersionWarning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VersionWarningKind {
    /// A containerd `hosts.toml` with only `server =`, no `[host]` table.
    HostsTomlWithoutHostTable,
    /// A loopback registry's containerd default host that answered over TLS.
    LoopbackDefaultHostOverTls,
    /// A loopback registry's containerd default host that answered over plain HTTP.
    LoopbackDefaultHostOverPlainHttp,
}

impl VersionWarningKind {
    /// The JSON name: `hosts_toml_without_host_table`, `loopback_default_host_over_tls`,
    /// `loopback_default_host_over_plain_http`.
    pub fn name(self) -> &'static str {
        match self {
            VersionWarningKind::HostsTomlWithoutHostTable => "hosts_toml_without_host_table",
            VersionWarningKind::LoopbackDefaultHostOverTls => "loopback_default_host_over_tls",
            VersionWarningKind::LoopbackDefaultHostOverPlainHttp => {
                "loopback_default_host_over_plain_http"
            }
        }
    }
}

/// A place where the node's containerd release decides differently from the release
/// pullcheck models. In JSON: `{"kind", "runtime": "containerd", "file", "host",
/// "modelled": [Releases], "differing": [Releases]}` (`file` the `hosts.toml`, or the
/// hosts directory; `null` when there is none).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VersionWarning {
    /// `file` has `server = "…"` (`server`, its `host[:port]`) and no `[host]` table:
    /// pullcheck asks the server, as containerd 1.7.32 and later do; containerd 1.6 and
    /// 1.7.0–1.7.31 ignore the file and ask the image's own registry.
    HostsTomlWithoutHostTable {
        /// The `hosts.toml`.
        file: PathBuf,
        /// The server's `host[:port]`.
        server: String,
    },
    /// The loopback registry `host` (no `hosts.toml` gives it a server) answered over
    /// HTTPS as its default host: pullcheck asks HTTPS without verification, then HTTP,
    /// as containerd 1.6.25+ and 1.7.7+ do; containerd 1.6.9–1.6.24 and 1.7.0–1.7.6 ask
    /// plain HTTP only, which a TLS registry answers with 400.
    LoopbackDefaultHostOverTls {
        /// The registry's `host:port`.
        host: String,
        /// The containerd hosts directory that was read (`None`: none).
        hosts_dir: Option<PathBuf>,
    },
    /// The loopback registry `host` (no `hosts.toml` gives it a server) answered over
    /// plain HTTP as its default host: pullcheck asks it so, as containerd 1.6.9 and
    /// later do (their loopback rule); containerd 1.6.0–1.6.8 have no loopback rule
    /// under a hosts directory (CRI `config_path`) and ask HTTPS with verification
    /// only, which a plain-HTTP registry fails.
    LoopbackDefaultHostOverPlainHttp {
        /// The registry's `host[:port]`.
        host: String,
        /// The containerd hosts directory that was read (`None`: none).
        hosts_dir: Option<PathBuf>,
    },
}

impl VersionWarning {
    /// The rule it is about.
    pub fn kind(&self) -> VersionWarningKind {
        match self {
            VersionWarning::HostsTomlWithoutHostTable { .. } => {
                VersionWarningKind::HostsTomlWithoutHostTable
            }
            VersionWarning::LoopbackDefaultHostOverTls { .. } => {
                VersionWarningKind::LoopbackDefaultHostOverTls
            }
            VersionWarning::LoopbackDefaultHostOverPlainHttp { .. } => {
                VersionWarningKind::LoopbackDefaultHostOverPlainHttp
            }
        }
    }

    /// The runtime whose releases differ: `containerd`.
    pub fn runtime(&self) -> &'static str {
        "containerd"
    }

    /// The file (or directory) the rule applies to, when there is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            VersionWarning::HostsTomlWithoutHostTable { file, .. } => Some(file),
            VersionWarning::LoopbackDefaultHostOverTls { hosts_dir, .. }
            | VersionWarning::LoopbackDefaultHostOverPlainHttp { hosts_dir, .. } => {
                hosts_dir.as_deref()
            }
        }
    }

    /// The host it is about: the server of the file, or the loopback registry.
    pub fn host(&self) -> &str {
        match self {
            VersionWarning::HostsTomlWithoutHostTable { server, .. } => server,
            VersionWarning::LoopbackDefaultHostOverTls { host, .. }
            | VersionWarning::LoopbackDefaultHostOverPlainHttp { host, .. } => host,
        }
    }

    /// The releases whose rule pullcheck follows.
    pub fn modelled(&self) -> &'static [Releases] {
        const HOSTS: &[Releases] = &[releases("1.7.32", None)];
        const LOOPBACK: &[Releases] =
            &[releases("1.6.25", Some("1.6.39")), releases("1.7.7", None)];
        const PLAIN: &[Releases] = &[releases("1.6.9", None)];
        match self.kind() {
            VersionWarningKind::HostsTomlWithoutHostTable => HOSTS,
            VersionWarningKind::LoopbackDefaultHostOverTls => LOOPBACK,
            VersionWarningKind::LoopbackDefaultHostOverPlainHttp => PLAIN,
        }
    }

    /// The releases that decide differently.
    pub fn differing(&self) -> &'static [Releases] {
        const HOSTS: &[Releases] = &[
            releases("1.6.0", Some("1.6.39")),
            releases("1.7.0", Some("1.7.31")),
        ];
        const LOOPBACK: &[Releases] = &[
            releases("1.6.9", Some("1.6.24")),
            releases("1.7.0", Some("1.7.6")),
        ];
        const PLAIN: &[Releases] = &[releases("1.6.0", Some("1.6.8"))];
        match self.kind() {
            VersionWarningKind::HostsTomlWithoutHostTable => HOSTS,
            VersionWarningKind::LoopbackDefaultHostOverTls => LOOPBACK,
            VersionWarningKind::LoopbackDefaultHostOverPlainHttp => PLAIN,
        }
    }
}

impl Serialize for VersionWarning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("VersionWarning", 6)?;
        st.serialize_field("kind", self.kind().name())?;
        st.serialize_field("runtime", self.runtime())?;
        st.serialize_field("file", &self.file())?;
        st.serialize_field("host", self.host())?;
        st.serialize_field("modelled", self.modelled())?;
        st.serialize_field("differing", self.differing())?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_serializes_its_facts() {
        let w = VersionWarning::HostsTomlWithoutHostTable {
            file: "/etc/containerd/certs.d/r/hosts.toml".into(),
            server: "mirror.example.com".into(),
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["kind"], "hosts_toml_without_host_table");
        assert_eq!(v["runtime"], "containerd");
        assert_eq!(v["file"], "/etc/containerd/certs.d/r/hosts.toml");
        assert_eq!(v["host"], "mirror.example.com");
        assert_eq!(
            v["modelled"],
            serde_json::json!([{"first": "1.7.32", "last": null}])
        );
        assert_eq!(
            v["differing"][1],
            serde_json::json!({"first": "1.7.0", "last": "1.7.31"})
        );
        let w = VersionWarning::LoopbackDefaultHostOverTls {
            host: "127.0.0.1:5000".into(),
            hosts_dir: None,
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["kind"], "loopback_default_host_over_tls");
        assert_eq!(v["file"], serde_json::Value::Null);
        assert_eq!(
            v["differing"][0],
            serde_json::json!({"first": "1.6.9", "last": "1.6.24"})
        );
        let w = VersionWarning::LoopbackDefaultHostOverPlainHttp {
            host: "127.0.0.1:5000".into(),
            hosts_dir: Some("/etc/containerd/certs.d".into()),
        };
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["kind"], "loopback_default_host_over_plain_http");
        assert_eq!(v["file"], "/etc/containerd/certs.d");
        assert_eq!(v["host"], "127.0.0.1:5000");
        assert_eq!(
            v["modelled"],
            serde_json::json!([{"first": "1.6.9", "last": null}])
        );
        assert_eq!(
            v["differing"],
            serde_json::json!([{"first": "1.6.0", "last": "1.6.8"}])
        );
    }
}
