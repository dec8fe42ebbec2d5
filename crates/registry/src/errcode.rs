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

/// At most this many entries of an envelope are kept ([`Envelope::entries`]); the
/// rest are only counted ([`Envelope::omitted`]). A registry may send thousands
/// (the error body is read up to 64 KiB); none says more than a few things at once.
pub(crate) const KEPT_ENTRIES: usize = 10;

/// At most this many entries are worded by [`summary`], then `+k more`.
pub(crate) const SUMMARY_ENTRIES: usize = 3;

/// The error envelope of one answer: its first [`KEPT_ENTRIES`] entries, in order, and
/// how many more it had.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Envelope {
    /// The first entries, at most [`KEPT_ENTRIES`].
    pub entries: Vec<RegistryError>,
    /// The entries past [`KEPT_ENTRIES`], not kept.
    pub omitted: usize,
}

/// No envelope (a `HEAD`, a 2xx, a body that is not one).
pub(crate) static NONE: Envelope = Envelope {
    entries: Vec::new(),
    omitted: 0,
};

impl Envelope {
    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[derive(Deserialize)]
struct WireEnvelope {
    #[serde(default)]
    errors: Bounded,
}

/// The `errors` array: the first [`KEPT_ENTRIES`] entries, the rest counted and
/// skipped without being held.
#[derive(Default)]
struct Bounded {
    entries: Vec<WireError>,
    omitted: usize,
}

impl<'de> Deserialize<'de> for Bounded {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bounded, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Bounded;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of errors")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Bounded, A::Error> {
                let mut out = Bounded::default();
                while out.entries.len() < KEPT_ENTRIES {
                    match seq.next_element::<WireError>()? {
                        Some(e) => out.entries.push(e),
                        None => return Ok(out),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    out.omitted += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Visit)
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: serde_json::Value,
    #[serde(default)]
    message: serde_json::Value,
}

/// Whether `c` changes how the text around it reads without showing itself: the
/// bidirectional formatting characters (Unicode UAX #9, "Explicit Directional
/// Embeddings/Overrides/Isolates" U+202A–U+202E and U+2066–U+2069, and the marks
/// U+200E, U+200F, U+061C), which can make a message read otherwise than it is
/// ("Trojan Source", CVE-2021-42574), and the zero-width characters (U+200B–U+200D,
/// U+2060, U+FEFF).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{061C}'
            | '\u{200B}'..='\u{200D}'
            | '\u{2060}'
            | '\u{FEFF}'
    )
}

/// At most `max` characters of `s`, for a message shown on one line: invisible
/// characters ([`is_invisible`]) dropped, each run of control characters (`\n`, `\t`,
/// C1, … and the line and paragraph separators U+2028, U+2029) one space (none at the
/// ends, none beside a space), and `…` appended only when text was cut for length.
fn clip(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut kept = 0;
    let mut gap = false;
    for c in s.chars() {
        if is_invisible(c) {
            continue;
        }
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            gap = true;
            continue;
        }
        let space = gap && kept > 0 && !c.is_whitespace() && !out.ends_with(char::is_whitespace);
        gap = false;
        if kept + usize::from(space) + 1 > max {
            out.push('…');
            return out;
        }
        if space {
            out.push(' ');
            kept += 1;
        }
        out.push(c);
        kept += 1;
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

/// Parses an error body. Anything that is not the envelope yields an empty one; past
/// [`KEPT_ENTRIES`] entries are counted, not kept.
pub(crate) fn parse(body: &[u8]) -> Envelope {
    let Ok(envelope) = serde_json::from_slice::<WireEnvelope>(body) else {
        return Envelope::default();
    };
    let entries = envelope
        .errors
        .entries
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
        .collect();
    Envelope {
        entries,
        omitted: envelope.errors.omitted,
    }
}

/// Whether any kept entry has `code`.
pub(crate) fn has(errors: &Envelope, code: Code) -> bool {
    errors.entries.iter().any(|e| e.code == code)
}

/// The first [`SUMMARY_ENTRIES`] entries' summaries joined with `; `, then `+k more`
/// for the rest (kept or not), or `None` for an empty envelope.
pub(crate) fn summary(errors: &Envelope) -> Option<String> {
    if errors.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = errors
        .entries
        .iter()
        .take(SUMMARY_ENTRIES)
        .map(RegistryError::summary)
        .collect();
    let more = errors.entries.len().saturating_sub(SUMMARY_ENTRIES) + errors.omitted;
    if more > 0 {
        parts.push(format!("+{more} more"));
    }
    Some(parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_unknown_from_distribution_get() {
        // What distribution 2.8.2 sends for a GET of a missing tag.
        let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"3.99"}}]}"#;
        let got = parse(body);
        assert_eq!(got.entries.len(), 1);
        assert_eq!(got.entries[0].code, Code::ManifestUnknown);
        assert_eq!(
            got.entries[0].summary(),
            "MANIFEST_UNKNOWN: manifest unknown"
        );
        assert!(has(&got, Code::ManifestUnknown));
        assert!(!has(&got, Code::NameUnknown));
    }

    #[test]
    fn name_unknown_and_several_entries() {
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry","detail":{"name":"nope"}},{"code":"DENIED","message":"no"}]}"#;
        let got = parse(body);
        assert_eq!(got.entries.len(), 2);
        assert!(has(&got, Code::NameUnknown));
        assert_eq!(
            summary(&got).unwrap(),
            "NAME_UNKNOWN: repository name not known to registry; DENIED: no"
        );
    }

    #[test]
    fn unknown_code_is_unknown_and_kept_verbatim() {
        let got = parse(br#"{"errors":[{"code":"QUOTA_EXCEEDED","message":"over"}]}"#);
        assert_eq!(got.entries[0].code, Code::Unknown);
        assert_eq!(got.entries[0].raw_code, "QUOTA_EXCEEDED");
    }

    #[test]
    fn odd_shapes_never_fail() {
        assert!(parse(b"").is_empty());
        assert!(parse(b"404 page not found\n").is_empty());
        assert!(parse(b"{}").is_empty());
        assert!(parse(br#"{"errors":null}"#).is_empty());
        assert!(parse(br#"[1,2]"#).is_empty());
        let got = parse(br#"{"errors":[{}]}"#);
        assert_eq!(got.entries[0].code, Code::Unknown);
        assert_eq!(got.entries[0].summary(), "UNKNOWN");
        let got = parse(br#"{"errors":[{"code":42,"message":{"a":1}}]}"#);
        assert_eq!(got.entries[0].raw_code, "42");
        assert_eq!(got.entries[0].message, r#"{"a":1}"#);
        assert_eq!(summary(&Envelope::default()), None);
    }

    #[test]
    fn code_of_control_characters_only_reads_as_unknown() {
        // Found by the `error_envelope` fuzz target.
        let got = parse(br#"{"errors":[{"code":"\u0000"},{"code":"\n\t","message":"m"}]}"#);
        assert_eq!(got.entries[0].raw_code, "UNKNOWN");
        assert_eq!(got.entries[0].code, Code::Unknown);
        assert_eq!(got.entries[1].summary(), "UNKNOWN: m");
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
        assert_eq!(got.entries[0].message.chars().count(), 201);
        assert!(!got.entries[0].message.contains('\n'));
    }

    #[test]
    fn bidi_controls_and_zero_width_characters_are_dropped() {
        // The "Trojan Source" controls (CVE-2021-42574): RLO ... PDF would show
        // `denied` reversed in a terminal; LRI/PDI isolates, a zero-width space, a word
        // joiner and a BOM hide inside a word.
        let body = "{\"errors\":[{\"code\":\"DEN\u{200B}IED\",\"message\":\
                    \"access \u{202E}deined\u{202C} to \u{2066}app\u{2069} \u{2060}is\u{FEFF} \
                    \u{200F}refused\u{200D}\"}]}";
        let got = parse(body.as_bytes());
        assert_eq!(got.entries[0].raw_code, "DENIED");
        assert_eq!(got.entries[0].code, Code::Denied);
        assert_eq!(got.entries[0].message, "access deined to app is refused");
    }

    #[test]
    fn a_run_of_control_characters_is_one_space_and_no_ellipsis() {
        let got = parse(
            br#"{"errors":[{"code":"DENIED","message":"\nrequested\r\n\taccess\u0085denied \n  now\n"}]}"#,
        );
        // Nothing was cut for length: no `…`; words stay apart; no space at the ends.
        assert_eq!(got.entries[0].message, "requested access denied   now");
        let got = parse(br#"{"errors":[{"code":"DENIED","message":"a\u2028b\u0000\u0001c"}]}"#);
        assert_eq!(got.entries[0].message, "a b c");
    }

    #[test]
    fn the_ellipsis_says_text_was_cut_for_length_only() {
        let exact = "y".repeat(200);
        let body = format!(r#"{{"errors":[{{"code":"DENIED","message":"{exact}\n\n"}}]}}"#);
        assert_eq!(parse(body.as_bytes()).entries[0].message, exact);
        let body = format!(r#"{{"errors":[{{"code":"DENIED","message":"{exact}\nz"}}]}}"#);
        let cut = &parse(body.as_bytes()).entries[0].message;
        assert_eq!(cut.chars().count(), 201);
        assert!(cut.ends_with("y…"), "{cut}");
    }

    #[test]
    fn a_long_envelope_keeps_its_first_entries_and_counts_the_rest() {
        let entry = r#"{"code":"DENIED","message":"no"}"#;
        let body = format!(r#"{{"errors":[{}]}}"#, vec![entry; 5000].join(","));
        let got = parse(body.as_bytes());
        assert_eq!(got.entries.len(), KEPT_ENTRIES);
        assert_eq!(got.omitted, 5000 - KEPT_ENTRIES);
        assert_eq!(
            summary(&got).unwrap(),
            "DENIED: no; DENIED: no; DENIED: no; +4997 more"
        );
        // Three or fewer are all said.
        let body = format!(r#"{{"errors":[{}]}}"#, [entry; 3].join(","));
        assert_eq!(
            summary(&parse(body.as_bytes())).unwrap(),
            "DENIED: no; DENIED: no; DENIED: no"
        );
    }
}
