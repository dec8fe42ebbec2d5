//! The registry host a reference's domain names: a host name or IP literal, an
//! optional port, and whether it is loopback. The one home of host and port splitting
//! for registry domains and endpoint hosts; the kubelet keyring's Go-faithful
//! `net.SplitHostPort` (in `pullcheck-mirrors`' `url`) is the one rule that differs,
//! and says why there.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::grammar::check_domain;
use crate::{Reference, ReferenceError};

/// A registry host: a host name (`registry.example.com`, `localhost`) or an IP literal
/// (`127.0.0.1`, `::1`), with an optional port (`5000`).
///
/// Made from a reference's domain (`host[:port]`, `[v6]` or `[v6]:port`, the grammar of
/// `distribution/reference`) by [`RegistryHost::parse`] or
/// [`Reference::registry_host`], or from the host of a URL the node's configuration
/// names (a mirror, a containerd host) by [`RegistryHost::from_url_host`]. Its
/// [`Display`](fmt::Display) is the form a URL's authority takes: `host[:port]`, with
/// an IPv6 literal in brackets (`[::1]:5000`).
///
/// ```
/// use pullcheck_reference::RegistryHost;
///
/// let h = RegistryHost::parse("[::1]:5000").unwrap();
/// assert_eq!((h.name(), h.port()), ("::1", Some("5000")));
/// assert!(h.is_loopback());
/// assert_eq!(h.to_string(), "[::1]:5000");
/// assert!(!RegistryHost::parse("registry.example.com").unwrap().is_loopback());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegistryHost {
    /// The host without brackets or port, as written (case kept).
    name: String,
    /// The port as written (digits for a parsed domain), never empty.
    port: Option<String>,
    /// Whether the name is shown in brackets: it was written in them, or it holds a
    /// `:` (an IPv6 address).
    bracketed: bool,
}

impl RegistryHost {
    /// Parses a reference's domain as `distribution/reference`'s grammar defines it:
    /// `domain-name[:port]` (labels of letters, digits and inner `-`, joined by `.`) or
    /// `[ipv6-chars][:port]`, the port being decimal digits. As upstream, no address or
    /// port range is checked: `[fd00123123123]:75050` parses (see
    /// [`RegistryHost::port_number`] and [`RegistryHost::ip`]).
    ///
    /// # Errors
    /// A [`ReferenceError`] of kind
    /// [`InvalidFormat`](crate::ReferenceErrorKind::InvalidFormat) naming what is wrong
    /// with `domain` (an empty string included).
    pub fn parse(domain: &str) -> Result<RegistryHost, ReferenceError> {
        check_domain(domain).map_err(|problem| ReferenceError::domain(domain, problem))?;
        Ok(RegistryHost::from_url_host(domain))
    }

    /// Splits the host of a URL (Go's `URL.Host`: `host[:port]`, `[v6]`, `[v6]:port`)
    /// without validating it, as Go's `URL.Hostname` and `URL.Port` do: brackets are
    /// removed from an IPv6 literal, and the text after the last `:` is the port.
    /// Unlike those, an address with more than one `:` and no brackets (`::1`) is all
    /// name, as `net.SplitHostPort`'s callers in the runtimes take it ("too many
    /// colons"), and an empty port (`host:`) is none. Text after `]` other than `:port`
    /// is dropped.
    pub fn from_url_host(host: &str) -> RegistryHost {
        let (name, port, bracketed) = match host.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((inner, after)) => (inner, after.strip_prefix(':'), true),
            None => match host.rsplit_once(':') {
                Some((name, port)) if !name.contains(':') => (name, Some(port), false),
                _ => (host, None, host.contains(':')),
            },
        };
        RegistryHost {
            name: name.to_owned(),
            port: port.filter(|p| !p.is_empty()).map(str::to_owned),
            bracketed,
        }
    }

    /// The host without brackets or port: `registry.example.com`, `127.0.0.1`, `::1`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The port as written (`5000`, `075050`), if there is one.
    pub fn port(&self) -> Option<&str> {
        self.port.as_deref()
    }

    /// The port as a number, when there is one between 1 and 65535.
    pub fn port_number(&self) -> Option<u16> {
        self.port()
            .and_then(|p| p.parse::<u16>().ok())
            .filter(|&p| p != 0)
    }

    /// The name as an IP address, when it is an IPv4 literal (`127.0.0.1`; Rust's
    /// parser, like Go's `net.ParseIP`, takes no leading zeros) or an IPv6 literal
    /// (`::1`).
    pub fn ip(&self) -> Option<IpAddr> {
        self.name.parse().ok()
    }

    /// Whether the host is this machine by Docker's rule, which the runtimes follow to
    /// let a registry use plain HTTP or unverified TLS: the name `localhost` (exactly,
    /// as containerd's `docker.IsLocalhost` compares it), an IPv4 address in
    /// 127.0.0.0/8, or the IPv6 address `::1` (Go's `net.IP.IsLoopback`, which
    /// `IsLocalhost` calls; moby's `registry` config lists 127.0.0.0/8 and ::1/128 as
    /// insecure by default). The port does not matter.
    ///
    /// Two differences from the Go code, kept from pullcheck's earlier rule: a bracketed
    /// IPv6 host without a port (`[::1]`) is loopback here, where `IsLocalhost` hands it
    /// to `net.SplitHostPort`, which fails without a port and leaves the brackets on;
    /// and an IPv4-mapped address (`[::ffff:7f00:1]`) is not, where Go's `IsLoopback`
    /// would take it for 127.0.0.1.
    pub fn is_loopback(&self) -> bool {
        self.name == "localhost" || self.ip().is_some_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for RegistryHost {
    /// `host[:port]`, an IPv6 literal in brackets: `[::1]:5000`, `localhost:5000`,
    /// `[fd00123123123]` (bracketed as written).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.bracketed {
            write!(f, "[{}]", self.name)?;
        } else {
            f.write_str(&self.name)?;
        }
        match &self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl FromStr for RegistryHost {
    type Err = ReferenceError;

    /// [`RegistryHost::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RegistryHost::parse(s)
    }
}

impl Reference {
    /// The registry host of [`Reference::domain`]; `None` when the domain is empty
    /// (the `foo_bar.com/app` quirk described on [`Reference`]).
    pub fn registry_host(&self) -> Option<RegistryHost> {
        RegistryHost::parse(self.domain()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Domains from `distribution/reference`'s `regexp_test.go` (`TestDomainRegexp`)
    /// and `reference_test.go`: (domain, name, port).
    #[test]
    fn domains_split_into_name_and_port() {
        let cases = [
            ("test.com", "test.com", None),
            ("test.com:10304", "test.com", Some("10304")),
            ("localhost", "localhost", None),
            ("localhost:8080", "localhost", Some("8080")),
            ("a", "a", None),
            ("a.b", "a.b", None),
            ("ab.cd.com", "ab.cd.com", None),
            ("xn--n3h.com", "xn--n3h.com", None),
            ("Asdf.com", "Asdf.com", None),
            ("192.0.2.1:75050", "192.0.2.1", Some("75050")),
            ("192.0.2.1:5000", "192.0.2.1", Some("5000")),
            ("[2001:db8::1]", "2001:db8::1", None),
            ("[2001:db8::1]:5000", "2001:db8::1", Some("5000")),
            ("[fd00:1:2::3]:75050", "fd00:1:2::3", Some("75050")),
            ("[fd00123123123]:75050", "fd00123123123", Some("75050")),
            ("[::1]:5000", "::1", Some("5000")),
        ];
        for (domain, name, port) in cases {
            let h = RegistryHost::parse(domain).unwrap_or_else(|e| panic!("{domain}: {e:?}"));
            assert_eq!((h.name(), h.port()), (name, port), "{domain}");
            assert_eq!(h.to_string(), domain, "{domain}");
        }
    }

    /// `TestDomainRegexp`'s non-matches, and an empty domain.
    #[test]
    fn what_the_grammar_rejects() {
        for domain in [
            "",
            "a.",
            "-a.com",
            "a-.com",
            "test.com:",
            "test.com:http",
            "[fd00:1:2::3]75050",
            "[fd00:1:2::3]::75050",
            "[fd00:1:2::3%eth0]:75050",
            "2001:db8::1",
            "foo_bar.com",
        ] {
            let err = RegistryHost::parse(domain).expect_err(domain);
            assert_eq!(err.kind(), crate::ReferenceErrorKind::InvalidFormat);
        }
    }

    #[test]
    fn ports_in_range_are_numbers() {
        let port = |d: &str| RegistryHost::parse(d).unwrap().port_number();
        assert_eq!(port("localhost:5000"), Some(5000));
        assert_eq!(port("localhost:65535"), Some(65535));
        assert_eq!(port("localhost:05000"), Some(5000));
        assert_eq!(port("localhost"), None);
        assert_eq!(port("localhost:0"), None);
        assert_eq!(port("localhost:65536"), None);
        assert_eq!(port("localhost:99999999999999999999"), None);
    }

    /// Docker's loopback rule: `localhost` (containerd `IsLocalhost`), 127.0.0.0/8 and
    /// ::1 (Go `IsLoopback`; moby's default insecure CIDRs).
    #[test]
    fn loopback_is_localhost_127_8_and_v6_one() {
        for domain in [
            "localhost",
            "localhost:5000",
            "127.0.0.1",
            "127.0.0.1:5000",
            "127.9.9.9",
            "127.0.0.254:5000",
            "127.255.255.255",
            "[::1]",
            "[::1]:5000",
            "[0:0:0:0:0:0:0:1]:5000",
        ] {
            assert!(
                RegistryHost::parse(domain).unwrap().is_loopback(),
                "{domain}"
            );
        }
        for domain in [
            "localhost.example.com",
            "Localhost",
            "198.51.100.1:5000",
            "128.0.0.1",
            "127.0.0.01",
            "example.com",
            "[::2]:5000",
            "[fd00123123123]",
        ] {
            assert!(
                !RegistryHost::parse(domain).unwrap().is_loopback(),
                "{domain}"
            );
        }
    }

    #[test]
    fn url_hosts_split_as_go_url_does() {
        let cases = [
            ("localhost:5000", "localhost", Some("5000")),
            ("[::1]:5000", "::1", Some("5000")),
            ("[::1]", "::1", None),
            ("::1", "::1", None),
            ("host:", "host", None),
            ("h_o_st:80", "h_o_st", Some("80")),
            ("", "", None),
        ];
        for (host, name, port) in cases {
            let h = RegistryHost::from_url_host(host);
            assert_eq!((h.name(), h.port()), (name, port), "{host}");
        }
        assert!(RegistryHost::from_url_host("::1").is_loopback());
        assert_eq!(RegistryHost::from_url_host("::1").to_string(), "[::1]");
    }

    #[test]
    fn a_reference_has_its_registry_host() {
        let r = Reference::parse_normalized("[::1]:5000/app:1").unwrap();
        assert_eq!(r.registry_host().unwrap().to_string(), "[::1]:5000");
        let r = Reference::parse_normalized("alpine").unwrap();
        assert_eq!(r.registry_host().unwrap().name(), "docker.io");
        let r = Reference::parse_normalized("foo_bar.com/app").unwrap();
        assert_eq!(r.registry_host(), None);
    }
}
