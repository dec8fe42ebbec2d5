//! Real distribution registries on loopback, for pullcheck's tests, demos and
//! benchmarks.
//!
//! Each [`Registry`] is a `/usr/bin/docker-registry` process (distribution
//! 2.8) in its own temporary directory, on a free `127.0.0.1` port. It is
//! killed when the value is dropped, and also when the test process dies.
//! Auth modes:
//!
//! - anonymous ([`Registry::anonymous`]);
//! - htpasswd Basic auth ([`Auth::Htpasswd`]);
//! - token auth against a [`TokenServer`] that runs inside the harness
//!   ([`Auth::Token`]);
//! - a pull-through cache of another registry
//!   ([`RegistryBuilder::mirror_of`]).
//!
//! For benchmarks across a simulated network, [`RegistryBuilder::tls`] serves the
//! registry over TLS and [`RegistryBuilder::latency`] puts a [`LatencyProxy`] (a fixed
//! one-way delay each way, counting connections) in front of it and of its token
//! server.
//!
//! [`Registry::push`] builds test images (OCI manifest and index, Docker
//! schema2 manifest and manifest list) and pushes them through the registry
//! API. [`Registry::requests`] returns every request the registry served.
//!
//! [`credential_provider`] writes fake kubelet credential provider plugins (shell
//! scripts that answer, fail, hang, print garbage or need a config `env` value, and
//! record each request) and the `CredentialProviderConfig` naming them.
//!
//! [`kube::ApiServer`] is a stand-in Kubernetes API server (Secrets,
//! ServiceAccounts, `PipelinePodsTemplate`s, 403s and 404s as real `Status`
//! bodies), with [`kube::ApiServer::write_kubeconfig`] for `--kubeconfig`.
//!
//! ```no_run
//! use pullcheck_testkit::{Auth, ImageKind, Registry, Repos, TokenPolicy, User};
//!
//! # async fn demo() -> Result<(), pullcheck_testkit::Error> {
//! let policy = TokenPolicy::new(vec![User::new("alice", "secret").pulling(Repos::only(["team/app"]))]);
//! let registry = Registry::builder().auth(Auth::Token(policy)).start().await?;
//! let image = registry.push("team/app", "v1", ImageKind::OciIndex).await?;
//! println!("{} is {}", image.reference(), image.digest);
//! let token_server = registry.token_server().expect("token mode");
//! assert!(token_server.requests().is_empty());
//! registry.clear_requests().await?;
//! // ... run the code under test against registry.host() ...
//! let served = registry.requests().await?;
//! # let _ = served;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod closed;
pub mod credential_provider;
pub mod cri;
mod error;
mod http;
mod image;
pub mod kube;
mod process;
pub mod proxy;
mod registry;
pub mod runtime;
mod tempdir;
mod token;

pub use closed::ClosedPort;
pub use error::Error;
pub use image::{ImageKind, ImageSpec, PushedImage};
pub use proxy::{LatencyProxy, ProxyOptions, ProxyStats};
pub use registry::{Auth, Registry, RegistryBuilder, RequestRecord, TlsFiles};
pub use tempdir::TempDir;
pub use token::{
    Repos, TOKEN_ISSUER, TOKEN_SERVICE, TokenAuth, TokenFault, TokenPolicy, TokenRequest,
    TokenServer, User,
};

/// The four manifest media types, in the order pullcheck sends them in
/// `Accept`: OCI index, OCI manifest, Docker manifest list, Docker schema2.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    ImageKind::OciIndex.media_type(),
    ImageKind::OciManifest.media_type(),
    ImageKind::DockerManifestList.media_type(),
    ImageKind::DockerManifest.media_type(),
];

/// [`MANIFEST_MEDIA_TYPES`] joined with `, `: a ready `Accept` header value.
pub fn accept_all_manifests() -> String {
    MANIFEST_MEDIA_TYPES.join(", ")
}
