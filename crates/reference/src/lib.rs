//! Image references, parsed and normalised exactly as the Go module
//! `github.com/distribution/reference` does (`ParseNormalizedNamed`).
//!
//! STUB: the grammar is being written; the public API below is the contract.

use std::fmt;

/// A parsed, normalised image reference: `domain/path[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    domain: String,
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl Reference {
    /// Parses `input` as `ParseNormalizedNamed` does.
    ///
    /// # Errors
    /// A [`ReferenceError`] whose [`ReferenceErrorKind`] names the rule broken.
    pub fn parse_normalized(input: &str) -> Result<Reference, ReferenceError> {
        let _ = input;
        todo!("reference grammar")
    }

    /// The registry domain after normalisation, e.g. `docker.io`, `localhost:5000`, `[::1]:5000`.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The repository path without the domain, e.g. `library/alpine`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The tag as written, if any (no implicit `latest`).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest as written, e.g. `sha256:<64 hex>`, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// `domain/path`, e.g. `docker.io/library/alpine`.
    pub fn repository(&self) -> String {
        format!("{}/{}", self.domain, self.path)
    }

    /// What a pull asks the registry for: the digest when present, else the tag, else `latest`.
    pub fn manifest_reference(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or("latest")
    }

    /// The canonical form `domain/path[:tag][@digest]`; `:latest` is added only when
    /// there is neither a tag nor a digest.
    pub fn canonical(&self) -> String {
        todo!()
    }

    /// The familiar form, as the Docker CLI prints it (`FamiliarString`).
    pub fn familiar(&self) -> String {
        todo!()
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// Why a reference did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceErrorKind {
    /// The input is empty (`ErrNameEmpty`).
    Empty,
    /// The input does not match the grammar (`ErrReferenceInvalidFormat`, `ErrTagInvalidFormat`).
    InvalidFormat,
    /// The repository path has upper case (`ErrNameContainsUppercase`).
    Uppercase,
    /// The repository path is longer than 255 characters (`ErrNameTooLong`).
    NameTooLong,
    /// The input is a bare 64-character hex string.
    Hex64,
    /// The digest is malformed or its algorithm is not registered (`ErrDigestInvalidFormat`, `digest.ErrDigestUnsupported`).
    DigestInvalid,
}

impl ReferenceErrorKind {
    /// The snake_case name used in JSON output, e.g. `invalid_format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::InvalidFormat => "invalid_format",
            Self::Uppercase => "uppercase",
            Self::NameTooLong => "name_too_long",
            Self::Hex64 => "hex64",
            Self::DigestInvalid => "digest_invalid",
        }
    }
}

/// A reference that did not parse: the kind and a message naming the offending part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceError {
    kind: ReferenceErrorKind,
    message: String,
}

impl ReferenceError {
    /// The rule that was broken.
    pub fn kind(&self) -> ReferenceErrorKind {
        self.kind
    }
    /// A human message naming the offending part of the input.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ReferenceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReferenceError {}
