//! Who may ask: bearer tokens from `--api-token-file`, re-read when its content changes, and
//! the namespaces a request may name (`--allow-namespace` globs, and a token line's own
//! list).
//!
//! The file has one token per line, optionally followed by a comma-separated list of
//! namespace globs that token may name: `TOKEN` or `TOKEN ns1,team-*`. Blank lines and
//! lines starting with `#` are skipped. Tokens are compared in constant time; neither a
//! token nor the file's content is ever logged.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use globset::{Glob, GlobMatcher};
use subtle::ConstantTimeEq as _;

use crate::metrics::{Metrics, ReloadFile};

/// A namespace pattern: a glob (`*`, `?`, `[...]`) matched against the whole name.
#[derive(Debug, Clone)]
pub struct NamespaceGlob {
    matcher: GlobMatcher,
}

impl NamespaceGlob {
    /// Parses a glob.
    ///
    /// # Errors
    /// The glob's syntax error, without the pattern (the caller has it).
    pub fn new(pattern: &str) -> Result<NamespaceGlob, String> {
        Glob::new(pattern)
            .map(|g| NamespaceGlob {
                matcher: g.compile_matcher(),
            })
            .map_err(|e| e.kind().to_string())
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
    /// The file's modification time and length when last looked at: a change makes the
    /// next request read the file at once.
    stamp: Option<(SystemTime, u64)>,
    /// When the content was last read: it is read again after [`RECHECK`] even when the
    /// stamp is the same (a same-length copy that keeps the modification time).
    checked: Instant,
    /// The fingerprint of the content in use.
    good: u64,
    /// The fingerprint of the content last read (`None`: the file could not be read), so
    /// that a bad file is logged and counted once, not on every request.
    seen: Option<u64>,
    entries: Vec<Entry>,
}

/// How often the content is read again when the file's stamp has not changed.
const RECHECK: Duration = Duration::from_secs(1);

/// The token file: stat'ed on each request, and its content read when the stat changed
/// or `RECHECK` has passed; what is in use changes only when the content's fingerprint
/// does (`reload::fingerprint`). A changed file that cannot be read or parsed,
/// or holds no token, keeps the last good tokens in use: the file, the line and the
/// reason are logged (never a token) and counted in
/// `pullcheck_config_reload_errors_total{file="api_token_file"}`.
pub struct TokenFile {
    path: PathBuf,
    loaded: Mutex<Loaded>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A line of the token file that is not `TOKEN` or `TOKEN ns1,ns2`: its number (1-based)
/// and why. Never holds a token.
#[derive(Debug)]
struct BadLine {
    line: usize,
    reason: String,
}

fn parse(text: &str) -> Result<Vec<Entry>, BadLine> {
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
                    .map(|p| {
                        NamespaceGlob::new(p).map_err(|e| format!("namespace pattern {p:?}: {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|reason| BadLine {
                        line: i + 1,
                        reason,
                    })?,
            ),
            None => None,
        };
        if parts.next().is_some() {
            return Err(BadLine {
                line: i + 1,
                reason: "expected `TOKEN` or `TOKEN ns1,ns2` (no space in the list), found \
                         more fields"
                    .to_owned(),
            });
        }
        entries.push(Entry {
            token: token.as_bytes().to_vec(),
            namespaces,
        });
    }
    Ok(entries)
}

/// Why the token file's content cannot be used.
enum Unusable {
    /// Cannot be read (or not UTF-8): the message.
    Unreadable(String),
    /// A bad line.
    Line(BadLine),
    /// No token in it.
    Empty,
}

impl TokenFile {
    /// Reads the file once; reload errors are counted in `metrics`.
    ///
    /// # Errors
    /// The file cannot be read, is not UTF-8, has a bad line, or holds no token: what
    /// is wrong, without the path (the caller has it).
    pub fn load(path: PathBuf, metrics: Arc<Metrics>) -> Result<TokenFile, String> {
        let stamp = stamp(&path);
        let (good, entries) = match read(&path) {
            Ok(found) => found,
            Err(Unusable::Unreadable(e)) => return Err(format!("cannot read: {e}")),
            Err(Unusable::Line(bad)) => {
                return Err(format!("line {}: {}", bad.line, bad.reason));
            }
            Err(Unusable::Empty) => return Err("holds no token".to_owned()),
        };
        Ok(TokenFile {
            path,
            loaded: Mutex::new(Loaded {
                stamp,
                checked: Instant::now(),
                good,
                seen: Some(good),
                entries,
            }),
            metrics,
        })
    }

    /// Reads the file again when due; a usable new content replaces the tokens.
    fn refresh(&self, loaded: &mut Loaded) {
        let stamp = stamp(&self.path);
        if stamp.is_some() && stamp == loaded.stamp && loaded.checked.elapsed() < RECHECK {
            return;
        }
        loaded.stamp = stamp;
        loaded.checked = Instant::now();
        let bytes = match pullcheck_files::read(&self.path) {
            Ok(b) => b,
            Err(e) => {
                if loaded.seen.take().is_some() {
                    self.reject(&Unusable::Unreadable(e.to_string()));
                }
                return;
            }
        };
        let fingerprint = crate::reload::fingerprint(&bytes);
        if loaded.seen == Some(fingerprint) {
            return;
        }
        loaded.seen = Some(fingerprint);
        if fingerprint == loaded.good {
            return;
        }
        match entries_of(&bytes) {
            Ok(entries) => {
                tracing::info!(
                    path = %self.path.display(),
                    tokens = entries.len(),
                    "API token file re-read"
                );
                loaded.entries = entries;
                loaded.good = fingerprint;
            }
            Err(why) => self.reject(&why),
        }
    }

    /// Logs (never a token) and counts a changed file that cannot be used.
    fn reject(&self, why: &Unusable) {
        self.metrics.reload_error(ReloadFile::ApiTokenFile);
        let path = self.path.display();
        match why {
            Unusable::Unreadable(e) => tracing::warn!(
                path = %path,
                "API token file cannot be read: {e}; the last good tokens stay in use"
            ),
            Unusable::Line(bad) => tracing::warn!(
                path = %path,
                line = bad.line,
                "API token file not reloaded: line {}: {}; the last good tokens stay in use",
                bad.line,
                bad.reason
            ),
            Unusable::Empty => tracing::warn!(
                path = %path,
                "API token file not reloaded: it holds no token; the last good tokens stay in use"
            ),
        }
    }

    /// The caller whose token is `presented`, if a line of the file holds it. Every
    /// line is compared, in constant time per token.
    pub fn authorize(&self, presented: &[u8]) -> Option<Caller> {
        let Ok(mut loaded) = self.loaded.lock() else {
            return None;
        };
        self.refresh(&mut loaded);
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

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The file's fingerprint and tokens.
fn read(path: &Path) -> Result<(u64, Vec<Entry>), Unusable> {
    let bytes = pullcheck_files::read(path).map_err(|e| Unusable::Unreadable(e.to_string()))?;
    Ok((crate::reload::fingerprint(&bytes), entries_of(&bytes)?))
}

/// The tokens of the file's bytes: UTF-8, every line well formed, at least one token.
fn entries_of(bytes: &[u8]) -> Result<Vec<Entry>, Unusable> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| Unusable::Unreadable(format!("not UTF-8: {e}")))?;
    let entries = parse(text).map_err(Unusable::Line)?;
    if entries.is_empty() {
        return Err(Unusable::Empty);
    }
    Ok(entries)
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
