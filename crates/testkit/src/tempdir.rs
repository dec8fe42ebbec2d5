//! A temporary directory removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// A directory under the system temp dir, removed recursively on drop: the
/// harness's own (registry storage, token keys) and tests' scratch directories.
///
/// Names are unique per process and call (`pullcheck-testkit.PID.N.NANOS-KIND`),
/// so tests running in parallel in one binary never share one; directories
/// left by a killed test process are removed by the next process that makes
/// one. Derefs to its [`Path`].
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

/// Every directory's name starts with this, then `.PID.`.
const PREFIX: &str = "pullcheck-testkit";

impl TempDir {
    /// Creates `$TMPDIR/pullcheck-testkit.PID.N.NANOS-{kind}`; `kind` is only
    /// a readable part of the name.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be created.
    pub fn new(kind: &str) -> Result<Self, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        let base = std::env::temp_dir();
        SWEPT.call_once(|| sweep_stale(&base));
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = base.join(format!(
                "{PREFIX}.{}.{n}.{nanos:08x}-{kind}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(format!("creating {}", path.display()), e)),
            }
        }
        Err(Error::io(
            "creating a temporary directory",
            std::io::Error::other("too many name collisions"),
        ))
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes directories left by harness processes that were killed (so their
/// `Drop` never ran): those whose PID no longer exists.
fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Some(pid) = rest
            .strip_prefix('.')
            .and_then(|r| r.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
