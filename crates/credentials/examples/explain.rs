//! Which credentials the kubelet and the node would try for an image, without running
//! any helper.
//!
//! ```sh
//! cargo run -p pullcheck-credentials --example explain -- quay.io/org/app:1 secret.yaml
//! ```
//!
//! The first argument is the image; the rest are pull secret manifests. Node files are
//! found through the usual environment (`DOCKER_CONFIG`, `HOME`, `REGISTRY_AUTH_FILE`,
//! `XDG_RUNTIME_DIR`). Prints the steps as JSON; an empty list means an anonymous pull.

use std::path::Path;
use std::process::ExitCode;

use pullcheck_credentials::{
    CredentialChain, Keyring, NodeCredentials, NodeEnv, NodeOptions, PullSecret,
};
use pullcheck_reference::Reference;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(image) = args.next() else {
        eprintln!("usage: explain IMAGE [PULL_SECRET_FILE...]");
        return ExitCode::from(2);
    };
    let reference = match Reference::parse_normalized(&image) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{image}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut secrets = Vec::new();
    for file in args {
        match PullSecret::read_manifests(Path::new(&file)) {
            Ok(found) => secrets.extend(found),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let node = match NodeCredentials::load(&NodeOptions {
        env: NodeEnv::from_process(),
        ..NodeOptions::default()
    }) {
        Ok(node) => node,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let chain = CredentialChain::new(Keyring::from_pull_secrets(&secrets), node);
    for warning in chain.warnings() {
        eprintln!("warning: {warning}");
    }
    match serde_json::to_string_pretty(&chain.explain_for(&reference)) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
