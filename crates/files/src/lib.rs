//! Reading the files a user names — pipelines, manifests, Docker and containers
//! configs, pull secrets, mirror configs, certificates — with one size limit, so that
//! a wrong path (`/dev/zero`, a disk image, a FIFO that never ends) is an error rather
//! than memory exhausted. Every crate of the workspace that opens a user's file reads
//! it through here.
//!
//! Invariant: reads only; never interprets the bytes.

use std::io::{self, Read};
use std::path::Path;

/// The largest file read, in bytes: 64 MiB, far above any pipeline, manifest, config
/// or CA bundle (a system CA bundle is about 200 KiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The whole file at `path`, at most [`MAX_FILE_BYTES`].
///
/// # Errors
/// The open or read error; [`io::ErrorKind::FileTooLarge`] ("larger than 64 MiB")
/// past the limit, after reading one byte more than it.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_from(std::fs::File::open(path)?)
}

/// [`read`], as UTF-8 text.
///
/// # Errors
/// As [`read`]; [`io::ErrorKind::InvalidData`] when the bytes are not UTF-8.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Everything `source` yields (standard input, say), at most [`MAX_FILE_BYTES`].
///
/// # Errors
/// As [`read`].
pub fn read_from(source: impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    source.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {} MiB", MAX_FILE_BYTES >> 20),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_input_stops_at_the_limit() {
        let err = read(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(err.to_string(), "larger than 64 MiB");
        let err = read_from(io::repeat(b'a')).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
    }

    #[test]
    fn the_limit_itself_is_allowed() {
        let exact = read_from(io::repeat(b'a').take(MAX_FILE_BYTES)).unwrap();
        assert_eq!(exact.len() as u64, MAX_FILE_BYTES);
        assert_eq!(read_from(&b"version: 1\n"[..]).unwrap(), b"version: 1\n");
    }

    #[test]
    fn errors_of_open_and_text() {
        let missing = read(Path::new("/nonexistent/pullcheck/file")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let dir = std::env::temp_dir().join(format!("pullcheck-files-{}", std::process::id()));
        std::fs::write(&dir, b"ok\n\xff").unwrap();
        let err = read_to_string(&dir).unwrap_err();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("offset 3"), "{err}");
    }
}
