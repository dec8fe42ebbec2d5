//! The registry error envelope, `{"errors":[{"code","message","detail"}]}` (OCI
//! distribution spec, "Error Codes"; distribution's `errcode` package).
//!
//! Invariant: pure and total. A body that is not JSON, or not this shape, yields no
//! errors; a code this module does not know becomes [`Code::Unknown`] with the raw text
//! kept, never a failure.

use serde::Deserialize;

/// The error codes of the OCI distribution spec, plus the few that distribution adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Code {
    BlobUnknown,
    BlobUploadInvalid,
    BlobUploadUnknown,
    DigestInvalid,
    ManifestBlobUnknown,
    ManifestInvalid,
    ManifestUnknown,
    ManifestUnverified,
    NameInvalid,
    NameUnknown,
    SizeInvalid,
    TagInvalid,
    Unauthorized,
    Denied,
    Unsupported,
    TooManyRequests,
    Unavailable,
    /// `UNKNOWN`, or any code not listed above.
    Unknown,
}

impl Code {
    /// Maps the wire form (case-insensitive) to a code; anything unrecognised is
    /// [`Code::Unknown`].
    pub fn from_wire(code: &str) -> Code {
        match code.to_ascii_uppercase().as_str() {
            "BLOB_UNKNOWN" => Code::BlobUnknown,
            "BLOB_UPLOAD_INVALID" => Code::BlobUploadInvalid,
            "BLOB_UPLOAD_UNKNOWN" => Code::BlobUploadUnknown,
            "DIGEST_INVALID" => Code::DigestInvalid,
            "MANIFEST_BLOB_UNKNOWN" => Code::ManifestBlobUnknown,
            "MANIFEST_INVALID" => Code::ManifestInvalid,
            "MANIFEST_UNKNOWN" => Code::ManifestUnknown,
            "MANIFEST_UNVERIFIED" => Code::ManifestUnverified,
            "NAME_INVALID" => Code::NameInvalid,
            "NAME_UNKNOWN" => Code::NameUnknown,
            "SIZE_INVALID" => Code::SizeInvalid,
            "TAG_INVALID" => Code::TagInvalid,
            "UNAUTHORIZED" => Code::Unauthorized,
            "DENIED" => Code::Denied,
            "UNSUPPORTED" => Code::Unsupported,
            "TOOMANYREQUESTS" => Code::TooManyRequests,
            "UNAVAILABLE" => Code::Unavailable,
            _ => Code::Unknown,
        }
    }
}

/// One entry of the envelope.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RegistryError {
    /// The classified code.
    pub code: Code,
    /// The code as sent (so an unknown one can still be shown), at most 64 characters.
    pub raw_code: String,
    /// The message as sent, at most 200 characters.
    pub message: String,
}

impl RegistryError {
    /// `CODE: message`, or `CODE` alone.
    pub fn summary(&self) -> String {
        if self.message.is_empty() {
            self.raw_code.clone()
        } else {
            format!("{}: {}", self.raw_code, self.message)
        }
    }
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    errors: Vec<WireError>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: serde_json::Value,
    #[serde(default)]
    message: serde_json::Value,
}

fn clip(s: &str, max: usize) -> String {
    let mut out: String = s.chars().filter(|c| !c.is_control()).take(max).collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

fn text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Parses an error body. Anything that is not the envelope yields an empty list.
pub(crate) fn parse(body: &[u8]) -> Vec<RegistryError> {
    let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else {
        return Vec::new();
    };
    envelope
        .errors
        .iter()
        .map(|e| {
            // Clipped first: a code of control characters only is no code at all.
            let raw = clip(&text(&e.code), 64);
            let raw = if raw.is_empty() {
                "UNKNOWN".to_string()
            } else {
                raw
            };
            RegistryError {
                code: Code::from_wire(&raw),
                raw_code: raw,
                message: clip(&text(&e.message), 200),
            }
        })
        .collect()
}

/// Whether any entry has `code`.
pub(crate) fn has(errors: &[RegistryError], code: Code) -> bool {
    errors.iter().any(|e| e.code == code)
}

/// The entries' summaries joined with `; `, or `None` for an empty list.
pub(crate) fn summary(errors: &[RegistryError]) -> Option<String> {
    if errors.is_empty() {
        None
    } else {
        Some(
            errors
                .iter()
                .map(RegistryError::summary)
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_unknown_from_distribution_get() {
        // What distribution 2.8.2 sends for a GET of a missing tag.
        let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"3.99"}}]}"#;
        let got = parse(body);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].code, Code::ManifestUnknown);
        assert_eq!(got[0].summary(), "MANIFEST_UNKNOWN: manifest unknown");
        assert!(has(&got, Code::ManifestUnknown));
        assert!(!has(&got, Code::NameUnknown));
    }

    #[test]
    fn name_unknown_and_several_entries() {
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry","detail":{"name":"nope"}},{"code":"DENIED","message":"no"}]}"#;
        let got = parse(body);
        assert_eq!(got.len(), 2);
        assert!(has(&got, Code::NameUnknown));
        assert_eq!(
            summary(&got).unwrap(),
            "NAME_UNKNOWN: repository name not known to registry; DENIED: no"
        );
    }

    #[test]
    fn unknown_code_is_unknown_and_kept_verbatim() {
        let got = parse(br#"{"errors":[{"code":"QUOTA_EXCEEDED","message":"over"}]}"#);
        assert_eq!(got[0].code, Code::Unknown);
        assert_eq!(got[0].raw_code, "QUOTA_EXCEEDED");
    }

    #[test]
    fn odd_shapes_never_fail() {
        assert!(parse(b"").is_empty());
        assert!(parse(b"404 page not found\n").is_empty());
        assert!(parse(b"{}").is_empty());
        assert!(parse(br#"{"errors":null}"#).is_empty());
        assert!(parse(br#"[1,2]"#).is_empty());
        let got = parse(br#"{"errors":[{}]}"#);
        assert_eq!(got[0].code, Code::Unknown);
        assert_eq!(got[0].summary(), "UNKNOWN");
        let got = parse(br#"{"errors":[{"code":42,"message":{"a":1}}]}"#);
        assert_eq!(got[0].raw_code, "42");
        assert_eq!(got[0].message, r#"{"a":1}"#);
        assert_eq!(summary(&[]), None);
    }

    #[test]
    fn code_of_control_characters_only_reads_as_unknown() {
        // Found by the `error_envelope` fuzz target.
        let got = parse(br#"{"errors":[{"code":"\u0000"},{"code":"\n\t","message":"m"}]}"#);
        assert_eq!(got[0].raw_code, "UNKNOWN");
        assert_eq!(got[0].code, Code::Unknown);
        assert_eq!(got[1].summary(), "UNKNOWN: m");
        assert_eq!(summary(&got).unwrap(), "UNKNOWN; UNKNOWN: m");
    }

    #[test]
    fn lower_case_codes_are_recognised() {
        assert_eq!(Code::from_wire("toomanyrequests"), Code::TooManyRequests);
    }

    #[test]
    fn long_messages_are_clipped_and_controls_dropped() {
        let long = "x".repeat(500);
        let body = format!(r#"{{"errors":[{{"code":"DENIED","message":"{long}\n"}}]}}"#);
        let got = parse(body.as_bytes());
        assert_eq!(got[0].message.chars().count(), 201);
        assert!(!got[0].message.contains('\n'));
    }
}
