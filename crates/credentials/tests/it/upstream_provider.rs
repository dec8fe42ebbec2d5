//! Credential provider plugins' matching, as tables.
//!
//! Test values come from kubernetes `pkg/credentialprovider/plugin/plugin_test.go`
//! (`Test_Provide`: a provider's `matchImages`, the `auth` key its answer holds, the
//! image asked about) and `pkg/credentialprovider/keyring_test.go` (`TestURLsMatch`,
//! ported in `upstream_keyring.rs`, which `matchImages` shares); the tests are written
//! anew.

use std::path::Path;

use pullcheck_credentials::keyring::urls_match;
use pullcheck_credentials::provider::Provider;
use pullcheck_credentials::{
    Credential, CredentialSource, Keyring, ProviderConfig, ResolvedCredential,
};

fn provider(match_images: &[&str]) -> Provider {
    let config = format!(
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: p\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  defaultCacheDuration: 1m\n  matchImages: [{}]\n",
        match_images
            .iter()
            .map(|m| format!("{m:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    ProviderConfig::parse(Path::new("config.yaml"), &config)
        .expect("valid config")
        .providers
        .remove(0)
}

#[test]
fn provide_table() {
    // Test_Provide: (matchImages, auth key of the answer, image).
    let cases = [
        (
            "test.registry.io",
            "test.registry.io",
            "test.registry.io/foo/bar",
        ),
        (
            "test.registry.io/foo/bar",
            "test.registry.io/foo/bar",
            "test.registry.io/foo/bar",
        ),
        ("test.registry.io", "test.registry.io", "test.registry.io"),
        (
            "*.registry.io:8080",
            "*.registry.io:8080",
            "test.registry.io:8080/foo",
        ),
        (
            "*.*.registry.io",
            "*.*.registry.io",
            "foo.bar.registry.io/foo/bar",
        ),
        ("*.registry.io", "*.registry.io", "test.registry.io"),
    ];
    for (match_image, auth_key, image) in cases {
        let p = provider(&[match_image]);
        assert_eq!(p.matching_entry(image), Some(match_image), "{image}");
        // The answer's key is matched to the image as a keyring key.
        let mut keyring = Keyring::new();
        keyring
            .add_entry(
                auth_key,
                ResolvedCredential {
                    credential: Credential::Basic {
                        username: "user".into(),
                        password: "password".into(),
                    },
                    source: CredentialSource {
                        source: p.describe(),
                        key: auth_key.into(),
                        username: Some("user".into()),
                    },
                },
            )
            .expect("a valid key");
        let found = keyring.lookup_image(image);
        assert_eq!(found.len(), 1, "{auth_key} for {image}");
        assert_eq!(found[0].source.source, "credential provider p");
    }
}

#[test]
fn matching_is_the_keyring_rule() {
    // What the kubelet's rule implies for matchImages (URLsMatchStr): a glob stays in
    // one label, the port must match when given, the path is a string prefix.
    let cases = [
        (
            "*.dkr.ecr.*.amazonaws.com",
            "123.dkr.ecr.us-east-1.amazonaws.com/app",
            true,
        ),
        (
            "*.dkr.ecr.*.amazonaws.com",
            "dkr.ecr.us-east-1.amazonaws.com/app",
            false,
        ),
        (
            "*.dkr.ecr.*.amazonaws.com",
            "123.dkr.ecr.us-east-1.amazonaws.com.cn/app",
            false,
        ),
        ("*.pkg.dev", "europe-docker.pkg.dev/p/r/app", true),
        ("*.pkg.dev", "a.b.pkg.dev/app", false),
        ("*.azurecr.io", "team.azurecr.io/app", true),
        ("registry.io:5000", "registry.io/app", false),
        ("registry.io", "registry.io:5000/app", false),
        ("registry.io/team", "registry.io/teamster/app", true),
        ("registry.io/team", "registry.io/other/app", false),
    ];
    for (pattern, image, expected) in cases {
        assert_eq!(urls_match(pattern, image), expected, "{pattern} ~ {image}");
        assert_eq!(
            provider(&[pattern]).matching_entry(image).is_some(),
            expected,
            "{pattern} ~ {image}"
        );
    }
}
