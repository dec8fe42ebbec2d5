//! Which host a registry domain is reached at, and whether it may use plain HTTP.
//!
//! Follows the Docker daemon's rules (`registry.ServiceOptions`, `isSecureIndex`):
//! `docker.io` is served by `registry-1.docker.io`; `localhost`, 127.0.0.0/8 and `::1`
//! are insecure by default, as are the hosts given with `--insecure-registry`. An insecure
//! registry is tried with HTTPS first and then plain HTTP, without verifying TLS.

use std::net::IpAddr;

use pullcheck_registry::Endpoint;

/// The host serving Docker Hub's API.
pub const DOCKER_HUB_API_HOST: &str = "registry-1.docker.io";

/// An endpoint with the rule that produced it, for reports and `explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEndpoint {
    /// The endpoint to query.
    pub endpoint: Endpoint,
    /// Why it is this endpoint, e.g. `primary`, `primary (Docker Hub API host)`.
    pub rule: String,
}

impl ResolvedEndpoint {
    /// The base URL as it would be tried first: `https://host/v2/`.
    pub fn url(&self) -> String {
        format!("https://{}/v2/", self.endpoint.host)
    }

    /// Whether plain HTTP or unverified TLS is allowed.
    pub fn insecure(&self) -> bool {
        self.endpoint.allow_http || self.endpoint.skip_verify
    }
}

/// Resolves a normalised registry domain (`docker.io`, `ghcr.io`, `127.0.0.1:5000`) to
/// its primary endpoint. `insecure` holds `--insecure-registry` values, `host` or
/// `host:port`; a bare host matches any port.
pub fn primary(domain: &str, insecure: &[String]) -> ResolvedEndpoint {
    let (host, rule) = if domain == "docker.io" {
        (
            DOCKER_HUB_API_HOST.to_string(),
            "primary (Docker Hub's API host)",
        )
    } else {
        (domain.to_string(), "primary")
    };
    let marked = insecure.iter().any(|i| matches_insecure(i, domain));
    let local = is_local(host_part(domain));
    let rule = match (marked, local) {
        (true, _) => format!("{rule}; insecure by --insecure-registry"),
        (false, true) => format!("{rule}; loopback may use plain HTTP"),
        _ => rule.to_string(),
    };
    ResolvedEndpoint {
        endpoint: Endpoint {
            host,
            allow_http: marked || local,
            skip_verify: marked,
        },
        rule,
    }
}

/// The host without its port: `[::1]:5000` → `::1`, `a.io:443` → `a.io`.
fn host_part(domain: &str) -> &str {
    if let Some(rest) = domain.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    domain.rsplit_once(':').map_or(domain, |(h, _)| h)
}

fn matches_insecure(entry: &str, domain: &str) -> bool {
    let entry = entry
        .trim()
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    entry == domain || (!entry.contains(':') && host_part(domain) == entry)
}

/// `localhost`, 127.0.0.0/8 and `::1`, which Docker lets use plain HTTP.
fn is_local(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_goes_to_its_api_host() {
        let e = primary("docker.io", &[]);
        assert_eq!(e.endpoint.host, "registry-1.docker.io");
        assert!(!e.insecure());
        assert_eq!(e.url(), "https://registry-1.docker.io/v2/");
    }

    #[test]
    fn loopback_may_use_http_but_still_verifies_tls() {
        for d in [
            "localhost:5000",
            "127.0.0.1:5000",
            "127.9.9.9",
            "[::1]:5000",
            "localhost",
        ] {
            let e = primary(d, &[]);
            assert!(e.endpoint.allow_http, "{d}");
            assert!(!e.endpoint.skip_verify, "{d}");
        }
        assert!(!primary("10.0.0.1:5000", &[]).endpoint.allow_http);
        assert!(!primary("localhost.example.com", &[]).endpoint.allow_http);
    }

    #[test]
    fn insecure_registry_matches_host_or_host_and_port() {
        let list = vec![
            "r.example.com".to_string(),
            "s.example.com:5000".to_string(),
        ];
        assert!(primary("r.example.com:443", &list).endpoint.skip_verify);
        assert!(primary("r.example.com", &list).endpoint.skip_verify);
        assert!(primary("s.example.com:5000", &list).endpoint.skip_verify);
        assert!(!primary("s.example.com:5001", &list).endpoint.skip_verify);
        assert!(!primary("t.example.com", &list).endpoint.allow_http);
    }
}
