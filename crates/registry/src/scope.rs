//! Token scopes and the token request URL (distribution token-auth spec, "Requesting a
//! Token" and the scope grammar `resourcetype:resourcename:action[,action]`).
//!
//! Invariant: pure; builds strings and URLs, sends nothing.

use std::collections::BTreeSet;

use url::Url;

/// `repository:<name>:pull`.
pub(crate) fn repository_pull(repository: &str) -> String {
    format!("repository:{repository}:pull")
}

/// One pull scope per distinct, non-empty repository, sorted so that the same set
/// always yields the same request.
pub(crate) fn pull_scopes<'a>(repositories: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    repositories
        .into_iter()
        .filter(|r| !r.is_empty())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(repository_pull)
        .collect()
}

/// `<realm>?service=<service>&scope=<s1>&scope=<s2>…`: one `scope` parameter per
/// scope, so one token covers every repository. A query already in the realm is kept.
pub(crate) fn token_url(realm: &Url, service: Option<&str>, scopes: &[String]) -> Url {
    let mut url = realm.clone();
    {
        let mut query = url.query_pairs_mut();
        if let Some(service) = service {
            query.append_pair("service", service);
        }
        for scope in scopes {
            query.append_pair("scope", scope);
        }
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    url
}

/// The OAuth2 form of the same request (distribution `oauth.md`): one `scope` field,
/// the scopes separated by spaces.
pub(crate) fn oauth_scope(scopes: &[String]) -> String {
    scopes.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_scope_format() {
        assert_eq!(
            repository_pull("library/alpine"),
            "repository:library/alpine:pull"
        );
        // Names with separators and several components pass through unchanged.
        assert_eq!(
            repository_pull("a/b-c/d__e.f"),
            "repository:a/b-c/d__e.f:pull"
        );
    }

    #[test]
    fn scopes_are_unique_and_sorted() {
        let got = pull_scopes(["b/x", "a/y", "b/x", "", "c"]);
        assert_eq!(
            got,
            vec![
                "repository:a/y:pull",
                "repository:b/x:pull",
                "repository:c:pull"
            ]
        );
        assert!(pull_scopes([]).is_empty());
    }

    #[test]
    fn token_url_repeats_scope() {
        let realm = Url::parse("https://auth.docker.io/token").unwrap();
        let scopes = pull_scopes(["library/alpine", "library/busybox"]);
        let got = token_url(&realm, Some("registry.docker.io"), &scopes);
        assert_eq!(
            got.as_str(),
            "https://auth.docker.io/token?service=registry.docker.io\
             &scope=repository%3Alibrary%2Falpine%3Apull\
             &scope=repository%3Alibrary%2Fbusybox%3Apull"
        );
        let pairs: Vec<_> = got.query_pairs().collect();
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[1].1, "repository:library/alpine:pull");
    }

    #[test]
    fn token_url_keeps_realm_query_and_omits_empty_parts() {
        let realm = Url::parse("https://r.example/v2/token?account=x").unwrap();
        let got = token_url(&realm, None, &[]);
        assert_eq!(got.as_str(), "https://r.example/v2/token?account=x");
        let bare = Url::parse("https://r.example/token").unwrap();
        assert_eq!(
            token_url(&bare, None, &[]).as_str(),
            "https://r.example/token"
        );
        let got = token_url(&realm, Some("svc with space"), &[repository_pull("a")]);
        assert_eq!(
            got.as_str(),
            "https://r.example/v2/token?account=x&service=svc+with+space&scope=repository%3Aa%3Apull"
        );
    }

    #[test]
    fn oauth_scope_is_space_separated() {
        assert_eq!(
            oauth_scope(&pull_scopes(["a", "b"])),
            "repository:a:pull repository:b:pull"
        );
    }
}
