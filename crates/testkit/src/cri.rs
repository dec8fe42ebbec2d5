//! A CRI client for containerd's CRI plugin: `runtime.v1.ImageService/PullImage` over
//! containerd's unix socket, as the kubelet calls it.
//!
//! The messages are written here with prost's derive, only those `PullImage` needs and
//! with the field numbers of the CRI API (`k8s.io/cri-api` v0.25.0, the version
//! containerd 1.6.20 vendors, `pkg/apis/runtime/v1/api.proto`): `PullImageRequest`
//! (`image` 1, `auth` 2, `sandbox_config` 3), `ImageSpec` (`image` 1, `annotations` 2),
//! `AuthConfig` (`username` 1, `password` 2, `auth` 3, `server_address` 4,
//! `identity_token` 5, `registry_token` 6), `PodSandboxConfig` (`metadata` 1),
//! `PodSandboxMetadata` (`name` 1, `uid` 2, `namespace` 3, `attempt` 4) and
//! `PullImageResponse` (`image_ref` 1). Protobuf ignores the fields a side does not know,
//! so a subset is wire-compatible; no code generation and no `protoc`.
//!
//! What the kubelet sends (`pkg/kubelet/kuberuntime/kuberuntime_image.go` `PullImage`):
//! no `auth` at all when the keyring has no credentials for the image, else one
//! `PullImage` per credential, each an `AuthConfig` with the keyring entry's username and
//! password and no `server_address` (a pull secret's keyring entries carry none,
//! `pkg/credentialprovider/keyring.go`), until one succeeds. [`CriAuth`] is that
//! `AuthConfig`.

use std::collections::HashMap;
use std::path::PathBuf;

use tonic::codegen::http::uri::PathAndQuery;

use crate::Error;

/// `runtime.v1.ImageSpec`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ImageSpec {
    /// The image reference as the kubelet passes it (fully qualified).
    #[prost(string, tag = "1")]
    pub image: String,
    /// Unstructured annotations (unused by containerd's pull).
    #[prost(map = "string, string", tag = "2")]
    pub annotations: HashMap<String, String>,
}

/// `runtime.v1.AuthConfig`: the credentials of one pull. containerd 1.6's
/// `ParseAuth` (`pkg/cri/server/image_pull.go`) uses `username`/`password` first, then
/// `identity_token` (as the password of an empty user), then `auth` (base64
/// `user:password`); a non-empty `server_address` restricts it to that host.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AuthConfig {
    /// User name.
    #[prost(string, tag = "1")]
    pub username: String,
    /// Password.
    #[prost(string, tag = "2")]
    pub password: String,
    /// base64 of `user:password`.
    #[prost(string, tag = "3")]
    pub auth: String,
    /// The only host these credentials are for (the kubelet leaves it empty).
    #[prost(string, tag = "4")]
    pub server_address: String,
    /// An OAuth2 refresh token.
    #[prost(string, tag = "5")]
    pub identity_token: String,
    /// A bearer token for the registry (containerd 1.6 ignores it).
    #[prost(string, tag = "6")]
    pub registry_token: String,
}

/// `runtime.v1.PodSandboxMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PodSandboxMetadata {
    /// The Pod's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The Pod's UID.
    #[prost(string, tag = "2")]
    pub uid: String,
    /// The Pod's namespace.
    #[prost(string, tag = "3")]
    pub namespace: String,
    /// The sandbox attempt.
    #[prost(uint32, tag = "4")]
    pub attempt: u32,
}

/// `runtime.v1.PodSandboxConfig`, only its metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PodSandboxConfig {
    /// Which Pod pulls.
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<PodSandboxMetadata>,
}

/// `runtime.v1.PullImageRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PullImageRequest {
    /// The image.
    #[prost(message, optional, tag = "1")]
    pub image: Option<ImageSpec>,
    /// The credentials; absent when the kubelet has none for the image.
    #[prost(message, optional, tag = "2")]
    pub auth: Option<AuthConfig>,
    /// The Pod that pulls.
    #[prost(message, optional, tag = "3")]
    pub sandbox_config: Option<PodSandboxConfig>,
}

/// `runtime.v1.PullImageResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PullImageResponse {
    /// The image's id (its config digest) in the runtime's store.
    #[prost(string, tag = "1")]
    pub image_ref: String,
}

/// The credentials of one CRI pull, as the kubelet fills `AuthConfig` from a pull
/// secret's keyring entry (no server address).
#[derive(Clone, PartialEq, Eq)]
pub enum CriAuth {
    /// `username` and `password`.
    UserPassword(String, String),
    /// `auth`: base64 of `user:password`, sent as given.
    Auth(String),
}

impl std::fmt::Debug for CriAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CriAuth::UserPassword(user, _) => write!(f, "UserPassword({user:?}, <redacted>)"),
            CriAuth::Auth(_) => f.write_str("Auth(<redacted>)"),
        }
    }
}

impl CriAuth {
    /// The `AuthConfig` message.
    pub fn to_message(&self) -> AuthConfig {
        match self {
            CriAuth::UserPassword(user, password) => AuthConfig {
                username: user.clone(),
                password: password.clone(),
                ..AuthConfig::default()
            },
            CriAuth::Auth(auth) => AuthConfig {
                auth: auth.clone(),
                ..AuthConfig::default()
            },
        }
    }

    /// The secret part, for redacting a runtime's output.
    pub fn secret(&self) -> &str {
        match self {
            CriAuth::UserPassword(_, password) => password,
            CriAuth::Auth(auth) => auth,
        }
    }
}

/// The request the kubelet sends for `image` with `auth`, from the Pod `ns/name`.
pub fn pull_request(image: &str, auth: Option<&CriAuth>) -> PullImageRequest {
    PullImageRequest {
        image: Some(ImageSpec {
            image: image.to_owned(),
            annotations: HashMap::new(),
        }),
        auth: auth.map(CriAuth::to_message),
        sandbox_config: Some(PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: "build".to_owned(),
                uid: "00000000-0000-0000-0000-000000000001".to_owned(),
                namespace: "ci".to_owned(),
                attempt: 0,
            }),
        }),
    }
}

/// The gRPC method path of `PullImage`.
const PULL_IMAGE: &str = "/runtime.v1.ImageService/PullImage";

/// Sends one `PullImage` to the CRI socket at `socket`. The connection's URI is only a
/// name for gRPC's `:authority`: the connector dials the unix socket.
///
/// # Errors
/// [`Error::Unsupported`] when the socket cannot be connected; a refused pull is the
/// `Err(status)` inside `Ok`.
pub async fn pull_image(
    socket: PathBuf,
    request: PullImageRequest,
) -> Result<Result<PullImageResponse, tonic::Status>, Error> {
    let shown = socket.display().to_string();
    let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1")
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|e| Error::Unsupported(format!("connecting the CRI socket {shown}: {e}")))?;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Error::Unsupported(format!("the CRI socket {shown} is not ready: {e}")))?;
    let codec = tonic_prost::ProstCodec::<PullImageRequest, PullImageResponse>::default();
    let answer = grpc
        .unary(
            tonic::Request::new(request),
            PathAndQuery::from_static(PULL_IMAGE),
            codec,
        )
        .await;
    Ok(answer.map(tonic::Response::into_inner))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    #[test]
    fn the_request_encodes_with_the_cri_field_numbers() {
        let auth = CriAuth::UserPassword("u".into(), "p".into());
        let bytes = pull_request("127.0.0.1:5000/a:b", Some(&auth)).encode_to_vec();
        // image (field 1, length-delimited) holds ImageSpec.image (field 1).
        assert_eq!(&bytes[..4], &[0x0a, 20, 0x0a, 18]);
        assert_eq!(&bytes[4..22], b"127.0.0.1:5000/a:b");
        // auth (field 2) holds username (1) "u" and password (2) "p", nothing else.
        assert_eq!(&bytes[22..30], &[0x12, 6, 0x0a, 1, b'u', 0x12, 1, b'p']);
        // sandbox_config (field 3) follows.
        assert_eq!(bytes[30], 0x1a);
        let back = PullImageRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(back.auth.unwrap().server_address, "");
        assert!(pull_request("x", None).auth.is_none());
    }

    #[test]
    fn debug_redacts_the_secret() {
        let shown = format!("{:?}", CriAuth::UserPassword("u".into(), "hunter2".into()));
        assert_eq!(shown, "UserPassword(\"u\", <redacted>)");
        assert_eq!(
            format!("{:?}", CriAuth::Auth("dTpw".into())),
            "Auth(<redacted>)"
        );
    }
}
