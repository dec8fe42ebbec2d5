//! Reading a configuration file and pointing into it: the file read at most
//! [`MAX_CONFIG_BYTES`] (a [`MirrorError::Read`] or [`MirrorError::TooLarge`]), and line
//! and column of a byte offset for syntax errors.

use std::io::Read as _;
use std::path::Path;

use crate::MirrorError;

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut end = offset;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit_once('\n')
        .map_or(before, |(_, l)| l)
        .chars()
        .count()
        + 1;
    (line, col)
}

/// The byte offsets where the lines of a text start, to find the line of many offsets
/// in one text in logarithmic time each.
pub(crate) struct LineStarts(Vec<usize>);

impl LineStarts {
    pub(crate) fn new(text: &str) -> LineStarts {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineStarts(starts)
    }

    /// The 1-based line of byte `offset`, as [`line_col`]'s line.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }
}

/// A TOML error, at its line and column when it has a span; the values it quotes are
/// left out (`pullcheck_files::without_values`).
pub(crate) fn toml_error(file: &str, text: &str, err: &toml::de::Error) -> MirrorError {
    let (line, column) = match err.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            (Some(line), Some(col))
        }
        None => (None, None),
    };
    MirrorError::Syntax {
        file: file.to_owned(),
        line,
        column,
        message: pullcheck_files::without_values(err.message()),
    }
}

/// The largest mirror configuration file read (a `registries.conf` or drop-in, a
/// `hosts.toml`, a containerd `config.toml`, a Docker `daemon.json`), in bytes: 1 MiB.
/// Real files are a few KiB (a `registries.conf` entry is about 100 bytes, so the limit
/// holds some 10,000 of them); a larger one is refused as [`MirrorError::TooLarge`]
/// rather than parsed for minutes. The runtimes themselves set no limit.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads `path` whole, at most [`MAX_CONFIG_BYTES`] (one byte more is read to tell).
///
/// # Errors
/// The open or read error as [`MirrorError::Read`] (the `io::Error` kept for its kind
/// in `Err(Ok(_))`), or [`MirrorError::TooLarge`] in `Err(Err(_))`.
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>, Result<std::io::Error, MirrorError>> {
    let file = std::fs::File::open(path).map_err(Ok)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Ok)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Err(MirrorError::TooLarge {
            path: path.to_path_buf(),
            limit_bytes: MAX_CONFIG_BYTES,
        }));
    }
    Ok(bytes)
}

/// Reads a UTF-8 file of at most [`MAX_CONFIG_BYTES`].
///
/// # Errors
/// [`MirrorError::Read`], or [`MirrorError::TooLarge`] past the limit.
pub(crate) fn read_text(path: &Path) -> Result<String, MirrorError> {
    let bytes = read_bounded(path).map_err(|e| match e {
        Ok(io) => MirrorError::read(path, &io),
        Err(e) => e,
    })?;
    pullcheck_files::text(bytes).map_err(|e| MirrorError::read(path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("a\nbé c", 5), (2, 3));
        assert_eq!(line_col("abc", 99), (1, 4));
    }

    #[test]
    fn line_starts_agree_with_line_col() {
        let text = "a\nbé c\n\nd";
        let lines = LineStarts::new(text);
        for offset in 0..=text.len() + 2 {
            if text.is_char_boundary(offset.min(text.len())) {
                assert_eq!(lines.line(offset), line_col(text, offset).0, "{offset}");
            }
        }
    }
}
