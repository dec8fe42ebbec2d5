//! The docker config formats as the kubelet reads them from pull secrets
//! (`pkg/credentialprovider`, `DockerConfigJSON`, `DockerConfig`, `DockerConfigEntry`).
//!
//! - `.dockerconfigjson` is an object whose `auths` member maps keys to entries;
//!   `.dockercfg` (legacy) is that map alone.
//! - An entry has only `username`, `password`, `email` and `auth` for the kubelet;
//!   anything else (`identitytoken`, `registrytoken`, …) is ignored.
//! - A non-empty `auth` is base64 of `user:password` and replaces `username` and
//!   `password`. It is decoded padded when it ends in `=` (after trimming white space),
//!   unpadded otherwise; bad base64 or no `:` is an error.
//! - Decoding follows Go's `encoding/json`: case-insensitive field names, `null` for
//!   "absent", a non-string value is an error, unknown members are ignored.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::tree::{self, Node};

/// One entry of a docker config as the kubelet keeps it. `Debug` redacts the password
/// and the key's URL user info.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct KubeletEntry {
    /// The key as written, e.g. `https://index.docker.io/v1/`.
    pub key: String,
    pub username: String,
    pub password: crate::Secret,
}

impl std::fmt::Debug for KubeletEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletEntry")
            .field("key", &pullcheck_mirrors::url::redact_userinfo(&self.key))
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Which of the two secret formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `.dockerconfigjson`: `{"auths": {…}}`.
    ConfigJson,
    /// `.dockercfg`: `{…}`.
    Dockercfg,
}

/// Decodes the bytes of a `.dockerconfigjson` or `.dockercfg` value.
///
/// # Errors
/// A message naming the position (JSON syntax) or the entry and field, never a value.
pub(crate) fn parse(bytes: &[u8], format: Format) -> Result<Vec<KubeletEntry>, String> {
    let root = tree::parse_json(bytes).map_err(|e| tree::json_error_message(&e))?;
    let auths = match format {
        Format::Dockercfg => &root,
        Format::ConfigJson => {
            // `HttpHeaders` is a map of strings in the kubelet's struct: a wrong shape
            // there fails the decode too.
            if let Some(headers) = tree::go_member(&root, "HttpHeaders", "the document")? {
                for (name, value) in tree::go_map(headers, "`HttpHeaders`")? {
                    if !matches!(value, Node::String(_) | Node::Null) {
                        return Err(format!(
                            "`HttpHeaders[\"{name}\"]` is {}, not a string",
                            value.kind()
                        ));
                    }
                }
            }
            match tree::go_member(&root, "auths", "the document")? {
                Some(auths) => auths,
                None => return Ok(Vec::new()),
            }
        }
    };
    let what = match format {
        Format::Dockercfg => "the document",
        Format::ConfigJson => "`auths`",
    };
    let mut entries = Vec::new();
    for (key, value) in tree::go_map(auths, what)? {
        let label = format!(
            "auths[\"{}\"]",
            pullcheck_mirrors::url::redact_userinfo(key)
        );
        let [username, password, _email, auth] =
            tree::go_fields(value, ["username", "password", "email", "auth"], &label)?;
        let (mut username, mut password) =
            (username.unwrap_or_default(), password.unwrap_or_default());
        if let Some(auth) = auth.filter(|a| !a.is_empty()) {
            (username, password) = decode_auth(&auth).map_err(|why| format!("{label}: {why}"))?;
        }
        entries.push(KubeletEntry {
            key: key.to_string(),
            username,
            password: password.into(),
        });
    }
    Ok(entries)
}

/// Go's `StdEncoding` (padding required) and `RawStdEncoding` (no padding), both
/// lenient about non-zero trailing bits as Go is.
const PADDED: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);
const UNPADDED: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// Decodes base64 as the kubelet decodes `auth`: with padding when the trimmed text
/// ends in `=`, without otherwise. Like Go, `\r` and `\n` anywhere are skipped.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    if text.trim().ends_with('=') {
        PADDED.decode(cleaned).ok()
    } else {
        UNPADDED.decode(cleaned).ok()
    }
}

/// Decodes base64 accepting both padded and unpadded input (for Secret `data`).
pub(crate) fn decode_base64_any(text: &str) -> Option<Vec<u8>> {
    let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    if cleaned.ends_with('=') {
        PADDED.decode(cleaned).ok()
    } else {
        UNPADDED.decode(cleaned).ok()
    }
}

/// Decodes an `auth` value into user name and password: base64 (padded or not) of
/// `user:password`, split at the first `:`.
///
/// # Errors
/// A message saying what is wrong, never containing the value.
pub(crate) fn decode_auth(auth: &str) -> Result<(String, String), String> {
    let bytes = decode_base64(auth).ok_or_else(|| "`auth` is not valid base64".to_string())?;
    let text =
        String::from_utf8(bytes).map_err(|_| "`auth` does not decode to UTF-8".to_string())?;
    let (user, password) = text
        .split_once(':')
        .ok_or_else(|| "`auth` does not decode to `user:password`".to_string())?;
    Ok((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_auth_as_the_kubelet() {
        // Values from kubernetes pkg/credentialprovider/config_test.go
        // (TestDecodeDockerConfigFieldAuth).
        assert_eq!(
            decode_auth("Zm9vOmJhcg==").unwrap(),
            ("foo".into(), "bar".into())
        );
        assert_eq!(
            decode_auth("Zm9vOmJhcg").unwrap(),
            ("foo".into(), "bar".into())
        );
        assert!(
            decode_auth("cGFudHM=")
                .unwrap_err()
                .contains("user:password")
        );
        assert!(decode_auth("pants").unwrap_err().contains("base64"));
        // Padding is required exactly when the value ends in `=`.
        assert!(decode_auth("Zm9vOmJhcg=").is_err());
        // Line breaks are skipped, as Go's decoder does.
        assert_eq!(
            decode_auth("Zm9vOm\nJhcg==").unwrap(),
            ("foo".into(), "bar".into())
        );
        // Only the first colon splits.
        assert_eq!(decode_auth("YTpiOmM=").unwrap(), ("a".into(), "b:c".into()));
    }

    #[test]
    fn entry_decoding_as_the_kubelet() {
        // Cases from kubernetes pkg/credentialprovider/config_test.go
        // (TestDockerConfigEntryJSONDecode), wrapped in a `.dockercfg` map.
        let one = |entry: &str| parse(format!(r#"{{"k": {entry}}}"#).as_bytes(), Format::Dockercfg);
        let e =
            one(r#"{"username": "foo", "password": "bar", "email": "foo@example.com"}"#).unwrap();
        assert_eq!(
            (e[0].username.as_str(), e[0].password.expose()),
            ("foo", "bar")
        );
        let e = one(r#"{"auth": "Zm9vOmJhcg==", "email": "foo@example.com"}"#).unwrap();
        assert_eq!(
            (e[0].username.as_str(), e[0].password.expose()),
            ("foo", "bar")
        );
        let e = one(
            r#"{"username": "foo", "password": "bar", "auth": "cGluZzpwb25n", "email": "foo@example.com"}"#,
        )
        .unwrap();
        assert_eq!(
            (e[0].username.as_str(), e[0].password.expose()),
            ("ping", "pong")
        );
        assert!(one(r#"{"auth": "pants", "email": "foo@example.com"}"#).is_err());
        assert!(one(r#"{"email": false}"#).is_err());
        // Go matches field names case-insensitively and ignores the rest.
        let e = one(r#"{"Username": "u", "PASSWORD": "p", "identitytoken": "t"}"#).unwrap();
        assert_eq!((e[0].username.as_str(), e[0].password.expose()), ("u", "p"));
        // A `null` entry is an empty one.
        let e = one("null").unwrap();
        assert_eq!((e[0].username.as_str(), e[0].password.expose()), ("", ""));
    }

    #[test]
    fn config_json_shapes() {
        assert!(parse(b"{}", Format::ConfigJson).unwrap().is_empty());
        assert!(parse(b"null", Format::ConfigJson).unwrap().is_empty());
        assert!(
            parse(br#"{"auths": null}"#, Format::ConfigJson)
                .unwrap()
                .is_empty()
        );
        assert!(parse(b"[]", Format::ConfigJson).is_err());
        assert!(parse(br#"{"auths": []}"#, Format::ConfigJson).is_err());
        assert!(parse(br#"{"HttpHeaders": {"a": 1}}"#, Format::ConfigJson).is_err());
        let e = parse(
            br#"{"Auths": {"a.io": {"auth": "Zm9vOmJhcg"}}, "HttpHeaders": {"X": "y"}}"#,
            Format::ConfigJson,
        )
        .unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].key, "a.io");
    }
}
