//! The egress policy: which hosts and addresses a [`crate::Client`] may connect to
//! ([`EgressPolicy`], [`crate::ClientOptions::egress`]), and why one was refused
//! ([`EgressRefusal`]). Pure: parsing and matching only; `transport` applies it to every
//! URL before sending, to every redirect, and to the addresses a name resolves to.
//!
//! A rule is a host pattern with an optional port, or an address block:
//! - `registry.example.com`, `registry.example.com:5000`: that host (any port, or only
//!   that port). Names are compared without case and without a trailing dot.
//! - `*.example.com`: `*` is a whole label. As the leftmost label it matches one or more
//!   labels (`a.example.com`, `a.b.example.com`, not `example.com`), so that a deny rule
//!   cannot be sidestepped by a deeper name; elsewhere (`registry.*.example.com`) it
//!   matches exactly one label. A `*` inside a label (`reg*.example.com`) is an error.
//! - `127.0.0.1`, `[::1]:5000`, `::1`: one address (any port, or only that port).
//! - `127.0.0.0/8`, `fd00:ec2::254/128`: a CIDR block (no port), matched against an IP
//!   literal host and against every address a name resolves to. An IPv4-mapped IPv6
//!   address (`::ffff:169.254.169.254`) is matched as the IPv4 address it maps.
//!
//! The decision for a host `H` on port `P` that resolves to addresses `A…` (an IP
//! literal is its own, only address):
//! 1. Refused when a deny rule matches: a host rule matching `H` (and `P`, when the rule
//!    has a port), or an address rule containing any address in `A…`. Deny wins over
//!    allow.
//! 2. Otherwise, with no allow rule, allowed.
//! 3. Otherwise allowed when a host rule matches `H` and `P`, or when every address in
//!    `A…` is in an allow address rule; else refused ("matches no allow rule"). A host
//!    that an allow rule names with another port only is refused on this port: an
//!    address rule does not widen a host rule's port.
//!
//! A name's resolved addresses are checked without knowing the port (the resolver is
//! asked for the name alone): an address rule with a port counts there as a deny rule
//! (refusing more is safe) and not as an allow rule. Behind an HTTP proxy
//! (`HTTPS_PROXY`), the proxy resolves names: only the name rules and IP literal hosts
//! are checked then.
//!
//! [`EgressPolicy::default`] holds only [`DEFAULT_DENY`]: link-local and cloud
//! metadata addresses, which no registry should live on and which hand out cloud
//! credentials to whoever asks, and the unspecified addresses, which reach the local
//! host (OWASP's Server-Side Request Forgery Prevention Cheat
//! Sheet; the clouds' instance metadata documentation).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

/// The rules every [`EgressPolicy`] denies, whatever else it allows, with the reason
/// for each:
///
/// | pattern | what lives there |
/// |---|---|
/// | `169.254.0.0/16` | IPv4 link-local (RFC 3927): the instance metadata service of AWS, GCP, Azure, Oracle Cloud, DigitalOcean and OpenStack at `169.254.169.254`, AWS ECS task metadata at `169.254.170.2` |
/// | `fe80::/10` | IPv6 link-local (RFC 4291) |
/// | `fd00:ec2::254/128` | AWS instance metadata over IPv6 (Nitro instances) |
/// | `100.100.100.200/32` | Alibaba Cloud ECS metadata |
/// | `168.63.129.16/32` | Azure's WireServer (platform agent and health probes) |
/// | `metadata.google.internal` | GCP metadata by name (resolves to `169.254.169.254`; the name rule also holds where a proxy resolves it) |
/// | `metadata.goog` | GCP metadata by name |
/// | `0.0.0.0/8`, `::/128` | "this host" and the unspecified address: a connection to them reaches the local host on Linux, which would sidestep a deny rule for `127.0.0.0/8` |
///
/// An address in the NAT64 prefix `64:ff9b::/96` (RFC 6052) is matched as the IPv4
/// address it embeds, as an IPv4-mapped one is, so that a NAT64 gateway is no way
/// around an IPv4 rule.
pub const DEFAULT_DENY: &[&str] = &[
    "0.0.0.0/8",
    "::/128",
    "169.254.0.0/16",
    "fe80::/10",
    "fd00:ec2::254/128",
    "100.100.100.200/32",
    "168.63.129.16/32",
    "metadata.google.internal",
    "metadata.goog",
];

/// A pattern that is not a rule: the pattern as given and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a host pattern or CIDR block: {reason}")]
pub struct EgressPatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

/// What a rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Matcher {
    /// A host name pattern: lower-case labels, `None` for a `*` label.
    Name {
        labels: Vec<Option<String>>,
        port: Option<u16>,
    },
    /// One address.
    Address { address: IpAddr, port: Option<u16> },
    /// A CIDR block, its address already masked.
    Block { network: IpAddr, prefix: u8 },
}

/// One allow or deny rule: a host pattern with an optional port, or an address block
/// (see the module documentation for the syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    pattern: String,
    default: bool,
    matcher: Matcher,
}

impl EgressRule {
    /// Reads one pattern: `host`, `host:port`, `*.domain[:port]`, an IP address
    /// (`[v6]:port` for a port), or `address/prefix`.
    ///
    /// # Errors
    /// [`EgressPatternError`] naming the pattern: empty, a `*` inside a label, an empty
    /// label, a character a host name cannot hold, a port that is not 1 to 65535, a
    /// prefix longer than the address, a port on a CIDR block.
    pub fn parse(pattern: &str) -> Result<EgressRule, EgressPatternError> {
        let fail = |reason: &str| EgressPatternError {
            pattern: pattern.to_string(),
            reason: reason.to_string(),
        };
        let text = pattern.trim();
        if text.is_empty() {
            return Err(fail("it is empty"));
        }
        let matcher = if let Some((address, prefix)) = text.split_once('/') {
            let address: IpAddr = address
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| {
                    fail("the part before '/' is not an IP address (a CIDR block takes no port)")
                })?;
            let max = if address.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(|| {
                fail(&format!(
                    "the prefix length is not a number from 0 to {max}"
                ))
            })?;
            Matcher::Block {
                network: mask(address, prefix),
                prefix,
            }
        } else {
            let (host, port) = split_port(text).map_err(|r| fail(&r))?;
            match host.parse::<IpAddr>() {
                Ok(address) => Matcher::Address {
                    address: canonical(address),
                    port,
                },
                Err(_) => Matcher::Name {
                    labels: name_labels(host).map_err(|r| fail(&r))?,
                    port,
                },
            }
        };
        Ok(EgressRule {
            pattern: text.to_string(),
            default: false,
            matcher,
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether the rule is one of [`DEFAULT_DENY`].
    pub fn is_default(&self) -> bool {
        self.default
    }

    /// Whether the rule matches the host name or IP literal `host` on `port`, ignoring
    /// the rule's port when `port` is `None`.
    fn matches_host(&self, host: &Host, port: Option<u16>) -> bool {
        let port_ok = |rule_port: Option<u16>| match (rule_port, port) {
            (Some(want), Some(got)) => want == got,
            _ => true,
        };
        match (&self.matcher, host) {
            (Matcher::Name { labels, port: p }, Host::Name(name)) => {
                port_ok(*p) && glob_match(labels, name)
            }
            (Matcher::Address { address, port: p }, Host::Address(a)) => {
                port_ok(*p) && address == a
            }
            (Matcher::Block { .. }, Host::Address(a)) => self.contains(*a, true),
            _ => false,
        }
    }

    /// Whether the rule is an address or block rule containing `address`, a name's
    /// resolved address, whose port is not known here: an address rule with a port
    /// counts when `any_port` (a deny rule: refusing more is safe), not otherwise (an
    /// allow rule: allowing that address on every port would widen it).
    fn contains(&self, address: IpAddr, any_port: bool) -> bool {
        let address = canonical(address);
        match &self.matcher {
            Matcher::Address { address: a, port } => *a == address && (any_port || port.is_none()),
            Matcher::Block { network, prefix } => {
                network.is_ipv4() == address.is_ipv4() && mask(address, *prefix) == *network
            }
            Matcher::Name { .. } => false,
        }
    }

    /// Whether this rule can allow a name by its resolved addresses: a block, or an
    /// address without a port.
    fn allows_addresses(&self) -> bool {
        matches!(
            self.matcher,
            Matcher::Block { .. } | Matcher::Address { port: None, .. }
        )
    }

    /// This rule as the deny rule of a refusal.
    fn as_deny(&self) -> RefusalRule {
        RefusalRule::Deny {
            pattern: self.pattern.clone(),
            default: self.default,
        }
    }
}

/// Which registries (and token realms, and redirect targets) a client may connect to:
/// allow and deny rules ([`EgressRule`]) over host names, ports and addresses, plus the
/// [`DEFAULT_DENY`] rules, always. The decision is described in the module
/// documentation of `egress`: deny wins; with allow rules, only what they match.
///
/// [`EgressPolicy::default`] is the default deny list alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    allow: Vec<EgressRule>,
    deny: Vec<EgressRule>,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        EgressPolicy::new(Vec::new(), Vec::new())
    }
}

impl EgressPolicy {
    /// A policy of these allow and deny rules, after the [`DEFAULT_DENY`] rules.
    pub fn new(allow: Vec<EgressRule>, deny: Vec<EgressRule>) -> EgressPolicy {
        let mut all: Vec<EgressRule> = DEFAULT_DENY
            .iter()
            .map(|p| EgressRule {
                default: true,
                ..EgressRule::parse(p).expect("the default deny rules parse")
            })
            .collect();
        all.extend(deny);
        EgressPolicy { allow, deny: all }
    }

    /// The allow rules; empty: everything not denied is allowed.
    pub fn allow_rules(&self) -> &[EgressRule] {
        &self.allow
    }

    /// The deny rules, [`DEFAULT_DENY`] first.
    pub fn deny_rules(&self) -> &[EgressRule] {
        &self.deny
    }

    /// Checks a URL's host before anything is sent to it: `host` is a name or an IP
    /// literal (IPv6 with or without brackets), `port` the URL's port or its scheme's
    /// default. Name rules apply to a name, address and block rules to an IP literal.
    /// A name that passes here is checked again once resolved
    /// ([`EgressPolicy::check_resolved`]).
    ///
    /// # Errors
    /// [`EgressRefusal`] naming the rule: a deny rule matches, or allow rules exist and
    /// none can match this host on this port.
    pub fn check_host(&self, host: &str, port: u16) -> Result<(), EgressRefusal> {
        let parsed = Host::parse(host);
        let matched = || match &parsed {
            Host::Name(name) => EgressMatch::Name {
                host: name.clone(),
                port: Some(port),
            },
            Host::Address(address) => EgressMatch::Address {
                address: *address,
                port: Some(port),
                name: None,
            },
        };
        if let Some(rule) = self
            .deny
            .iter()
            .find(|r| r.matches_host(&parsed, Some(port)))
        {
            return Err(EgressRefusal {
                matched: matched(),
                rule: rule.as_deny(),
            });
        }
        if self.allow.is_empty()
            || self
                .allow
                .iter()
                .any(|r| r.matches_host(&parsed, Some(port)))
        {
            return Ok(());
        }
        // A name may still be allowed by its addresses, unless an allow rule names it
        // for other ports only.
        let named_elsewhere = self.allow.iter().any(|r| r.matches_host(&parsed, None));
        let by_address = self.allow.iter().any(EgressRule::allows_addresses);
        if matches!(parsed, Host::Name(_)) && by_address && !named_elsewhere {
            return Ok(());
        }
        Err(EgressRefusal {
            matched: matched(),
            rule: RefusalRule::NoAllowRule,
        })
    }

    /// Checks the addresses a name resolved to, after [`EgressPolicy::check_host`]
    /// passed for it: refused when a deny rule contains any of them, or when allow
    /// rules exist, none matches the name, and some address is in no allow rule.
    ///
    /// # Errors
    /// [`EgressRefusal`] naming the address and the rule.
    pub fn check_resolved(&self, name: &str, addresses: &[IpAddr]) -> Result<(), EgressRefusal> {
        let matched = |address: IpAddr| EgressMatch::Address {
            address: canonical(address),
            port: None,
            name: Some(name.to_string()),
        };
        for &address in addresses {
            if let Some(rule) = self.deny.iter().find(|r| r.contains(address, true)) {
                return Err(EgressRefusal {
                    matched: matched(address),
                    rule: rule.as_deny(),
                });
            }
        }
        if self.allow.is_empty() {
            return Ok(());
        }
        let host = Host::parse(name);
        if self.allow.iter().any(|r| r.matches_host(&host, None)) {
            return Ok(());
        }
        match addresses
            .iter()
            .find(|a| !self.allow.iter().any(|r| r.contains(**a, false)))
        {
            Some(&address) => Err(EgressRefusal {
                matched: matched(address),
                rule: RefusalRule::NoAllowRule,
            }),
            None => Ok(()),
        }
    }
}

/// What an egress rule was applied to when it refused a connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EgressMatch {
    /// A host name, as in the URL (lower case, no trailing dot).
    Name {
        /// The host name.
        host: String,
        /// The port the request was for.
        port: Option<u16>,
    },
    /// An address: an IP literal host, or one that `name` resolved to.
    Address {
        /// The address (an IPv4-mapped IPv6 address as its IPv4 address).
        address: IpAddr,
        /// The port the request was for, when known (not for a resolved name).
        port: Option<u16>,
        /// The name that resolved to it; `None` for an IP literal.
        name: Option<String>,
    },
}

/// The rule that refused a connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RefusalRule {
    /// A deny rule matched.
    Deny {
        /// The rule's pattern as written.
        pattern: String,
        /// One of [`DEFAULT_DENY`].
        default: bool,
    },
    /// Allow rules exist and none matched.
    NoAllowRule,
}

/// Why the egress policy refused a connection: what was matched and by which rule.
/// Nothing was sent to that host. `Display`: `refused by the egress policy:
/// 169.254.169.254 matches deny rule 169.254.0.0/16 (default)`, `… localhost resolves
/// to 127.0.0.1, which matches deny rule 127.0.0.1/32`, `… evil.example:443 matches no
/// allow rule`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct EgressRefusal {
    /// The host name or address the rule was applied to.
    pub matched: EgressMatch,
    /// The rule.
    pub rule: RefusalRule,
}

impl std::error::Error for EgressRefusal {}

impl fmt::Display for EgressRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("refused by the egress policy: ")?;
        let with_port = |f: &mut fmt::Formatter<'_>, host: &str, port: Option<u16>| match port {
            Some(p) => write!(f, "{host}:{p}"),
            None => f.write_str(host),
        };
        match &self.matched {
            EgressMatch::Name { host, port } => with_port(f, host, *port)?,
            EgressMatch::Address {
                address,
                port,
                name: None,
            } => {
                let shown = match address {
                    IpAddr::V6(_) if port.is_some() => format!("[{address}]"),
                    _ => address.to_string(),
                };
                with_port(f, &shown, *port)?
            }
            EgressMatch::Address {
                address,
                name: Some(name),
                ..
            } => write!(f, "{name} resolves to {address}, which")?,
        }
        match &self.rule {
            RefusalRule::Deny { pattern, default } => {
                write!(f, " matches deny rule {pattern}")?;
                if *default {
                    f.write_str(" (default)")?;
                }
                Ok(())
            }
            RefusalRule::NoAllowRule => f.write_str(" matches no allow rule"),
        }
    }
}

/// A host as matched: a lower-case name without a trailing dot, or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Name(String),
    Address(IpAddr),
}

impl Host {
    fn parse(host: &str) -> Host {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match bare.parse::<IpAddr>() {
            Ok(address) => Host::Address(canonical(address)),
            Err(_) => Host::Name(host.trim_end_matches('.').to_ascii_lowercase()),
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), or one in the NAT64 well-known
/// prefix (`64:ff9b::a.b.c.d`, RFC 6052), as the IPv4 address it carries; any other
/// address as it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let bits = u128::from(v6);
            if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
                return IpAddr::V4(Ipv4Addr::from(bits as u32));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// `address` with every bit past `prefix` cleared.
fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let kept = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(bits & kept))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let kept = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & kept))
        }
    }
}

/// Splits `host[:port]`, `[v6][:port]` or a bare IPv6 address.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .map(Some)
            .ok_or_else(|| format!("the port {p:?} is not a number from 1 to 65535"))
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| "a '[' without its ']'".to_string())?;
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, port(p)?)),
                None => Err(format!("{after:?} after ']' is not ':port'")),
            },
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (host, p) = text.split_once(':').unwrap_or((text, ""));
            Ok((host, port(p)?))
        }
        // Several colons and no brackets: a bare IPv6 address, no port.
        _ => Ok((text, None)),
    }
}

/// The labels of a host name pattern, `None` for `*`.
fn name_labels(host: &str) -> Result<Vec<Option<String>>, String> {
    let host = host.trim_end_matches('.');
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    host.split('.')
        .map(|label| match label {
            "" => Err("a label is empty (two dots in a row?)".to_string()),
            "*" => Ok(None),
            _ if label.contains('*') => Err(format!(
                "{label:?}: '*' must be a whole label, as in *.example.com"
            )),
            _ if label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                Ok(Some(label.to_ascii_lowercase()))
            }
            _ => Err(format!("{label:?} holds a character a host name cannot")),
        })
        .collect()
}

/// Whether `name` (lower case, no trailing dot) matches `labels`: a leading `*` is one
/// or more labels, any other `*` exactly one.
fn glob_match(labels: &[Option<String>], name: &str) -> bool {
    let got: Vec<&str> = name.split('.').collect();
    let label_ok = |want: &Option<String>, got: &str| want.as_deref().is_none_or(|w| w == got);
    match labels.split_first() {
        Some((None, rest)) if got.len() > rest.len() => {
            let tail = &got[got.len() - rest.len()..];
            rest.iter().zip(tail).all(|(w, g)| label_ok(w, g))
        }
        Some((None, _)) => false,
        _ => labels.len() == got.len() && labels.iter().zip(&got).all(|(w, g)| label_ok(w, g)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> EgressPolicy {
        let rules = |list: &[&str]| list.iter().map(|p| EgressRule::parse(p).unwrap()).collect();
        EgressPolicy::new(rules(allow), rules(deny))
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn deny_pattern(r: Result<(), EgressRefusal>) -> Option<String> {
        match r.err()?.rule {
            RefusalRule::Deny { pattern, .. } => Some(pattern),
            RefusalRule::NoAllowRule => Some("no allow rule".into()),
        }
    }

    #[test]
    fn default_rules_refuse_metadata_addresses_and_names() {
        let p = EgressPolicy::default();
        let refused = p.check_host("169.254.169.254", 80).unwrap_err();
        assert_eq!(
            refused.rule,
            RefusalRule::Deny {
                pattern: "169.254.0.0/16".into(),
                default: true
            }
        );
        assert_eq!(
            refused.to_string(),
            "refused by the egress policy: 169.254.169.254:80 matches deny rule 169.254.0.0/16 (default)"
        );
        for (host, rule) in [
            ("[fe80::1]", "fe80::/10"),
            ("fd00:ec2::254", "fd00:ec2::254/128"),
            ("100.100.100.200", "100.100.100.200/32"),
            ("168.63.129.16", "168.63.129.16/32"),
            ("metadata.google.internal", "metadata.google.internal"),
            ("METADATA.Google.Internal.", "metadata.google.internal"),
            ("metadata.goog", "metadata.goog"),
            // IPv4-mapped IPv6 is the IPv4 address.
            ("[::ffff:169.254.169.254]", "169.254.0.0/16"),
            ("64:ff9b::a9fe:a9fe", "169.254.0.0/16"),
            ("0.0.0.0", "0.0.0.0/8"),
            ("::", "::/128"),
        ] {
            assert_eq!(
                deny_pattern(p.check_host(host, 443)).as_deref(),
                Some(rule),
                "{host}"
            );
        }
        assert_eq!(p.check_host("127.0.0.1", 5000), Ok(()));
        assert_eq!(p.check_host("::1", 5000), Ok(()));
        assert_eq!(p.check_host("registry.example.com", 443), Ok(()));
        assert_eq!(p.check_host("169.253.255.255", 80), Ok(()));
        assert_eq!(p.check_host("169.255.0.0", 80), Ok(()));
        assert_eq!(
            p.check_host("64:ff9b::7f00:1", 80),
            Ok(()),
            "NAT64 of 127.0.0.1"
        );
        assert_eq!(
            p.check_host("64:ff9c::a9fe:a9fe", 80),
            Ok(()),
            "not the NAT64 prefix"
        );
    }

    #[test]
    fn resolved_addresses_are_checked() {
        let p = policy(&[], &["127.0.0.1/32", "::1/128"]);
        assert_eq!(p.check_host("localhost", 80), Ok(()));
        let refused = p
            .check_resolved("localhost", &[ip("::1"), ip("127.0.0.1")])
            .unwrap_err();
        assert_eq!(
            refused.matched,
            EgressMatch::Address {
                address: ip("::1"),
                port: None,
                name: Some("localhost".into())
            }
        );
        assert_eq!(
            refused.to_string(),
            "refused by the egress policy: localhost resolves to ::1, which matches deny rule ::1/128"
        );
        let mapped = p
            .check_resolved("x", &[ip("::ffff:127.0.0.1")])
            .unwrap_err();
        assert_eq!(deny_pattern(Err(mapped)).as_deref(), Some("127.0.0.1/32"));
        assert_eq!(p.check_resolved("x", &[ip("127.0.0.2")]), Ok(()));
        // Default rules apply to resolved addresses too.
        let d = EgressPolicy::default();
        assert!(
            d.check_resolved("instance-data", &[ip("169.254.169.254")])
                .is_err()
        );
    }

    #[test]
    fn globs_and_ports() {
        let p = policy(
            &[],
            &[
                "*.example.com",
                "registry.*.example.org",
                "reg.example.net:5000",
            ],
        );
        assert!(p.check_host("a.example.com", 443).is_err());
        assert!(
            p.check_host("a.b.example.com", 443).is_err(),
            "leading * is one or more labels"
        );
        assert_eq!(p.check_host("example.com", 443), Ok(()));
        assert_eq!(p.check_host("aexample.com", 443), Ok(()));
        assert!(p.check_host("registry.eu.example.org", 443).is_err());
        assert_eq!(
            p.check_host("registry.a.b.example.org", 443),
            Ok(()),
            "inner * is one label"
        );
        assert!(p.check_host("reg.example.net", 5000).is_err());
        assert_eq!(
            p.check_host("reg.example.net", 443),
            Ok(()),
            "the port must match"
        );
    }

    #[test]
    fn allow_rules_limit_and_deny_wins() {
        let p = policy(
            &[
                "registry.example.com:5000",
                "*.corp.example",
                "127.0.0.0/8",
                "[::1]:5000",
            ],
            &["bad.corp.example", "127.0.0.9/32"],
        );
        assert_eq!(p.check_host("registry.example.com", 5000), Ok(()));
        let other_port = p.check_host("registry.example.com", 443).unwrap_err();
        assert_eq!(other_port.rule, RefusalRule::NoAllowRule);
        assert_eq!(
            other_port.to_string(),
            "refused by the egress policy: registry.example.com:443 matches no allow rule"
        );
        assert_eq!(p.check_host("good.corp.example", 443), Ok(()));
        assert_eq!(
            deny_pattern(p.check_host("bad.corp.example", 443)).as_deref(),
            Some("bad.corp.example")
        );
        assert_eq!(p.check_host("127.0.0.5", 80), Ok(()));
        assert!(
            p.check_host("127.0.0.9", 80).is_err(),
            "deny wins over allow"
        );
        assert_eq!(p.check_host("::1", 5000), Ok(()));
        assert_eq!(
            p.check_host("[::1]", 5001).unwrap_err().to_string(),
            "refused by the egress policy: [::1]:5001 matches no allow rule"
        );
        // A name no host rule names: allowed by name only if its addresses are.
        assert_eq!(p.check_host("localhost", 80), Ok(()));
        assert_eq!(p.check_resolved("localhost", &[ip("127.0.0.1")]), Ok(()));
        let outside = p
            .check_resolved("localhost", &[ip("127.0.0.1"), ip("::1")])
            .unwrap_err();
        assert_eq!(outside.rule, RefusalRule::NoAllowRule);
        // A name a host rule allows passes whatever its addresses, but the deny rules.
        assert_eq!(
            p.check_resolved("good.corp.example", &[ip("192.0.2.1")]),
            Ok(())
        );
        assert!(
            p.check_resolved("good.corp.example", &[ip("169.254.1.1")])
                .is_err()
        );
        // An address rule does not widen a host rule's port.
        assert!(p.check_host("registry.example.com", 80).is_err());
        // Without address rules, an unnamed name is refused at once.
        let names_only = policy(&["*.example.com"], &[]);
        assert!(names_only.check_host("localhost", 80).is_err());
    }

    #[test]
    fn patterns_parse_or_name_the_problem() {
        for ok in [
            "registry.example.com",
            "registry.example.com:5000",
            "*.example.com",
            "127.0.0.1",
            "127.0.0.1:5000",
            "[::1]:5000",
            "::1",
            "127.0.0.0/8",
            "::1/128",
            "0.0.0.0/0",
            "EXAMPLE.com.",
        ] {
            assert!(EgressRule::parse(ok).is_ok(), "{ok}");
        }
        for (bad, reason) in [
            ("", "it is empty"),
            (
                "reg*.example.com",
                "\"reg*\": '*' must be a whole label, as in *.example.com",
            ),
            ("a..b", "a label is empty (two dots in a row?)"),
            ("host:0", "the port \"0\" is not a number from 1 to 65535"),
            (
                "host:http",
                "the port \"http\" is not a number from 1 to 65535",
            ),
            (
                "192.0.2.0/33",
                "the prefix length is not a number from 0 to 32",
            ),
            ("::/129", "the prefix length is not a number from 0 to 128"),
            (
                "example.com/8",
                "the part before '/' is not an IP address (a CIDR block takes no port)",
            ),
            ("[::1", "a '[' without its ']'"),
            ("a b", "\"a b\" holds a character a host name cannot"),
        ] {
            let e = EgressRule::parse(bad).unwrap_err();
            assert_eq!((e.pattern.as_str(), e.reason.as_str()), (bad, reason));
        }
        assert_eq!(
            EgressRule::parse("x:y").unwrap_err().to_string(),
            "\"x:y\" is not a host pattern or CIDR block: the port \"y\" is not a number from 1 to 65535"
        );
    }

    #[test]
    fn blocks_are_masked_and_families_kept_apart() {
        let p = policy(&[], &["127.1.2.3/8", "::/0"]);
        assert!(p.check_host("127.200.0.1", 80).is_err());
        assert!(p.check_host("2001:db8::1", 80).is_err());
        // An IPv6 block never contains an IPv4 address (nor a mapped one).
        assert_eq!(p.check_host("192.0.2.1", 80), Ok(()));
        assert_eq!(p.check_host("::ffff:192.0.2.1", 80), Ok(()));
    }
}
