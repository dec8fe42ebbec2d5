//! The URLs of requests to a registry: its base (`scheme://host[:port]/`), its API base
//! (the endpoint's base path), manifest and tag-list URLs with the endpoint's query,
//! and how a token realm's host compares with the registry's.
//!
//! Invariant: pure; every function maps strings and URLs to URLs.

use url::Url;

use crate::Endpoint;

/// The `Accept` list of every manifest request: OCI index and manifest, Docker manifest
/// list and schema 2 manifest. A shorter list makes some registries (distribution
/// among them) answer 404 for manifests that exist.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
     application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json, \
     application/vnd.docker.distribution.manifest.v2+json";

/// `scheme://host/` for a configured `host[:port]`.
///
/// # Errors
/// A message naming the host when it is empty, holds `/ ? # @` or a space, or is not a
/// valid URL host.
pub(crate) fn base_url(scheme: &str, host: &str) -> Result<Url, String> {
    let invalid = || format!("registry host {host:?} is not a valid host[:port]");
    if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
        return Err(invalid());
    }
    let url = Url::parse(&format!("{scheme}://{host}/")).map_err(|_| invalid())?;
    if url.host_str().is_none() || url.path() != "/" {
        return Err(invalid());
    }
    Ok(url)
}

/// The API base of `endpoint` on `base` (`scheme://host[:port]/`): `base` with
/// [`Endpoint::api_path`], e.g. `https://h/v2/`.
pub(crate) fn api_url(base: &Url, endpoint: &Endpoint) -> Url {
    join(base, endpoint.api_path().trim_start_matches('/'))
}

/// `url` with `query` appended, in order, form-encoded (`:` as `%3A`, as Go's
/// `url.Values.Encode` does).
pub(crate) fn with_query(mut url: Url, query: &[(String, String)]) -> Url {
    if !query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in query {
            pairs.append_pair(name, value);
        }
    }
    url
}

/// `base` (ending in `/`) with `path` appended.
pub(crate) fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(&format!("{}{path}", base.path()));
    url
}

/// `<api><repository>/<tail…>` (`api` being the API base, e.g. `https://h/v2/`), each
/// path component percent-encoded as a path segment.
fn api_path(api: &Url, repository: &str, tail: [&str; 2]) -> Url {
    let mut url = api.clone();
    if let Ok(mut segments) = url.path_segments_mut() {
        segments.pop_if_empty();
        segments.extend(repository.split('/'));
        segments.extend(tail);
    }
    url
}

/// `<api><repository>/manifests/<reference>` (`api` being the API base, e.g.
/// `https://h/v2/`), each path component percent-encoded as a path segment.
pub(crate) fn manifest_url(api: &Url, repository: &str, reference: &str) -> Url {
    api_path(api, repository, ["manifests", reference])
}

/// `<api><repository>/blobs/<digest>`.
pub(crate) fn blob_url(api: &Url, repository: &str, digest: &str) -> Url {
    api_path(api, repository, ["blobs", digest])
}

/// `<api><repository>/tags/list?n=1000`, the first page of up to 1000 tags.
pub(crate) fn tags_url(api: &Url, repository: &str) -> Url {
    let mut url = api_path(api, repository, ["tags", "list"]);
    url.set_query(Some("n=1000"));
    url
}

/// `host[:port]` of a URL, the port only when the URL names one.
pub(crate) fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// Whether the realm is on the endpoint's host (and port, when the endpoint has one).
pub(crate) fn same_host(endpoint_host: &str, realm: &Url) -> bool {
    let Ok(endpoint) = Url::parse(&format!("https://{endpoint_host}/")) else {
        return false;
    };
    endpoint.host_str() == realm.host_str()
        && endpoint.port_or_known_default() == realm.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_for_names_ports_and_ipv6() {
        assert_eq!(
            base_url("https", "registry-1.docker.io").unwrap().as_str(),
            "https://registry-1.docker.io/"
        );
        assert_eq!(
            base_url("http", "127.0.0.1:5000").unwrap().as_str(),
            "http://127.0.0.1:5000/"
        );
        assert_eq!(
            base_url("https", "[::1]:5000").unwrap().as_str(),
            "https://[::1]:5000/"
        );
        for bad in ["", "a/b", "host?x", "user@host", "a b", "[::1"] {
            assert!(base_url("https", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn join_appends_to_the_base() {
        let base = base_url("https", "h:1").unwrap();
        assert_eq!(join(&base, "v2/").as_str(), "https://h:1/v2/");
    }

    #[test]
    fn api_urls_follow_the_base_path_and_carry_the_query() {
        let base = base_url("http", "m:5000").unwrap();
        let api = |path: &str| {
            api_url(
                &base,
                &Endpoint {
                    base_path: path.into(),
                    ..Endpoint::new("m:5000")
                },
            )
            .to_string()
        };
        assert_eq!(api("/v2/"), "http://m:5000/v2/");
        assert_eq!(api(""), "http://m:5000/v2/");
        assert_eq!(api("custom/prefix"), "http://m:5000/custom/prefix/");
        assert_eq!(api("/us/v2/"), "http://m:5000/us/v2/");
        assert_eq!(api("/"), "http://m:5000/");
        assert_eq!(api("/a b/"), "http://m:5000/a%20b/");
        let query = vec![
            ("ns".to_string(), "docker.io".to_string()),
            ("x".to_string(), "127.0.0.1:5000".to_string()),
        ];
        assert_eq!(
            with_query(Url::parse("http://m/v2/").unwrap(), &query).as_str(),
            "http://m/v2/?ns=docker.io&x=127.0.0.1%3A5000"
        );
        assert_eq!(
            with_query(
                Url::parse("http://m/v2/a/tags/list?n=1000").unwrap(),
                &query[..1]
            )
            .as_str(),
            "http://m/v2/a/tags/list?n=1000&ns=docker.io"
        );
        assert_eq!(
            with_query(Url::parse("http://m/v2/").unwrap(), &[]).as_str(),
            "http://m/v2/"
        );
    }

    #[test]
    fn manifest_urls() {
        let base = Url::parse("https://reg.example:5000/v2/").unwrap();
        assert_eq!(
            manifest_url(&base, "library/alpine", "3.19").as_str(),
            "https://reg.example:5000/v2/library/alpine/manifests/3.19"
        );
        let digest = format!("sha256:{}", "a".repeat(64));
        assert_eq!(
            manifest_url(&base, "a/b/c", &digest).as_str(),
            format!("https://reg.example:5000/v2/a/b/c/manifests/{digest}")
        );
        // Characters that would change the URL's meaning are escaped.
        assert_eq!(
            manifest_url(&base, "x", "a?b#c").as_str(),
            "https://reg.example:5000/v2/x/manifests/a%3Fb%23c"
        );
        // Another API base (containerd `override_path`).
        let custom = Url::parse("http://m:5000/custom/prefix/").unwrap();
        assert_eq!(
            manifest_url(&custom, "library/alpine", "3.19").as_str(),
            "http://m:5000/custom/prefix/library/alpine/manifests/3.19"
        );
        assert_eq!(
            tags_url(&custom, "library/alpine").as_str(),
            "http://m:5000/custom/prefix/library/alpine/tags/list?n=1000"
        );
    }

    #[test]
    fn realm_on_same_host() {
        let realm = Url::parse("https://reg.example/token").unwrap();
        assert!(same_host("reg.example", &realm));
        assert!(same_host("reg.example:443", &realm));
        assert!(!same_host("reg.example:5000", &realm));
        assert!(!same_host("auth.example", &realm));
    }

    #[test]
    fn authorities() {
        let u = Url::parse("https://auth.example:8443/token").unwrap();
        assert_eq!(authority(&u), "auth.example:8443");
        let u = Url::parse("https://auth.example/token").unwrap();
        assert_eq!(authority(&u), "auth.example");
        let u = Url::parse("http://[::1]:5000/token").unwrap();
        assert_eq!(authority(&u), "[::1]:5000");
    }
}
