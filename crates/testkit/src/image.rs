//! Building test images and pushing them through the registry API.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use hyper::Method;
use serde_json::json;

use crate::Error;
use crate::http::Http;

/// The kind of manifest a test image is pushed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// `application/vnd.oci.image.manifest.v1+json`, linux/amd64.
    OciManifest,
    /// `application/vnd.oci.image.index.v1+json` over two OCI manifests,
    /// linux/amd64 and linux/arm64.
    OciIndex,
    /// `application/vnd.docker.distribution.manifest.v2+json`, linux/amd64.
    DockerManifest,
    /// `application/vnd.docker.distribution.manifest.list.v2+json` over two
    /// Docker manifests, linux/amd64 and linux/arm64.
    DockerManifestList,
}

impl ImageKind {
    /// All four kinds.
    pub const ALL: [ImageKind; 4] = [
        ImageKind::OciManifest,
        ImageKind::OciIndex,
        ImageKind::DockerManifest,
        ImageKind::DockerManifestList,
    ];

    /// The media type of the top-level manifest (its `Content-Type`).
    pub const fn media_type(self) -> &'static str {
        match self {
            ImageKind::OciManifest => "application/vnd.oci.image.manifest.v1+json",
            ImageKind::OciIndex => "application/vnd.oci.image.index.v1+json",
            ImageKind::DockerManifest => "application/vnd.docker.distribution.manifest.v2+json",
            ImageKind::DockerManifestList => {
                "application/vnd.docker.distribution.manifest.list.v2+json"
            }
        }
    }

    /// The short name used by [`FromStr`] and the binary: `oci`,
    /// `oci-index`, `docker`, `docker-list`.
    pub const fn name(self) -> &'static str {
        match self {
            ImageKind::OciManifest => "oci",
            ImageKind::OciIndex => "oci-index",
            ImageKind::DockerManifest => "docker",
            ImageKind::DockerManifestList => "docker-list",
        }
    }

    /// Whether this kind is an index / manifest list.
    pub const fn is_index(self) -> bool {
        matches!(self, ImageKind::OciIndex | ImageKind::DockerManifestList)
    }

    fn is_oci(self) -> bool {
        matches!(self, ImageKind::OciManifest | ImageKind::OciIndex)
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ImageKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        ImageKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| Error::Invalid {
                what: "image kind",
                value: s.to_string(),
                reason: "expected oci, oci-index, docker or docker-list".into(),
            })
    }
}

/// An image to push: `repository:tag` as `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImageSpec {
    /// Repository name, e.g. `team/app` (lower case, as the registry demands).
    pub repository: String,
    /// Tag, e.g. `v1`.
    pub tag: String,
    /// Manifest kind.
    pub kind: ImageKind,
}

impl ImageSpec {
    /// An image spec.
    pub fn new(repository: impl Into<String>, tag: impl Into<String>, kind: ImageKind) -> Self {
        ImageSpec {
            repository: repository.into(),
            tag: tag.into(),
            kind,
        }
    }
}

/// Parses `repository:tag[,kind]`; the kind defaults to `oci`.
impl FromStr for ImageSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::Invalid {
            what: "image spec",
            value: s.to_string(),
            reason: reason.to_string(),
        };
        let (image, kind) = match s.split_once(',') {
            Some((image, kind)) => (image, kind.parse()?),
            None => (s, ImageKind::OciManifest),
        };
        let (repository, tag) = image
            .rsplit_once(':')
            .filter(|(r, t)| !r.is_empty() && !t.is_empty() && !t.contains('/'))
            .ok_or_else(|| invalid("expected repository:tag[,kind]"))?;
        Ok(ImageSpec::new(repository, tag, kind))
    }
}

impl fmt::Display for ImageSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{},{}", self.repository, self.tag, self.kind)
    }
}

/// An image that was pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedImage {
    /// The registry host, `127.0.0.1:PORT`.
    pub host: String,
    /// Repository name.
    pub repository: String,
    /// Tag.
    pub tag: String,
    /// Manifest kind (its media type is `kind.media_type()`).
    pub kind: ImageKind,
    /// Digest of the top-level manifest, `sha256:...`: what
    /// `Docker-Content-Digest` answers for the tag.
    pub digest: String,
    /// For an index or manifest list: the digests of its child manifests,
    /// amd64 then arm64. Empty otherwise.
    pub children: Vec<String>,
}

impl PushedImage {
    /// `HOST/repository:tag`.
    pub fn reference(&self) -> String {
        format!("{}/{}:{}", self.host, self.repository, self.tag)
    }

    /// `HOST/repository@digest`.
    pub fn digest_reference(&self) -> String {
        format!("{}/{}@{}", self.host, self.repository, self.digest)
    }
}

/// `gzip -n` of an empty tar archive (1024 zero bytes).
const EMPTY_LAYER_GZIP: [u8; 29] = [
    31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 99, 96, 24, 5, 163, 96, 20, 140, 84, 0, 0, 46, 175, 181, 239,
    0, 4, 0, 0,
];

/// Digest of the uncompressed empty tar (its diff id).
const EMPTY_TAR_DIFF_ID: &str =
    "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef";

/// `sha256:<hex>` of `data`.
pub(crate) fn sha256_digest(data: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data);
    let mut out = String::with_capacity(71);
    out.push_str("sha256:");
    for b in d.as_ref() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A descriptor of pushed content.
struct Descriptor {
    media_type: &'static str,
    digest: String,
    size: usize,
}

impl Descriptor {
    fn json(&self) -> serde_json::Value {
        json!({"mediaType": self.media_type, "digest": self.digest, "size": self.size})
    }
}

/// A repository that already holds the shared layer blob, so later pushes in
/// the same batch mount it instead of uploading it again.
pub(crate) type LayerSeed = std::sync::Mutex<Option<String>>;

struct Pusher<'a> {
    http: &'a Http,
    base: &'a str,
    repository: &'a str,
    seed: &'a LayerSeed,
}

impl Pusher<'_> {
    /// Uploads a blob (`POST` then `PUT ?digest=`), or mounts it from
    /// `mount_from` (one `POST ?mount=&from=`) when given.
    async fn blob(
        &self,
        media_type: &'static str,
        data: Bytes,
        mount_from: Option<&str>,
    ) -> Result<Descriptor, Error> {
        let digest = sha256_digest(&data);
        let size = data.len();
        let mut start = format!("{}/v2/{}/blobs/uploads/", self.base, self.repository);
        if let Some(from) = mount_from {
            start.push_str(&format!("?mount={digest}&from={from}"));
        }
        let reply = self
            .http
            .send(
                Method::POST,
                &start,
                &[("content-length", "0")],
                Bytes::new(),
            )
            .await?;
        if reply.status == 201 && mount_from.is_some() {
            return Ok(Descriptor {
                media_type,
                digest,
                size,
            });
        }
        // 202: an upload session (also when a mount was refused).
        if reply.status != 202 {
            return Err(Error::Push {
                step: format!("POST /v2/{}/blobs/uploads/", self.repository),
                status: reply.status,
                body: reply.body_text(),
            });
        }
        let location = reply.header("location").ok_or_else(|| Error::Push {
            step: format!("POST /v2/{}/blobs/uploads/", self.repository),
            status: reply.status,
            body: "no Location header".into(),
        })?;
        let mut url = if location.starts_with('/') {
            format!("{}{location}", self.base)
        } else {
            location.to_string()
        };
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("digest=");
        url.push_str(&digest);
        let len = size.to_string();
        let reply = self
            .http
            .send(
                Method::PUT,
                &url,
                &[
                    ("content-type", "application/octet-stream"),
                    ("content-length", &len),
                ],
                data,
            )
            .await?;
        if reply.status != 201 {
            return Err(Error::Push {
                step: format!("PUT blob {digest} into {}", self.repository),
                status: reply.status,
                body: reply.body_text(),
            });
        }
        Ok(Descriptor {
            media_type,
            digest,
            size,
        })
    }

    async fn manifest(
        &self,
        reference: &str,
        media_type: &'static str,
        body: Vec<u8>,
    ) -> Result<Descriptor, Error> {
        let digest = sha256_digest(&body);
        let size = body.len();
        let url = format!("{}/v2/{}/manifests/{reference}", self.base, self.repository);
        let reply = self
            .http
            .send(
                Method::PUT,
                &url,
                &[("content-type", media_type)],
                Bytes::from(body),
            )
            .await?;
        let step = format!("PUT /v2/{}/manifests/{reference}", self.repository);
        if reply.status != 201 {
            return Err(Error::Push {
                step,
                status: reply.status,
                body: reply.body_text(),
            });
        }
        if let Some(answered) = reply.header("docker-content-digest")
            && answered != digest
        {
            return Err(Error::Push {
                step,
                status: reply.status,
                body: format!("registry computed digest {answered}, expected {digest}"),
            });
        }
        Ok(Descriptor {
            media_type,
            digest,
            size,
        })
    }

    /// Pushes one single-platform image manifest under the tag, or by its
    /// digest when `tag` is `None`.
    async fn image(
        &self,
        oci: bool,
        platform: TestPlatform<'_>,
        label: &str,
        tag: Option<&str>,
    ) -> Result<Descriptor, Error> {
        let (config_type, layer_type, manifest_type) = if oci {
            (
                "application/vnd.oci.image.config.v1+json",
                "application/vnd.oci.image.layer.v1.tar+gzip",
                ImageKind::OciManifest.media_type(),
            )
        } else {
            (
                "application/vnd.docker.container.image.v1+json",
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                ImageKind::DockerManifest.media_type(),
            )
        };
        let mut config = json!({
            "architecture": platform.arch,
            "os": platform.os,
            "config": {"Labels": {"org.pullcheck.testkit.image": label}},
            "rootfs": {"type": "layers", "diff_ids": [EMPTY_TAR_DIFF_ID]},
        });
        if let Some(variant) = platform.variant {
            config["variant"] = json!(variant);
        }
        let config = self
            .blob(config_type, Bytes::from(config.to_string()), None)
            .await?;
        let seed = self.seed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mount_from = seed.as_deref().filter(|s| *s != self.repository);
        let layer = self
            .blob(
                layer_type,
                Bytes::from_static(&EMPTY_LAYER_GZIP),
                mount_from,
            )
            .await?;
        if seed.is_none() {
            *self.seed.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(self.repository.to_string());
        }
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": manifest_type,
            "config": config.json(),
            "layers": [layer.json()],
        });
        let body = manifest.to_string().into_bytes();
        let reference = match tag {
            Some(tag) => tag.to_string(),
            None => sha256_digest(&body),
        };
        self.manifest(&reference, manifest_type, body).await
    }
}

/// Pushes `spec` through the registry at `base` (`http://HOST:PORT`);
/// `host` is the host to report in the result.
pub(crate) async fn push(
    http: &Http,
    base: &str,
    host: &str,
    spec: &ImageSpec,
    seed: &LayerSeed,
) -> Result<PushedImage, Error> {
    push_as(http, base, host, spec, TestPlatform::linux("amd64"), seed).await
}

/// The platform a single-platform test image's config blob names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TestPlatform<'a> {
    pub os: &'a str,
    pub arch: &'a str,
    pub variant: Option<&'a str>,
}

impl<'a> TestPlatform<'a> {
    fn linux(arch: &'a str) -> Self {
        TestPlatform {
            os: "linux",
            arch,
            variant: None,
        }
    }

    /// Parses `os/arch[/variant]`.
    pub(crate) fn parse(s: &'a str) -> Result<Self, Error> {
        let parts: Vec<&str> = s.split('/').collect();
        match parts.as_slice() {
            [os, arch] | [os, arch, _] if !os.is_empty() && !arch.is_empty() => Ok(TestPlatform {
                os,
                arch,
                variant: parts.get(2).copied().filter(|v| !v.is_empty()),
            }),
            _ => Err(Error::Invalid {
                what: "platform",
                value: s.to_string(),
                reason: "expected os/arch[/variant]".into(),
            }),
        }
    }
}

/// [`push`], with `platform` in the config blob of a single-platform image (an index's
/// children are linux/amd64 and linux/arm64/v8).
pub(crate) async fn push_as(
    http: &Http,
    base: &str,
    host: &str,
    spec: &ImageSpec,
    platform: TestPlatform<'_>,
    seed: &LayerSeed,
) -> Result<PushedImage, Error> {
    retrying_lost_blobs(|| push_once(http, base, host, spec, platform, None, seed)).await
}

/// [`push`] of an index kind whose entries are one child per platform of `entries`
/// (each child's config blob and the entry's `platform` naming it, variant included).
pub(crate) async fn push_index_as(
    http: &Http,
    base: &str,
    host: &str,
    spec: &ImageSpec,
    entries: &[TestPlatform<'_>],
    seed: &LayerSeed,
) -> Result<PushedImage, Error> {
    let first = entries
        .first()
        .copied()
        .unwrap_or(TestPlatform::linux("amd64"));
    retrying_lost_blobs(|| push_once(http, base, host, spec, first, Some(entries), seed)).await
}

/// `push()` (one [`push_once`]), again (at most [`PUSH_ATTEMPTS`] times in all) when the
/// registry lost a blob to a concurrent upload of the same digest: distribution's
/// filesystem driver can answer a manifest `PUT` with `MANIFEST_BLOB_UNKNOWN` /
/// `DIGEST_INVALID` (400) while another upload of that blob commits, which `push_all`'s
/// concurrent pushes of the shared empty layer hit about once in twenty runs.
async fn retrying_lost_blobs<F, Fut>(mut push: F) -> Result<PushedImage, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<PushedImage, Error>>,
{
    let mut attempt = 1;
    loop {
        match push().await {
            Err(Error::Push {
                status: 400, body, ..
            }) if attempt < PUSH_ATTEMPTS
                && (body.contains("BLOB_UNKNOWN") || body.contains("DIGEST_INVALID")) =>
            {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// How many times [`retrying_lost_blobs`] tries one image.
const PUSH_ATTEMPTS: u32 = 3;

async fn push_once(
    http: &Http,
    base: &str,
    host: &str,
    spec: &ImageSpec,
    platform: TestPlatform<'_>,
    entries_as: Option<&[TestPlatform<'_>]>,
    seed: &LayerSeed,
) -> Result<PushedImage, Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let label = format!(
        "{}:{} #{n} pid {}",
        spec.repository,
        spec.tag,
        std::process::id()
    );
    let pusher = Pusher {
        http,
        base,
        repository: &spec.repository,
        seed,
    };
    let oci = spec.kind.is_oci();
    let (digest, children) = if spec.kind.is_index() {
        let mut entries = Vec::new();
        let mut children = Vec::new();
        let default = [
            (TestPlatform::linux("amd64"), None),
            (TestPlatform::linux("arm64"), Some("v8")),
        ];
        let listed: Vec<(TestPlatform<'_>, Option<&str>)> = match entries_as {
            Some(list) => list.iter().map(|p| (*p, p.variant)).collect(),
            None => default.to_vec(),
        };
        for (child_platform, variant) in listed {
            let arch = child_platform.arch;
            let image_label = format!("{label} {arch}");
            let child = pusher
                .image(oci, child_platform, &image_label, None)
                .await?;
            let mut platform = json!({"architecture": arch, "os": child_platform.os});
            if let Some(v) = variant {
                platform["variant"] = json!(v);
            }
            let mut entry = child.json();
            entry["platform"] = platform;
            entries.push(entry);
            children.push(child.digest);
        }
        let index_type = spec.kind.media_type();
        let index = json!({
            "schemaVersion": 2,
            "mediaType": index_type,
            "manifests": entries,
        });
        let index = pusher
            .manifest(&spec.tag, index_type, index.to_string().into_bytes())
            .await?;
        (index.digest, children)
    } else {
        let image = pusher.image(oci, platform, &label, Some(&spec.tag)).await?;
        (image.digest, Vec::new())
    };
    Ok(PushedImage {
        host: host.to_string(),
        repository: spec.repository.clone(),
        tag: spec.tag.clone(),
        kind: spec.kind,
        digest,
        children,
    })
}
