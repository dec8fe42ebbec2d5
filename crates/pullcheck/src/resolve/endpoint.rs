//! How an endpoint is reached: whether it may use plain HTTP or unverified TLS, and
//! what the mirror configuration adds to its requests (the API path, containerd's
//! `ns=` query and `[header]`s, CA files and a client certificate).
//!
//! The loopback rule is each runtime's own. The Docker daemon (`registry.ServiceOptions`,
//! `isSecureIndex`), and pullcheck without a mirror configuration, let `localhost`,
//! 127.0.0.0/8 and `::1` use plain HTTP. containerd and containers/image make no such
//! exception for a configured endpoint: an `https://` hosts.toml host, or a
//! registries.conf registry without `insecure = true`, that speaks plain HTTP fails
//! ("server gave HTTP response to HTTPS client"); containerd's own default host for a
//! loopback registry is modelled in `pullcheck_mirrors::hosts_toml`. The hosts given with
//! `--insecure-registry` are insecure under every runtime: tried with HTTPS first and then
//! plain HTTP, without verifying TLS.

use pullcheck_mirrors::Mode;
use pullcheck_reference::RegistryHost;
use pullcheck_registry::Endpoint;

/// An endpoint with the rule that produced it, for queries, reports and `explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEndpoint {
    /// The endpoint to query.
    pub endpoint: Endpoint,
    /// The API base URL tried first, e.g. `https://registry-1.docker.io/v2/`.
    pub url: String,
    /// Why it is this endpoint, naming the configuration file and entry when there is
    /// one, plus the insecure rule that applied.
    pub rule: String,
    /// Whether this is a mirror rather than the image's own registry.
    pub is_mirror: bool,
    /// The warning an answer over HTTPS from this endpoint brings: some releases of the
    /// runtime would not ask it so ([`pullcheck_mirrors::Endpoint::over_tls_warning`]).
    pub over_tls_warning: Option<pullcheck_mirrors::VersionWarning>,
    /// The warning an answer over plain HTTP from this endpoint brings
    /// ([`pullcheck_mirrors::Endpoint::over_plain_http_warning`]).
    pub over_plain_http_warning: Option<pullcheck_mirrors::VersionWarning>,
}

impl ResolvedEndpoint {
    /// Whether plain HTTP or unverified TLS is allowed.
    pub fn insecure(&self) -> bool {
        self.endpoint.allow_http || self.endpoint.skip_verify
    }
}

/// Turns a mirror-configuration endpoint of a configuration in `mode` into the registry
/// client's endpoint, adding the rules outside the file: under [`Mode::Docker`] and
/// [`Mode::Direct`] (Docker's rule), `localhost`, 127.0.0.0/8 and `::1`
/// ([`RegistryHost::is_loopback`]) may use plain HTTP; under [`Mode::Containerd`] and
/// [`Mode::RegistriesConf`] only what the file says does (containerd's `http://` hosts
/// and its default host, registries.conf `insecure`). The `--insecure-registry` hosts
/// (`host` or `host:port`; a bare host matches any port) may use plain HTTP and
/// unverified TLS in every mode. An `http://` URL is asked over plain HTTP only
/// ([`Endpoint::http_only`]), unless the mirror configuration gives it a fallback (it
/// is then HTTPS first) or it is an insecure registry. The URL's path becomes the API base path; the query, headers, CA files and the
/// first client certificate are kept (the registry client presents one client
/// certificate per host).
pub fn from_mirror(
    e: &pullcheck_mirrors::Endpoint,
    insecure: &[String],
    mode: Mode,
) -> ResolvedEndpoint {
    let marked = insecure.iter().any(|i| matches_insecure(i, &e.host));
    let local = matches!(mode, Mode::Docker | Mode::Direct)
        && RegistryHost::from_url_host(&e.host).is_loopback();
    // An `http://` endpoint (a containerd host, a Docker registry mirror) is plain HTTP
    // as configured, wherever it is.
    let plain_http = e.url.starts_with("http://");
    let mut rule = e.rule.clone();
    if marked {
        rule.push_str("; insecure: listed as an insecure registry");
    } else if local && !e.http_fallback && !plain_http {
        rule.push_str("; loopback may use plain HTTP");
    }
    ResolvedEndpoint {
        endpoint: Endpoint {
            allow_http: plain_http || e.http_fallback || marked || local,
            // An `http://` URL without a fallback is asked over plain HTTP only, as
            // every runtime asks it (containerd sets the host's scheme, with no HTTPS
            // attempt, for a hosts.toml `http://` host without TLS settings and for a
            // CRI `mirrors` endpoint or loopback default host); `--insecure-registry`
            // still tries HTTPS first.
            http_only: plain_http && !e.http_fallback && !marked,
            skip_verify: e.skip_verify || marked,
            base_path: api_path(&e.url),
            query: e.query.clone(),
            headers: e.headers.clone(),
            ca_files: e.ca.clone(),
            client_cert: e
                .client_certs
                .first()
                .map(|c| (c.cert.clone(), c.key.clone())),
            ..Endpoint::new(e.host.clone())
        },
        url: e.url.clone(),
        rule,
        is_mirror: e.is_mirror,
        over_tls_warning: e.over_tls_warning.clone(),
        over_plain_http_warning: e.over_plain_http_warning.clone(),
    }
}

/// The primary endpoint of a registry domain with no mirror configuration.
pub fn primary(domain: &str, insecure: &[String]) -> ResolvedEndpoint {
    let reference = format!("{domain}/x");
    match pullcheck_reference::Reference::parse_normalized(&reference)
        .map(|r| pullcheck_mirrors::MirrorConfig::none().resolve(&r))
    {
        Ok(pullcheck_mirrors::Resolution::Endpoints(list)) if !list.is_empty() => {
            from_mirror(&list[0], insecure, Mode::Direct)
        }
        _ => ResolvedEndpoint {
            endpoint: Endpoint::new(domain),
            url: format!("https://{domain}/v2/"),
            rule: "the image's own registry".into(),
            is_mirror: false,
            over_tls_warning: None,
            over_plain_http_warning: None,
        },
    }
}

/// The path of an API base URL (`https://h/v2/` → `/v2/`,
/// `http://h:5000/custom/prefix/` → `/custom/prefix/`); `/v2/` when it has none.
fn api_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    match rest.find('/') {
        Some(i) => rest[i..].to_string(),
        None => Endpoint::API_PATH.to_string(),
    }
}

/// The host without its port: `[::1]:5000` → `::1`, `a.io:443` → `a.io`.
fn host_part(domain: &str) -> String {
    RegistryHost::from_url_host(domain).name().to_owned()
}

fn matches_insecure(entry: &str, domain: &str) -> bool {
    let entry = entry
        .trim()
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    entry == domain || (!entry.contains(':') && host_part(domain) == entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_goes_to_its_api_host() {
        let e = primary("docker.io", &[]);
        assert_eq!(e.endpoint.host, "registry-1.docker.io");
        assert!(!e.insecure());
        assert_eq!(e.url, "https://registry-1.docker.io/v2/");
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

    fn mirror_endpoint(url: &str, host: &str) -> pullcheck_mirrors::Endpoint {
        let reference =
            pullcheck_reference::Reference::parse_normalized(&format!("{host}/a/b:c")).unwrap();
        let mut e = pullcheck_mirrors::MirrorConfig::none()
            .resolve(&reference)
            .endpoints()[0]
            .clone();
        e.url = url.to_string();
        e
    }

    #[test]
    fn an_http_url_may_use_plain_http_anywhere() {
        // containerd `[host."http://mirror.internal:5000"]`, Docker `registry-mirrors`
        // `http://…`: plain HTTP as configured, not only on loopback.
        let e = from_mirror(
            &mirror_endpoint("http://mirror.internal:5000/v2/", "mirror.internal:5000"),
            &[],
            Mode::Containerd,
        );
        assert!(e.endpoint.allow_http);
        assert!(!e.endpoint.skip_verify);
        assert!(e.insecure());
        let e = from_mirror(
            &mirror_endpoint("https://mirror.internal:5000/v2/", "mirror.internal:5000"),
            &[],
            Mode::Containerd,
        );
        assert!(!e.endpoint.allow_http);
        assert!(!e.insecure());
    }

    #[test]
    fn an_http_url_is_plain_http_only_unless_it_falls_back_or_is_insecure() {
        // containerd's CRI `mirrors` (and its loopback default host) and a hosts.toml
        // `http://` host without TLS settings: the host's scheme, no HTTPS attempt, so
        // a TLS registry there answers 400 (seen with containerd 1.6.20's CRI plugin,
        // crates/cli/tests/it/runtimes.rs, held-out).
        let plain = mirror_endpoint("http://127.0.0.1:5000/v2/", "127.0.0.1:5000");
        for mode in [Mode::Containerd, Mode::Docker, Mode::Direct] {
            let e = from_mirror(&plain, &[], mode).endpoint;
            assert!(e.http_only && e.allow_http, "{mode}");
        }
        // hosts.toml `http://` with a TLS setting: https first, then plain HTTP.
        let mut fallback = plain.clone();
        fallback.url = "https://127.0.0.1:5000/v2/".into();
        fallback.http_fallback = true;
        let e = from_mirror(&fallback, &[], Mode::Containerd).endpoint;
        assert!(e.allow_http && !e.http_only);
        // `--insecure-registry`: https first too.
        let e = from_mirror(&plain, &["127.0.0.1:5000".to_owned()], Mode::Containerd).endpoint;
        assert!(e.allow_http && !e.http_only && e.skip_verify);
    }

    #[test]
    fn the_api_path_query_headers_and_tls_files_are_kept() {
        let mut m = mirror_endpoint(
            "http://mirror.internal:5000/custom/prefix/",
            "mirror.internal:5000",
        );
        m.query = vec![("ns".into(), "registry.example.com".into())];
        m.headers = vec![("X-Mirror-Token".into(), "t".into())];
        m.ca = vec!["/etc/containerd/certs.d/r/ca.crt".into()];
        m.client_certs = vec![
            pullcheck_mirrors::ClientCert {
                cert: "/c/client.cert".into(),
                key: Some("/c/client.key".into()),
            },
            pullcheck_mirrors::ClientCert {
                cert: "/c/other.pem".into(),
                key: None,
            },
        ];
        let e = from_mirror(&m, &[], Mode::Containerd).endpoint;
        assert_eq!(e.base_path, "/custom/prefix/");
        assert_eq!(e.query, m.query);
        assert_eq!(e.headers, m.headers);
        assert_eq!(e.ca_files, m.ca);
        assert_eq!(
            e.client_cert,
            Some(("/c/client.cert".into(), Some("/c/client.key".into())))
        );
        assert_eq!(
            primary("registry.example.com", &[]).endpoint.base_path,
            "/v2/"
        );
        assert_eq!(api_path("https://h/v2/"), "/v2/");
        assert_eq!(api_path("https://h/"), "/");
        assert_eq!(api_path("https://h"), "/v2/");
    }

    #[test]
    fn only_docker_and_no_configuration_let_a_configured_loopback_endpoint_use_http() {
        // containerd `[host."https://127.0.0.1:5000"]`, registries.conf without
        // `insecure`: the runtimes fail against plain HTTP (seen with containerd 1.6.20 and
        // podman 4.3.1, crates/cli/tests/it/runtimes.rs); Docker falls back.
        let m = mirror_endpoint("https://127.0.0.1:5000/v2/", "127.0.0.1:5000");
        for (mode, http) in [
            (Mode::Docker, true),
            (Mode::Direct, true),
            (Mode::Containerd, false),
            (Mode::RegistriesConf, false),
        ] {
            let e = from_mirror(&m, &[], mode);
            assert_eq!(e.endpoint.allow_http, http, "{mode}");
            assert!(!e.endpoint.skip_verify, "{mode}");
        }
        let marked = from_mirror(&m, &["127.0.0.1:5000".to_owned()], Mode::RegistriesConf);
        assert!(marked.endpoint.allow_http && marked.endpoint.skip_verify);
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
