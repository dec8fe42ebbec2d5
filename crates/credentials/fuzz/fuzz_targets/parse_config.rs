//! Any bytes into every parser of pullcheck-credentials: Secret manifests (YAML and
//! JSON), `.dockerconfigjson` / `.dockercfg` data, Docker `config.json`, containers
//! `auth.json`, kubelet `CredentialProviderConfig`s, and keyring keys. Each must answer (a value or an error), never panic
//! or run away, and what it answers must hold together.
#![no_main]

use std::collections::BTreeMap;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use pullcheck_credentials::keyring::{keyring_key, urls_match};
use pullcheck_credentials::{
    AuthFile, AuthFileKind, CredentialError, Keyring, ProviderConfig, PullSecret,
};
use pullcheck_reference::Reference;

const IMAGES: [&str; 5] = [
    "nginx",
    "quay.io/org/app:1",
    "localhost:5000/a",
    "[::1]:5000/x/y",
    "ghcr.io/a/b",
];

fn images() -> Vec<Reference> {
    IMAGES
        .iter()
        .filter_map(|i| Reference::parse_normalized(i).ok())
        .collect()
}

fn check_keyring(secrets: &[PullSecret]) {
    let ring = Keyring::from_pull_secrets(secrets);
    // Keys are distinct and in reverse order.
    assert!(ring.keys().windows(2).all(|w| w[0] > w[1]));
    for image in images() {
        for found in ring.lookup(&image) {
            assert!(found.source.source.starts_with("pull secret "));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // Secret data as a client library hands it over: raw bytes of both formats.
    for (secret_type, key) in [
        ("kubernetes.io/dockerconfigjson", ".dockerconfigjson"),
        ("kubernetes.io/dockercfg", ".dockercfg"),
    ] {
        let map = BTreeMap::from([(key.to_string(), data.to_vec())]);
        match PullSecret::from_data("fuzz", "s", Some(secret_type), &map) {
            Ok(secret) => check_keyring(&[secret]),
            Err(e) => assert!(matches!(e, CredentialError::Secret { .. })),
        }
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    match PullSecret::parse_manifests("fuzz.yaml", text) {
        Ok(secrets) => {
            assert!(
                secrets
                    .iter()
                    .all(|s| !s.name().is_empty() && s.origin() == "fuzz.yaml")
            );
            check_keyring(&secrets);
        }
        Err(e) => {
            let message = e.to_string();
            assert!(
                message.starts_with("fuzz.yaml: ") || message.starts_with("pull secret "),
                "{message}"
            );
        }
    }

    for kind in [AuthFileKind::DockerConfig, AuthFileKind::ContainersAuth] {
        match AuthFile::parse(Path::new("/fuzz/config.json"), kind, text) {
            Ok(file) => {
                for image in images() {
                    if let Some(entry) = file.lookup(&image) {
                        assert!(file.entries().iter().any(|e| e.key == entry.key));
                    }
                    if let Some(call) = file.helper_for(&image) {
                        assert!(!call.server.is_empty());
                    }
                }
            }
            Err(e) => assert!(e.to_string().starts_with("/fuzz/config.json: ")),
        }
    }

    match ProviderConfig::parse(Path::new("/fuzz/providers.yaml"), text) {
        Ok(config) => {
            assert!(!config.providers.is_empty());
            for p in &config.providers {
                assert!(!p.match_images.is_empty() && !p.name.contains('/'));
                for image in IMAGES {
                    let _ = p.matching_entry(image);
                }
            }
        }
        Err(e) => assert!(
            matches!(&e, CredentialError::ProviderConfig { errors, .. } if !errors.is_empty()),
            "{e}"
        ),
    }

    // Keys and images: whatever a key normalises to, matching answers without panics.
    if let Ok(key) = keyring_key(text) {
        for image in IMAGES {
            let _ = urls_match(&key, image);
        }
    }
    let _ = urls_match(text, "docker.io/library/nginx");
    let _ = urls_match("*.docker.io", text);
});
