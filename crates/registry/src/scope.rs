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

/// At most this many repositories go into one token request. A token for many
/// repositories is a long JWT that goes with every request and that distribution
/// decodes, access list and all, on each one: with 1,000 repositories in one token the
/// registry spent 5.3 ms of CPU per `HEAD`, with 100 2.5 ms, with 1 1.5 ms
/// (bench/notes.md).
pub(crate) const MAX_REPOSITORIES_PER_TOKEN: usize = 100;

/// At most this many bytes of `scope=` parameters go into one token request URL, so
/// that its request line stays under the 8 KiB that common front ends accept (nginx's
/// default `large_client_header_buffers`, Apache's `LimitRequestLine` of 8,190).
pub(crate) const MAX_SCOPE_BYTES_PER_TOKEN: usize = 6 * 1024;

/// The pull scopes of `repositories` ([`pull_scopes`]: distinct, sorted) split into
/// batches of at most [`MAX_REPOSITORIES_PER_TOKEN`] scopes and
/// [`MAX_SCOPE_BYTES_PER_TOKEN`] bytes of encoded `scope=` parameters, one token
/// request each. A scope longer than the byte limit on its own gets a batch alone.
/// No repository gives no batch.
pub(crate) fn token_batches<'a>(
    repositories: impl IntoIterator<Item = &'a str>,
) -> Vec<Vec<String>> {
    let mut batches: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for scope in pull_scopes(repositories) {
        let size = encoded_scope_len(&scope);
        match batches.last_mut() {
            Some(batch)
                if batch.len() < MAX_REPOSITORIES_PER_TOKEN
                    && bytes + size <= MAX_SCOPE_BYTES_PER_TOKEN =>
            {
                bytes += size;
                batch.push(scope);
            }
            _ => {
                bytes = size;
                batches.push(vec![scope]);
            }
        }
    }
    batches
}

/// The length of `&scope=<scope>` in a URL query.
fn encoded_scope_len(scope: &str) -> usize {
    "&scope=".len()
        + url::form_urlencoded::byte_serialize(scope.as_bytes())
            .map(str::len)
            .sum::<usize>()
}

/// `<realm>?service=<service>&scope=<s1>&scope=<s2>…`: one `scope` parameter per
/// scope, so one token covers every repository of a batch ([`token_batches`]). A query
/// already in the realm is kept.
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
    fn token_batches_split_by_count() {
        let names: Vec<String> = (0..250).map(|i| format!("r/{i:03}")).collect();
        let batches = token_batches(names.iter().map(String::as_str));
        assert_eq!(
            batches.iter().map(Vec::len).collect::<Vec<_>>(),
            [100, 100, 50]
        );
        // Sorted and disjoint: every scope once, in order.
        let flat: Vec<String> = batches.concat();
        assert_eq!(flat, pull_scopes(names.iter().map(String::as_str)));
        assert_eq!(batches[1][0], "repository:r/100:pull");
        assert!(token_batches([]).is_empty());
        assert_eq!(
            token_batches(["a", "a", ""]),
            vec![vec!["repository:a:pull"]]
        );
    }

    #[test]
    fn token_batches_keep_the_url_short() {
        // 60 names of 200 bytes: 60 × (7 + 200 + 22) bytes is more than 6 KiB.
        let names: Vec<String> = (0..60)
            .map(|i| format!("{i:02}{}", "x".repeat(198)))
            .collect();
        let batches = token_batches(names.iter().map(String::as_str));
        assert!(batches.len() > 1, "{}", batches.len());
        let realm = Url::parse("https://auth.example/token").unwrap();
        for batch in &batches {
            let url = token_url(&realm, Some("reg.example"), batch);
            assert!(
                url.as_str().len() < 6 * 1024 + 100,
                "{}",
                url.as_str().len()
            );
        }
        assert_eq!(batches.concat().len(), 60);
        // A name too long for any batch still gets its own.
        let long = "y".repeat(7000);
        assert_eq!(token_batches([long.as_str(), "a"]).len(), 2);
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
