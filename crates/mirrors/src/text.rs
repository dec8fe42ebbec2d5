//! Reading a configuration file and pointing into it: the file read through
//! `pullcheck-files` as a [`MirrorError::Read`], and line and column of a byte offset for
//! syntax errors.

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

/// Reads a UTF-8 file, mapping failures to [`MirrorError::Read`].
pub(crate) fn read_text(path: &Path) -> Result<String, MirrorError> {
    pullcheck_files::read_to_string(path).map_err(|e| MirrorError::read(path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("a\nbé c", 5), (2, 3));
        assert_eq!(line_col("abc", 99), (1, 4));
    }
}
