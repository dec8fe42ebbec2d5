//! Digest validation as `github.com/opencontainers/go-digest` (v1.0.0)
//! performs it in `digest.Parse`, with the algorithms that Docker and the
//! upstream tests register: `sha256`, `sha384` and `sha512`.

/// The registered algorithms and the exact number of lowercase hex digits
/// each needs.
pub const ALGORITHMS: [(&str, usize); 3] = [("sha256", 64), ("sha384", 96), ("sha512", 128)];

/// Why `go-digest` rejects a digest that matched the reference grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DigestProblem<'a> {
    /// The algorithm is well formed but not registered (`ErrDigestUnsupported`).
    Unsupported(&'a str),
    /// An unregistered algorithm that is not even well formed for
    /// `go-digest` (which wants it lowercase): `ErrDigestInvalidFormat`.
    BadAlgorithm(&'a str),
    /// A registered algorithm with the wrong number of hex digits
    /// (`ErrDigestInvalidLength`).
    Length {
        algorithm: &'a str,
        want: usize,
        got: usize,
    },
    /// A registered algorithm whose hex is not all lowercase hex
    /// (`ErrDigestInvalidFormat`).
    NotLowerHex { algorithm: &'a str, bad: char },
    /// No `:`, or nothing on one side of it (`ErrDigestInvalidFormat`).
    Shape,
}

/// `go-digest`'s own digest pattern, `[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+`,
/// used only to choose between its two errors for an unregistered algorithm.
fn matches_go_digest_pattern(algorithm: &str, encoded: &str) -> bool {
    let algorithm_ok = !algorithm.is_empty()
        && algorithm.split(['.', '+', '_', '-']).all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    let encoded_ok = !encoded.is_empty()
        && encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'));
    algorithm_ok && encoded_ok
}

/// Validates `digest` (`algorithm:hex`) as `go-digest`'s `Digest.Validate`.
pub(crate) fn validate(digest: &str) -> Result<(), DigestProblem<'_>> {
    let Some((algorithm, encoded)) = digest.split_once(':') else {
        return Err(DigestProblem::Shape);
    };
    if algorithm.is_empty() || encoded.is_empty() {
        return Err(DigestProblem::Shape);
    }
    let Some(&(_, want)) = ALGORITHMS.iter().find(|(name, _)| *name == algorithm) else {
        return Err(if matches_go_digest_pattern(algorithm, encoded) {
            DigestProblem::Unsupported(algorithm)
        } else {
            DigestProblem::BadAlgorithm(algorithm)
        });
    };
    if encoded.len() != want {
        return Err(DigestProblem::Length {
            algorithm,
            want,
            got: encoded.chars().count(),
        });
    }
    if let Some(bad) = encoded
        .chars()
        .find(|c| !matches!(c, '0'..='9' | 'a'..='f'))
    {
        return Err(DigestProblem::NotLowerHex { algorithm, bad });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_algorithms() {
        assert_eq!(validate(&format!("sha256:{}", "a".repeat(64))), Ok(()));
        assert_eq!(validate(&format!("sha384:{}", "0".repeat(96))), Ok(()));
        assert_eq!(validate(&format!("sha512:{}", "f".repeat(128))), Ok(()));
    }

    #[test]
    fn problems() {
        assert!(matches!(
            validate(&format!("sha256:{}", "a".repeat(63))),
            Err(DigestProblem::Length {
                want: 64,
                got: 63,
                ..
            })
        ));
        assert!(matches!(
            validate(&format!("sha256:{}", "A".repeat(64))),
            Err(DigestProblem::NotLowerHex { bad: 'A', .. })
        ));
        assert!(matches!(
            validate(&format!("md5:{}", "a".repeat(32))),
            Err(DigestProblem::Unsupported("md5"))
        ));
        assert!(matches!(
            validate(&format!("SHA256:{}", "a".repeat(64))),
            Err(DigestProblem::BadAlgorithm("SHA256"))
        ));
        assert!(matches!(validate("nocolon"), Err(DigestProblem::Shape)));
    }
}
