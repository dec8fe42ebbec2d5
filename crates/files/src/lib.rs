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

/// [`read`], as UTF-8 text ([`text`]).
///
/// # Errors
/// As [`read`] and [`text`].
pub fn read_to_string(path: &Path) -> io::Result<String> {
    text(read(path)?)
}

/// `bytes` as UTF-8 text.
///
/// # Errors
/// [`io::ErrorKind::InvalidData`] naming where the first invalid byte is, as
/// `LINE:COLUMN: not UTF-8 text` (1-based; the column counts characters), so that a
/// caller can put the file's name in front: `p.yml:2:5: not UTF-8 text`.
pub fn text(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = 1 + String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count();
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{line}:{column}: not UTF-8 text"),
        )
    })
}

/// Whether `path` may be handed to a reader that reads it whole without a limit
/// (kube-rs reading a kubeconfig): refuses a device (`/dev/zero`) and a regular file
/// over [`MAX_FILE_BYTES`]; anything else, a FIFO or a path that cannot be looked at,
/// is left to that reader.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] ("is a device, not a file") or
/// [`io::ErrorKind::FileTooLarge`] ("larger than 64 MiB").
pub fn check_bounded(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = meta.file_type();
        if kind.is_char_device() || kind.is_block_device() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a device, not a file",
            ));
        }
    }
    if meta.is_file() && meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(())
}

fn too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than {} MiB", MAX_FILE_BYTES >> 20),
    )
}

/// Everything `source` yields (standard input, say), at most [`MAX_FILE_BYTES`].
///
/// # Errors
/// As [`read`].
pub fn read_from(source: impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    source.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// What kind of problem a file has, for [`FileFault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The file could not be read: missing, a directory or device, over the size
    /// limit, not UTF-8, no permission.
    Unreadable,
    /// The file was read but is not in the expected format (a JSON, TOML or YAML syntax
    /// error, or the wrong kind of document).
    Syntax,
    /// The file parses, but a value in it is rejected.
    Invalid,
}

/// A problem with a file a user named, as data, so that a front end can name the option
/// or field that gave the file and word the kind itself (`--docker-config PATH: not a
/// Docker config.json: line 1, column 1: …`). The library errors that are about one file
/// give it (`MirrorError::fault`, `CredentialError::fault`); their `Display` stays the
/// whole message for everyone else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFault<'a> {
    /// The file as it was given to the loader.
    pub path: std::borrow::Cow<'a, str>,
    /// What kind of problem.
    pub kind: FaultKind,
    /// 1-based line of the problem, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the problem, when known.
    pub column: Option<usize>,
    /// What is wrong, without the path or the position.
    pub message: std::borrow::Cow<'a, str>,
}

/// A parser's message about a file with the values it quotes left out, so that an error
/// about a file never repeats what the file holds (a kubeconfig's token, an auth file's
/// password): serde's `invalid type: string "…"` and `` invalid value: integer `…` ``
/// shapes lose the quoted value (`string "…"` keeps the type), and only the first line is
/// kept (parsers that draw a source snippet put it on the lines below). What is left is
/// the parser's own words: the kind of value, what was expected, field names.
pub fn without_values(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let mut out = String::with_capacity(first.len());
    let mut rest = first;
    while let Some(at) = rest.find(['"', '`']) {
        let quote = rest[at..].chars().next().unwrap_or('"');
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        // The closing quote, past backslash escapes (serde quotes strings with `{:?}`).
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                c if c == quote && !escaped => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        // A backtick run is a value only after serde's words for one; field and variant
        // lists (`expected one of `a`, `b``) are the parser's own names.
        let is_value = quote == '"'
            || [
                "integer ",
                "floating point ",
                "character ",
                "variant ",
                "char ",
            ]
            .iter()
            .any(|w| out.ends_with(w));
        match end {
            Some(end) if is_value => {
                out.push(quote);
                out.push('…');
                out.push(quote);
                rest = &after[end + quote.len_utf8()..];
            }
            Some(end) => {
                out.push_str(&rest[at..at + 1 + end + quote.len_utf8()]);
                rest = &after[end + quote.len_utf8()..];
            }
            // An unclosed quote: what follows may be the value itself.
            None => {
                out.push(quote);
                out.push('…');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_and_snippets_are_left_out() {
        assert_eq!(
            without_values("invalid type: string \"CANARY\\\"x\", expected a sequence"),
            "invalid type: string \"…\", expected a sequence"
        );
        assert_eq!(
            without_values("invalid value: integer `12345`, expected one of `a`, `b`"),
            "invalid value: integer `…`, expected one of `a`, `b`"
        );
        assert_eq!(
            without_values("expected string scalar\n --> <input>:7:15\n7 | password: [CANARY"),
            "expected string scalar"
        );
        assert_eq!(without_values("unclosed \"CANARY"), "unclosed \"…");
    }

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
        assert_eq!(err.to_string(), "2:1: not UTF-8 text");
        let err = text(b"version: \"1\"\nst\xc3\xa9p\xe9s:\n".to_vec()).unwrap_err();
        // `s`, `t`, `é`, `p` are four characters (five bytes): the bad byte is column 5.
        assert_eq!(err.to_string(), "2:5: not UTF-8 text");
    }

    #[test]
    fn devices_and_large_files_are_not_bounded() {
        let err = check_bounded(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(err.to_string(), "is a device, not a file");
        check_bounded(Path::new("/etc/hostname")).unwrap();
        check_bounded(Path::new("/nonexistent/pullcheck")).unwrap();
    }
}
