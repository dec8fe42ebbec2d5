//! Change detection of the files the service re-reads while it runs (the token file, the
//! TLS certificate and key): by content, not by modification time and length, so that a
//! same-length copy that keeps the time (`cp -p`, `rsync -t`) is still seen.

use std::hash::Hasher as _;

/// A fingerprint of `bytes` for change detection: SipHash-1-3 of the length and the
/// bytes (std's `DefaultHasher`, fixed keys). Not an integrity check: whoever can write
/// the file decides its content anyway.
pub(crate) fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write_usize(bytes.len());
    hasher.write(bytes);
    hasher.finish()
}

/// The fingerprint of the file at `path`; `None` when it cannot be read.
pub(crate) fn file_fingerprint(path: &std::path::Path) -> Option<u64> {
    pullcheck_files::read(path).ok().map(|b| fingerprint(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_length_different_content_differs() {
        assert_ne!(fingerprint(b"token-a\n"), fingerprint(b"token-b\n"));
        assert_eq!(fingerprint(b"token-a\n"), fingerprint(b"token-a\n"));
        assert_ne!(fingerprint(b""), fingerprint(b"\0"));
    }
}
