//! Platforms in an image index or manifest list (OCI image spec, "Image Index";
//! Docker "Manifest List"): reading the `manifests[].platform` entries, matching one
//! against the platform asked for, and the platform check of a present index
//! ([`check`]: still present, [`Missing::Platform`], or unreadable).
//!
//! Invariant: pure and total; a body that is not an index yields an error message, never
//! a panic.

use serde::Deserialize;

use crate::classify::{Query, Ref};
use crate::errcode::{self, Envelope};
use crate::finding::{Finding, PlatformSource};
use crate::{Answer, Missing, Platform, Reason, Status};

/// The media types whose manifests list other manifests by platform.
pub(crate) const INDEX_TYPES: [&str; 2] = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// Whether `media_type` (without parameters) is an index or a manifest list.
pub(crate) fn is_index(media_type: &str) -> bool {
    INDEX_TYPES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(media_type.trim()))
}

#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Option<Vec<Entry>>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    platform: Option<WirePlatform>,
}

#[derive(Deserialize)]
struct WirePlatform {
    #[serde(default)]
    os: String,
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

/// The platforms an index lists, in order, without duplicates. Entries without a
/// platform, and BuildKit's attestation entries (`unknown/unknown`), are left out.
///
/// # Errors
/// A reason when the body is not JSON with a `manifests` list.
pub(crate) fn parse_index(body: &[u8]) -> Result<Vec<Platform>, String> {
    let index: Index = serde_json::from_slice(body)
        .map_err(|e| format!("the index is not the expected JSON ({e})"))?;
    let entries = index
        .manifests
        .ok_or_else(|| "the index has no manifests list".to_string())?;
    let mut out: Vec<Platform> = Vec::new();
    for entry in entries {
        let Some(p) = entry.platform else { continue };
        if p.os.is_empty() || p.architecture.is_empty() {
            continue;
        }
        if p.os == "unknown" && p.architecture == "unknown" {
            continue;
        }
        let platform = Platform {
            os: p.os,
            arch: p.architecture,
            variant: p.variant.filter(|v| !v.is_empty()),
        };
        if !out.contains(&platform) {
            out.push(platform);
        }
    }
    Ok(out)
}

/// `(arch, variant)` in canonical form, as containerd normalises them: `x86_64` is
/// `amd64`, `aarch64` is `arm64` (whose variant `v8` is the default), `armhf` is
/// `arm/v7`, `armel` is `arm/v6`, `arm` without a variant is `arm/v7`.
fn normalise(arch: &str, variant: Option<&str>) -> (String, Option<String>) {
    let arch = arch.to_ascii_lowercase();
    let variant = variant.map(str::to_ascii_lowercase);
    match arch.as_str() {
        "x86_64" | "x86-64" => ("amd64".into(), variant),
        "i386" | "i686" => ("386".into(), variant),
        "aarch64" | "arm64" => {
            let variant = match variant.as_deref() {
                Some("8" | "v8") | None => None,
                Some(_) => variant,
            };
            ("arm64".into(), variant)
        }
        "armhf" => ("arm".into(), Some("v7".into())),
        "armel" => ("arm".into(), Some("v6".into())),
        "arm" => {
            let variant = match variant.as_deref() {
                None | Some("7" | "v7") => Some("v7".to_string()),
                Some(v) if v.len() == 1 => Some(format!("v{v}")),
                Some(_) => variant,
            };
            ("arm".into(), variant)
        }
        _ => (arch, variant),
    }
}

/// Whether the index entry `have` serves `want`: same OS (ignoring case), same
/// architecture after normalisation, and the same variant when `want` names one (an
/// entry without a variant serves the architecture's default variant).
pub(crate) fn matches(want: &Platform, have: &Platform) -> bool {
    if !want.os.eq_ignore_ascii_case(&have.os) {
        return false;
    }
    let (want_arch, want_variant) = normalise(&want.arch, want.variant.as_deref());
    let (have_arch, have_variant) = normalise(&have.arch, have.variant.as_deref());
    if want_arch != have_arch {
        return false;
    }
    match want.variant {
        None => true,
        Some(_) => want_variant == have_variant,
    }
}

/// What the `GET` of an index for the platform check brought.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IndexReply<'a> {
    /// 2xx and the (bounded) body; `truncated` when it was longer than the limit.
    Body { bytes: &'a [u8], truncated: bool },
    /// A final non-2xx status, with its error envelope.
    Status { status: u16, errors: &'a Envelope },
    /// No answer, or the body could not be read: the reason.
    Failed(&'a str),
}

/// The platform check of a present index (pure): `present` stays present when the index
/// lists `want`; otherwise [`Status::Missing`] with [`Missing::Platform`] and the
/// platforms present, or [`Status::Unreachable`] when the index could not be read.
pub(crate) fn check(
    query: &Query<'_>,
    present: Answer,
    want: &Platform,
    reply: IndexReply<'_>,
) -> Answer {
    let Query {
        host,
        repository,
        reference,
        ..
    } = query;
    let manifest = manifest_name(repository, reference);
    let unreadable = |why: String| Answer {
        status: Status::Unreachable,
        missing: None,
        reason: Reason::NotARegistry,
        finding: Finding::PlatformUnchecked {
            host: host.to_string(),
            manifest: manifest.clone(),
            wanted: want.clone(),
            source: PlatformSource::Index,
            why,
        },
        ..present.clone()
    };
    let bytes = match body_of(reply, "index") {
        Ok(bytes) => bytes,
        Err((why, status)) => {
            let mut a = unreadable(why);
            a.http_status = status.or(a.http_status);
            return a;
        }
    };
    let platforms = match parse_index(bytes) {
        Ok(p) => p,
        Err(why) => return unreadable(why),
    };
    match platforms.iter().find(|have| matches(want, have)) {
        Some(have) => Answer {
            finding: with_platform(present.finding, want, have, PlatformSource::Index),
            ..present
        },
        None => Answer {
            status: Status::Missing,
            missing: Some(Missing::Platform),
            reason: Reason::PlatformNotFound,
            finding: Finding::PlatformNotListed {
                host: host.to_string(),
                manifest,
                wanted: want.clone(),
            },
            platforms,
            ..present
        },
    }
}

/// `repository:tag` or `repository@digest`.
fn manifest_name(repository: &str, reference: &Ref<'_>) -> String {
    match reference {
        Ref::Digest(d) => format!("{repository}@{d}"),
        Ref::Tag(t) => format!("{repository}:{t}"),
    }
}

/// A present answer's finding with the platform that matched.
fn with_platform(
    finding: Finding,
    want: &Platform,
    have: &Platform,
    source: PlatformSource,
) -> Finding {
    match finding {
        Finding::Served {
            method,
            status,
            other_algorithm,
            ..
        } => Finding::Served {
            method,
            status,
            other_algorithm,
            platform: Some((want.clone(), have.clone(), source)),
        },
        other => other,
    }
}

/// A reply's body, or why it cannot be used (`what` names the object: `index`,
/// `manifest`, `config blob`) and the HTTP status that said so.
pub(crate) fn body_of<'a>(
    reply: IndexReply<'a>,
    what: &str,
) -> Result<&'a [u8], (String, Option<u16>)> {
    match reply {
        IndexReply::Body {
            truncated: true, ..
        } => Err((
            format!(
                "the {what} is larger than {} KiB",
                crate::transport::MANIFEST_BODY_LIMIT / 1024
            ),
            None,
        )),
        IndexReply::Body { bytes, .. } => Ok(bytes),
        IndexReply::Status { status, errors } => Err((
            match errcode::summary(errors) {
                Some(summary) => format!("GET of the {what} answered HTTP {status} ({summary})"),
                None => format!("GET of the {what} answered HTTP {status}"),
            },
            Some(status),
        )),
        IndexReply::Failed(why) => Err((format!("GET of the {what} failed: {why}"), None)),
    }
}

/// The media types of a single-platform image manifest (OCI image manifest, Docker
/// schema 2), whose platform is in the config blob.
pub(crate) const IMAGE_TYPES: [&str; 2] = [
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// Whether `media_type` (without parameters) is a single-platform image manifest.
pub(crate) fn is_image(media_type: &str) -> bool {
    IMAGE_TYPES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(media_type.trim()))
}

#[derive(Deserialize)]
struct ImageManifest {
    #[serde(default)]
    config: Option<Descriptor>,
}

#[derive(Deserialize)]
struct Descriptor {
    #[serde(default)]
    digest: String,
}

/// Whether `s` has the shape of an OCI digest (`algorithm:encoded`, image spec
/// "Digests"), so that it is safe as a URL path segment.
fn is_digest(s: &str) -> bool {
    let Some((algorithm, encoded)) = s.split_once(':') else {
        return false;
    };
    !algorithm.is_empty()
        && !encoded.is_empty()
        && algorithm
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+._-".contains(&b))
        && encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"=_-".contains(&b))
}

/// The config blob's digest in an image manifest body (`config.digest`).
///
/// # Errors
/// A reason when the body is not JSON with a config descriptor holding a digest.
pub(crate) fn config_digest(manifest: &[u8]) -> Result<String, String> {
    let m: ImageManifest = serde_json::from_slice(manifest)
        .map_err(|e| format!("the manifest is not the expected JSON ({e})"))?;
    let digest = m
        .config
        .map(|c| c.digest)
        .ok_or_else(|| "the manifest has no config descriptor".to_string())?;
    if !is_digest(&digest) {
        return Err("the manifest's config descriptor has no valid digest".to_string());
    }
    Ok(digest)
}

/// The platform an image config blob names (`os`, `architecture`, `variant`; OCI image
/// spec "Image Configuration").
///
/// # Errors
/// A reason when the body is not JSON, or names no `os` or `architecture`.
pub(crate) fn parse_config(config: &[u8]) -> Result<Platform, String> {
    let p: WirePlatform = serde_json::from_slice(config)
        .map_err(|e| format!("the config blob is not the expected JSON ({e})"))?;
    if p.os.is_empty() || p.architecture.is_empty() {
        return Err("the config blob names no os or architecture".to_string());
    }
    Ok(Platform {
        os: p.os,
        arch: p.architecture,
        variant: p.variant.filter(|v| !v.is_empty()),
    })
}

/// The platform check of a present single-platform manifest (pure): `present` stays
/// present when its config blob's platform serves `want` (as containerd matches it);
/// otherwise [`Status::Missing`] with [`Missing::Platform`], naming both platforms, or
/// [`Status::Unreachable`] when the manifest or the config blob could not be read
/// (`config` is the blob's body or why it is missing, with the HTTP status that said so).
pub(crate) fn check_config(
    query: &Query<'_>,
    present: Answer,
    want: &Platform,
    config: Result<&[u8], (String, Option<u16>)>,
) -> Answer {
    let Query {
        host,
        repository,
        reference,
        ..
    } = query;
    let manifest = manifest_name(repository, reference);
    let unreadable = |why: String, status: Option<u16>| Answer {
        status: Status::Unreachable,
        missing: None,
        reason: Reason::NotARegistry,
        finding: Finding::PlatformUnchecked {
            host: host.to_string(),
            manifest: manifest.clone(),
            wanted: want.clone(),
            source: PlatformSource::Config,
            why,
        },
        http_status: status.or(present.http_status),
        ..present.clone()
    };
    let have = match config.and_then(|bytes| parse_config(bytes).map_err(|why| (why, None))) {
        Ok(have) => have,
        Err((why, status)) => return unreadable(why, status),
    };
    if matches(want, &have) {
        Answer {
            finding: with_platform(present.finding, want, &have, PlatformSource::Config),
            ..present
        }
    } else {
        Answer {
            status: Status::Missing,
            missing: Some(Missing::Platform),
            reason: Reason::PlatformMismatch,
            finding: Finding::PlatformMismatch {
                host: host.to_string(),
                manifest,
                wanted: want.clone(),
            },
            platforms: vec![have],
            ..present
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Status;
    use crate::classify::tests::{D1, done, query, reply};
    use crate::classify::{Method, Reply, manifest};

    fn p(s: &str) -> Platform {
        Platform::parse(s).unwrap()
    }

    #[test]
    fn platform_strings() {
        assert_eq!(
            p("linux/arm/v7"),
            Platform {
                os: "linux".into(),
                arch: "arm".into(),
                variant: Some("v7".into())
            }
        );
        assert_eq!(p("linux/amd64").to_string(), "linux/amd64");
        assert_eq!(p("linux/arm64/v8").to_string(), "linux/arm64/v8");
        for bad in ["", "linux", "linux/", "/amd64", "a/b/c/d", "linux//v7"] {
            assert!(Platform::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn index_platforms_in_order_without_attestations() {
        // The shape of an OCI index with a BuildKit attestation entry.
        let body = br#"{
          "schemaVersion": 2,
          "mediaType": "application/vnd.oci.image.index.v1+json",
          "manifests": [
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:a","size":1,
             "platform":{"architecture":"amd64","os":"linux"}},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:b","size":1,
             "platform":{"architecture":"arm64","os":"linux","variant":"v8"}},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:c","size":1,
             "platform":{"architecture":"unknown","os":"unknown"}},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:d","size":1}
          ]
        }"#;
        let got = parse_index(body).unwrap();
        assert_eq!(got, vec![p("linux/amd64"), p("linux/arm64/v8")]);
    }

    #[test]
    fn bodies_that_are_not_indexes() {
        assert!(parse_index(b"").is_err());
        assert!(parse_index(b"<html>").is_err());
        assert!(parse_index(br#"{"layers":[]}"#).is_err());
        assert!(parse_index(br#"{"manifests":[{"platform":"linux"}]}"#).is_err());
        assert_eq!(parse_index(br#"{"manifests":[]}"#).unwrap(), vec![]);
    }

    #[test]
    fn matching_normalises_like_containerd() {
        assert!(matches(&p("linux/amd64"), &p("linux/amd64")));
        assert!(matches(&p("Linux/x86_64"), &p("linux/amd64")));
        assert!(!matches(&p("windows/amd64"), &p("linux/amd64")));
        assert!(!matches(&p("linux/arm64"), &p("linux/amd64")));
        // arm64: no variant and v8 are the same.
        assert!(matches(&p("linux/arm64"), &p("linux/arm64/v8")));
        assert!(matches(&p("linux/arm64/v8"), &p("linux/arm64")));
        assert!(matches(&p("linux/aarch64"), &p("linux/arm64")));
        assert!(!matches(&p("linux/arm64/v9"), &p("linux/arm64")));
        // arm: v7 by default; a wanted variant must be there.
        assert!(matches(&p("linux/arm/v7"), &p("linux/arm")));
        assert!(!matches(&p("linux/arm/v6"), &p("linux/arm/v7")));
        assert!(matches(&p("linux/arm"), &p("linux/arm/v6")));
        assert!(matches(&p("linux/armhf"), &p("linux/arm/v7")));
    }

    #[test]
    fn index_media_types() {
        assert!(is_index("application/vnd.oci.image.index.v1+json"));
        assert!(is_index(
            "application/vnd.docker.distribution.manifest.list.v2+json"
        ));
        assert!(!is_index("application/vnd.oci.image.manifest.v1+json"));
        assert!(!is_index(""));
    }

    fn present_index() -> Answer {
        done(manifest(
            &query("3.19"),
            &Reply {
                digest: Some(D1),
                content_type: Some("application/vnd.oci.image.index.v1+json"),
                ..reply(Method::Head, 200)
            },
        ))
    }

    const INDEX: &[u8] = br#"{"manifests":[
        {"platform":{"os":"linux","architecture":"amd64"}},
        {"platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}"#;

    #[test]
    fn platform_listed_keeps_the_image_present() {
        let want = Platform::parse("linux/arm64").unwrap();
        let body = IndexReply::Body {
            bytes: INDEX,
            truncated: false,
        };
        let a = check(&query("3.19"), present_index(), &want, body);
        assert_eq!(a.status, Status::Present);
        assert_eq!(a.digest.as_deref(), Some(D1));
        assert!(
            matches!(
                &a.finding,
                Finding::Served { platform: Some((w, have, PlatformSource::Index)), .. }
                    if *w == want && *have == p("linux/arm64/v8")
            ),
            "{:?}",
            a.finding
        );
    }

    #[test]
    fn platform_not_listed_is_missing_naming_those_present() {
        let want = Platform::parse("linux/s390x").unwrap();
        let body = IndexReply::Body {
            bytes: INDEX,
            truncated: false,
        };
        let a = check(&query("3.19"), present_index(), &want, body);
        assert_eq!(
            (a.status, a.missing),
            (Status::Missing, Some(Missing::Platform))
        );
        assert_eq!(
            a.finding,
            Finding::PlatformNotListed {
                host: "reg.example".into(),
                manifest: "library/alpine:3.19".into(),
                wanted: want.clone()
            }
        );
        assert_eq!(a.platforms, [p("linux/amd64"), p("linux/arm64/v8")]);
        let a = check(
            &query(D1),
            present_index(),
            &want,
            IndexReply::Body {
                bytes: br#"{"manifests":[]}"#,
                truncated: false,
            },
        );
        assert!(
            matches!(&a.finding, Finding::PlatformNotListed { manifest, .. }
                if *manifest == format!("library/alpine@{D1}")),
            "{:?}",
            a.finding
        );
        assert!(a.platforms.is_empty());
    }

    #[test]
    fn config_digests_and_platforms() {
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{D1}","size":2}},"layers":[]}}"#
        );
        assert_eq!(config_digest(manifest.as_bytes()).unwrap(), D1);
        assert!(config_digest(b"<html>").is_err());
        assert!(config_digest(br#"{"layers":[]}"#).is_err());
        // Not a digest: never put into a URL.
        assert!(config_digest(br#"{"config":{"digest":"../../etc"}}"#).is_err());
        assert!(config_digest(br#"{"config":{"digest":"sha256:a/b"}}"#).is_err());

        assert_eq!(
            parse_config(br#"{"os":"linux","architecture":"arm","variant":"v7","rootfs":{}}"#)
                .unwrap(),
            p("linux/arm/v7")
        );
        assert_eq!(
            parse_config(br#"{"os":"linux","architecture":"amd64","variant":""}"#).unwrap(),
            p("linux/amd64")
        );
        assert!(parse_config(br#"{"architecture":"amd64"}"#).is_err());
        assert!(parse_config(b"[]").is_err());
        assert!(is_image("application/vnd.oci.image.manifest.v1+json"));
        assert!(is_image(
            "application/vnd.docker.distribution.manifest.v2+json"
        ));
        assert!(!is_image("application/vnd.oci.image.index.v1+json"));
    }

    fn present_image() -> Answer {
        done(manifest(
            &query("3.19"),
            &Reply {
                digest: Some(D1),
                content_type: Some("application/vnd.oci.image.manifest.v1+json"),
                ..reply(Method::Head, 200)
            },
        ))
    }

    #[test]
    fn single_platform_images_by_their_config() {
        let want = p("linux/arm64");
        let amd64: &[u8] = br#"{"os":"linux","architecture":"amd64"}"#;
        let a = check_config(&query("3.19"), present_image(), &want, Ok(amd64));
        assert_eq!(
            (a.status, a.missing),
            (Status::Missing, Some(Missing::Platform))
        );
        assert_eq!(
            a.finding,
            Finding::PlatformMismatch {
                host: "reg.example".into(),
                manifest: "library/alpine:3.19".into(),
                wanted: want.clone()
            }
        );
        assert_eq!(a.platforms, [p("linux/amd64")]);
        assert_eq!(a.digest.as_deref(), Some(D1));
        let arm64: &[u8] = br#"{"os":"linux","architecture":"arm64","variant":"v8"}"#;
        let a = check_config(&query("3.19"), present_image(), &want, Ok(arm64));
        assert_eq!(a.status, Status::Present);
        assert!(
            matches!(
                &a.finding,
                Finding::Served { platform: Some((w, have, PlatformSource::Config)), .. }
                    if *w == want && *have == p("linux/arm64/v8")
            ),
            "{:?}",
            a.finding
        );
        // Unreadable: unreachable, never present or missing.
        for (config, needle, status) in [
            (
                Ok(&b"{"[..]),
                "the config blob is not the expected JSON",
                None,
            ),
            (
                Err((
                    "GET of the config blob answered HTTP 404".to_string(),
                    Some(404),
                )),
                "GET of the config blob answered HTTP 404",
                Some(404),
            ),
        ] {
            let a = check_config(&query("3.19"), present_image(), &want, config);
            assert_eq!((a.status, a.missing), (Status::Unreachable, None));
            assert!(
                matches!(
                    &a.finding,
                    Finding::PlatformUnchecked { manifest, wanted, source: PlatformSource::Config, why, .. }
                        if manifest == "library/alpine:3.19" && *wanted == want && why.contains(needle)
                ),
                "{:?}",
                a.finding
            );
            if let Some(status) = status {
                assert_eq!(a.http_status, Some(status));
            }
        }
    }

    #[test]
    fn unreadable_index_is_unreachable_not_missing() {
        let want = Platform::parse("linux/amd64").unwrap();
        for (reply, needle) in [
            (
                IndexReply::Body {
                    bytes: b"<html>",
                    truncated: false,
                },
                "the index is not the expected JSON",
            ),
            (
                IndexReply::Body {
                    bytes: b"{",
                    truncated: true,
                },
                "larger than 4096 KiB",
            ),
            (
                IndexReply::Status {
                    status: 500,
                    errors: &errcode::NONE,
                },
                "GET of the index answered HTTP 500",
            ),
            (
                IndexReply::Failed("connection reset by peer"),
                "GET of the index failed: connection reset by peer",
            ),
        ] {
            let a = check(&query("3.19"), present_index(), &want, reply);
            assert_eq!(a.status, Status::Unreachable);
            assert_eq!(a.missing, None);
            assert!(
                matches!(
                    &a.finding,
                    Finding::PlatformUnchecked { host, wanted, source: PlatformSource::Index, why, .. }
                        if host == "reg.example" && *wanted == want && why.contains(needle)
                ),
                "{:?}",
                a.finding
            );
        }
    }
}
