//! Who may ask: bearer tokens from `--api-token-file`, re-read when the file changes, and
//! the namespaces a request may name (`--allow-namespace` globs, and a token line's own
//! list).
//!
//! The file has one token per line, optionally followed by a comma-separated list of
//! namespace globs that token may name: `TOKEN` or `TOKEN ns1,team-*`. Blank lines and
//! lines starting with `#` are skipped. Tokens are compared in constant time; neither a
//! token nor the file's content is ever logged.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use globset::{Glob, GlobMatcher};
use subtle::ConstantTimeEq as _;

/// A namespace pattern: a glob (`*`, `?`, `[...]`) matched against the whole name.
#[derive(Debug, Clone)]
pub struct NamespaceGlob {
    matcher: GlobMatcher,
}

impl NamespaceGlob {
    /// Parses a glob.
    ///
    /// # Errors
    /// The glob's syntax error.
    pub fn new(pattern: &str) -> Result<NamespaceGlob, String> {
        Glob::new(pattern)
            .map(|g| NamespaceGlob {
                matcher: g.compile_matcher(),
            })
            .map_err(|e| format!("namespace pattern {pattern:?}: {e}"))
    }

    /// Whether `namespace` matches.
    pub fn matches(&self, namespace: &str) -> bool {
        self.matcher.is_match(namespace)
    }
}

/// A caller the token file let in: the namespaces its line allows (`None`: any that
/// `--allow-namespace` allows).
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The token line's namespace globs, if it has any.
    pub namespaces: Option<Vec<NamespaceGlob>>,
}

struct Entry {
    token: Vec<u8>,
    namespaces: Option<Vec<NamespaceGlob>>,
}

struct Loaded {
    /// The file's modification time and length when read.
    stamp: Option<(SystemTime, u64)>,
    entries: Vec<Entry>,
}

/// The token file: stat'ed on each request, re-read when its modification time or length
/// changed. A file that cannot be read lets nobody in (and says why in the log, without
/// its content).
pub struct TokenFile {
    path: PathBuf,
    loaded: Mutex<Loaded>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_whitespace();
        let token = parts.next().unwrap_or_default();
        let namespaces = match parts.next() {
            Some(list) => Some(
                list.split(',')
                    .filter(|s| !s.is_empty())
                    .map(NamespaceGlob::new)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("line {}: {e}", i + 1))?,
            ),
            None => None,
        };
        if parts.next().is_some() {
            return Err(format!(
                "line {}: expected `TOKEN` or `TOKEN ns1,ns2`, found more fields",
                i + 1
            ));
        }
        entries.push(Entry {
            token: token.as_bytes().to_vec(),
            namespaces,
        });
    }
    Ok(entries)
}

impl TokenFile {
    /// Reads the file once.
    ///
    /// # Errors
    /// The file cannot be read, is not UTF-8, has a bad line, or holds no token.
    pub fn load(path: PathBuf) -> Result<TokenFile, String> {
        let file = TokenFile {
            path,
            loaded: Mutex::new(Loaded {
                stamp: None,
                entries: Vec::new(),
            }),
        };
        let loaded = file.read()?;
        if loaded.entries.is_empty() {
            return Err(format!("{}: holds no token", file.path.display()));
        }
        if let Ok(mut l) = file.loaded.lock() {
            *l = loaded;
        }
        Ok(file)
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let meta = std::fs::metadata(&self.path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }

    fn read(&self) -> Result<Loaded, String> {
        let stamp = self.stamp();
        let text = pullcheck_files::read_to_string(&self.path)
            .map_err(|e| format!("{}: cannot read: {e}", self.path.display()))?;
        let entries = parse(&text).map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(Loaded { stamp, entries })
    }

    /// The caller whose token is `presented`, if a line of the file holds it. Every
    /// line is compared, in constant time per token.
    pub fn authorize(&self, presented: &[u8]) -> Option<Caller> {
        let Ok(mut loaded) = self.loaded.lock() else {
            return None;
        };
        let stamp = self.stamp();
        if stamp.is_none() || stamp != loaded.stamp {
            match self.read() {
                Ok(l) => {
                    tracing::info!(
                        path = %self.path.display(),
                        tokens = l.entries.len(),
                        "API token file re-read"
                    );
                    *loaded = l;
                }
                Err(e) => {
                    tracing::warn!("API token file: {e}; no request is let in until it is fixed");
                    loaded.entries.clear();
                    loaded.stamp = stamp;
                }
            }
        }
        let mut found: Option<&Entry> = None;
        for entry in &loaded.entries {
            if bool::from(entry.token.as_slice().ct_eq(presented)) && found.is_none() {
                found = Some(entry);
            }
        }
        found.map(|e| Caller {
            namespaces: e.namespaces.clone(),
        })
    }
}

/// Whether `namespace` may be named: allowed by `allow` (when not empty) and by the
/// caller's own list (when it has one).
pub fn namespace_allowed(namespace: &str, allow: &[NamespaceGlob], caller: &Caller) -> bool {
    let by_flag = allow.is_empty() || allow.iter().any(|g| g.matches(namespace));
    let by_token = caller
        .namespaces
        .as_ref()
        .is_none_or(|list| list.iter().any(|g| g.matches(namespace)));
    by_flag && by_token
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_namespaces() {
        let entries = parse("# comment\n\nalpha\nbeta ci,team-*\n").expect("parses");
        assert_eq!(entries.len(), 2);
        assert!(entries[0].namespaces.is_none());
        let caller = Caller {
            namespaces: entries[1].namespaces.clone(),
        };
        assert!(namespace_allowed("team-a", &[], &caller));
        assert!(namespace_allowed("ci", &[], &caller));
        assert!(!namespace_allowed("prod", &[], &caller));
        let allow = [NamespaceGlob::new("ci").expect("glob")];
        assert!(!namespace_allowed("team-a", &allow, &caller));
        assert!(namespace_allowed("anything", &[], &Caller::default()));
        assert!(parse("a b c\n").is_err());
    }
}
