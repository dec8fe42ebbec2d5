//! Tag hints, sans IO: after a manifest 404, what the repository's tag list
//! (`GET /v2/<name>/tags/list?n=1000`) says, a missing repository or a missing tag or
//! digest, and which existing tags are close to a missing one (edit distance).
//!
//! Invariant: pure; every function maps data to data.

use pullcheck_reference::grammar::is_tag;

use crate::classify::{Query, Ref, answer};
use crate::errcode::{self, Envelope};
use crate::finding::{Finding, TagCount, TagList};
use crate::{Answer, Missing, Reason, Status};

/// A 404 whose repository's existence the tag list could not tell (`tag_list`).
fn unknown(query: &Query<'_>, missing: Missing, tag_list: TagList, errors: &Envelope) -> Answer {
    Answer {
        missing: Some(missing),
        ..answer(
            Status::Missing,
            Reason::ManifestUnknown,
            404,
            Finding::ManifestUnknown {
                host: query.host.to_string(),
                repository: query.repository.to_string(),
                reference: query.reference.owned(),
                tag_list,
            },
            errors,
        )
    }
}

/// The verdict on a 404 when the tag list request got no HTTP answer.
pub(crate) fn tags_list_failed(query: &Query<'_>, missing: Missing, reason: &str) -> Answer {
    unknown(
        query,
        missing,
        TagList::Failed(reason.to_string()),
        &errcode::NONE,
    )
}

#[derive(serde::Deserialize)]
struct TagListBody {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// The tag list's verdict on a 404 (pure). `missing` is the kind the reference implies;
/// `status`, `body` and `errors` are the tag list's; `link_next` says the list was cut.
pub(crate) fn tags_list(
    query: &Query<'_>,
    missing: Missing,
    status: u16,
    body: &[u8],
    errors: &Envelope,
    link_next: bool,
) -> Answer {
    let Query {
        host,
        repository,
        reference,
        ..
    } = query;
    if status == 404 {
        return Answer {
            missing: Some(Missing::Repository),
            ..answer(
                Status::Missing,
                Reason::RepositoryNotFound,
                404,
                Finding::RepositoryUnknown {
                    host: host.to_string(),
                    repository: repository.to_string(),
                },
                errors,
            )
        };
    }
    let tags = if (200..300).contains(&status) {
        serde_json::from_slice::<TagListBody>(body)
            .ok()
            .map(|l| l.tags.unwrap_or_default())
    } else {
        None
    };
    let Some(tags) = tags else {
        // Whether the repository exists is unknown: not `tag_not_found`, which says it
        // does (docs/reasons.md).
        return if (200..300).contains(&status) {
            unknown(query, missing, TagList::Unreadable, &errcode::NONE)
        } else {
            unknown(query, missing, TagList::Status(status), errors)
        };
    };
    let mut out = answer(
        Status::Missing,
        missing.into(),
        404,
        Finding::ReferenceUnknown {
            host: host.to_string(),
            repository: repository.to_string(),
            reference: reference.owned(),
            tags: TagCount {
                count: tags.len(),
                truncated: link_next,
            },
        },
        &errcode::NONE,
    );
    out.missing = Some(missing);
    if let Ref::Tag(tag) = reference {
        out.close_tags = suggest(tag, &tags)
            .iter()
            .map(|t| (*t).to_string())
            .collect();
    }
    out
}

/// Levenshtein distance over characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// Up to three existing tags closest to `wanted`: those at the smallest edit distance,
/// if that distance is within a budget of a third of the tag's length (at least 2),
/// sorted by name. Only valid tags are suggested (`[\w][\w.-]{0,127}`, the tag grammar
/// of distribution/reference, as [`pullcheck_reference::grammar::is_tag`] checks it):
/// a registry's list is not trusted to hold printable, usable names.
pub(crate) fn suggest<'t>(wanted: &str, tags: &'t [String]) -> Vec<&'t str> {
    let budget = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = tags
        .iter()
        .filter(|t| is_tag(t))
        .map(|t| (edit_distance(wanted, t), t.as_str()))
        .filter(|(d, t)| *d <= budget && *t != wanted)
        .collect();
    scored.sort();
    scored.dedup();
    let Some(&(best, _)) = scored.first() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .take_while(|(d, _)| *d == best)
        .take(3)
        .map(|(_, t)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::tests::{D1, query};
    use crate::errcode;

    #[test]
    fn only_valid_tags_are_suggested() {
        let tags: Vec<String> = ["v1", "v\u{202e}2", "v3\u{1b}", ".v4", "v-5"]
            .map(String::from)
            .to_vec();
        assert_eq!(suggest("v2", &tags), ["v1"]);
        assert!(is_tag("3.19-alpine_x") && !is_tag("-x") && !is_tag(&"a".repeat(129)));
    }

    #[test]
    fn tag_list_404_is_missing_repository() {
        let errors = errcode::parse(br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}"#);
        let a = tags_list(&query("3.19"), Missing::Tag, 404, b"", &errors, false);
        assert_eq!(a.status, Status::Missing);
        assert_eq!(a.missing, Some(Missing::Repository));
        assert_eq!(a.http_status, Some(404));
        assert_eq!(
            a.finding,
            Finding::RepositoryUnknown {
                host: "reg.example".into(),
                repository: "library/alpine".into()
            }
        );
        assert_eq!(a.errors[0].code, "NAME_UNKNOWN");
        let a = tags_list(
            &query(D1),
            Missing::Digest,
            404,
            b"404 page not found",
            &errcode::NONE,
            false,
        );
        assert_eq!(a.missing, Some(Missing::Repository));
    }

    #[test]
    fn tag_list_suggests_close_tags() {
        let body = br#"{"name":"library/alpine","tags":["3.18","3.19","3.20","edge","latest"]}"#;
        let listed = |reference: &str, link_next| {
            tags_list(
                &query(reference),
                Missing::Tag,
                200,
                body,
                &errcode::NONE,
                link_next,
            )
        };
        let a = listed("3.91", false);
        assert_eq!(a.missing, Some(Missing::Tag));
        assert_eq!(a.reason, Reason::TagNotFound);
        assert_eq!(a.close_tags, ["3.18", "3.19", "3.20"]);
        let tags = |a: &Answer| match a.finding {
            Finding::ReferenceUnknown { tags, .. } => Some(tags),
            _ => None,
        };
        assert_eq!(
            a.finding,
            Finding::ReferenceUnknown {
                host: "reg.example".into(),
                repository: "library/alpine".into(),
                reference: crate::ManifestRef::Tag("3.91".into()),
                tags: TagCount {
                    count: 5,
                    truncated: false
                }
            }
        );
        let a = listed("3.199", false);
        assert_eq!(a.close_tags, ["3.19"]);
        let a = listed("nightly-2024", false);
        assert!(a.close_tags.is_empty());
        assert_eq!(
            tags(&a),
            Some(TagCount {
                count: 5,
                truncated: false
            })
        );
        let a = listed("nightly-2024", true);
        assert_eq!(
            tags(&a),
            Some(TagCount {
                count: 5,
                truncated: true
            })
        );
    }

    #[test]
    fn tag_list_for_digests_and_empty_repositories() {
        let body = br#"{"name":"library/alpine","tags":["a"]}"#;
        let a = tags_list(
            &query(D1),
            Missing::Digest,
            200,
            body,
            &errcode::NONE,
            false,
        );
        assert_eq!(a.missing, Some(Missing::Digest));
        assert_eq!(a.reason, Reason::DigestNotFound);
        assert!(
            matches!(
                &a.finding,
                Finding::ReferenceUnknown {
                    reference: crate::ManifestRef::Digest(d),
                    tags: TagCount { count: 1, truncated: false },
                    ..
                } if d == D1
            ),
            "{:?}",
            a.finding
        );
        let a = tags_list(
            &query("x"),
            Missing::Tag,
            200,
            br#"{"name":"n","tags":null}"#,
            &errcode::NONE,
            false,
        );
        assert!(
            matches!(
                a.finding,
                Finding::ReferenceUnknown {
                    tags: TagCount { count: 0, .. },
                    ..
                }
            ),
            "{:?}",
            a.finding
        );
    }

    #[test]
    fn tag_list_request_failure_keeps_the_reference_kind() {
        let a = tags_list_failed(&query("x"), Missing::Tag, "connection reset by peer");
        assert_eq!(a.missing, Some(Missing::Tag));
        assert!(
            matches!(
                &a.finding,
                Finding::ManifestUnknown { tag_list: TagList::Failed(why), .. }
                    if why == "connection reset by peer"
            ),
            "{:?}",
            a.finding
        );
    }

    #[test]
    fn tag_list_that_cannot_be_read_keeps_the_reference_kind() {
        // A tag list refused (403, 401) or unreadable leaves the repository unknown:
        // the reason is manifest_unknown, not tag_not_found (which says it exists).
        for status in [401, 403] {
            let a = tags_list(
                &query("x"),
                Missing::Tag,
                status,
                b"",
                &errcode::NONE,
                false,
            );
            assert_eq!(a.status, Status::Missing);
            assert_eq!(a.missing, Some(Missing::Tag));
            assert_eq!(a.reason, Reason::ManifestUnknown);
            assert!(
                matches!(
                    a.finding,
                    Finding::ManifestUnknown { tag_list: TagList::Status(s), .. } if s == status
                ),
                "{:?}",
                a.finding
            );
        }
        let a = tags_list(
            &query("x"),
            Missing::Digest,
            403,
            b"",
            &errcode::NONE,
            false,
        );
        assert_eq!(
            (a.missing, a.reason),
            (Some(Missing::Digest), Reason::ManifestUnknown)
        );
        let a = tags_list(
            &query("x"),
            Missing::Tag,
            200,
            b"<html>",
            &errcode::NONE,
            false,
        );
        assert_eq!(a.reason, Reason::ManifestUnknown);
        assert!(
            matches!(
                a.finding,
                Finding::ManifestUnknown {
                    tag_list: TagList::Unreadable,
                    ..
                }
            ),
            "{:?}",
            a.finding
        );
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("3.19", "3.91"), 2);
        assert_eq!(edit_distance("3.19", "3.19.1"), 2);
        assert_eq!(edit_distance("ä", "a"), 1);
    }

    #[test]
    fn suggestions_are_nearest_first_and_bounded() {
        let tags: Vec<String> = ["1.0", "1.1", "1.2", "1.3", "2.0", "latest"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(suggest("1.4", &tags), vec!["1.0", "1.1", "1.2"]);
        // Only the nearest tier is offered.
        assert_eq!(suggest("2.01", &tags), vec!["2.0"]);
        assert_eq!(suggest("lates", &tags), vec!["latest"]);
        assert!(suggest("something-else-entirely", &tags).is_empty());
    }
}
